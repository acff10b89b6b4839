"""The queue quota plugins, capacity (flat and hierarchical) and proportion, hook by hook.

Amounts are in vcopt units: cpu and scalars in milli-units (1 cpu = 1000), memory in bytes.
Expected values are worked by hand from volcano-scheduler.md §5, §8.2–§8.3, §9 and seed 004
§5–§6; each docstring gives the reasoning. The seed 004 §6.3 scenarios (case5–case11) describe
their queue trees only in words; the trees below are the smallest ones that match the words, and
only the plugin's decision is tested (is the running victim in the reclaimable list).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from models.load import from_dict
from optimizer.greedy.api import QueueInfo, TaskInfo
from optimizer.greedy.engine import solve as engine_solve
from optimizer.greedy.plugins.capacity import CapacityPlugin, reclaim_level
from optimizer.greedy.plugins.proportion import ProportionPlugin
from optimizer.greedy.session import PERMIT, REJECT, Session

A100 = "example.com/a100"
GI = 2**30
REGISTRY = {"capacity": CapacityPlugin, "proportion": ProportionPlugin}
BIG_NODE = {"name": "n1", "allocatable": {"cpu": "16", "memory": "16Gi", A100: 8}}


def q(name: str, parent: str = "", **fields: Any) -> dict[str, Any]:
    """A queue; ``deserved``/``capability``/``guarantee`` take k8s quantities."""
    out: dict[str, Any] = {"name": name, **fields}
    if parent:
        out["parent"] = parent
    return out


def job(
    name: str,
    queue: str,
    resources: dict[str, Any],
    replicas: int = 1,
    running: int = 0,
    **fields: Any,
) -> dict[str, Any]:
    """A one-task job whose first ``running`` pods run on n1."""
    return {
        "name": name,
        "queue": queue,
        "minAvailable": fields.pop("minAvailable", 1),
        "tasks": [{"name": "t", "replicas": replicas, "resources": resources}],
        "running": [{"index": i, "node": "n1"} for i in range(running)],
        **fields,
    }


def build(
    queues: list[dict[str, Any]],
    jobs: list[dict[str, Any]],
    *,
    plugin: str = "capacity",
    hierarchy: bool = False,
    level: object = None,
    node: dict[str, Any] | None = None,
) -> Any:
    option: dict[str, Any] = {"name": plugin}
    if hierarchy:
        option["enableHierarchy"] = True
    if level is not None:
        option["arguments"] = {"ancestorReclaimLevel": level}
    doc = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "now": "2026-11-30T14:00:00Z",
        "scheduler": {"actions": "enqueue, allocate, reclaim", "tiers": [{"plugins": [option]}]},
        "nodes": [node or BIG_NODE],
        "queues": queues,
        "jobs": jobs,
    }
    return from_dict(doc, "test")


def session(instance: Any) -> Session:
    ssn = Session(instance, seed=0)
    ssn.open(REGISTRY)
    return ssn


def make(queues: list[dict[str, Any]], jobs: list[dict[str, Any]], **kw: Any) -> Session:
    return session(build(queues, jobs, **kw))


def capacity(ssn: Session) -> CapacityPlugin:
    plugin = ssn.plugins["capacity"]
    assert isinstance(plugin, CapacityPlugin)
    return plugin


def proportion(ssn: Session) -> ProportionPlugin:
    plugin = ssn.plugins["proportion"]
    assert isinstance(plugin, ProportionPlugin)
    return plugin


def task(ssn: Session, job_name: str, index: int = 0) -> TaskInfo:
    return ssn.jobs[f"default/{job_name}"].tasks[f"default/{job_name}-t-{index}"]


def queue(ssn: Session, name: str) -> QueueInfo:
    return ssn.queues[name]


def reclaim(ssn: Session, reclaimer: str, victim: str) -> tuple[list[str], int]:
    """The capacity decision for the first pod of ``reclaimer`` against the first (running)
    pod of ``victim``."""
    victims, vote = capacity(ssn).reclaimable(task(ssn, reclaimer), [task(ssn, victim)])
    return [t.uid for t in victims], vote


CPU2 = {"cpu": "2", "memory": "2Gi"}


# -- capacity: queue order -----------------------------------------------------------------------


def test_capacity_flat_queue_order() -> None:
    """§5.4 flat QueueOrderFn: priority descending, then share ascending, then on a share tie the
    queue with a deserved before a best-effort one (``compareShareWithDeserved``).

    Shares (§5.2): qd 1/1 = 1, qa 2/4 = 0.5, qb 2/2 = 1, qc has no deserved → 1 (§9.9). qd wins
    on priority although its share is the highest; qb and qc tie at 1 and qb goes first for its
    deserved, although qc was created first (the fallback would pick qc).
    """
    ssn = make(
        [
            q("qd", priority=5, deserved={"cpu": "1"}),
            q("qa", deserved={"cpu": "4"}),
            q("qc"),
            q("qb", deserved={"cpu": "2"}),
        ],
        [
            job("jd", "qd", {"cpu": "1"}, running=1),
            job("ja", "qa", {"cpu": "2"}, running=1),
            job("jc", "qc", {"cpu": "1"}),
            job("jb", "qb", {"cpu": "2"}, running=1),
        ],
    )
    attrs = capacity(ssn).attrs
    assert (attrs["qa"].share, attrs["qb"].share, attrs["qc"].share) == (0.5, 1.0, 1.0)
    qa, qb, qc, qd = (queue(ssn, n) for n in ("qa", "qb", "qc", "qd"))
    assert ssn.queue_order(qd, qa) and not ssn.queue_order(qa, qd)
    assert ssn.queue_order(qa, qb) and not ssn.queue_order(qb, qa)
    assert ssn.queue_order(qb, qc) and not ssn.queue_order(qc, qb)


def hierarchy_for_order() -> Session:
    """A (deserved 4) → a1 (2), a2 (2); B (deserved 4) → b1 (2); running cpu a1 0.5, a2 3,
    b1 1.8. Shares at open (§5.3, allocated rolled up): a1 .25, a2 1.5, A 3.5/4 = .875,
    b1 .9, B 1.8/4 = .45."""
    return make(
        [
            q("qa", deserved={"cpu": "4"}),
            q("a1", "qa", deserved={"cpu": "2"}),
            q("a2", "qa", deserved={"cpu": "2"}),
            q("qb", deserved={"cpu": "4"}),
            q("b1", "qb", deserved={"cpu": "2"}),
        ],
        [
            job("j1", "a1", {"cpu": "500m"}, running=1),
            job("j2", "a2", {"cpu": "3"}, running=1),
            job("j3", "b1", {"cpu": "1800m"}, running=1),
        ],
        hierarchy=True,
    )


def test_hierarchical_queue_order_leaf_before_non_leaf_and_non_leaves_by_share() -> None:
    """§5.4 hierarchical: a leaf goes before a non-leaf whatever the shares (a2 at 1.5 before B
    at .45); two non-leaves compare their own shares (B .45 before A .875)."""
    ssn = hierarchy_for_order()
    attrs = capacity(ssn).attrs
    assert attrs["qa"].share == pytest.approx(0.875)
    assert attrs["qb"].share == pytest.approx(0.45)
    a2, big_a, big_b = queue(ssn, "a2"), queue(ssn, "qa"), queue(ssn, "qb")
    assert ssn.queue_order(a2, big_b) and not ssn.queue_order(big_b, a2)
    assert ssn.queue_order(big_b, big_a) and not ssn.queue_order(big_a, big_b)


def test_hierarchical_queue_order_leaves_by_lca_children() -> None:
    """§5.4: two leaves compare the children of their deepest common ancestor. a1 and b1 meet at
    root, so A (.875) and B (.45) decide: b1 first, although a1's own share (.25) is below
    b1's (.9). a1 and a2 meet at A, so they compare themselves: a1 (.25) before a2 (1.5)."""
    ssn = hierarchy_for_order()
    a1, a2, b1 = queue(ssn, "a1"), queue(ssn, "a2"), queue(ssn, "b1")
    assert ssn.queue_order(b1, a1) and not ssn.queue_order(a1, b1)
    assert ssn.queue_order(a1, a2) and not ssn.queue_order(a2, a1)


