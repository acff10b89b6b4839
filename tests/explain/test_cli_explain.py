"""``vcopt explain`` and ``vcopt capacity`` on the command line: output formats and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from explain_cases import TEXTS, nodes_case, queue_case

from optimizer.cli import EXIT_INPUT, EXIT_OK, main

FAST = ["--time-limit", "5", "--workers", "1", "-q"]


def _write(tmp_path, instance_text: str):
    path = tmp_path / "case.yaml"
    path.write_text(instance_text)
    return str(path)


def _source(instance) -> str:
    return TEXTS[id(instance)]


def test_explain_prints_the_reason_and_the_change(tmp_path, capsys):
    path = _write(tmp_path, _source(queue_case()))
    assert main(["explain", path, "want", "--engine", "greedy", *FAST]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("default/want is pending in the greedy plan (position 1 in its queue)")
    assert "queue research: nvidia.com/gpu capability +4 (8 → 12)" in out
    assert "Solving again with the change applied admits it." in out


def test_explain_json_is_a_document(tmp_path, capsys):
    path = _write(tmp_path, _source(queue_case()))
    assert main(["explain", path, "default/want", "--format", "json", "--no-check", *FAST]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["job"] == "default/want"
    assert [c["kind"] for c in doc["changes"]] == ["queue-capability"]
    assert doc["admittedAfterChange"] is None


def test_explain_of_an_unknown_job_is_bad_input(tmp_path, capsys):
    path = _write(tmp_path, _source(queue_case()))
    assert main(["explain", path, "nope", "--engine", "greedy", *FAST]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no such job" in err and "Traceback" not in err


def test_capacity_yaml_names_the_count(tmp_path, capsys):
    path = _write(tmp_path, _source(nodes_case()))
    args = ["capacity", path, "--node-like", "gpu-a-001", "--engine", "greedy", "--format", "yaml"]
    assert main([*args, *FAST]) == EXIT_OK
    doc = yaml.safe_load(capsys.readouterr().out)
    assert doc["possible"] is True and doc["nodes"] == 2
    assert doc["added"] == [{"like": "gpu-a-001", "hypernode": "rack-1", "count": 2}]
    assert doc["admissible"] == ["default/want"] and doc["unadmittable"] == {}
    assert doc["admitsAfter"] is True and doc["oneFewerAdmits"] is False


def test_capacity_text_names_the_count_its_check_and_the_jobs_set_aside(tmp_path, capsys):
    """nodes_case needs 2 nodes like gpu-a-001 in rack-1, and 1 does not do (one 8-GPU pod
    per node); queue_case's want is held by research's capability, which no node raises."""
    path = _write(tmp_path, _source(nodes_case()))
    args = ["capacity", path, "--node-like", "gpu-a-001", "--engine", "greedy"]
    assert main([*args, *FAST]) == EXIT_OK
    assert capsys.readouterr().out.splitlines()[1:3] == [
        "Fewest nodes like gpu-a-001 to add: 2 (checked: 2 admit default/want, 1 does not)",
        "  - 2 like gpu-a-001 in rack-1",
    ]
    path = _write(tmp_path, _source(queue_case()))
    assert main(["capacity", path, "--engine", "greedy", *FAST]) == EXIT_OK
    out = capsys.readouterr().out
    assert "Fewest nodes to add: 0" in out
    assert "  - default/want — queue research already holds 4 of its 8 nvidia.com/gpu" in out


def test_capacity_with_an_unknown_node_is_bad_input(tmp_path, capsys):
    path = _write(tmp_path, _source(nodes_case()))
    assert main(["capacity", path, "--node-like", "nope", *FAST]) == EXIT_INPUT
    assert "no such node" in capsys.readouterr().err


def test_a_job_name_typed_with_escape_codes_is_echoed_safely(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The name comes from the command line: its escape codes are shown escaped, and a
    10,000-character name is cut short."""
    demo = Path(__file__).resolve().parents[2] / "instances" / "demo.yaml"
    assert main(["explain", str(demo), "\x1b[31mred" + "x" * 10_000]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\\x1b[31mred" in err
    assert len(err) < 300
