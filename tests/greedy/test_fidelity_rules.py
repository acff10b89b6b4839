"""Rules of Volcano's preempt, reclaim and resource fit that are easy to get wrong (issue 16).

Each test names, in its docstring, the Volcano function whose rule it checks. Expected plans
are worked out by hand from that rule; every plan must also pass the verifier.
"""

from __future__ import annotations

from typing import Any

from models.instance import Instance
from models.load import from_dict
from optimizer.greedy.engine import open_session, solve
from optimizer.plan import Plan
from optimizer.verify import verify

PRIORITY_TIER = {
    "plugins": [
        {"name": "priority"},
        {"name": "gang", "enablePreemptable": False},
        {"name": "conformance"},
    ]
}


def tiers(*second: str | dict[str, Any]) -> list[dict[str, Any]]:
    plugins = [p if isinstance(p, dict) else {"name": p} for p in second]
    return [PRIORITY_TIER, {"plugins": plugins}]


def job(
    name: str,
    cpu: int,
    *,
    queue: str = "q1",
    priority: int = 0,
    replicas: int = 1,
    running: int = 0,
    node: str = "n1",
    **fields: Any,
) -> dict[str, Any]:
    """A one-task job of ``replicas`` pods of ``cpu`` CPUs (no memory), the first ``running``
    on ``node``; minAvailable 1."""
    return {
        "name": name,
        "queue": queue,
        "priority": priority,
        "minAvailable": fields.pop("minAvailable", 1),
        "tasks": [{"name": "t", "replicas": replicas, "resources": {"cpu": str(cpu)}}],
        "running": [{"index": i, "node": node} for i in range(running)],
        **fields,
    }


def node(name: str, cpu: int, pods: int | None = None) -> dict[str, Any]:
    allocatable: dict[str, Any] = {"cpu": str(cpu), "memory": "64Gi"}
    if pods is not None:
        allocatable["pods"] = pods
    return {"name": name, "allocatable": allocatable}


def instance(
    jobs: list[dict[str, Any]],
    *,
    nodes: list[dict[str, Any]],
    plugins: list[dict[str, Any]],
    actions: str = "enqueue, allocate, preempt",
    queues: list[dict[str, Any]] | None = None,
) -> Instance:
    doc = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "now": "2026-11-30T14:00:00Z",
        "scheduler": {"actions": actions, "tiers": plugins},
        "nodes": nodes,
        "queues": queues or [{"name": "q1"}],
        "jobs": jobs,
    }
    return from_dict(doc, "test")


def checked(inst: Instance) -> Plan:
    plan = solve(inst, seed=0)
    assert verify(inst, plan) == []
    return plan