# -- capacity: allocatable and enqueue -------------------------------------------------------------


def ancestor_capability(hierarchy: bool) -> Session:
    """research (capability cpu 4) → team-a (running cpu 3), team-b (pending tasks of cpu 2 and
    cpu 1)."""
    return make(
        [
            q("research", capability={"cpu": "4"}),
            q("team-a", "research"),
            q("team-b", "research"),
        ],
        [
            job("run", "team-a", {"cpu": "3"}, running=1),
            {
                "name": "want",
                "queue": "team-b",
                "minAvailable": 1,
                "tasks": [
                    {"name": "big", "replicas": 1, "resources": {"cpu": "2"}},
                    {"name": "small", "replicas": 1, "resources": {"cpu": "1"}},
                ],
            },
        ],
        hierarchy=hierarchy,
    )


def test_ancestor_real_capability_blocks_allocatable() -> None:
    """§5.3/§5.4: team-b inherits research's capability (cpu 4) and has realCapability 4, so
    0 + 2 ≤ 4 passes at the leaf; but team-a's cpu 3 counts at research too, and there
    3 + 2 = 5 > 4 fails. The cpu 1 task reaches exactly 4, which passes: the comparison is
    strict (`>` fails) (§9.10)."""
    ssn = ancestor_capability(hierarchy=True)
    plugin = capacity(ssn)
    team_b = queue(ssn, "team-b")
    big = ssn.jobs["default/want"].tasks["default/want-big-0"]
    small = ssn.jobs["default/want"].tasks["default/want-small-0"]
    assert plugin.attrs["research"].allocated[ssn.dims.index["cpu"]] == 3000
    assert not ssn.allocatable(team_b, big)
    assert plugin.quota_reason(team_b, big) == "queue research: cpu 5 > realCapability 4"
    assert ssn.allocatable(team_b, small)
    assert plugin.quota_reason(team_b, small) is None


def test_flat_mode_ignores_ancestors() -> None:
    """§5.2: without enableHierarchy only the queue itself is checked; team-b has no capability,
    so its realCapability is the cluster's cpu 16 and the cpu 2 task fits."""
    ssn = ancestor_capability(hierarchy=False)
    big = ssn.jobs["default/want"].tasks["default/want-big-0"]
    assert ssn.allocatable(queue(ssn, "team-b"), big)


def test_hierarchical_allocatable_rejects_non_leaf_and_closed() -> None:
    """§5.4 Allocatable: false when the queue is not Open, or (hierarchical) not a leaf."""
    ssn = make(
        [q("qp"), q("ql", "qp"), q("qc", "qp", state="Closed")],
        [job("j", "ql", {"cpu": "1"}), job("k", "qc", {"cpu": "1"})],
        hierarchy=True,
    )
    assert ssn.allocatable(queue(ssn, "ql"), task(ssn, "j"))
    assert not ssn.allocatable(queue(ssn, "qp"), task(ssn, "j"))
    assert not ssn.allocatable(queue(ssn, "qc"), task(ssn, "k"))


