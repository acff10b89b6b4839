"""The what-if API: each modifier changes exactly what it says and nothing else."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path

import pytest

from models.cluster import Node
from models.errors import InputError, Problem
from models.load import load
from models.resources import Resources
from models.vocabulary import REVOCABLE_ZONE
from models.workload import Job, NetworkTopology, RunningPod, Task
from optimizer import whatif

DEMO = Path(__file__).resolve().parents[1] / "instances" / "demo.yaml"


@pytest.fixture(scope="module")
def demo():
    return load(DEMO)


def changed_fields(a, b) -> set[str]:
    return {f.name for f in fields(a) if getattr(a, f.name) != getattr(b, f.name)}


def test_at_changes_only_now(demo):
    """``at`` moves the clock: the new instance differs from the demo in ``now`` alone."""
    later = whatif.at(demo, "2026-11-30T22:30:00Z")
    assert later.now == datetime(2026, 11, 30, 22, 30, tzinfo=UTC)
    assert changed_fields(demo, later) == {"now"}
    assert demo.now == datetime(2026, 11, 30, 14, 0, tzinfo=UTC)


def test_tdm_window_changes_only_that_zone(demo):
    """The rz1 window becomes 06:00-09:00; at 14:00 the zone is then closed, whereas the
    demo's 08:00-21:00 window is open."""
    variant = whatif.with_tdm_window(demo, "rz1", "06:00-09:00")
    assert changed_fields(demo, variant) == {"scheduler"}
    assert variant.scheduler.plugin("tdm").arguments["tdm.revocable-zone.rz1"] == "06:00-09:00"
    assert demo.tdm.zone_active("rz1", demo.now, demo.tz)
    assert not variant.tdm.zone_active("rz1", variant.now, variant.tz)
    assert variant.scheduler.actions == demo.scheduler.actions


def test_tdm_window_rejects_bad_syntax(demo):
    with pytest.raises(InputError, match=r"tdm\.revocable-zone\.rz1"):
        whatif.with_tdm_window(demo, "rz1", "8am-9pm")


def test_queue_changes_only_that_queue(demo):
    """team-b's deserved goes from 16 to 12 GPUs: accepted, and no other queue changes. 20 is
    refused: its sibling team-a deserves 24 and 24 + 20 = 44 > research's 40 (sibling rule)."""
    variant = whatif.with_queue(demo, "team-b", deserved={"nvidia.com/gpu": 12})
    assert changed_fields(demo, variant) == {"queues"}
    before = {q.name: q for q in demo.queues}
    after = {q.name: q for q in variant.queues}
    assert after["team-b"].deserved == Resources.parse({"nvidia.com/gpu": 12})
    assert {n for n in before if before[n] != after[n]} == {"team-b"}
    with pytest.raises(InputError, match="deserved"):
        whatif.with_queue(demo, "team-b", deserved={"nvidia.com/gpu": 20})


def test_topology_limit_single_and_all(demo):
    """One job gets tier 2; ``all`` touches exactly the jobs that have a topology spec."""
    one = whatif.with_topology_limit(demo, "default/llm-pretrain", 2)
    assert one.job_by_key["default/llm-pretrain"].network_topology == NetworkTopology(
        "hard", 2, None
    )
    assert {j.key for j in one.jobs if j != demo.job_by_key[j.key]} == {"default/llm-pretrain"}
    every = whatif.with_topology_limit(demo, "all", 3, "soft")
    with_spec = {j.key for j in demo.jobs if j.network_topology is not None}
    assert {j.key for j in every.jobs if j != demo.job_by_key[j.key]} == with_spec
    assert all(every.job_by_key[k].network_topology.mode == "soft" for k in with_spec)


def test_nodes_added_and_removed(demo):
    """Removing node-001 drops rl-tuning's pod that ran there; adding a node adds exactly one
    node, with nvidia.com/gpu allocatable derived from its devices."""
    extra = Node("node-009", Resources.parse({"cpu": "8", "memory": "32Gi"}))
    variant = whatif.with_nodes(demo, added=[extra], removed=["node-001"])
    names = [n.name for n in variant.nodes]
    assert "node-001" not in names and names[-1] == "node-009"
    assert len(names) == len(demo.nodes)
    rl = variant.job_by_key["default/rl-tuning"]
    assert [r.node for r in rl.running] == ["node-003"]
    with pytest.raises(InputError, match="no such node"):
        whatif.with_nodes(demo, removed=["node-404"])


def test_jobs_added_and_removed(demo):
    job = Job("probe", queue="team-a", tasks=(Task("main", 1, Resources.parse({"cpu": "1"})),))
    variant = whatif.with_jobs(demo, added=[job], removed=["default/notebooks"])
    keys = [j.key for j in variant.jobs]
    assert "default/notebooks" not in keys and keys[-1] == "default/probe"
    with pytest.raises(InputError, match="queue"):
        whatif.with_jobs(demo, added=[Job("lost", queue="nowhere", tasks=job.tasks)])


