"""Smoke tests of the benchmark scripts: each runs end to end on a tiny input, exits 0 and
prints its table. The figures themselves are not checked here (they depend on the machine)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from models.load import load

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared" / "data"
needs_traces = pytest.mark.skipif(
    not (TRACES / "alibaba-gpu-v2023").is_dir() or not (TRACES / "alibaba-spot-gpu-v2026").is_dir(),
    reason="trace CSVs not present",
)


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _cells(output: str) -> list[list[str]]:
    """The stripped cells of every Markdown table row printed."""
    return [
        [c.strip() for c in line.strip("|").split("|")]
        for line in output.splitlines()
        if line.startswith("|")
    ]


def test_scale_runs_on_shape_s() -> None:
    """Shape S with a 2 s CP-SAT budget finishes in seconds; the engine table has one row per
    engine, and the instance table names S's 32 nodes (4 racks × 8)."""
    result = _run("scale.py", "--shapes", "S", "--time-limit", "2", "--workers", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("| shape") and "engine" in line for line in lines)
    cells = _cells(result.stdout)
    assert ["S", "greedy"] in [c[:2] for c in cells]
    assert ["S", "cpsat"] in [c[:2] for c in cells]
    assert any(c[:2] == ["S", "32"] for c in cells)


def test_scale_json_has_both_engines_and_all_stages() -> None:
    """``--json`` prints one result per shape with the four stage values of both engines."""
    result = _run("scale.py", "--shapes", "S", "--time-limit", "1", "--workers", "1", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    (shape,) = doc["results"]
    assert [e["engine"] for e in shape["engines"]] == ["greedy", "cpsat"]
    for engine in shape["engines"]:
        assert set(engine["stages"]) == {"work", "fairness", "topology", "packing"}
        assert engine["violations"] == 0


def test_greedy_speed_runs_on_a_tiny_custom_instance() -> None:
    """Two demo runs and a 20-node / 60-pod generated instance: the table has a row for each,
    with the demo's 8 nodes and the generated instance's 20 nodes and 60 pods."""
    result = _run("greedy_speed.py", "--repeat", "2", "--nodes", "20", "--pods", "60")
    assert result.returncode == 0, result.stderr
    cells = _cells(result.stdout)
    assert cells[0][:3] == ["instance", "nodes", "pods"]
    assert ["instances/demo.yaml", "8"] in [c[:2] for c in cells]
    assert any(c[1:3] == ["20", "60"] for c in cells)
    assert "requirement" in result.stdout


@needs_traces
@pytest.mark.parametrize("kind", ["alibaba-1213", "spot-4278"])
def test_realistic_builds_a_small_busy_clustered_instance(kind: str, tmp_path: Path) -> None:
    """45 nodes of the trace's list: racks (tier-1 HyperNodes) of at most 15 nodes, each of
    one GPU model; some pods running (laid out by the greedy warm-up), some pending; and the
    same seed writes the same file twice."""
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for out in (first, second):
        result = _run("realistic.py", kind, "--nodes", "45", "--seed", "3", "-o", str(out))
        assert result.returncode == 0, result.stderr
        assert "45 nodes" in result.stdout
    assert first.read_bytes() == second.read_bytes()
    instance = load(first)
    assert len(instance.nodes) == 45
    models = {node.name: node.labels["gpu-model"] for node in instance.nodes}
    racks = [name for name in instance.topology.names if instance.topology.tier(name) == 1]
    assert racks
    for rack in racks:
        members = instance.topology.real_nodes(rack)
        assert 1 <= len(members) <= 15
        assert len({models[name] for name in members}) == 1
    running = Counter(pod.running for pod in instance.pods)
    assert running[True] > 0 and running[False] > 0


@needs_traces
def test_greedy_speed_runs_on_small_realistic_instances() -> None:
    """``--realistic`` with ``--realistic-nodes 40``: one row per realistic instance, with its
    40 nodes; alibaba-1213, which has a pods-per-second requirement, gets a verdict line,
    spot-4278, which has none, does not."""
    args = ["--repeat", "1", "--nodes", "20", "--pods", "60", "--realistic-nodes", "40"]
    result = _run("greedy_speed.py", *args, "--realistic", "alibaba-1213,spot-4278")
    assert result.returncode == 0, result.stderr
    rows = {c[0]: c for c in _cells(result.stdout)}
    for kind in ("alibaba-1213", "spot-4278"):
        assert rows[f"{kind} seed 1 (40 nodes)"][1] == "40"
    assert "- alibaba-1213 seed 1 (40 nodes):" in result.stdout
    assert "- spot-4278 seed 1" not in result.stdout


def test_affinity_runs_on_a_tiny_zoned_cluster() -> None:
    """Two zones of three nodes, one job of each kind, 2 s of CP-SAT: one row per engine, and
    neither plan breaks a rule (the violations column is 0)."""
    import os

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = ["--zones", "2", "--per-zone", "3", "--jobs", "4", "--time-limit", "2", "--workers", "1"]
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "affinity.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    rows = [r for r in _cells(result.stdout) if r[0] in ("greedy", "cpsat")]
    assert [r[0] for r in rows] == ["greedy", "cpsat"]
    assert [r[1] for r in rows] == ["6", "6"]
    assert [r[4] for r in rows] == ["0", "0"]


def test_greedy_plans_check_finds_the_recorded_plans_of_small_instances() -> None:
    """The greedy engine still decides the recorded plan of every instance file and of shape
    S (the whole record, shapes M to XL included, is checked by hand: it takes minutes)."""
    cases = "demo.yaml,gpu-sharing.yaml,tdm.yaml,topology-heavy.yaml,S:1,S:2"
    result = _run("greedy_plans.py", "--check", "--cases", cases)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("same plan, same reasons") == 6


def test_time_limit_runs_the_command_on_shape_s() -> None:
    """One S case through the installed ``vcopt`` command: a table row for it, exit 0."""
    result = _run("time_limit.py", "--cases", "S:2")
    assert result.returncode == 0, result.stderr
    (row,) = [c for c in _cells(result.stdout) if c[0] == "S"]
    assert row[1] == "2"
    assert row[5] == "0"