def test_enqueueable_counts_inqueue_and_elastic() -> None:
    """§5.1/§5.4 flat: queue a has capability cpu 10.

    - run: Running, minResources cpu 2, two running pods of cpu 2 (2 ≥ minMember 1) → allocated
      4, elastic 4 − 2 = 2, inqueue max(0, 2 − 4) = 0;
    - inq: Inqueue, minResources cpu 3, nothing allocated → inqueue 3.
    So a job asking minResources cpu 5 needs 5 + 4 + 3 − 2 = 10 ≤ 10 → Permit; cpu 1 needs 6 →
    Permit; once the cpu 5 job is enqueued (inqueue 8), cpu 1 needs 1 + 4 + 8 − 2 = 11 > 10 →
    Reject. A job without minResources is always permitted (§1.3).
    """
    ssn = make(
        [q("a", capability={"cpu": "10"})],
        [
            job("run", "a", {"cpu": "2"}, replicas=2, running=2, minResources={"cpu": "2"}),
            job("inq", "a", {"cpu": "3"}, phase="Inqueue", minResources={"cpu": "3"}),
            job("fit", "a", {"cpu": "5"}, minResources={"cpu": "5"}),
            job("small", "a", {"cpu": "1"}, minResources={"cpu": "1"}),
            job("nomin", "a", {"cpu": "50"}),
        ],
    )
    state = capacity(ssn).attrs["a"]
    assert (state.inqueue.get("cpu"), state.elastic.get("cpu")) == (3000, 2000)
    fit, small = ssn.jobs["default/fit"], ssn.jobs["default/small"]
    assert ssn.job_enqueueable(fit)
    assert ssn.job_enqueueable(small)
    ssn.job_enqueued(fit)
    assert state.inqueue.get("cpu") == 8000
    assert not ssn.job_enqueueable(small)
    assert ssn.job_enqueueable(ssn.jobs["default/nomin"])


def test_hierarchical_enqueued_counts_at_every_ancestor() -> None:
    """§5.4: JobEnqueued adds minReq to the leaf and every ancestor, and JobEnqueueable checks
    leaf to root. P has capability cpu 6, inherited by L1 and L2. j2 (cpu 4) fits before j1 is
    enqueued (4 ≤ 6 everywhere); after j1 (cpu 4) is enqueued in L1, P's inqueue is 4 and j2 needs
    4 + 4 = 8 > 6 at P → Reject, although its own leaf L2 is still empty. A job in a Closed leaf
    is rejected even without minResources (the state check comes first)."""
    ssn = make(
        [
            q("qp", capability={"cpu": "6"}),
            q("ql1", "qp"),
            q("ql2", "qp"),
            q("qc", "qp", state="Closed"),
        ],
        [
            job("j1", "ql1", {"cpu": "4"}, minResources={"cpu": "4"}),
            job("j2", "ql2", {"cpu": "4"}, minResources={"cpu": "4"}),
            job("jc", "qc", {"cpu": "1"}),
        ],
        hierarchy=True,
    )
    attrs = capacity(ssn).attrs
    j1, j2 = ssn.jobs["default/j1"], ssn.jobs["default/j2"]
    assert ssn.job_enqueueable(j2)
    ssn.job_enqueued(j1)
    assert [attrs[n].inqueue.get("cpu") for n in ("ql1", "qp", "ql2")] == [4000, 4000, 0]
    assert not ssn.job_enqueueable(j2)
    assert capacity(ssn).job_enqueueable(ssn.jobs["default/jc"]) == REJECT


# -- capacity: shares through events and the non-leaf surprise ------------------------------------


def test_hierarchical_events_update_only_the_leaf_share() -> None:
    """§5.3/§9.9: the allocate event adds the task to the leaf and every ancestor, but only the
    leaf's share is recomputed. L (deserved 2) goes to 1/2 = .5; P's allocated becomes 1 but
    its share stays at the session-open 0. Undoing the allocation (deallocate) reverses it."""
    ssn = make(
        [q("qp", deserved={"cpu": "4"}), q("ql", "qp", deserved={"cpu": "2"})],
        [job("j", "ql", {"cpu": "1"})],
        hierarchy=True,
    )
    attrs = capacity(ssn).attrs
    cpu = ssn.dims.index["cpu"]
    op = ssn.allocate(task(ssn, "j"), ssn.nodes["n1"], None)
    assert (attrs["ql"].allocated[cpu], attrs["ql"].share) == (1000, 0.5)
    assert (attrs["qp"].allocated[cpu], attrs["qp"].share) == (1000, 0.0)
    assert attrs["root"].allocated[cpu] == 1000
    ssn.undo(op)
    assert (attrs["ql"].allocated[cpu], attrs["ql"].share) == (0, 0.0)
    assert attrs["qp"].allocated[cpu] == 0


def test_flat_events_update_share() -> None:
    """§5.2: a queue with deserved cpu 4 at allocated 1 has share 1/4; allocating its second cpu 1
    task makes it 2/4."""
    ssn = make(
        [q("a", deserved={"cpu": "4"})], [job("j", "a", {"cpu": "1"}, replicas=2, running=1)]
    )
    state = capacity(ssn).attrs["a"]
    assert state.share == 0.25
    ssn.allocate(task(ssn, "j", 1), ssn.nodes["n1"], None)
    assert state.share == 0.5


