"""Bad plans given to ``vcopt verify``: each is refused with exit 2 and one line naming the
plan file and the field, never a traceback and never a verdict on the wrong instance."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.cli import main

BASE = Path(__file__).parent / "data" / "base.yaml"
GOOD = "kind: Plan\nplacements:\n- {pod: default/train-worker-1, node: node-1}\n"


@pytest.mark.parametrize(
    ("extra", "field", "fragment"),
    [
        ("metrics: abc\n", "metrics", "expected a mapping"),
        ("metrics: [1, 2]\n", "metrics", "expected a mapping"),
        (
            "metadata: {instance: demo}\n",
            "metadata.instance",
            "for instance 'demo', not for 'base'",
        ),
        ("metadata: {instance: 5}\n", "metadata.instance", "expected a string"),
        ("metadata: {seed: abc}\n", "metadata.seed", "expected an integer"),
        ("metadata: {colour: red}\n", "metadata.colour", "unknown field"),
        ("metadata: [1]\n", "metadata", "expected a mapping"),
        ("solver: {status: OPTIMAL, gap: wide}\n", "solver.gap", "expected a number"),
        ("solver: {status: OPTIMAL, workers: 1.5}\n", "solver.workers", "expected an integer"),
        (
            "solver: {status: OPTIMAL, stages: {work: x}}\n",
            "solver.stages",
            "stage names to numbers",
        ),
        (
            "solver: {status: OPTIMAL, stageBounds: {work: open}}\n",
            "solver.stageBounds",
            "stage names to numbers",
        ),
        ("solver: {status: OPTIMAL, speed: 3}\n", "solver.speed", "unknown field"),
        ("solver: {status: [1]}\n", "solver.status", "expected a string"),
        ("jobs: 7\n", "jobs", "expected a list"),
    ],
)
def test_malformed_plan_is_bad_input(
    extra: str, field: str, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(GOOD + extra)
    assert main(["verify", "-q", str(BASE), str(plan)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {plan}: {field}: "), lines[0]
    assert fragment in lines[0]


def test_plan_for_this_instance_still_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Matching metadata and well-typed solver and metrics fields are read; a plan that
    places nothing new breaks no rule (the running pod stays where it is)."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "kind: Plan\nmetadata: {instance: base, engine: manual, seed: 3}\n"
        "solver: {status: OPTIMAL, gap: 0.0, stages: {work: 1}}\nmetrics: {admitted_jobs: 0}\n"
        "placements: []\n"
    )
    assert main(["verify", "-q", str(BASE), str(plan)]) == 0
    assert "valid plan" in capsys.readouterr().out