def outcome(plan: Plan) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(placed, evicted, pipelined): pod → node, names without ``default/``."""
    return (
        {p.pod.removeprefix("default/"): p.node for p in plan.placements},
        {e.pod.removeprefix("default/"): e.node for e in plan.evictions},
        {q.pod.removeprefix("default/"): q.node for q in plan.pipelined},
    )


# -- item 1: preempt never asks Overused ---------------------------------------------------------


def test_preempt_runs_for_an_overused_queue() -> None:
    """``actions/preempt/preempt.go:Execute`` walks every queue with starving jobs and never
    calls ``ssn.Overused`` (only allocate and reclaim do).

    n1: cpu 4, pods 1. q1 (proportion) holds lo (priority 1, cpu 4, running) and waits for hi
    (priority 10, cpu 2). Total cpu 4, pods 1; q1 requests cpu 6, pods 2 → deserved cpu 4,
    memory 0, pods 1 = what it holds → Overused. Allocate drops q1 (and hi would not fit on
    n1 anyway: no pod slot, no cpu). Preempt still runs: victims (priority) [lo];
    ValidateVictims: FutureIdle + lo = cpu 4, pods 1 ≥ cpu 2, pods 1; after evicting lo the
    queue's allocated is cpu 0, so Allocatable (0 + 2 ≤ 4) and the fit pass → hi pipelined on
    n1, lo evicted."""
    inst = instance(
        [job("lo", 4, priority=1, running=1), job("hi", 2, priority=10)],
        nodes=[node("n1", 4, pods=1)],
        plugins=tiers("proportion", "nodeorder"),
    )
    ssn = open_session(inst)
    assert ssn.overused(ssn.queues["q1"])
    assert outcome(checked(inst)) == ({}, {"lo-t-0": "n1"}, {"hi-t-0": "n1"})


# -- item 2: every pod requests one pods slot ----------------------------------------------------


def test_pod_slots_limit_the_allocate_fit_without_predicates() -> None:
    """``api/pod_info.go:GetPodResourceRequest`` adds ``pods: 1`` to every request, and
    ``allocate.go:predicate`` checks ``InitResreq ≤ FutureIdle`` on every dimension, so pod
    slots are counted even without the ``predicates`` plugin (whose pod-count filter is a
    separate check). n1: cpu 8, pods 2; three pods of cpu 1 (minAvailable 1) → two are placed,
    the third finds no slot, though 6 cpu are left."""
    inst = instance(
        [job("j", 1, replicas=3)],
        nodes=[node("n1", 8, pods=2)],
        plugins=tiers("proportion", "nodeorder"),
        actions="enqueue, allocate",
    )
    placed, _, _ = outcome(checked(inst))
    assert placed == {"j-t-0": "n1", "j-t-1": "n1"}


def test_node_declaring_zero_pods_fits_nothing() -> None:
    """``resource_info.go:LessEqual`` in Zero mode: the request's ``pods: 1`` against a node
    whose ``pods`` allocatable is 0 fails, whatever else it has. n0 (cpu 8, pods 0) takes no
    pod; n1 (cpu 1, pods 110) takes the one pod that fits its cpu, the other stays pending."""
    inst = instance(
        [job("j", 1, replicas=2)],
        nodes=[node("n0", 8, pods=0), node("n1", 1)],
        plugins=tiers("nodeorder"),
        actions="enqueue, allocate",
    )
    placed, _, _ = outcome(checked(inst))
    assert placed == {"j-t-0": "n1"}


def test_pod_slot_makes_preempt_evict_and_validate_victims() -> None:
    """The slot in ``preempt.go:preempt``'s "preemptor fits" test and in
    ``ValidateVictims`` (``FutureIdle + Σ victim.Resreq ≥ InitResreq``, pods included).

    n1: cpu 8, pods 2, holding a (priority 1) and b (priority 2), cpu 1 each; hi (priority 10,
    cpu 1) waits. 6 cpu are idle but no slot, so allocate cannot place hi. Preempt: victims
    [a, b] make room (2 slots); victim order is lowest priority first → a; after evicting a,
    FutureIdle has pods 1 → hi fits and is pipelined; b stays."""
    inst = instance(
        [
            job("a", 1, priority=1, running=1),
            job("b", 1, priority=2, running=1),
            job("hi", 1, priority=10),
        ],
        nodes=[node("n1", 8, pods=2)],
        plugins=tiers("nodeorder"),
    )
    assert outcome(checked(inst)) == ({}, {"a-t-0": "n1"}, {"hi-t-0": "n1"})


def test_pod_slots_enter_the_drf_share() -> None:
    """``plugins/drf/drf.go:calculateShare`` takes the largest allocated/total over the
    resource names of the cluster total, and ``pods`` is one of them.

    n1: cpu 100, pods 4. x holds one pod of cpu 20: share max(20/100, 1/4) = 0.25; y holds two
    pods of cpu 1: max(2/100, 2/4) = 0.5. Without the slot y (0.02) would go before x (0.2);
    with it x goes first."""
    inst = instance(
        [
            job("x", 20, replicas=2, running=1),
            job("y", 1, replicas=3, running=2),
        ],
        nodes=[node("n1", 100, pods=4)],
        plugins=tiers("drf", "nodeorder"),
        actions="enqueue, allocate",
    )
    ssn = open_session(inst)
    x, y = ssn.jobs["default/x"], ssn.jobs["default/y"]
    assert ssn.job_order(x, y)
    assert not ssn.job_order(y, x)


# -- item 3: proportion and capacity together ----------------------------------------------------


def _two_quota_plugins(first: str, second: str) -> Instance:
    """n1: cpu 16. q1 (spec deserved cpu 2) holds 1 of 4 pods of cpu 1; q2 (deserved cpu 8)
    holds 2 of 4."""
    return instance(
        [job("a", 1, replicas=4, running=1), job("b", 1, queue="q2", replicas=4, running=2)],
        nodes=[node("n1", 16)],
        plugins=tiers(first, second, "nodeorder"),
        actions="enqueue, allocate",
        queues=[
            {"name": "q1", "deserved": {"cpu": "2"}},
            {"name": "q2", "deserved": {"cpu": "8"}},
        ],
    )


def test_proportion_and_capacity_queue_orders_combine_by_tier_position() -> None:
    """``framework/session_plugins.go:QueueOrderFn``: the first plugin (tier order, then
    position in the tier) with a non-zero answer decides, so with both quota plugins the one
    listed first orders the queues.

    capacity (flat, §5.2): deserved is the spec's, shares q1 1/2 = 0.5, q2 2/8 = 0.25 → q2
    first. proportion (§5.5): water-filling 16 cpu and 110 pod slots over two weight-1 queues
    that each request cpu 4 and 4 pods gives each exactly its request; shares q1 1/4 = 0.25,
    q2 2/4 = 0.5 → q1 first. The plan passes the verifier either way."""
    capacity_first = open_session(_two_quota_plugins("capacity", "proportion"))
    q1, q2 = capacity_first.queues["q1"], capacity_first.queues["q2"]
    assert capacity_first.queue_order(q2, q1)
    proportion_first = open_session(_two_quota_plugins("proportion", "capacity"))
    q1, q2 = proportion_first.queues["q1"], proportion_first.queues["q2"]
    assert proportion_first.queue_order(q1, q2)
    assert _two_quota_plugins("capacity", "proportion").warnings
    checked(_two_quota_plugins("capacity", "proportion"))


def test_proportion_and_capacity_allocatable_is_the_and_of_both() -> None:
    """``framework/session_plugins.go:Allocatable`` ANDs every plugin's answer. q1 may grow to
    capacity's realCapability (cpu 16, no capability) but only to proportion's deserved (cpu
    4, its request): after its 3 pending pods (1 + 3 = 4 ≤ 4) a fourth cpu-1 task would make
    5 > 4. Capacity alone permits it, the combination refuses it."""
    ssn = open_session(_two_quota_plugins("capacity", "proportion"))
    q1 = ssn.queues["q1"]
    pending = [t for t in ssn.jobs["default/a"].tasks.values() if not t.node]
    for task in pending:
        assert ssn.allocatable(q1, task)
        ssn.allocate(task, ssn.nodes["n1"], None)
    assert ssn.plugins["capacity"].allocatable(q1, pending[0])
    assert not ssn.allocatable(q1, pending[0])


# -- item 4: proportion's reclaim gate needs an Open queue ---------------------------------------


def test_proportion_closed_queue_never_reclaims() -> None:
    """``plugins/proportion/proportion.go``: the Preemptive hook is the same
    ``queueAllocatable`` as Allocatable, which is false for a queue that is not Open.

    n1: cpu 4, filled by v (queue lend, cpu 4, running). r (queue need, cpu 2, Inqueue) is
    starving. Water-filling 4 cpu over two weight-1 queues: lend deserved 2, need 2 → need is
    within deserved (0 + 2 ≤ 2) and lend holds 4 > 2, so with need Open reclaim evicts v and
    pipelines r. With need Closed the gate fails and nothing happens."""

    def run(state: str) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        inst = instance(
            [job("v", 4, queue="lend", running=1), job("r", 2, queue="need", phase="Inqueue")],
            nodes=[node("n1", 4)],
            plugins=tiers("proportion", "nodeorder"),
            actions="enqueue, allocate, reclaim",
            queues=[{"name": "lend"}, {"name": "need", "state": state}],
        )
        return outcome(checked(inst))

    assert run("Open") == ({}, {"v-t-0": "n1"}, {"r-t-0": "n1"})
    assert run("Closed") == ({}, {}, {})


def test_pod_slot_makes_reclaim_evict() -> None:
    """The slot in ``reclaim.go:reclaimForTask`` (``ValidateVictims`` and "evict until
    ``InitResreq ≤ FutureIdle``"), without the ``predicates`` plugin.

    n1: cpu 8, pods 1, holding v (queue lend, cpu 1). r (queue need, deserved cpu 2, cpu 1,
    Inqueue) cannot be allocated: 7 cpu idle but no slot. Reclaim: need is Preemptive (0 + 1
    ≤ 2 deserved); gang's tier-1 Reclaimable keeps nothing (v's job is at its minAvailable),
    so capacity decides: lend deserves nothing → v is an immediate victim; evicting it frees
    the slot → r pipelined on n1."""
    inst = instance(
        [job("v", 1, queue="lend", running=1), job("r", 1, queue="need", phase="Inqueue")],
        nodes=[node("n1", 8, pods=1)],
        plugins=tiers("capacity", "nodeorder"),
        actions="enqueue, allocate, reclaim",
        queues=[{"name": "lend"}, {"name": "need", "deserved": {"cpu": "2"}}],
    )
    assert outcome(checked(inst)) == ({}, {"v-t-0": "n1"}, {"r-t-0": "n1"})
