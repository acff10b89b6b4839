"""Cross-object validation in the domain: an Instance is checked by the same rules however it is
built, from a file or in Python.

Expected problems come from the rules of DESIGN §3 (Volcano's webhooks, HAMi's device limits);
each test builds the objects by hand so the rule it breaks is the only one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from models.cluster import Node
from models.errors import InputError
from models.gpu import GpuDevice
from models.instance import Instance, validate_instance
from models.load import load
from models.queues import Queue
from models.resources import Resources
from models.scheduler_conf import PluginOption, SchedulerConf
from models.topology import HyperNode, Member, MemberSelector
from models.vocabulary import REVOCABLE_ZONE
from models.workload import DeviceShare, Job, RunningPod, Task
from optimizer.generate import generate

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
VALID = sorted(  # every valid instance file of the repository (sweep-demo is a sweep file)
    [
        *(p for p in (ROOT / "instances").glob("*.yaml") if p.stem != "sweep-demo"),
        DATA / "base.yaml",
        *(DATA / "warn").glob("*.yaml"),
        *(DATA / "kube").glob("*.yaml"),
        *(DATA / "verify").glob("*.yaml"),
    ]
)
NOW = datetime(2026, 11, 30, 14, tzinfo=UTC)
GPU = GpuDevice("GPU-0", 0, "NVIDIA-A100", 81920)
NODE = Node("n1", Resources.parse({"cpu": "8"}), gpus=(GPU,))
TASK = Task("w", 2, Resources.parse({"cpu": "1"}))


@pytest.mark.parametrize("path", VALID, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_loaded_instance_keeps_every_domain_rule(path: Path) -> None:
    """The reader and the domain validation agree: a file that loads breaks no rule."""
    assert validate_instance(load(path)).errors == []


def test_a_generated_instance_keeps_every_domain_rule() -> None:
    from models.load import from_dict

    instance = from_dict(generate("S", 3), "gen-s-3")
    assert validate_instance(instance).errors == []


def _instance(**changes: object) -> Instance:
    base = Instance(
        "py",
        NOW,
        nodes=(NODE,),
        queues=(Queue("q"),),
        jobs=(Job("j", queue="q", tasks=(TASK,)),),
    )
    return base.replace(**changes)


def _problems(instance: Instance) -> list[tuple[str, str]]:
    return [(p.obj, p.field) for p in validate_instance(instance).errors]


def test_an_instance_built_in_python_is_valid() -> None:
    instance = _instance()
    assert _problems(instance) == []
    assert instance.validated() is instance


def test_validated_raises_every_problem_naming_the_file() -> None:
    broken = _instance(nodes=(NODE, NODE))
    with pytest.raises(InputError) as caught:
        broken.validated("variant.yaml")
    assert [(p.file, p.obj, p.field) for p in caught.value.problems] == [
        ("variant.yaml", 'Node "n1"', "name")
    ]


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        (Job("j", queue="nowhere", tasks=(TASK,)), [('Job "default/j"', "queue")]),
        (
            Job("j", queue="q", min_available=3, tasks=(TASK,)),
            [('Job "default/j"', "minAvailable")],
        ),
        (
            Job("j", queue="q", tasks=(TASK,), running=(RunningPod(2, "n1", "w"),)),
            [('Job "default/j"', "running[0].index")],
        ),
        (
            Job("j", queue="q", tasks=(TASK,), running=(RunningPod(0, "n1", "x"),)),
            [('Job "default/j"', "running[0].task")],
        ),
        (
            Job(
                "j",
                queue="q",
                tasks=(TASK,),
                running=(RunningPod(0, "n1", "w", ((DeviceShare("GPU-0", 90000, 100),),)),),
            ),
            [('Job "default/j"', "running[0].gpus[0].memory")],
        ),
    ],
    ids=["missing-queue", "gang-over-replicas", "index", "task", "device-memory"],
)
def test_job_rules(job: Job, expected: list[tuple[str, str]]) -> None:
    """A job names an existing queue, a gang no larger than its replicas (2), and running
    pods that exist in it and hold no more than their device has (81920 MiB)."""
    assert _problems(_instance(jobs=(job,))) == expected


def test_two_pods_may_not_overfill_one_device() -> None:
    """45000 + 45000 MiB > 81920 MiB: the second pod is the one reported."""
    share = ((DeviceShare("GPU-0", 45000, 10),),)
    running = (RunningPod(0, "n1", "w", share), RunningPod(1, "n1", "w", share))
    job = Job("j", queue="q", tasks=(TASK,), running=running)
    assert _problems(_instance(jobs=(job,))) == [('Job "default/j"', "running[1].gpus[0].memory")]


def test_hypernode_and_queue_rules_run_on_the_instance() -> None:
    """A HyperNode that lists itself is a cycle; a child queue's capability above its
    parent's breaks the hierarchical-queue webhook."""
    loop = HyperNode("h", 1, "", (Member("HyperNode", MemberSelector(exact_name="h")),))
    queues = (
        Queue("p", capability=Resources.parse({"cpu": "4"})),
        Queue("q", parent="p", capability=Resources.parse({"cpu": "8"})),
    )
    assert _problems(_instance(hypernodes=(loop,), queues=queues)) == [
        ('HyperNode "h"', "members[0]"),
        ('Queue "q"', "capability.cpu"),
    ]


def test_a_node_group_is_reported_once_as_written() -> None:
    """Two nodes of one group in an unconfigured zone: one problem, on the group."""
    tdm = SchedulerConf(("allocate",), ((PluginOption("tdm", arguments={}),),))
    zoned = [Node(name, labels={REVOCABLE_ZONE: "rz9"}) for name in ("g-000", "g-001")]
    instance = _instance(scheduler=tdm, nodes=(NODE, *zoned))
    assert _problems(instance) == [
        ('Node "g-000"', f"labels.{REVOCABLE_ZONE}"),
        ('Node "g-001"', f"labels.{REVOCABLE_ZONE}"),
    ]
    written = {"g-000": 'NodeGroup "g-"', "g-001": 'NodeGroup "g-"'}
    checked = validate_instance(instance, written_as=written)
    assert [(p.obj, p.field) for p in checked.errors] == [
        ('NodeGroup "g-"', f"labels.{REVOCABLE_ZONE}")
    ]


def test_devices_of_an_unread_inventory_are_not_judged_again() -> None:
    job = Job(
        "j",
        queue="q",
        tasks=(TASK,),
        running=(RunningPod(0, "n1", "w", ((DeviceShare("GPU-9", 1, 1),),)),),
    )
    instance = _instance(jobs=(job,))
    assert _problems(instance) == [('Job "default/j"', "running[0].gpus[0].id")]
    assert validate_instance(instance, unread_gpus={"n1"}).errors == []