def test_job_in_non_leaf_queue_disables_capacity() -> None:
    """§5.3/§9.9 [surprise]: one job in a non-leaf queue makes the plugin not ready for the whole
    session: Allocatable and JobEnqueueable reject everything (even for the leaf L), Reclaimable
    returns Reject, and no queue order is registered. The same instance with the job in the leaf
    has the queue order."""
    good = build(
        [q("qp", deserved={"cpu": "4"}), q("ql", "qp", deserved={"cpu": "2"}), q("qm", "qp")],
        [job("j", "ql", {"cpu": "1"}), job("k", "qm", {"cpu": "1"}, running=1)],
        hierarchy=True,
    )
    assert session(good).has_hook("queue_order")
    moved = tuple(replace(j, queue="qp") if j.name == "k" else j for j in good.jobs)
    ssn = session(good.replace(jobs=moved))
    plugin = capacity(ssn)
    assert not plugin.ready
    assert not ssn.has_hook("queue_order")
    assert not ssn.allocatable(queue(ssn, "ql"), task(ssn, "j"))
    assert "non-leaf queue qp" in (plugin.quota_reason(queue(ssn, "ql"), task(ssn, "j")) or "")
    assert plugin.job_enqueueable(ssn.jobs["default/j"]) == REJECT
    assert plugin.reclaimable(task(ssn, "j"), [task(ssn, "k")]) == ([], REJECT)


def test_capacity_has_no_overused_hook() -> None:
    """§5.4/§9.9: capacity registers no Overused hook, so even a queue far above its deserved is
    never dropped from allocate."""
    ssn = make([q("a", deserved={"cpu": "1"})], [job("j", "a", {"cpu": "4"}, running=1)])
    assert not ssn.has_hook("overused")
    assert not ssn.overused(queue(ssn, "a"))


# -- proportion ------------------------------------------------------------------------------------


def proportion_cluster() -> Session:
    """Cluster cpu 14. q1 (weight 1) requests 2 pending; q2 (weight 1) holds 4 running and
    requests 6 more (request 10); q3 (weight 2) requests 8 pending.

    Water-filling (§5.5): round 1 splits 14 as 3.5 / 3.5 / 7: q1 is capped at its request 2
    (met), q2 gets 3.5, q3 7; remaining 14 − 12.5 = 1.5. Round 2 splits 1.5 over q2, q3 by 1:2:
    q2 4, q3 8 (= request, met); nothing remains. Deserved cpu: q1 2, q2 4, q3 8. Memory is
    requested by nobody, so every deserved memory is clipped to 0.
    """
    return make(
        [q("q1"), q("q2"), q("q3", weight=2)],
        [
            job("j1", "q1", {"cpu": "1"}, replicas=2),
            job("j2", "q2", {"cpu": "1"}, replicas=10, running=4),
            job("j3", "q3", {"cpu": "1"}, replicas=8),
        ],
        plugin="proportion",
        node={"name": "n1", "allocatable": {"cpu": "14", "memory": "16Gi"}},
    )


def test_proportion_water_filled_deserved_and_order() -> None:
    """See :func:`proportion_cluster`. Shares: q1 0/2 = 0, q2 4/4 = 1, q3 0 → q1 before q2."""
    ssn = proportion_cluster()
    attrs = proportion(ssn).attrs
    assert [attrs[n].deserved.get("cpu") for n in ("q1", "q2", "q3")] == [2000, 4000, 8000]
    assert [attrs[n].deserved.get("memory") for n in ("q1", "q2", "q3")] == [0, 0, 0]
    assert [attrs[n].share for n in ("q1", "q2", "q3")] == [0.0, 1.0, 0.0]
    assert ssn.queue_order(queue(ssn, "q1"), queue(ssn, "q2"))
    assert not ssn.queue_order(queue(ssn, "q2"), queue(ssn, "q1"))


def test_proportion_overused() -> None:
    """§5.5 Overused: deserved ≤ allocated on every dimension, ``pods`` included: every pod
    requests one slot (``api.GetPodResourceRequest``), so the water-filling also shares the
    110 pod slots of n1 and clips them to each queue's request. q2: cpu 4 ≤ 4 and memory 0 ≤
    0, but its deserved pods are its request 10 > the 4 it holds → not overused while it has
    pending pods. q1 and q3 hold nothing below a positive deserved → not overused. Once all of
    q2's pods run (cpu 10 ≥ 4, pods 10 ≥ 10) it is overused."""
    ssn = proportion_cluster()
    plugin = proportion(ssn)
    assert plugin.attrs["q2"].deserved.get("pods") == 10
    assert not ssn.overused(queue(ssn, "q2"))
    assert not ssn.overused(queue(ssn, "q1"))
    assert not ssn.overused(queue(ssn, "q3"))
    for index in range(4, 10):
        ssn.allocate(task(ssn, "j2", index), ssn.nodes["n1"], None)
    assert ssn.overused(queue(ssn, "q2"))


def test_proportion_allocatable_against_deserved() -> None:
    """§5.5 Allocatable: allocated + Resreq ≤ deserved (not realCapability), strict on the
    task's dimensions. q1 (deserved 2) takes its two cpu 1 tasks (0+1, 1+1 ≤ 2); a third cpu 1
    would make 3 > 2. q2 is at 4 of 4, so 5 > 4 fails. Preemptive is the same check."""
    ssn = proportion_cluster()
    plugin = proportion(ssn)
    q1, q2 = queue(ssn, "q1"), queue(ssn, "q2")
    first, second = task(ssn, "j1", 0), task(ssn, "j1", 1)
    assert ssn.allocatable(q1, first)
    ssn.allocate(first, ssn.nodes["n1"], None)
    assert plugin.attrs["q1"].share == 0.5
    assert ssn.allocatable(q1, second)
    ssn.allocate(second, ssn.nodes["n1"], None)
    assert not ssn.allocatable(q1, first)
    assert plugin.quota_reason(q1, first) == "queue q1: cpu 3 > deserved 2"
    pending_q2 = task(ssn, "j2", 9)
    assert not ssn.allocatable(q2, pending_q2)
    assert not ssn.preemptive(q2, pending_q2)
    assert ssn.preemptive(queue(ssn, "q3"), task(ssn, "j3"))


