"""``explain`` on crafted instances: one per blocker kind, where the job has exactly one reason
to stay pending, worked out by hand in each case's docstring (``explain_cases.py``). Each test
checks that explain names exactly that blocker, with the right amount, and that applying the
suggested change through ``optimizer.whatif`` and solving again admits the job (the verifier
accepting that plan)."""

from __future__ import annotations

import pytest
from explain_cases import (
    cordoned_case,
    evict_case,
    gpu_filter_case,
    hierarchy_case,
    nodes_case,
    proportion_case,
    queue_case,
    revocable_case,
    selector_case,
    shared_gpu_case,
    taint_case,
    tier_name_case,
    topology_case,
    two_blocker_case,
    window_case,
)

from models.errors import InputError
from optimizer.explain import explain
from optimizer.options import SolveOptions
from optimizer.plan import ADMITTED
from optimizer.reasons import rules as kinds
from optimizer.solve import solve
from optimizer.verify import verify

OPTIONS = SolveOptions.of(time_limit=10.0, workers=1, deterministic=True)

CASES = [
    (queue_case, kinds.QUEUE, "queue research: nvidia.com/gpu capability +4 (8 → 12)"),
    (topology_case, kinds.TOPOLOGY, "highestTierAllowed 1 → 2"),
    (window_case, kinds.TDM_WINDOW, "after 18:00, when zone rz1 opens"),
    (revocable_case, kinds.TDM_REVOCABLE, 'annotate volcano.sh/revocable-zone: "*"'),
    (selector_case, kinds.SELECTOR, "label 1 node(s) (gpu-a-002) with pool=b"),
    (taint_case, kinds.TAINT, "tolerate taint dedicated=infer:NoSchedule"),
    (gpu_filter_case, kinds.GPU_FILTER, "allow GPU type NVIDIA-A100-SXM4-80GB"),
    (evict_case, kinds.EVICT, "if 2 pod(s) of preemptable job default/batch-x are evicted"),
    (nodes_case, kinds.NODES, "with 2 more node(s) like gpu-a-001 in rack-1"),
    (hierarchy_case, kinds.QUEUE, "queue research: nvidia.com/gpu capability +4 (8 → 12)"),
    (tier_name_case, kinds.TOPOLOGY, "highestTierName rack → spine"),
    (cordoned_case, kinds.TAINT, "uncordon gpu-a-001"),
    (proportion_case, kinds.QUEUE, "queue default: nvidia.com/gpu capability +4 (4 → 8)"),
    (shared_gpu_case, kinds.EVICT, "if 1 pod(s) of preemptable job default/share are evicted"),
]


def _admits(instance, explanation, engine):
    variant = explanation.variant
    assert variant is not None
    changed = variant(instance)
    plan = solve(changed, engine, OPTIONS)
    assert verify(changed, plan) == []
    return plan.job("default/want").status == ADMITTED


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
@pytest.mark.parametrize(("build", "kind", "text"), CASES, ids=[c[0].__name__ for c in CASES])
def test_explain_names_the_one_blocker_and_its_amount(build, kind, text, engine):
    instance = build()
    found = explain(instance, "want", engine, options=OPTIONS)
    assert found.status == "pending"
    assert [c.kind for c in found.changes] == [kind]
    assert text in found.changes[0].text
    assert found.blockers[0].kind == kind
    assert found.admitted_after is True
    assert _admits(instance, found, engine)


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_two_blockers_are_both_named_with_their_amounts(engine):
    instance = two_blocker_case()
    found = explain(instance, "want", engine, options=OPTIONS)
    texts = {c.kind: c.text for c in found.changes}
    assert set(texts) == {kinds.QUEUE, kinds.SELECTOR}
    assert "capability +4 (8 → 12)" in texts[kinds.QUEUE]
    assert "label 1 node(s) (gpu-a-002) with pool=b" in texts[kinds.SELECTOR]
    assert {b.kind for b in found.blockers} == {kinds.QUEUE, kinds.SELECTOR}
    assert not any(b.enough for b in found.blockers)
    assert _admits(instance, found, engine)


def test_the_minimal_core_proves_the_selector_alone_blocks():
    """With no node labelled pool=b, the selector alone keeps the job out whatever else
    changes: it is the one rule of the minimal core, and the queue limit is not in it."""
    found = explain(two_blocker_case(), "want", "greedy", options=OPTIONS)
    proven = [b.kind for b in found.blockers if b.proven]
    assert proven == [kinds.SELECTOR]


