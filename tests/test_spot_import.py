"""``vcopt import spot``: the spot-GPU trace v2026's node table as a cluster with racks and
spines, its job table as a timeline. Every expected value is worked by hand from the rules of
docs/INSTANCE.md ("vcopt import spot") in the docstrings; the CSVs are written here, in the
trace's columns, since only the node table is among the data files."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from models.load import from_dict
from optimizer.cli import main
from optimizer.options import SolveOptions
from optimizer.simulate import simulate
from optimizer.spot_import import import_spot, read_nodes, topology

NODE_HEADER = "gpu_model,gpu_capacity_num,cpu_num,node_name\n"
JOB_HEADER = (
    "job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,"
    "duration,job_type\n"
)
NODES = NODE_HEADER + (
    "A100-SXM4-80GB,8,128,3\nA10,1,128,2\nGPU-series-1,4,192,0\nA10,1,64,10\nH100,8,96,7\n"
)
JOBS = JOB_HEADER + (
    "j1,13,A10,20,1,1,100,3600,HP\n"
    "j2,57,A100-SXM4-80GB,15,2,4,160,600,Spot\n"
    "j3,13,,0.5,0,1,100,60,hp\n"
)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _import(tmp_path: Path, nodes: str = NODES, jobs: str | None = JOBS, *extra: str) -> dict:
    out = tmp_path / "out.yaml"
    args = ["import", "spot", "--nodes", str(_write(tmp_path, "nodes.csv", nodes)), *extra]
    if jobs is not None:
        args += ["--jobs", str(_write(tmp_path, "jobs.csv", jobs))]
    assert main([*args, "-o", str(out)]) == 0
    return yaml.safe_load(out.read_text())


# -- the cluster --------------------------------------------------------------------------------


def test_nodes_by_number_with_their_model_cpus_and_gpus(tmp_path: Path) -> None:
    """Sorted by node number (0, 2, 3, 7, 10), named spot-node-<4 digits>. Memory is 8 GiB per
    vCPU (192 → 1536Gi). A known model gets HAMi devices with the model's memory
    (GPU-series-1: 32768 MiB); H100 is no model of the trace, so its 8 GPUs are a plain
    nvidia.com/gpu count without devices."""
    doc = _import(tmp_path, jobs=None)
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert list(nodes) == [
        "spot-node-0000",
        "spot-node-0002",
        "spot-node-0003",
        "spot-node-0007",
        "spot-node-0010",
    ]
    first = nodes["spot-node-0000"]
    assert first["labels"]["gpu-model"] == "GPU-series-1"
    assert first["allocatable"] == {"cpu": "192", "memory": "1536Gi", "pods": 110}
    assert first["gpus"] == {"count": 4, "type": "NVIDIA-GPU-series-1", "memory": 32768}
    h100 = nodes["spot-node-0007"]
    assert "gpus" not in h100
    assert h100["allocatable"]["nvidia.com/gpu"] == 8
    instance = from_dict(doc, "spot.yaml")
    assert sum(len(n.gpus) for n in instance.nodes) == 4 + 1 + 8 + 1  # H100: no devices
    assert "queues" not in doc and "jobs" not in doc


def test_racks_of_one_model_and_spines_of_racks(tmp_path: Path) -> None:
    """Seven A10 nodes and two H800 nodes, racks of at most 3, spines of at most 2 racks. A10
    first (models by name): ⌈7/3⌉ = 3 racks, cut at 7·r//3 = 0, 2, 4, 7 → 2, 2 and 3 nodes in
    name order; 3 racks make ⌈3/2⌉ = 2 spines of ⌈3/2⌉ = 2 racks: spine-01 = rack-001 and
    rack-002, spine-02 = rack-003. H800: one rack (rack-004) and one spine (spine-03)."""
    rows = "".join(f"A10,1,32,{i}\n" for i in range(7)) + "H800,8,128,7\nH800,8,128,8\n"
    path = _write(tmp_path, "nodes.csv", NODE_HEADER + rows)
    nodes, hypernodes = topology(read_nodes(path), rack_size=3, racks_per_spine=2)
    rack_of = {n["name"]: n["labels"]["topology.kubernetes.io/rack"] for n in nodes}
    assert rack_of == {
        "spot-node-0000": "rack-001",
        "spot-node-0001": "rack-001",
        "spot-node-0002": "rack-002",
        "spot-node-0003": "rack-002",
        "spot-node-0004": "rack-003",
        "spot-node-0005": "rack-003",
        "spot-node-0006": "rack-003",
        "spot-node-0007": "rack-004",
        "spot-node-0008": "rack-004",
    }
    tiers = {h["name"]: h["tier"] for h in hypernodes}
    assert tiers == {
        **{f"rack-00{i}": 1 for i in range(1, 5)},
        "spine-01": 2,
        "spine-02": 2,
        "spine-03": 2,
    }
    spines = {
        h["name"]: [m["selector"]["exactMatch"]["name"] for m in h["members"]]
        for h in hypernodes
        if h["tier"] == 2
    }
    assert spines == {
        "spine-01": ["rack-001", "rack-002"],
        "spine-02": ["rack-003"],
        "spine-03": ["rack-004"],
    }
    # The command passes both sizes on, and the instance loads with the seven HyperNodes.
    args = ("--rack-size", "3", "--racks-per-spine", "2")
    doc = _import(tmp_path, NODE_HEADER + rows, None, *args)
    assert (doc["nodes"], doc["hypernodes"]) == (nodes, hypernodes)
    assert len(from_dict(doc, "spot.yaml").hypernodes) == 7


# -- the jobs -----------------------------------------------------------------------------------


def test_jobs_become_gangs_in_queues_by_organisation(tmp_path: Path) -> None:
    """First submit time 100 s: now = 2026-01-01T00:00:00Z + 100 s, j1 and j3 arrive then (no
    arrival), j2 60 s later. Jobs in submit order, file order among equals: j1, j3, j2.
    GPUs requested: org-13 1×1 + 0 = 1, org-57 4×2 = 8 (9 in all); the cluster has
    8 + 1 + 4 + 1 + 8 = 22 GPUs: org-13 deserves ⌊22·1/9⌋ = 2, org-57 ⌊22·8/9⌋ = 19.
    HP (any case) → class high, marked not preemptable; Spot → class low and preemptable. A
    job without gpu_model has no node selector; one without GPUs asks for none."""
    doc = _import(tmp_path)
    assert doc["now"] == "2026-01-01T00:01:40Z"
    assert doc["queues"] == [
        {"name": "org-13", "deserved": {"nvidia.com/gpu": 2}},
        {"name": "org-57", "deserved": {"nvidia.com/gpu": 19}},
    ]
    assert [c["name"] for c in doc["priorityClasses"]] == ["high", "low"]
    jobs = {j["name"]: j for j in doc["jobs"]}
    assert list(jobs) == ["j1", "j3", "j2"]
    j1, j2, j3 = jobs["j1"], jobs["j2"], jobs["j3"]
    assert (j1["queue"], j1["priorityClassName"], j1["minAvailable"]) == ("org-13", "high", 1)
    assert j1["annotations"] == {"volcano.sh/preemptable": "false"}
    assert "arrival" not in j1
    assert j1["duration"] == 3600
    assert j1["tasks"] == [
        {
            "name": "worker",
            "replicas": 1,
            "resources": {"cpu": "20", "nvidia.com/gpu": 1},
            "nodeSelector": {"gpu-model": "A10"},
        }
    ]
    assert (j2["queue"], j2["priorityClassName"], j2["minAvailable"]) == ("org-57", "low", 4)
    assert j2["annotations"] == {"volcano.sh/preemptable": "true"}
    assert (j2["arrival"], j2["duration"]) == ("60s", 600)
    assert j2["tasks"][0]["replicas"] == 4
    assert j2["tasks"][0]["resources"] == {"cpu": "15", "nvidia.com/gpu": 2}
    assert j3["priorityClassName"] == "high"
    assert j3["tasks"][0]["resources"] == {"cpu": "0.5"}
    assert "nodeSelector" not in j3["tasks"][0]
    instance = from_dict(doc, "spot.yaml")
    assert instance.now == datetime(2026, 1, 1, 0, 1, 40, tzinfo=UTC)
    assert [j.name for j in instance.jobs] == ["j1", "j3"]
    assert [j.name for j in instance.arrivals] == ["j2"]


def _simulated(tmp_path: Path, spot_type: str) -> dict[str, Any]:
    nodes = NODE_HEADER + "H800,8,128,1\n"
    jobs = JOB_HEADER + f"s1,1,H800,16,8,1,0,1000,{spot_type}\nh1,1,H800,16,8,1,10,100,HP\n"
    doc = _import(tmp_path, nodes, jobs)
    run = simulate(from_dict(doc, "spot.yaml"), "greedy", SolveOptions())
    return {r.job.split("/")[1]: r for r in run.jobs}


def test_an_hp_job_preempts_a_spot_job_of_its_organisation(tmp_path: Path) -> None:
    """One 8-GPU node. s1 (Spot, 8 GPUs, 1,000 s) starts at 0; h1 (HP, 8 GPUs, 100 s) arrives
    at 10 s. The cycle at 10 s preempts s1 (low priority, preemptable, same queue); s1's pod
    leaves after Kubernetes' default grace period of 30 s, and the cycle at 40 s binds h1; it
    ends at 140 s. s1 fell below its gang, so it restarts from scratch: it starts again when
    h1 ends and runs its full 1,000 s, to 1,140 s; its 40 s on 8 GPUs (to its pod's release)
    are lost."""
    jobs = _simulated(tmp_path, "Spot")
    at = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    h1, s1 = jobs["h1"], jobs["s1"]
    assert h1.start.timestamp() - at == 40
    assert h1.end.timestamp() - at == 140
    assert (s1.evictions, s1.restarts, s1.lost_gpu_s) == (1, 1, 320)
    assert s1.end.timestamp() - at == 1140


def test_an_hp_job_waits_for_another_hp_job(tmp_path: Path) -> None:
    """The same timeline with s1 an HP job: it is not preemptable and not of lower priority,
    so h1 waits for its end at 1,000 s and runs to 1,100 s; s1 is never evicted."""
    jobs = _simulated(tmp_path, "HP")
    at = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    h1, s1 = jobs["h1"], jobs["s1"]
    assert h1.start.timestamp() - at == 1000
    assert h1.end.timestamp() - at == 1100
    assert s1.evictions == 0


def test_the_real_node_table_imports(tmp_path: Path) -> None:
    """The README's table: 4,278 nodes and 10,412 GPUs; racks of at most 15 nodes of one model
    (A10 alone: ⌈2,494/15⌉ = 167 racks)."""
    real = Path(__file__).resolve().parents[2] / "shared/data/alibaba-spot-gpu-v2026"
    if not (real / "node_info_df.csv").is_file():
        pytest.skip("node_info_df.csv not present")
    doc = import_spot(real / "node_info_df.csv")
    assert len(doc["nodes"]) == 4278
    instance = from_dict(doc, "spot.yaml")
    assert sum(len(n.gpus) for n in instance.nodes) == 10412
    members: dict[str, int] = {}
    models: dict[str, set[str]] = {}
    for n in doc["nodes"]:
        rack = n["labels"]["topology.kubernetes.io/rack"]
        members[rack] = members.get(rack, 0) + 1
        models.setdefault(rack, set()).add(n["labels"]["gpu-model"])
    assert max(members.values()) <= 15
    assert all(len(m) == 1 for m in models.values())
    assert sum(1 for r, m in models.items() if m == {"A10"}) == 167


# -- bad input ----------------------------------------------------------------------------------


def _refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nodes: str, jobs: str | None, *extra: str
) -> tuple[list[str], Path, Path]:
    nodes_csv = _write(tmp_path, "nodes.csv", nodes)
    jobs_csv = _write(tmp_path, "jobs.csv", jobs or "")
    out = tmp_path / "out.yaml"
    args = ["import", "spot", "--nodes", str(nodes_csv), *extra, "-o", str(out)]
    if jobs is not None:
        args += ["--jobs", str(jobs_csv)]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert captured.out == ""
    assert not out.exists()
    return captured.err.splitlines(), nodes_csv, jobs_csv


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        (
            JOB_HEADER.replace(",job_type", "") + "j1,13,A10,20,1,1,100,3600\n",
            "line 1: missing column(s) job_type in the header",
        ),
        (
            JOBS.replace("j2,57,A100-SXM4-80GB,15,2,", "j2,57,A100-SXM4-80GB,15,two,"),
            'line 3 ("j2"): gpu_request: expected an integer',
        ),
        (
            JOBS.replace("j1,13,A10,20,", "j1,13,A10,twenty,"),
            'line 2 ("j1"): cpu_request: expected a number, got "twenty"',
        ),
        (
            JOBS.replace(",160,600,", ",1h,600,"),
            'line 3 ("j2"): submit_time: expected a number, got "1h"',
        ),
        (
            JOBS.replace(",100,3600,", ",100,-5,"),
            'line 2 ("j1"): duration: must not be negative, got -5',
        ),
        (
            JOBS.replace("j1,13,A10,", "j1,13,H800,"),
            'line 2 ("j1"): gpu_model: no node has this GPU model (the nodes\': A10, '
            "A100-SXM4-80GB, GPU-series-1, H100)",
        ),
        (
            JOBS.replace(",3600,HP", ",3600,BE"),
            'line 2 ("j1"): job_type: expected HP or Spot, got "BE"',
        ),
        (
            JOBS.replace("j2,57,", "j1,57,"),
            'line 3 ("j1"): job_name: job j1 is also on line 2',
        ),
        (
            JOBS.replace("j1,13,A10,20,1,1,", "j1,13,A10,20,1,0,"),
            'line 2 ("j1"): worker_num: must be between 1 and 200,000, got 0',
        ),
        (
            # Nothing of "__" survives as a name: the queue would be "org-".
            JOBS.replace("j1,13,", "j1,__,"),
            'line 2 ("j1"): organization: makes the queue name org-, which is not a '
            "DNS-1123 subdomain",
        ),
        (
            # "J_1" and "j-1" are one object name, j-1.
            JOBS.replace("j1,13,", "J_1,13,").replace("\nj2,", "\nj-1,"),
            'line 3 ("j-1"): job_name: job j-1 is also on line 2',
        ),
        ("", "empty file: expected a CSV header"),
        (JOB_HEADER, "no job rows: nothing to simulate"),
    ],
)
def test_a_bad_job_table_is_named_by_line_and_column(
    jobs: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines, _, jobs_csv = _refused(tmp_path, capsys, NODES, jobs)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {jobs_csv}: {expected}"), lines[0]


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        (
            "gpu_model,gpu_capacity_num,node_name\nA10,1,2\n",
            "line 1: missing column(s) cpu_num in the header",
        ),
        (NODES.replace("A10,1,128,2", "A10,one,128,2"), 'line 3 ("2"): gpu_capacity_num: '),
        (NODES.replace("A10,1,128,2", "A10,1,128,node-2"), 'line 3 ("node-2"): node_name: '),
        (NODES.replace("A10,1,64,10", "A10,1,64,2"), 'line 5 ("2"): node_name: node 2 is also'),
        (NODES.replace("A10,1,128,2", ",1,128,2"), 'line 3 ("2"): gpu_model: required'),
        ("", "empty file: expected a CSV header"),
        (NODE_HEADER, "no node rows: nothing to place jobs on"),
    ],
)
def test_a_bad_node_table_is_named_by_line_and_column(
    nodes: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines, nodes_csv, _ = _refused(tmp_path, capsys, nodes, None)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {nodes_csv}: {expected}"), lines[0]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--rack-size", "0"], "error: --rack-size: must be at least 1, got 0"),
        (["--racks-per-spine", "-2"], "error: --racks-per-spine: must be at least 1, got -2"),
        (["--arrival", "1.2"], "error: --arrival: is an option of vcopt import alibaba, not of"),
        (["--cluster", "c.yaml"], "error: --cluster: is an option of vcopt import history, not"),
    ],
)
def test_a_bad_option_is_named(
    extra: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines, _, _ = _refused(tmp_path, capsys, NODES, JOBS, *extra)
    assert len(lines) == 1, lines
    assert lines[0].startswith(expected), lines[0]


def test_the_node_table_is_required(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.yaml"
    assert main(["import", "spot", "-o", str(out)]) == 2
    assert capsys.readouterr().err == "error: --nodes: required by vcopt import spot\n"
    assert not out.exists()