def test_proportion_reclaimable_stops_at_deserved() -> None:
    """§5.5 Reclaimable. Cluster cpu 8; lend (weight 1) runs 3 × cpu 2 (request 6), need (weight
    1) asks 4 × cpu 2 (request 8). One round gives 4 and 4, nothing remains: deserved 4 each.
    Walking lend's tasks: 6 is not ≤ 4 → take v0 (clone 4); 4 ≤ 4 → v1 and v2 stay."""
    ssn = make(
        [q("lend"), q("need")],
        [
            job("v", "lend", {"cpu": "2"}, replicas=3, running=3),
            job("r", "need", {"cpu": "2"}, replicas=4),
        ],
        plugin="proportion",
        node={"name": "n1", "allocatable": {"cpu": "8", "memory": "16Gi"}},
    )
    plugin = proportion(ssn)
    assert plugin.attrs["lend"].deserved.get("cpu") == 4000
    assert ssn.overused(queue(ssn, "lend"))
    victims, vote = plugin.reclaimable(task(ssn, "r"), [task(ssn, "v", i) for i in range(3)])
    assert ([t.uid for t in victims], vote) == (["default/v-t-0"], PERMIT)


# -- capacity: preemptive -------------------------------------------------------------------------


def preemptive_tree(level: int) -> Session:
    """P (deserved cpu 10) → a (deserved cpu 1, holds cpu 2, wants cpu 1 more) and b (capability
    cpu 2, holds cpu 2, wants cpu 1 more)."""
    return make(
        [
            q("qp", deserved={"cpu": "10"}),
            q("a", "qp", deserved={"cpu": "1"}),
            q("b", "qp", capability={"cpu": "2"}),
        ],
        [
            job("ra", "a", {"cpu": "2"}, running=1),
            job("wa", "a", {"cpu": "1"}),
            job("rb", "b", {"cpu": "2"}, running=1),
            job("wb", "b", {"cpu": "1"}),
        ],
        hierarchy=True,
        level=level,
    )


def test_preemptive_falls_back_to_ancestors_with_reclaim_level() -> None:
    """§5.4 Preemptive: a's futureUsed 3 > deserved 1 on cpu, the only requested dimension, so
    the leaf fails the "partly ≤ deserved" test. With ancestorReclaimLevel 0 that is the answer;
    with 1, the parent P is tried: 2 + 1 = 3 ≤ 10 → preemptive."""
    flat_level = preemptive_tree(0)
    assert not flat_level.preemptive(queue(flat_level, "a"), task(flat_level, "wa"))
    ssn = preemptive_tree(1)
    assert ssn.preemptive(queue(ssn, "a"), task(ssn, "wa"))


def test_preemptive_needs_room_under_real_capability() -> None:
    """§5.4 Preemptive: b would reach 2 + 1 = 3 > realCapability 2, so it may not reclaim even
    though P is far below its deserved and the level allows the ancestor fallback."""
    ssn = preemptive_tree(1)
    assert not ssn.preemptive(queue(ssn, "b"), task(ssn, "wb"))


def test_reclaim_level_argument() -> None:
    """§5.4/seed 004 §6: ancestorReclaimLevel defaults to 0 and a negative value falls back to
    0; a negative level therefore behaves like 0 (no ancestor fallback in Preemptive)."""
    assert reclaim_level({}) == 0
    assert reclaim_level({"ancestorReclaimLevel": 2}) == 2
    assert reclaim_level({"ancestorReclaimLevel": -1}) == 0
    ssn = preemptive_tree(-1)
    assert capacity(ssn).level == 0
    assert not ssn.preemptive(queue(ssn, "a"), task(ssn, "wa"))


# -- capacity: reclaimable ------------------------------------------------------------------------


def test_reclaimable_guarantee_and_deserved_exceedance() -> None:
    """§5.4 Reclaimable steps 2 and 3(b), flat mode, walking [g0, g1, l0, l1].

    - lend-g: deserved = guarantee = cpu 3, holds 2 × cpu 2 = 4. It exceeds its deserved (4 > 3),
      but taking a cpu 2 task leaves 2 < guarantee 3 → both skipped.
    - lend: deserved cpu 3, no guarantee, holds 4 > 3 → l0 taken, its clone drops to 2; then
      2 > 3 is false → l1 stays.
    """
    ssn = make(
        [
            q("lend-g", deserved={"cpu": "3"}, guarantee={"cpu": "3"}),
            q("lend", deserved={"cpu": "3"}),
            q("need", deserved={"cpu": "8"}),
        ],
        [
            job("g", "lend-g", {"cpu": "2"}, replicas=2, running=2),
            job("l", "lend", {"cpu": "2"}, replicas=2, running=2),
            job("r", "need", {"cpu": "2"}),
        ],
    )
    walk = [task(ssn, "g", 0), task(ssn, "g", 1), task(ssn, "l", 0), task(ssn, "l", 1)]
    victims, vote = capacity(ssn).reclaimable(task(ssn, "r"), walk)
    assert ([t.uid for t in victims], vote) == (["default/l-t-0"], PERMIT)


