"""Plans: reading, writing and rendering (DESIGN §4, hami-gpu.md §6.1).

The instance is instances/demo.yaml: 22 pods, of which rl-tuning-actor-0/1 (node-001/003) and
serving-replica-0/1 (node-005/006) are running.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from models.errors import InputError
from models.instance import Instance
from models.load import load
from models.workload import DeviceShare
from optimizer.plan import (
    ADMITTED,
    PENDING,
    RUNNING,
    Eviction,
    JobDecision,
    Pipelined,
    Placement,
    Plan,
    SolverInfo,
    plan_from_dict,
    read_plan,
)

DEMO = Path(__file__).parent.parent / "instances" / "demo.yaml"


@pytest.fixture(scope="module")
def demo() -> Instance:
    return load(DEMO)


def whole(node: str, *indexes: int) -> tuple[DeviceShare, ...]:
    return tuple(DeviceShare(f"GPU-{node}-{i}", 81920, 100) for i in indexes)


def full_plan() -> Plan:
    """Every section filled, with awkward values: explicit empty gpus, open gpus, an empty
    eviction reason, a job without hypernode, tier 0, a zero objective and nested metrics."""
    return Plan(
        instance="demo",
        engine="cpsat",
        seed=7,
        placements=(
            Placement("default/llm-pretrain-worker-0", "node-002", whole("node-002", *range(8))),
            Placement(
                "default/notebooks-nb-0", "node-005", (DeviceShare("GPU-node-005-0", 20000, 25),)
            ),
            Placement("default/notebooks-nb-1", "node-006"),
            Placement("default/serving-replica-0", "node-007", ()),
        ),
        evictions=(
            Eviction("default/rl-tuning-actor-0", "node-001", "reclaim"),
            Eviction("default/rl-tuning-actor-1", "node-003"),
        ),
        pipelined=(Pipelined("default/big-train-worker-0", "node-004"),),
        jobs=(
            JobDecision("default/llm-pretrain", ADMITTED, "", "rack-1", 1),
            JobDecision("default/notebooks", ADMITTED, "", None, 0),
            JobDecision("default/big-train", PENDING, "queue team-a: nvidia.com/gpu 40 > 32"),
        ),
        solver=SolverInfo(
            status="OPTIMAL",
            wall_seconds=3.25,
            objective=0.0,
            bound=12.5,
            gap=0.0,
            workers=2,
            stages={"priority": 1.5, "share": 0.25},
            stage_bounds={"priority": 2.0, "share": 0.25},
            variables=120,
            constraints=340,
            message="hinted by greedy",
        ),
        metrics={"jobs_admitted": 2, "queues": {"team-a": {"share": 0.5}}, "tiers": [0, 1]},
        version="0.1.0",
    )


# -- round trips ----------------------------------------------------------------------------


def test_yaml_round_trip_is_lossless(demo: Instance) -> None:
    plan = full_plan()
    assert plan_from_dict(yaml.safe_load(plan.to_yaml()), demo) == plan


def test_json_round_trip_is_lossless(demo: Instance) -> None:
    plan = full_plan()
    assert plan_from_dict(json.loads(plan.to_json()), demo) == plan


def test_files_round_trip_through_read_plan(demo: Instance, tmp_path: Path) -> None:
    """Both formats on disk, through ``write`` (atomic) and ``read_plan``."""
    plan = full_plan()
    for fmt in ("yaml", "json"):
        path = tmp_path / f"plan.{fmt}"
        plan.write(path, fmt, demo)
        assert read_plan(path, demo) == plan


def test_open_and_empty_gpus_stay_distinct(demo: Instance) -> None:
    """``gpus`` absent means "any devices" (None); ``gpus: []`` means none (an empty tuple)."""
    doc = yaml.safe_load(full_plan().to_yaml())
    by_pod = {p["pod"]: p for p in doc["placements"]}
    assert "gpus" not in by_pod["default/notebooks-nb-1"]
    assert by_pod["default/serving-replica-0"]["gpus"] == []
    assert by_pod["default/notebooks-nb-0"]["gpus"] == [
        {"id": "GPU-node-005-0", "memory": 20000, "cores": 25}
    ]


# -- hand-written plans ---------------------------------------------------------------------


HAND_WRITTEN = """\
placements:
- {pod: default/llm-pretrain-worker-0, node: node-001}
- {pod: default/llm-pretrain-worker-1, node: node-002}
- pod: default/notebooks-nb-3
  node: node-005
  gpus: [{id: GPU-node-005-1, memory: 20000, cores: 25}]
