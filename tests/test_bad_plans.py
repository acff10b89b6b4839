"""Bad plans given to ``vcopt verify``: each is refused with exit 2 and one line naming the
plan file and the field, never a traceback and never a verdict on the wrong instance."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.load import load
from optimizer.cli import main
from optimizer.plan.read import read_plan

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


BINDING = (
    "- {apiVersion: v1, kind: Binding, metadata: {name: train-worker-1, namespace: default}, "
    "target: {apiVersion: v1, kind: Node, name: node-1}}\n"
)
"""base.yaml's pending pod train-worker-1 bound to node-1: a valid bindings file."""
EVICT_RUNNING = (
    "- {apiVersion: policy/v1, kind: Eviction, "
    "metadata: {name: train-worker-0, namespace: default}}\n"
)
"""base.yaml's running pod train-worker-0 (on node-1) evicted."""


def _bindings(tmp_path: Path, *items: str) -> Path:
    path = tmp_path / "bindings.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n" + "".join(items))
    return path


def _verify_refuses(path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["verify", "-q", str(BASE), str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "Traceback" not in err
    return err.splitlines()


def test_bindings_read_back(tmp_path: Path) -> None:
    """The baseline the cases below break: the Binding is read as a placement, the Eviction
    of the running pod with the node base.yaml runs it on (node-1)."""
    plan = read_plan(_bindings(tmp_path, BINDING, EVICT_RUNNING), load(BASE))
    assert [(p.pod, p.node) for p in plan.placements] == [("default/train-worker-1", "node-1")]
    assert [(e.pod, e.node) for e in plan.evictions] == [("default/train-worker-0", "node-1")]


@pytest.mark.parametrize(
    ("item", "shown"), [("- 1\n", "1"), ("- x\n", "'x'"), ("- null\n", "None")]
)
def test_a_bindings_list_item_that_is_no_object(
    item: str, shown: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The item after the Binding is the list's second (items[1]); it was skipped before."""
    path = _bindings(tmp_path, BINDING, item)
    assert _verify_refuses(path, capsys) == [
        f"error: {path}: document 1 items[1]: expected a Binding or Eviction object, got {shown}"
    ]


def test_a_binding_whose_target_is_a_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ValidatePodBinding``: the target's kind is Node or empty."""
    path = _bindings(tmp_path, BINDING.replace("kind: Node", "kind: Pod"))
    (line,) = _verify_refuses(path, capsys)
    assert line.startswith(f'error: {path}: Binding "default/train-worker-1": target.kind: ')
    assert "must be Node" in line


def test_an_eviction_of_a_pending_pod_says_it_is_not_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """train-worker-1 is pending: an Eviction names a pod (it has no node field), and what is
    wrong is that the pod runs nowhere."""
    path = _bindings(tmp_path, EVICT_RUNNING.replace("train-worker-0", "train-worker-1"))
    (line,) = _verify_refuses(path, capsys)
    assert line.startswith(f'error: {path}: Eviction "default/train-worker-1": metadata.name: ')
    assert "not running" in line
    assert "required" not in line


def test_a_binding_to_an_unknown_node_names_the_binding_not_the_plan_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second Binding targets node-9: the problem is on that Binding's target.name, not
    on ``placements[1].node`` of the plan vcopt reads the file as."""
    other = BINDING.replace("train-worker-1", "train-worker-0").replace("node-1", "node-9")
    path = _bindings(tmp_path, BINDING, other)
    (line,) = _verify_refuses(path, capsys)
    assert line.startswith(f'error: {path}: Binding "default/train-worker-0": target.name: ')
    assert "node-9" in line