def test_reclaimable_relevant_dimensions_and_immediate_victims() -> None:
    """§5.4 Reclaimable steps 1 and 3, flat; the reclaimer asks cpu 1 + a100 1.

    - zero-key (deserved cpu 10, a100 0): deserved shares cpu with the victim, so it is not an
      immediate victim; cpu 1 ≤ 10, but a100 is *present* in deserved, so 1 > 0 counts
      (GreaterPartlyWithRelevantDimensions) → taken.
    - no-key (deserved cpu 10): same victim, but a100 is not defined in deserved → not relevant
      → kept.
    - mem-only (deserved memory 1Gi), victim uses a100 only: no nonzero dimension in common with
      deserved → immediate victim → taken (flat mode: no contention gate).
    - cpu-lend (no deserved), victim uses memory only: nothing in common with the reclaimer's
      InitResreq → skipped at step 1 although it would be an immediate victim.
    """
    ssn = make(
        [
            q("zero-key", deserved={"cpu": "10", A100: 0}),
            q("no-key", deserved={"cpu": "10"}),
            q("mem-only", deserved={"memory": "1Gi"}),
            q("cpu-lend"),
            q("need", deserved={"cpu": "4", A100: 4}),
        ],
        [
            job("z", "zero-key", {"cpu": "1", A100: 1}, running=1),
            job("n", "no-key", {"cpu": "1", A100: 1}, running=1),
            job("m", "mem-only", {A100: 1}, running=1),
            job("c", "cpu-lend", {"memory": "1Gi"}, running=1),
            job("r", "need", {"cpu": "1", A100: 1}),
        ],
    )
    walk = [task(ssn, n) for n in ("z", "n", "m", "c")]
    victims, _ = capacity(ssn).reclaimable(task(ssn, "r"), walk)
    assert [t.uid for t in victims] == ["default/z-t-0", "default/m-t-0"]


def siblings_without_deserved(
    level: int, reclaimer_deserved: dict[str, Any] | None = None
) -> Session:
    """Seed 004 case8's shape: parent → queue-a (reclaimer), queue-b (victim, cpu 2 + 2Gi);
    neither leaf has a deserved."""
    extra = {"deserved": reclaimer_deserved} if reclaimer_deserved else {}
    return make(
        [q("parent"), q("queue-a", "parent", **extra), q("queue-b", "parent")],
        [job("p-victim", "queue-b", CPU2, running=1), job("p-reclaimer", "queue-a", CPU2)],
        hierarchy=True,
        level=level,
    )


def test_contention_gate() -> None:
    """§5.4 step 3(a) / §9.11: queue-b has no deserved, so its task is an immediate victim. With
    ancestorReclaimLevel 1 the gate applies: hierarchy on, L > 0, both queues have `parent`
    within one level, and the reclaimer queue has no deserved for cpu/memory either → skipped.
    With level 0 the gate is off → taken. With level 1 but queue-a deserving cpu 2 + 2Gi the
    reclaimer side has a deserved signal → gate off → taken (the ancestor `parent` is shared at
    the same depth, so step 4 skips it)."""
    assert reclaim(siblings_without_deserved(1), "p-reclaimer", "p-victim") == ([], PERMIT)
    taken = ["default/p-victim-t-0"]
    assert reclaim(siblings_without_deserved(0), "p-reclaimer", "p-victim") == (taken, PERMIT)
    signal = siblings_without_deserved(1, CPU2)
    assert reclaim(signal, "p-reclaimer", "p-victim") == (taken, PERMIT)


def test_victim_queue_order_siblings_before_cousins() -> None:
    """§5.4 VictimQueueOrderFn (hierarchical): for a preemptor in a1, a2 shares the deeper
    ancestor A (level 1) while b1 only shares root (level 0) → a2's victims first. b1 vs b2 both
    meet a1 at root → 0, and the session falls back to reverse QueueOrder (§1.2)."""
    ssn = make(
        [q("qa"), q("a1", "qa"), q("a2", "qa"), q("qb"), q("b1", "qb"), q("b2", "qb")],
        [job(f"j-{n}", n, {"cpu": "1"}, running=1) for n in ("a1", "a2", "b1", "b2")],
        hierarchy=True,
    )
    plugin = capacity(ssn)
    a1, a2, b1, b2 = (queue(ssn, n) for n in ("a1", "a2", "b1", "b2"))
    assert plugin.victim_queue_order(a2, b1, a1) == -1
    assert plugin.victim_queue_order(b1, a2, a1) == 1
    assert plugin.victim_queue_order(b1, b2, a1) == 0
    assert ssn.victim_queue_order(a2, b1, a1) and not ssn.victim_queue_order(b1, a2, a1)


# -- seed 004 §6.3: ancestorReclaimLevel scenarios -------------------------------------------------


def cousins(level: int) -> Session:
    """Seed 004 case5–case7: root → grand-a → parent-a → queue-a (reclaimer, deserved cpu 2 +
    2Gi, asks cpu 2 + 2Gi); root → grand-b (deserved 4 + 4Gi) → parent-b (1 + 1Gi) → queue-b
    (1 + 1Gi) with p-victim running cpu 2 + 2Gi."""
    half = {"cpu": "1", "memory": "1Gi"}
    four = {"cpu": "4", "memory": "4Gi"}
    return make(
        [
            q("grand-a", deserved=four),
            q("parent-a", "grand-a", deserved=four),
            q("queue-a", "parent-a", deserved=CPU2),
            q("grand-b", deserved=four),
            q("parent-b", "grand-b", deserved=half),
            q("queue-b", "parent-b", deserved=half),
        ],
        [job("p-victim", "queue-b", CPU2, running=1), job("p-reclaimer", "queue-a", CPU2)],
        hierarchy=True,
        level=level,
        node={"name": "n1", "allocatable": {"cpu": "8", "memory": "8Gi"}},
    )