def test_eviction_costs_the_victim_its_gang():
    """batch-x runs 2 pods with minAvailable 1 (the default); losing both stops it."""
    found = explain(evict_case(), "want", "greedy", options=OPTIONS)
    assert any("default/batch-x: 2 pod(s) evicted" in c for c in found.costs)


def test_a_job_the_plan_starts_is_not_explained_as_pending():
    found = explain(selector_case(), "a", "greedy", options=OPTIONS)
    assert found.status == "running"
    assert found.changes == []


def test_a_resource_no_node_offers_is_the_dominant_reason():
    from explain_cases import CAPACITY, TWO_NODES, build

    instance = build(
        CAPACITY,
        TWO_NODES,
        "jobs:\n- name: want\n  tasks:\n  - {name: w, replicas: 1, "
        "resources: {cpu: '1', nvidia.com/mig-3g.20gb: 1}}\n",
    )
    found = explain(instance, "want", "greedy", options=OPTIONS)
    assert found.dominant == "no node offers nvidia.com/mig-3g.20gb, which task w asks for"


def test_an_unknown_or_ambiguous_job_is_bad_input():
    with pytest.raises(InputError, match="no such job"):
        explain(queue_case(), "nope", "greedy", options=OPTIONS)
    with pytest.raises(InputError, match="no such job"):
        explain(queue_case(), "other/want", "greedy", options=OPTIONS)


def test_cpsat_plans_carry_the_dominant_reason_of_each_pending_job():
    plan = solve(selector_case(), "cpsat", OPTIONS)
    decision = plan.job("default/want")
    assert decision.status == "pending"
    assert decision.reason == "task w's nodeSelector pool=b matches none of the nodes with room"
    assert decision.position == 1


def test_a_uuid_filter_names_the_devices_to_allow():
    """want may only use GPU-gpu-a-001-0, on the node a holds whole; the 8 free cards of
    gpu-a-002 are what it needs."""
    from explain_cases import CAPACITY, TWO_NODES, build, running, want

    instance = build(
        CAPACITY,
        TWO_NODES,
        "jobs:\n",
        running("a", "gpu-a-001", 8),
        want(task="annotations: {nvidia.com/use-gpuuuid: GPU-gpu-a-001-0}"),
    )
    found = explain(instance, "want", "greedy", options=OPTIONS)
    (change,) = found.changes
    ids = ", ".join(f"GPU-gpu-a-002-{i}" for i in range(8))
    assert change.text == (
        f"task w of default/want: allow GPU {ids} (drop its nvidia.com/use-gpuuuid)"
    )
    assert _admits(instance, found, "greedy")


def test_a_pod_larger_than_every_node_says_so_with_the_largest():
    from explain_cases import CAPACITY, TWO_NODES, build

    job = "jobs:\n- name: want\n  tasks:\n  - {name: w, replicas: 1, resources: {cpu: '100'}}\n"
    found = explain(build(CAPACITY, TWO_NODES, job), "want", "greedy", options=OPTIONS)
    assert found.dominant == (
        "each pod of task w asks for 100 cpu, more than any node has (largest: 64): it needs "
        "larger nodes"
    )


def test_a_job_that_fits_in_the_room_a_plan_leaves_is_said_to_fit():
    """A hand-written plan that places nothing: want's 8 GPUs fit on either free node."""
    from explain_cases import CAPACITY, TWO_NODES, build, want

    from optimizer.plan import Plan

    instance = build(CAPACITY, TWO_NODES, "jobs:\n", want())
    found = explain(instance, "want", "cpsat", plan=Plan(instance="case"), options=OPTIONS)
    assert found.dominant.startswith("it fits in the room the plan leaves (on gpu-a-00")
    assert found.changes == [] and found.blockers == []


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_nested_queue_limits_rise_parent_first(engine):
    from explain_cases import nested_limits_case

    instance = nested_limits_case()
    found = explain(instance, "want", engine, options=OPTIONS)
    assert [c.text for c in found.changes] == [
        "queue org: nvidia.com/gpu capability +4 (8 → 12)",
        "queue a-team: nvidia.com/gpu capability +4 (8 → 12)",
    ]
    assert _admits(instance, found, engine)