evictions:
- {pod: default/rl-tuning-actor-0, node: node-001, reason: reclaim}
"""


def test_hand_written_plan_gets_derived_job_statuses(demo: Instance, tmp_path: Path) -> None:
    """No jobs section: llm-pretrain and notebooks have new pods → admitted; rl-tuning lost one
    pod and keeps only actor-1, fewer than its minAvailable of 2: its gang no longer holds →
    pending (as the metrics count it); serving is untouched and running; big-train,
    bert-finetune and batch-scavenger have nothing → pending. Metadata defaults apply."""
    path = tmp_path / "hand.yaml"
    path.write_text(HAND_WRITTEN)
    plan = read_plan(path, demo)
    assert {d.job: d.status for d in plan.jobs} == {
        "default/llm-pretrain": ADMITTED,
        "default/big-train": PENDING,
        "default/rl-tuning": PENDING,
        "default/bert-finetune": PENDING,
        "default/notebooks": ADMITTED,
        "default/serving": RUNNING,
        "default/batch-scavenger": PENDING,
    }
    assert (plan.instance, plan.engine, plan.seed) == ("demo", "manual", 0)
    assert plan.placements[0] == Placement("default/llm-pretrain-worker-0", "node-001", None)
    assert plan.placements[2].gpus == (DeviceShare("GPU-node-005-1", 20000, 25),)
    assert plan.evictions == (Eviction("default/rl-tuning-actor-0", "node-001", "reclaim"),)


# -- renderings -----------------------------------------------------------------------------


def test_frame_has_one_row_per_pod_with_its_state(demo: Instance) -> None:
    """22 pods. From :func:`full_plan`: 4 placed, 2 evicted (both rl-tuning pods), 1 pipelined;
    serving-replica-1 still runs (replica-0 is "placed" by the plan); the other 14 are pending."""
    frame = full_plan().to_frame(demo)
    assert len(frame) == 22
    assert frame["pod"].is_unique
    state = dict(zip(frame["pod"], frame["state"], strict=True))
    assert state["default/llm-pretrain-worker-0"] == "placed"
    assert state["default/rl-tuning-actor-0"] == "evicted"
    assert state["default/big-train-worker-0"] == "pipelined"
    assert state["default/serving-replica-1"] == "running"
    assert state["default/bert-finetune-worker-0"] == "pending"
    assert frame["state"].value_counts().to_dict() == {
        "pending": 14,
        "placed": 4,
        "evicted": 2,
        "pipelined": 1,
        "running": 1,
    }
    row = frame.set_index("pod").loc["default/rl-tuning-actor-0"]
    assert (row["node"], row["reason"], row["queue"]) == ("node-001", "reclaim", "team-b")
    row = frame.set_index("pod").loc["default/big-train-worker-1"]
    assert (row["job_status"], row["reason"]) == ("pending", "queue team-a: nvidia.com/gpu 40 > 32")


def test_csv_header_and_rows(demo: Instance) -> None:
    """The device text holds a comma, so CSV quotes that field (RFC 4180)."""
    lines = full_plan().to_csv(demo).splitlines()
    assert lines[0] == "pod,job,task,queue,state,node,gpus,job_status,reason"
    assert len(lines) == 1 + 22
    assert (
        "default/notebooks-nb-0,default/notebooks,nb,inference,placed,node-005,"
        '"GPU-node-005-0(20000MiB,25%)",admitted,' in lines
    )


def test_hami_annotations(demo: Instance) -> None:
    """hami-gpu §6.1: each device ``UUID,NVIDIA,<MiB>,<cores>:``, the container closed by ``;``;
    to-allocate and allocated carry the same string, vgpu-node the node. Pods without chosen
    devices (open or empty gpus) get no annotations."""
    notes = full_plan().annotations()
    assert set(notes) == {"default/llm-pretrain-worker-0", "default/notebooks-nb-0"}
    nb = notes["default/notebooks-nb-0"]
    assert nb == {
        "hami.io/vgpu-devices-to-allocate": "GPU-node-005-0,NVIDIA,20000,25:;",
        "hami.io/vgpu-devices-allocated": "GPU-node-005-0,NVIDIA,20000,25:;",
        "hami.io/vgpu-node": "node-005",
    }
    llm = notes["default/llm-pretrain-worker-0"]["hami.io/vgpu-devices-to-allocate"]
    assert llm == "".join(f"GPU-node-002-{i},NVIDIA,81920,100:" for i in range(8)) + ";"
    rendered = yaml.safe_load(full_plan().render("annotations", demo))
    assert rendered == notes


# -- atomic writes --------------------------------------------------------------------------


def test_write_leaves_the_target_untouched_when_rendering_raises(
    demo: Instance, tmp_path: Path
) -> None:
    """A device id with a comma cannot go into the HAMi annotation: rendering raises before
    anything is written, so the old file survives and no temporary file is left behind."""
    target = tmp_path / "plan.out"
    target.write_text("previous plan\n")
    bad = Plan(
        placements=(Placement("default/notebooks-nb-0", "node-005", (DeviceShare("a,b", 1, 1),)),)
    )
    with pytest.raises(ValueError, match="cannot be written"):
        bad.write(target, "annotations", demo)
    with pytest.raises(ValueError, match="unknown format"):
        full_plan().write(target, "xml", demo)
    assert target.read_text() == "previous plan\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.out"]


def test_write_leaves_the_target_untouched_when_writing_fails(
    demo: Instance, tmp_path: Path
) -> None:
    """Text that cannot be encoded fails inside the temporary file; the target keeps its old
    content and the temporary file is removed. A good write then replaces the content."""
    target = tmp_path / "plan.yaml"
    target.write_text("previous plan\n")
    bad = Plan(instance="\ud800")
    with pytest.raises(UnicodeEncodeError):
        bad.write(target, "json", demo)
    assert target.read_text() == "previous plan\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.yaml"]
    full_plan().write(target, "yaml", demo)
    assert target.read_text() == full_plan().to_yaml()


# -- bad plan files -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "obj", "field", "message"),
    [
        (
            "placements:\n- {pod: default/nobody-w-0, node: node-001}\n",
            'Pod "default/nobody-w-0"',
            "placements[0].pod",
            "no such pod in the instance",
        ),
        (
            "placements:\n- {pod: default/notebooks-nb-0, node: node-042}\n",
            'Pod "default/notebooks-nb-0"',
            "placements[0].node",
            "no such node 'node-042'",
        ),
        (
            "placements:\n- pod: default/notebooks-nb-0\n  node: node-005\n"
            "  gpus: [{id: GPU-node-001-0, memory: 20000, cores: 25}]\n",
            'Pod "default/notebooks-nb-0"',
            "placements[0].gpus[0].id",
            "node node-005 has no GPU 'GPU-node-001-0'",
        ),
        ("evictions: []\n", "", "placements", "required field is missing"),
        ("placements: []\nextra: 1\n", "", "extra", "unknown field"),
        (
            "placements:\n- {pod: default/notebooks-nb-0, node: node-005, nodes: x}\n",
            "",
            "placements[0].nodes",
            "unknown field",
        ),
    ],
)
def test_bad_plan_files_name_the_field(
    demo: Instance, tmp_path: Path, text: str, obj: str, field: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        read_plan(path, demo)
    assert [(p.obj, p.field, p.message, p.file) for p in caught.value.problems] == [
        (obj, field, message, str(path))
    ]


def test_malformed_yaml_is_bad_input(demo: Instance, tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("placements: [ {pod: a, node: b\n")
    with pytest.raises(InputError) as caught:
        read_plan(path, demo)
    [problem] = caught.value.problems
    assert problem.file == str(path)
    assert problem.message.startswith("not valid YAML: line ")


def test_a_plan_must_be_one_mapping(demo: Instance, tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- placements: []\n")
    with pytest.raises(InputError, match="expected one mapping with kind: Plan"):
        read_plan(path, demo)