VICTIM = ["default/p-victim-t-0"]


def test_seed004_case5_level0_leaf_exceedance() -> None:
    """case5: level 0 → only the leaf is checked; queue-b holds 2 > deserved 1 (cpu and memory,
    both requested by the victim) → p-victim is reclaimable."""
    assert reclaim(cousins(0), "p-reclaimer", "p-victim") == (VICTIM, PERMIT)


def test_seed004_case6_level1_parent_exceeds() -> None:
    """case6: level 1 adds the parent: parent-b (depth 2) differs from the reclaimer's parent-a
    at that depth, so it is checked: 2 > 1 → exceeds → still reclaimable."""
    assert reclaim(cousins(1), "p-reclaimer", "p-victim") == (VICTIM, PERMIT)


def test_seed004_case7_level2_grandparent_blocks() -> None:
    """case7: level 2 adds grand-b (≠ grand-a): it deserves cpu 4 + 4Gi and holds 2 + 2Gi, so it
    neither exceeds nor is an immediate victim (it deserves what the victim uses) → blocked."""
    assert reclaim(cousins(2), "p-reclaimer", "p-victim") == ([], PERMIT)


def test_seed004_case8_siblings_without_deserved_level1() -> None:
    """case8: siblings under one parent, neither leaf has a deserved, level 1 → the contention
    gate skips the victim (see test_contention_gate for the contrasts)."""
    assert reclaim(siblings_without_deserved(1), "p-reclaimer", "p-victim") == ([], PERMIT)


def shared_grandparent(level: int) -> Session:
    """Seed 004 case9: root → grand → parent-a → queue-a and grand → parent-b → queue-b, no
    deserved anywhere."""
    return make(
        [
            q("grand"),
            q("parent-a", "grand"),
            q("queue-a", "parent-a"),
            q("parent-b", "grand"),
            q("queue-b", "parent-b"),
        ],
        [job("p-victim", "queue-b", CPU2, running=1), job("p-reclaimer", "queue-a", CPU2)],
        hierarchy=True,
        level=level,
    )


def test_seed004_case9_shared_grandparent_level2() -> None:
    """case9: with level 2 the queues' ancestors within two levels, {parent-a, grand} and
    {parent-b, grand}, share grand, and neither leaf has a deserved → gate → blocked. With level
    1 they are {parent-a} and {parent-b}: no shared ancestor, no gate; queue-b is an immediate
    victim and so is parent-b (checked at level 1, no deserved) → taken."""
    assert reclaim(shared_grandparent(2), "p-reclaimer", "p-victim") == ([], PERMIT)
    assert reclaim(shared_grandparent(1), "p-reclaimer", "p-victim") == (VICTIM, PERMIT)


def unbalanced(level: int) -> Session:
    """Seed 004 case10: root → grand (deserved cpu 1 + 1Gi) → queue-shallow (reclaimer) and
    grand → deep-parent → queue-deep (victim); no leaf deserved."""
    return make(
        [
            q("grand", deserved={"cpu": "1", "memory": "1Gi"}),
            q("queue-shallow", "grand"),
            q("deep-parent", "grand"),
            q("queue-deep", "deep-parent"),
        ],
        [job("p-victim", "queue-deep", CPU2, running=1), job("p-reclaimer", "queue-shallow", CPU2)],
        hierarchy=True,
        level=level,
    )


def test_seed004_case10_unbalanced_tree_gate_first() -> None:
    """case10: level 2. Within two levels queue-shallow has {grand} (root excluded) and
    queue-deep {deep-parent, grand}: they share grand and neither leaf has a deserved → the gate
    skips the victim before grand's own exceedance (2 > 1) could matter. With level 1 the sets
    {grand} and {deep-parent} are disjoint → no gate; deep-parent has no deserved → immediate
    victim → taken."""
    assert reclaim(unbalanced(2), "p-reclaimer", "p-victim") == ([], PERMIT)
    assert reclaim(unbalanced(1), "p-reclaimer", "p-victim") == (VICTIM, PERMIT)


def deep_and_shallow(level: int) -> Session:
    """Seed 004 case11: root → deep-grand (deserved a100 2) → deep-parent (a100 1) → queue-deep
    (a100 1), p-victim holds a100 2; root → shallow-parent (a100 2) → queue-shallow (a100 1),
    p-reclaimer asks a100 1."""
    return make(
        [
            q("deep-grand", deserved={A100: 2}),
            q("deep-parent", "deep-grand", deserved={A100: 1}),
            q("queue-deep", "deep-parent", deserved={A100: 1}),
            q("shallow-parent", deserved={A100: 2}),
            q("queue-shallow", "shallow-parent", deserved={A100: 1}),
        ],
        [
            job("p-victim", "queue-deep", {A100: 2}, running=1),
            job("p-reclaimer", "queue-shallow", {A100: 1}),
        ],
        hierarchy=True,
        level=level,
    )