@pytest.mark.timeout(240)
def test_sweep_one_row_per_variant_and_engine(demo):
    """Two variants × two engines → four rows, in variant-then-engine order, with the metric
    columns of ``optimizer.metrics``."""
    frame = whatif.sweep(
        demo,
        {"baseline": demo, "late": lambda i: whatif.at(i, "2026-11-30T22:00:00Z")},
        engines=("greedy", "cpsat"),
        time_limit=3,
        progress=False,
    )
    assert list(zip(frame["variant"], frame["engine"], strict=True)) == [
        ("baseline", "greedy"),
        ("baseline", "cpsat"),
        ("late", "greedy"),
        ("late", "cpsat"),
    ]
    for column in ("jobs_admitted", "gpu_allocation_ratio", "mean_lca_tier", "fragmentation"):
        assert column in frame.columns


def only_problem(caught: pytest.ExceptionInfo[InputError]) -> Problem:
    problems = caught.value.problems
    assert len(problems) == 1, [str(p) for p in problems]
    return problems[0]


def test_negative_tier_limit_is_refused(demo):
    """The PodGroup CRD refuses a negative highestTierAllowed, so a variant cannot have one."""
    with pytest.raises(InputError) as caught:
        whatif.with_topology_limit(demo, "default/llm-pretrain", -1)
    p = only_problem(caught)
    assert (p.file, p.obj, p.field) == (
        "what-if",
        'Job "default/llm-pretrain"',
        "networkTopology.highestTierAllowed",
    )
    assert "must not be negative" in p.message


def test_unknown_topology_mode_is_refused(demo):
    with pytest.raises(InputError) as caught:
        whatif.with_topology_limit(demo, "default/bert-finetune", 1, "strict")
    p = only_problem(caught)
    assert (p.obj, p.field) == ('Job "default/bert-finetune"', "networkTopology.mode")
    assert "hard or soft" in p.message


def test_queue_variant_breaking_a_webhook_rule_is_refused(demo):
    """team-a guarantees 8 GPUs; a deserved of 4 would put its guarantee above its deserved,
    which the Queue ValidatingAdmissionPolicy refuses."""
    with pytest.raises(InputError) as caught:
        whatif.with_queue(demo, "team-a", deserved={"nvidia.com/gpu": 4})
    p = only_problem(caught)
    assert (p.file, p.obj, p.field) == ("what-if", 'Queue "team-a"', "guarantee.nvidia.com/gpu")
    assert "must be <= deserved.nvidia.com/gpu (4)" in p.message


ONE_CPU = Task("main", 1, Resources.parse({"cpu": "1"}))


@pytest.mark.parametrize(
    ("job", "field", "fragment"),
    [
        (Job("lost", queue="nowhere", tasks=(ONE_CPU,)), "queue", 'queue "nowhere" does not exist'),
        (
            Job("probe", queue="research", tasks=(ONE_CPU,)),
            "queue",
            "not a leaf queue (child queues: team-a, team-b)",
        ),
        (
            Job(
                "ghost",
                queue="team-b",
                tasks=(ONE_CPU,),
                running=(RunningPod(0, "node-404", "main"),),
            ),
            "running[0].node",
            'node "node-404" does not exist',
        ),
        (Job("notebooks", queue="inference", tasks=(ONE_CPU,)), "name", "duplicate job name"),
    ],
    ids=["missing-queue", "parent-queue", "missing-node", "duplicate"],
)
def test_job_variant_breaking_a_rule_is_refused(demo, job, field, fragment):
    """An added job must name an existing leaf queue (research has children, and Volcano only
    schedules jobs of leaf queues), run its pods on existing nodes, and have a name of its own
    in its namespace (the demo has a default/notebooks)."""
    with pytest.raises(InputError) as caught:
        whatif.with_jobs(demo, added=[job])
    p = only_problem(caught)
    assert (p.file, p.obj, p.field) == ("what-if", f'Job "{job.key}"', field)
    assert fragment in p.message


def test_node_variant_in_an_unconfigured_zone_is_refused(demo):
    """The demo's tdm plugin configures rz1 only."""
    extra = Node("node-009", Resources.parse({"cpu": "8"}), labels={REVOCABLE_ZONE: "rz2"})
    with pytest.raises(InputError) as caught:
        whatif.with_nodes(demo, added=[extra])
    p = only_problem(caught)
    assert (p.obj, p.field) == ('Node "node-009"', f"labels.{REVOCABLE_ZONE}")
    assert 'revocable zone "rz2" is not configured' in p.message


def test_scheduler_argument_variant_is_checked_like_the_file(demo):
    """tdm is the sixth plugin of the demo's second tier."""
    with pytest.raises(InputError) as caught:
        whatif.with_scheduler_arguments(demo, "tdm", **{"tdm.evict.period": "soon"})
    p = only_problem(caught)
    assert (p.obj, p.field) == (
        'Instance "demo"',
        "scheduler.tiers[1].plugins[5].arguments.tdm.evict.period",
    )