def test_seed004_case11_depth2_ancestor_not_over_deserved() -> None:
    """case11: queue-deep holds 2 > 1 and deep-parent 2 > 1 (level 1, no counterpart on the
    reclaimer's shorter path). At level 2 the victim's ancestor deep-grand sits at depth 1 from
    root, where the reclaimer has shallow-parent: different → checked: 2 > 2 is false and it
    deserves a100 → blocked. With level 1 the victim is taken."""
    assert reclaim(deep_and_shallow(2), "p-reclaimer", "p-victim") == ([], PERMIT)
    assert reclaim(deep_and_shallow(1), "p-reclaimer", "p-victim") == (VICTIM, PERMIT)


def test_ancestor_shared_at_same_depth_is_skipped() -> None:
    """§5.4 step 4 / brief: an ancestor of the victim queue is skipped when the reclaimer has the
    same queue at the same depth from root. root → G (deserved 4 + 4Gi) → P (1 + 1Gi) →
    queue-deep (1 + 1Gi, victim holds 2 + 2Gi); G → queue-shallow (2 + 2Gi, reclaimer). Level
    2: level 1 is P (exceeds, 2 > 1); level 2 is G at depth 1, where the reclaimer's ancestor is
    also G → skipped, so G's 2 ≤ 4 does not block → taken. (Pairing the ancestors by distance
    from the leaf instead would compare G with root, check G, and block.)"""
    one = {"cpu": "1", "memory": "1Gi"}
    ssn = make(
        [
            q("qg", deserved={"cpu": "4", "memory": "4Gi"}),
            q("qp", "qg", deserved=one),
            q("queue-deep", "qp", deserved=one),
            q("queue-shallow", "qg", deserved=CPU2),
        ],
        [job("p-victim", "queue-deep", CPU2, running=1), job("p-reclaimer", "queue-shallow", CPU2)],
        hierarchy=True,
        level=2,
    )
    assert reclaim(ssn, "p-reclaimer", "p-victim") == (VICTIM, PERMIT)


# -- end to end through the engine ----------------------------------------------------------------

CAPACITY_TIERS = [
    {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
    {
        "plugins": [
            {"name": "drf"},
            {"name": "predicates"},
            {"name": "capacity", "enableHierarchy": True},
            {"name": "nodeorder"},
        ]
    },
]


def cluster(queues: list[dict[str, Any]], jobs: list[dict[str, Any]], tiers: Any = None) -> Any:
    """One node of cpu 14; ``tiers`` None means the Helm default configuration."""
    doc: dict[str, Any] = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "now": "2026-11-30T14:00:00Z",
        "nodes": [{"name": "n1", "allocatable": {"cpu": "14", "memory": "16Gi", "pods": 110}}],
        "queues": queues,
        "jobs": jobs,
    }
    if tiers is not None:
        doc["scheduler"] = {"actions": "enqueue, allocate, backfill", "tiers": tiers}
    return from_dict(doc, "test")


def solve(queues: list[dict[str, Any]], jobs: list[dict[str, Any]], tiers: Any = None) -> Any:
    return engine_solve(cluster(queues, jobs, tiers), seed=0)


def test_engine_ancestor_capability_leaves_second_job_pending() -> None:
    """§5.4 through allocate: research (capability cpu 4) → team-a (job a, cpu 3), team-b (job b,
    cpu 2). Neither leaf has a deserved, so both shares are 1 and the queue order falls back to
    creation order: team-a first, a is placed (research holds 3). Then b needs 3 + 2 = 5 > 4 at
    research → not allocatable, and the plan says why."""
    plan = solve(
        [q("research", capability={"cpu": "4"}), q("team-a", "research"), q("team-b", "research")],
        [job("a", "team-a", {"cpu": "3"}), job("b", "team-b", {"cpu": "2"})],
        CAPACITY_TIERS,
    )
    assert [p.pod for p in plan.placements] == ["default/a-t-0"]
    decision = {d.job: d for d in plan.jobs}["default/b"]
    assert decision.status == "pending"
    assert "queue research: cpu 5 > realCapability 4" in decision.reason


def test_engine_non_leaf_job_blocks_every_queue() -> None:
    """§9.9 through allocate: with job k in the non-leaf P, capacity refuses every allocation
    of the session, so even job j in the leaf L, which would fit, stays pending. (The loader
    rejects a job in a non-leaf queue, so k is moved there after loading; in the leaf M both
    jobs are placed.)"""
    good = cluster(
        [q("qp"), q("ql", "qp"), q("qm", "qp")],
        [job("j", "ql", {"cpu": "1"}), job("k", "qm", {"cpu": "1"})],
        CAPACITY_TIERS,
    )
    assert len(engine_solve(good, seed=0).placements) == 2
    moved = tuple(replace(j, queue="qp") if j.name == "k" else j for j in good.jobs)
    plan = engine_solve(good.replace(jobs=moved), seed=0)
    assert plan.placements == ()
    assert {d.status for d in plan.jobs} == {"pending"}


def test_engine_proportion_caps_queues_at_deserved() -> None:
    """§5.5 with the Helm default tiers (proportion), on :func:`proportion_cluster`'s workload:
    deserved cpu q1 2, q2 4, q3 8. q2 already holds 4 (overused, dropped), q1 places its 2 and q3
    its 8: the cluster's 14 cpu are then exactly used."""
    plan = solve(
        [q("q1"), q("q2"), q("q3", weight=2)],
        [
            job("j1", "q1", {"cpu": "1"}, replicas=2),
            job("j2", "q2", {"cpu": "1"}, replicas=10, running=4),
            job("j3", "q3", {"cpu": "1"}, replicas=8),
        ],
    )
    placed = [p.pod.split("-t-")[0] for p in plan.placements]
    assert (placed.count("default/j1"), placed.count("default/j2"), placed.count("default/j3")) == (
        2,
        0,
        8,
    )
