"""The preempt and reclaim actions end to end: instance → ``engine.solve`` → plan
(volcano-scheduler.md §8, §5.4, §9 items 4, 5, 11, 19; seed 004 §5–§6).

The eleven ancestor-reclaim scenarios of seed 004 §6.3 (Volcano's
``Test_capacityPlugin_AncestorReclaimScenarios``, case1–case11) are instance files in
``tests/data/reclaim/``. Shared choices, made once here:

- The seed's ``a100`` resource is the extended resource ``example.com/a100``: a plain scalar with
  no GPU-device semantics (HAMi reads ``nvidia.com/*`` names as vGPU requests), so only the
  generic node fit and the capacity comparisons see it, as in the Volcano unit test.
- The scheduler conf is the capacity guide's (seed 004 §6.2): tier 1 priority, gang
  (enablePreemptable false), conformance; tier 2 drf (enablePreemptable false), predicates,
  capacity (enableHierarchy, the case's ancestorReclaimLevel), nodeorder, binpack; actions
  ``enqueue, allocate, reclaim``.
- Tier surprise (§8.2, §9.4): gang's Reclaimable sits in tier 1 and, if non-empty, would decide
  alone. Every victim is its own single-pod PodGroup with minAvailable 1 (the seed's p1/pg1
  naming), so gang keeps none of them (ready 1 is not above minAvailable 1), tier 1 returns
  nothing and capacity decides alone in tier 2, exactly as in the unit test, which puts all
  plugins in one tier. ``test_gang_spare_pod_bypasses_capacity_in_tier_one`` shows the other
  side.
- The pending job's PodGroup is Inqueue, as the unit test builds it; without minResources the
  enqueue action would admit it anyway (``test_pending_phase_is_enqueued_first``).
- The seed gives the queue trees in words and few numbers. Where it does not, the deserved
  values are the smallest that make the stated mechanism the one that decides; each test says
  which, and the "no eviction" cases also check that ``Preemptive`` passed, so that it is the
  stated check, not an earlier one, that blocks.

Every plan must pass ``optimizer.verify.verify``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from models.errors import Diagnostics
from models.instance import Instance
from models.load import from_dict, loads
from models.scheduler_conf import FLAGS, PreemptArguments, parse_scheduler_conf
from optimizer.greedy.actions.preempt import candidate_count
from optimizer.greedy.api import TaskInfo
from optimizer.greedy.engine import open_session, run_actions, solve
from optimizer.greedy.session import Session
from optimizer.plan import Plan
from optimizer.verify import verify

RECLAIM_DATA = Path(__file__).parent.parent / "data" / "reclaim"


def checked(instance: Instance) -> Plan:
    plan = solve(instance, seed=0)
    assert verify(instance, plan) == []
    return plan


def outcome(plan: Plan) -> tuple[list[str], list[str]]:
    """(evicted pods, pipelined pods), each sorted, without the ``default/`` namespace."""
    evicted = sorted(e.pod.removeprefix("default/") for e in plan.evictions)
    pipelined = sorted(q.pod.removeprefix("default/") for q in plan.pipelined)
    return evicted, pipelined


def case(n: int, *edits: tuple[str, str]) -> Instance:
    """``caseN.yaml``, optionally with textual edits (each must apply)."""
    text = (RECLAIM_DATA / f"case{n}.yaml").read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    return loads(text, f"case{n}.yaml")


def level(old: int, new: int) -> tuple[str, str]:
    return f"ancestorReclaimLevel: {old}}}", f"ancestorReclaimLevel: {new}}}"


def run_case(n: int, *edits: tuple[str, str]) -> tuple[list[str], list[str]]:
    plan = checked(case(n, *edits))
    assert {e.reason for e in plan.evictions} <= {"reclaim"}
    assert all(q.node == "n1" for q in plan.pipelined)
    return outcome(plan)


def pod(ssn: Session, name: str) -> TaskInfo:
    return next(t for t in ssn.tasks() if t.uid == f"default/{name}")


def decision(instance: Instance, reclaimer: str, victim: str) -> tuple[bool, list[str]]:
    """At session open: does ``Preemptive`` let the reclaimer's queue reclaim, and what does
    the tiered ``Reclaimable`` return for the victim alone."""
    ssn = open_session(instance)
    task, other = pod(ssn, reclaimer), pod(ssn, victim)
    queue = ssn.queues[ssn.jobs[task.job].queue]
    victims = ssn.reclaimable(task, [other])
    return ssn.preemptive(queue, task), [t.uid.removeprefix("default/") for t in victims]


VICTIM, RECLAIMER = "pg-victim-p-victim-0", "pg-reclaimer-p-reclaimer-0"
TAKEN = ([VICTIM], [RECLAIMER])
NOTHING: tuple[list[str], list[str]] = ([], [])


# -- seed 004 §6.3: ancestorReclaimLevel scenarios ----------------------------------------------


def test_case1_level1_reclaims_on_the_parents_deserved() -> None:
    """case1. Tree (names from the seed): root → case1-queue1 → case1-queue11, root →
    case1-queue2; p1 (a100 4) fills n1 (a100 4), p2 (a100 1) waits in case1-queue11.

    Ambiguity: the seed's title says the reclaim is allowed "on the parent's deserved", its
    explanation that "parent case1-queue1 is above deserved". The reclaimer's parent being
    *above* its deserved can never allow a reclaim (§5.4 Preemptive needs futureUsed ≤ deserved
    somewhere), so the title is taken: case1-queue11 has no deserved, case1-queue1 deserves
    a100 2, case1-queue2 deserves a100 2.

    - Preemptive: the leaf fails (0 + 1 ≤ 0 is false on a100); level 1 tries case1-queue1:
      0 + 1 ≤ 2 → preemptive.
    - Reclaimable (capacity, tier 2): case1-queue2 holds 4 > 2 → eligible; its level-1 ancestor
      is root → skipped; the reclaimer shares no non-root ancestor with it → no contention
      gate. p1 is the victim; evicting it frees a100 4 ≥ 1 → p2 pipelined on n1.
    - With level 0 the leaf alone decides Preemptive → no reclaim at all.
    """
    assert run_case(1) == (["pg1-p1-0"], ["pg2-p2-0"])
    assert run_case(1, level(1, 0)) == NOTHING


def test_case2_cross_parent_reclaim_takes_the_lowest_priority_pod() -> None:
    """case2. project1-root (deserved a100 1, capability 2) and project2-root (deserved 3,
    capability 4), each with a non-preemptable child (same deserved as its parent; read as
    ``reclaimable: false``, which changes nothing here since no pod runs there) and a
    preemptable child without deserved. p1..p4 (a100 1 each) fill n1 from
    project2-preemptable; p4 has the lowest pod priority (1 vs 10). p5 waits in
    project1-preemptable.

    - Preemptive(project1-preemptable): the leaf has no deserved → fails; level 1:
      project1-root 0 + 1 ≤ 1 → preemptive.
    - Reclaimable walks p1..p4 in victim order (§8.3, §5.4): same queue, different jobs →
      reverse job order, a tie → reverse task order → lowest pod priority first: p4, then
      p3, p2, p1 (uid). The leaf has no deserved → immediate victim (no gate: the two leaves
      share no non-root ancestor within 1 level). Level 1: project2-root ≠ project1-root →
      checked: its clone 4 > 3 → p4 taken, clone → 3; for p3, 3 > 3 is false → blocked.
    - Victims [p4]: evicted, p5 pipelined. The walk order matters: walking p1 first would
      have evicted p1. With level 0 Preemptive fails at the leaf → nothing.
    """
    assert run_case(2) == (["pg4-p4-0"], ["pg5-p5-0"])
    assert run_case(2, level(1, 0)) == NOTHING


def test_case3_sibling_queue_is_reclaimed_before_the_cousin() -> None:
    """case3: case2 a cycle later. p1..p3 run in project2-preemptable, p5 in
    project1-preemptable (n1 is full again), p4 is pending in project2-preemptable and p6
    (a100 1) in project2-non-preemptable; both PodGroups are Inqueue.

    - pg4: Preemptive fails: the leaf has no deserved, and project2-root would hold
      3 + 1 = 4 > 3.
    - pg6: project2-non-preemptable deserves 3, 0 + 1 ≤ 3 → preemptive. Reclaimees p1..p3,
      p5. Victim order: capacity's VictimQueueOrderFn puts project2-preemptable (common
      ancestor project2-root, level 1) before project1-preemptable (root, level 0); inside
      it reverse task order by uid: p3, p2, p1. Their leaf has no deserved → immediate
      victims; the reclaimer's leaf has a deserved → no gate; level 1: both parents are
      project2-root at the same depth → skipped. p5: project1-root holds 1, not > 1 →
      blocked. Victims [p3, p2, p1]; p3 alone makes room → evicted, p6 pipelined.
    """
    assert run_case(3) == (["pg3-p3-0"], ["pg6-p6-0"])


def test_case4_victims_parent_within_deserved_blocks() -> None:
    """case4. root → case4-parent1 (deserved a100 2) → case4-child1 (no deserved; p1) and a
    sibling that may not be reclaimed (the seed's "non-preemptable"; p3); root →
    case4-parent2 (deserved 2) → case4-child2 (deserved 2; p2 pending). n1 has a100 2.

    Ambiguity: the title says the victim *child* queue is not above deserved, the explanation
    says the victim's *parent* case4-parent1. The parent is taken, so that the level-1 check is
    what blocks: case4-child1 has no deserved (an immediate victim), and case4-parent1 holds
    p1 + p3 = 2, not > 2.

    - Preemptive: case4-child2 0 + 1 ≤ 2 → passes.
    - Reclaimable: p3's queue is not reclaimable → only p1 is a reclaimee; the leaf passes;
      level 1: case4-parent1 ≠ case4-parent2 → checked → 2 > 2 false → blocked → nothing.
    - With level 0 the parent is not checked → p1 evicted, p2 pipelined.
    """
    instance = case(4)
    assert decision(instance, "pg2-p2-0", "pg1-p1-0") == (True, [])
    assert run_case(4) == NOTHING
    assert run_case(4, level(1, 0)) == (["pg1-p1-0"], ["pg2-p2-0"])


def test_case5_level0_checks_the_leaf_only() -> None:
    """case5. root → grand-a (deserved cpu 4 + 4Gi) → parent-a (4 + 4Gi) → queue-a (2 + 2Gi;
    p-reclaimer pending, cpu 2 + 2Gi); root → grand-b (4 + 4Gi) → parent-b (1 + 1Gi) →
    queue-b (1 + 1Gi; p-victim running, cpu 2 + 2Gi, filling n1). The seed names the four
    ancestors; the deserved values are chosen so that each level's check gives the seed's
    answer (cases 5–7 share them).

    Level 0: Preemptive 0 + 2 ≤ 2 → passes; queue-b holds 2 + 2Gi > 1 + 1Gi → the victim is
    taken → evicted, p-reclaimer pipelined.
    """
    assert run_case(5) == TAKEN


def test_case6_level1_parent_above_deserved_allows() -> None:
    """case6: case5 with level 1. parent-b is at the same depth as the reclaimer's parent-a,
    and differs → checked: 2 + 2Gi > 1 + 1Gi → passes → evicted and pipelined."""
    assert run_case(6) == TAKEN


def test_case7_level2_grandparent_within_deserved_blocks() -> None:
    """case7: case5 with level 2. grand-b (≠ grand-a) deserves 4 + 4Gi and holds 2 + 2Gi:
    neither above it nor an immediate victim (it deserves what the victim uses) → blocked.
    Preemptive itself passes, so the grandparent check is what blocks."""
    instance = case(7)
    assert decision(instance, RECLAIMER, VICTIM) == (True, [])
    assert run_case(7) == NOTHING


def test_case8_siblings_without_deserved_hit_the_contention_gate() -> None:
    """case8. root → parent → queue-a (p-reclaimer), queue-b (p-victim); neither leaf has a
    deserved (the seed), level 1. The seed does not give parent's deserved; it is 4 + 4Gi so
    that Preemptive passes through the level-1 fallback (2 + 2 ≤ 4 on cpu), otherwise nothing
    would happen for an earlier reason.

    Reclaimable: queue-b has no deserved → an immediate victim, but the gate applies
    (§5.4 step 3a, §9.11): hierarchy on, L = 1, both leaves have parent within one level, and
    queue-a has no deserved for cpu/memory either → skipped. The level-1 ancestor check would
    not apply anyway (parent is the same queue at the same depth). → nothing.
    """
    instance = case(8)
    assert decision(instance, RECLAIMER, VICTIM) == (True, [])
    assert run_case(8) == NOTHING


def test_case9_shared_grandparent_gate_at_level2() -> None:
    """case9. root → grand → parent-a → queue-a (p-reclaimer) and grand → parent-b → queue-b
    (p-victim); no leaf deserved (the seed), level 2. grand deserves 4 + 4Gi and parent-a
    2 + 2Gi so that Preemptive passes (parent-a: 0 + 2 ≤ 2).

    - Level 2: the leaves' non-root ancestors within two levels, {parent-a, grand} and
      {parent-b, grand}, share grand, and neither leaf has a deserved → the gate skips the
      victim → nothing.
    - Level 1: {parent-a} and {parent-b} share nothing → no gate; queue-b is an immediate
      victim; parent-b (checked at level 1, no deserved) is one too → evicted, pipelined.
    """
    instance = case(9)
    assert decision(instance, RECLAIMER, VICTIM) == (True, [])
    assert run_case(9) == NOTHING
    assert run_case(9, level(2, 1)) == TAKEN


def test_case10_unbalanced_tree_gate_comes_first() -> None:
    """case10. root → grand → queue-shallow (p-reclaimer) and grand → deep-parent →
    queue-deep (p-victim); no leaf deserved; grand above its deserved (the seed). grand's
    deserved is cpu 1 + memory 4Gi: above it on cpu (2 > 1), while Preemptive passes through
    grand on memory (2 + 2 ≤ 4Gi, "partly ≤ deserved"); with memory also below 4Gi nothing
    could reclaim at all and the gate would not be what blocks.

    - Level 2: queue-shallow's non-root ancestors within two levels are {grand}, queue-deep's
      {deep-parent, grand}: shared, neither leaf has a deserved → the gate skips the victim
      before any ancestor check → nothing.
    - Level 1: {grand} and {deep-parent} are disjoint → no gate; deep-parent (no deserved) is
      an immediate victim → evicted, pipelined.
    """
    instance = case(10)
    assert decision(instance, RECLAIMER, VICTIM) == (True, [])
    assert run_case(10) == NOTHING
    assert run_case(10, level(2, 1)) == TAKEN


def test_case11_depth2_ancestor_within_deserved_blocks() -> None:
    """case11. root → deep-grand (a100 2) → deep-parent (1) → queue-deep (1; p-victim holds
    a100 2, filling n1); root → shallow-parent (2) → queue-shallow (1; p-reclaimer asks 1).

    - Preemptive: queue-shallow 0 + 1 ≤ 1 → passes.
    - Reclaimable at level 2: queue-deep 2 > 1 → eligible; level 1: deep-parent sits at
      depth 2, where the reclaimer has no ancestor → checked: 2 > 1 → passes; level 2:
      deep-grand at depth 1 vs shallow-parent → different → checked: 2 > 2 is false and it
      deserves a100 → blocked (§9.11: ancestors are paired by depth, not by LCA).
    - Level 1 stops after deep-parent → evicted, pipelined.
    """
    instance = case(11)
    assert decision(instance, RECLAIMER, VICTIM) == (True, [])
    assert run_case(11) == NOTHING
    assert run_case(11, level(2, 1)) == TAKEN


def test_pending_phase_is_enqueued_first() -> None:
    """The cases set the waiting PodGroup Inqueue. Left Pending, enqueue admits it because it
    has no minResources (§1.3), so reclaim sees the same job and the outcome is case1's."""
    edit = ("  phase: Inqueue\n", "")
    assert run_case(1, edit) == (["pg1-p1-0"], ["pg2-p2-0"])


def test_gang_spare_pod_bypasses_capacity_in_tier_one() -> None:
    """§8.2 / §9.4, the tier surprise: case7 (the grandparent blocks in capacity), but the
    victim's PodGroup has minAvailable 0, so gang (tier 1) keeps the victim (ready 1 > 0);
    conformance agrees; the non-empty tier-1 answer is returned and capacity is never asked →
    evicted and pipelined."""
    edit = (
        "  minAvailable: 1\n  tasks:\n  - {name: p-victim",
        "  minAvailable: 0\n  tasks:\n  - {name: p-victim",
    )
    assert run_case(7, edit) == TAKEN


# -- preempt (§8.1) -------------------------------------------------------------------------------

TIERS: list[dict[str, Any]] = [
    {
        "plugins": [
            {"name": "priority"},
            {"name": "gang", "enablePreemptable": False},
            {"name": "conformance"},
        ]
    },
    {
        "plugins": [
            {"name": "drf", "enablePreemptable": False},
            {"name": "predicates"},
            {"name": "capacity"},
            {"name": "nodeorder"},
        ]
    },
]
"""The capacity guide's tiers without hierarchy (and without binpack, which adds nothing here)."""


def job(
    name: str,
    cpu: int,
    *,
    priority: int = 0,
    replicas: int = 1,
    running: int = 0,
    node: str = "n1",
    queue: str = "q1",
    task: dict[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A one-task job of ``replicas`` pods of ``cpu`` CPUs, the first ``running`` on ``node``;
    minAvailable defaults to the replicas."""
    spec = {"name": "t", "replicas": replicas, "resources": {"cpu": str(cpu), "memory": "1Gi"}}
    return {
        "name": name,
        "queue": queue,
        "priority": priority,
        "minAvailable": fields.pop("minAvailable", replicas),
        "tasks": [{**spec, **(task or {})}],
        "running": [{"index": i, "node": node} for i in range(running)],
        **fields,
    }


def node(name: str, cpu: int, **labels: str) -> dict[str, Any]:
    return {"name": name, "labels": labels, "allocatable": {"cpu": str(cpu), "memory": "64Gi"}}


def cluster(
    jobs: list[dict[str, Any]],
    *,
    nodes: list[dict[str, Any]] | None = None,
    queues: list[dict[str, Any]] | None = None,
    tiers: list[dict[str, Any]] | None = None,
    actions: str = "enqueue, allocate, preempt",
    preempt: dict[str, Any] | None = None,
) -> Instance:
    """``preempt``: the preempt action's arguments (``configurations``)."""
    scheduler: dict[str, Any] = {"actions": actions, "tiers": tiers or TIERS}
    if preempt is not None:
        scheduler["configurations"] = [{"name": "preempt", "arguments": preempt}]
    doc = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "now": "2026-11-30T14:00:00Z",
        "scheduler": scheduler,
        "nodes": nodes or [node("n1", 4)],
        "queues": queues or [{"name": "q1"}],
        "jobs": jobs,
    }
    return from_dict(doc, "test")


def by_node(plan: Plan) -> tuple[dict[str, str], dict[str, str]]:
    """(evicted pod → node, pipelined pod → node), names without ``default/``."""
    evicted = {e.pod.removeprefix("default/"): e.node for e in plan.evictions}
    pipelined = {q.pod.removeprefix("default/"): q.node for q in plan.pipelined}
    return evicted, pipelined


def three_victims(**hi: Any) -> list[dict[str, Any]]:
    """n1 (cpu 4) full with a (priority 3, cpu 2), b (1, cpu 1), c (2, cpu 1), listed in that
    order; hi (priority 10, cpu 2) waits."""
    return [
        job("a", 2, priority=3, running=1),
        job("b", 1, priority=1, running=1),
        job("c", 1, priority=2, running=1),
        job("hi", 2, priority=10, **hi),
    ]


def test_priority_preemption_evicts_the_shortest_prefix_lowest_priority_first() -> None:
    """§8.1 phase A: hi is starving (gang: 0 < 1). Preemptable = priority ∩ conformance (gang
    and drf disabled): every other job of q1 has a lower PodGroup priority → [a, b, c].
    ValidateVictims: 0 + 4 ≥ 2. Victim order (§8.3): same queue → reverse job order, i.e.
    lowest priority first: b (1), c (2), a (3). Evict until hi fits (queue Allocatable and
    FutureIdle ≥ 2): after b 1 free, after c 2 → stop; a stays. File order would have taken a
    alone. hi is pipelined on n1, JobPipelined → committed."""
    plan = checked(cluster(three_victims()))
    assert by_node(plan) == ({"b-t-0": "n1", "c-t-0": "n1"}, {"hi-t-0": "n1"})
    assert {e.reason for e in plan.evictions} == {"preempt"}


def test_phase_b_preempts_within_the_job() -> None:
    """§8.1 phase B. Job J (minAvailable 3): task lo, 2 pods of priority 1 running on n1 (cpu 2
    full); task hi, 1 pod of priority 10 pending. J is starving (2 < 3). Phase A: no other job
    in the queue → no victims → JobPipelined (2 < 3) fails → discarded. Phase B: the pending
    pod may take J's own pods of lower pod priority (priority plugin) → [lo-0, lo-1]; same job
    → reverse task order → lo-1 first; 1 cpu freed is enough. Phase B commits per task, even
    though J (1 ready + 1 pipelined < 3) is not pipelined."""
    j = {
        "name": "j",
        "queue": "q1",
        "minAvailable": 3,
        "tasks": [
            {"name": "lo", "replicas": 2, "priority": 1, "resources": {"cpu": "1"}},
            {"name": "hi", "replicas": 1, "priority": 10, "resources": {"cpu": "1"}},
        ],
        "running": [
            {"task": "lo", "index": 0, "node": "n1"},
            {"task": "lo", "index": 1, "node": "n1"},
        ],
    }
    plan = checked(cluster([j], nodes=[node("n1", 2)]))
    assert by_node(plan) == ({"j-lo-1": "n1"}, {"j-hi-0": "n1"})


def test_unpipelined_job_discards_its_evictions() -> None:
    """§8.1 phase A commits only if the job is pipelined. hi (2 pods of cpu 1, minAvailable 2,
    priority 10) on n1 and n2 (cpu 1 each): lo (priority 1) fills n1, top (priority 20) fills
    n2. The first pod evicts lo and is pipelined on n1; the second finds no lower-priority pod
    (lo is already Releasing, top outranks hi) → JobPipelined: 1 < 2 → the statement is
    discarded: lo is not evicted after all."""
    jobs = [
        job("lo", 1, priority=1, running=1, node="n1"),
        job("top", 1, priority=20, running=1, node="n2"),
        job("hi", 1, priority=10, replicas=2),
    ]
    plan = checked(cluster(jobs, nodes=[node("n1", 1), node("n2", 1)]))
    assert outcome(plan) == NOTHING


def test_jobs_with_network_topology_never_preempt() -> None:
    """§8.1 / §9.5: the first test's instance, but hi has a network topology (soft or hard,
    with or without a tier: "any") → it is not a preemptor → nothing is evicted."""
    for spec in ({"mode": "soft"}, {"mode": "hard", "highestTierAllowed": 1}):
        plan = checked(cluster(three_victims(networkTopology=spec)))
        assert outcome(plan) == NOTHING


def test_preemption_policy_never() -> None:
    """§8.1 step 1: a pod with ``preemptionPolicy: Never`` does not preempt, however starving
    its job."""
    plan = checked(cluster(three_victims(task={"preemptionPolicy": "Never"})))
    assert outcome(plan) == NOTHING


def test_conformance_protects_critical_pods() -> None:
    """§8.1: conformance drops pods of namespace kube-system and pods whose priority class is
    system-node-critical / system-cluster-critical, whatever their priority. b runs in
    kube-system, c has class system-node-critical (priority value 2 given explicitly, so the
    priority plugin would take it) → victims [a] → a alone frees cpu 2 → evicted."""
    jobs = three_victims()
    jobs[1]["namespace"] = "kube-system"
    jobs[2]["priorityClassName"] = "system-node-critical"
    plan = checked(cluster(jobs))
    assert by_node(plan) == ({"a-t-0": "n1"}, {"hi-t-0": "n1"})


def test_gang_preemptable_keeps_each_victim_job_at_min_available() -> None:
    """§3 gang Preemptable with enablePreemptable true. n1 (cpu 5): v (priority 1, 3 pods of
    cpu 1, minAvailable 2) and w (priority 2, 2 pods, minAvailable 1); hi (priority 10) needs
    cpu 2.

    - Gang on: walking the candidates, a pod is kept only while its job's ready count is above
      minAvailable: one of v (3 > 2, then 2), one of w (2 > 1, then 1). Tier 1 = priority ∩
      gang ∩ conformance → one v pod and one w pod; together they free cpu 2 → both evicted.
      (Which pod of each job depends on the candidate order, a Go map in Volcano.)
    - Gang off: victims are all five; reverse job order puts v (priority 1) first, its pods in
      reverse task order → v-2, v-1 suffice.
    """
    jobs = [
        job("v", 1, priority=1, replicas=3, running=3, minAvailable=2),
        job("w", 1, priority=2, replicas=2, running=2, minAvailable=1),
        job("hi", 2, priority=10),
    ]
    gang_on = [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        TIERS[1],
    ]
    plan = checked(cluster(jobs, nodes=[node("n1", 5)], tiers=gang_on))
    evicted, pipelined = by_node(plan)
    assert sorted(pod.split("-")[0] for pod in evicted) == ["v", "w"]
    assert pipelined == {"hi-t-0": "n1"}
    plan = checked(cluster(jobs, nodes=[node("n1", 5)]))
    assert by_node(plan) == ({"v-t-1": "n1", "v-t-2": "n1"}, {"hi-t-0": "n1"})


TDM_FIRST = [
    {
        "plugins": [
            {"name": "tdm", "arguments": {"tdm.revocable-zone.rz1": "08:00-21:00"}},
            {"name": "gang", "enablePreemptable": False},
        ]
    },
    {"plugins": [{"name": "priority"}, {"name": "conformance"}, {"name": "predicates"}]},
]
"""TDM alone decides Preemptable in tier 1; priority and conformance only in tier 2."""


def test_empty_preemptable_list_passes_to_the_next_tier() -> None:
    """§1.2 / §9.4: Preemptable tiers are not vetoes. n1 (cpu 2, ordinary) is filled by lo;
    hi (priority 10) needs cpu 2.

    - lo priority 1, hi preemptable (the pod default): TDM refuses a preemptable preemptor
      with an empty list ("Reject") → tier 1 is nil → tier 2 (priority ∩ conformance) →
      [lo] → evicted. A veto would have stopped it.
    - lo priority 20, hi still preemptable: tier 2's priority refuses (20 > 10) → nothing.
    - lo priority 20, hi annotated ``volcano.sh/preemptable: "false"``: TDM returns [lo]
      (preemptable, Running, on a non-revocable node, budget 1) → tier 1 is non-empty and
      decides; priority is never asked → lo is evicted for a lower-priority pod.
    """
    keep = {"annotations": {"volcano.sh/preemptable": "false"}}

    def run(lo_priority: int, hi_task: dict[str, Any] | None) -> tuple[list[str], list[str]]:
        jobs = [
            job("lo", 2, priority=lo_priority, running=1),
            job("hi", 2, priority=10, task=hi_task),
        ]
        return outcome(checked(cluster(jobs, nodes=[node("n1", 2)], tiers=TDM_FIRST)))

    taken = (["lo-t-0"], ["hi-t-0"])
    assert run(1, None) == taken
    assert run(20, None) == NOTHING
    assert run(20, keep) == taken


REVOCABLE = {"annotations": {"volcano.sh/revocable-zone": "*"}}
ZONE_SCORED = [
    {
        "plugins": [
            {"name": "priority"},
            {"name": "gang", "enablePreemptable": False},
            {"name": "conformance"},
        ]
    },
    {
        "plugins": [
            {"name": "predicates"},
            {"name": "capacity"},
            {"name": "nodeorder"},
            {"name": "tdm", "arguments": {"tdm.revocable-zone.rz1": "08:00-21:00"}},
        ]
    },
]
"""TDM in tier 2 only to score: a revocable pod gets 100 on an active revocable node."""
TWO_NODES = [node("n1", 2), node("n2", 2, **{"volcano.sh/revocable-zone": "rz1"})]


def test_preempt_sorts_nodes_by_score_and_reclaim_takes_the_first() -> None:
    """§8.1 step 4 vs §8.2 / §9.19. n1 (ordinary) and n2 (revocable zone rz1, active at 14:00)
    are alike and each filled by one revocable pod of cpu 2; hi (revocable, cpu 2) waits.
    Both nodes pass the predicates; nodeorder scores them alike and TDM gives n2 100.

    - preempt (everyone in q1; victims priority 1 < hi's 10): nodes sorted by score → n2 is
      tried first → its pod is evicted and hi pipelined there.
    - reclaim (victims in qb without deserved, hi in qa deserving cpu 4; flat capacity): the
      victims are immediate ones on either node, but reclaim takes the first node in
      predicate order → n1, despite the lower score.
    """
    ssn = open_session(cluster([job("hi", 2, task=REVOCABLE)], nodes=TWO_NODES, tiers=ZONE_SCORED))
    hi = pod(ssn, "hi-t-0")
    batch = ssn.batch_node_order(hi, ssn.node_list)
    score = {n.name: ssn.node_order(hi, n) + batch.get(n.name, 0.0) for n in ssn.node_list}
    assert score["n2"] > score["n1"]

    def victims(queue: str) -> list[dict[str, Any]]:
        return [
            job(f"lo{i}", 2, priority=1, running=1, node=f"n{i}", queue=queue, task=REVOCABLE)
            for i in (1, 2)
        ]

    hi_job = job("hi", 2, priority=10, task=REVOCABLE)
    plan = checked(cluster([*victims("q1"), hi_job], nodes=TWO_NODES, tiers=ZONE_SCORED))
    assert by_node(plan) == ({"lo2-t-0": "n2"}, {"hi-t-0": "n2"})

    queues = [{"name": "qa", "deserved": {"cpu": "4"}}, {"name": "qb"}]
    plan = checked(
        cluster(
            [*victims("qb"), {**hi_job, "queue": "qa"}],
            nodes=TWO_NODES,
            queues=queues,
            tiers=ZONE_SCORED,
            actions="enqueue, allocate, reclaim",
        )
    )
    assert by_node(plan) == ({"lo1-t-0": "n1"}, {"hi-t-0": "n1"})


# -- topology-aware preemption (§8.1, enableTopologyAwarePreemption) ------------------------------

TOPOLOGY_AWARE = {"enableTopologyAwarePreemption": True}

ANTI_AFFINITY_CASE = """
# Volcano's TestTopologyAwarePreempt, "preempt low-priority pod when high-priority pod has
# PodAntiAffinity conflict": every plugin in one tier with only the switches the test sets.
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: topology-aware-preempt}
now: "2026-11-30T14:00:00Z"
scheduler:
  actions: "preempt"
  tiers:
  - plugins:
<plugins>
  configurations:
  - {name: preempt, arguments: {enableTopologyAwarePreemption: <flag>}}
priorityClasses:
- {name: high-priority, value: 100000}
- {name: low-priority, value: 10}
nodes:
- {name: n1, labels: {kubernetes.io/hostname: n1}, allocatable: {cpu: "2", memory: 2Gi, pods: 2}}
queues:
- {name: q1, weight: 1, capability: {cpu: "2", memory: 2G}}
jobs:
- name: pg1
  namespace: c1
  queue: q1
  priorityClassName: low-priority
  minAvailable: 0
  phase: Inqueue
  tasks:
  - name: preemptee2
    replicas: 1
    resources: {cpu: "1", memory: 1G}
    labels: {volcano.sh/preemptable: "true", test: test}
    affinity:
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector: {matchLabels: {volcano.sh/preemptable: "true", test: test}}
          topologyKey: kubernetes.io/hostname
  running: [{index: 0, node: n1}]
- name: pg2
  namespace: c1
  queue: q1
  priorityClassName: low-priority
  minAvailable: 0
  phase: Inqueue
  tasks:
  - name: preemptee1
    replicas: 1
    resources: {cpu: "1", memory: 1G}
    labels: {volcano.sh/preemptable: "true"}
  running: [{index: 0, node: n1}]
- name: pg3
  namespace: c1
  queue: q1
  priorityClassName: high-priority
  minAvailable: 1
  minTaskMember: {"": 1}
  phase: Inqueue
  tasks:
  - name: preemptor1
    replicas: 1
    resources: {cpu: "1", memory: 1G}
    labels: {test: test}
    affinity:
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector: {matchLabels: {test: test}}
          topologyKey: kubernetes.io/hostname
"""


SWITCHED_ON = {
    "conformance": ("Preemptable",),
    "gang": ("Preemptable", "JobPipelined", "JobStarving"),
    "priority": ("TaskOrder", "JobOrder", "Preemptable", "JobPipelined", "JobStarving"),
    "proportion": ("Overused", "Allocatable", "QueueOrder", "Predicate"),
    "predicates": ("Preemptable", "Predicate"),
    "capacity": ("QueueOrder",),
}
"""The Go test's one tier, with the switches it sets."""


def anti_affinity_case(flag: str) -> Instance:
    """The converted scenario; every switch the Go test leaves unset is off (a Go test's nil
    switch is off: no configuration defaults are applied to it)."""
    entries = []
    for name, on in SWITCHED_ON.items():
        switches = ", ".join(f"enable{f}: {str(f in on).lower()}" for f in FLAGS)
        entries.append(f"    - {{name: {name}, {switches}}}")
    plugins = "\n".join(entries)
    text = ANTI_AFFINITY_CASE.replace("<plugins>", plugins).replace("<flag>", flag)
    return loads(text, "topology-aware-preempt.yaml")


def test_topology_aware_preemption_evicts_the_anti_affine_pod() -> None:
    """n1 (cpu 2, pods 2) runs preemptee1 (pg2) and preemptee2 (pg1), both priority class
    low (10); pg3 (high, 100000) waits with preemptor1, whose required anti-affinity selects
    ``test: test`` on the hostname, which preemptee2 carries.

    pg3 is starving (0 < 1). n1 fails InterPodAffinity only with Unschedulable → a candidate;
    one node → offset 0, one candidate wanted. Preemptable: conformance, gang (both jobs ready
    1 > minAvailable 0) and priority (10 < 100000) keep both. ValidateVictims: 0 + 2 ≥ 1.
    Victim order: same queue, reverse job order; the priorities tie, so file order: pg2's
    preemptee1 first. Off: FutureIdle cpu 1, pods 1; queue 1 + 1 ≤ deserved 2; but the
    simulated Filter still counts preemptee2 → no. Off goes preemptee2: its RemovePod drops the
    anti-affinity count → fits. Reprieve, last taken first: preemptee2 back → the count is
    back → stays a victim; preemptee1 back → cpu 1 + 1 ≤ 2, pods 2 ≤ 2, queue 2 ≤ 2, no
    conflict → reprieved. So preemptee2 alone is evicted (the Go test's ExpectEvicted) and
    preemptor1 is pipelined on n1; JobPipelined (1 ≥ 1) commits. The string "true" is read as
    Go's ParseBool reads it.

    Without the argument (normal preempt) the "fits" test reads the Filter state PreFilter
    computed before any eviction, in which preemptee2 still counts, so no prefix of victims
    ever fits and the node's evictions are discarded: nothing happens.
    """
    taken = (["pg1-preemptee2-0"], ["pg3-preemptor1-0"])
    for flag in ("true", '"true"'):
        plan = checked(anti_affinity_case(flag))
        evicted = sorted(e.pod.removeprefix("c1/") for e in plan.evictions)
        pipelined = sorted(q.pod.removeprefix("c1/") for q in plan.pipelined)
        assert (evicted, pipelined) == taken
        assert {(e.node, e.reason) for e in plan.evictions} == {("n1", "preempt")}
    plan = checked(anti_affinity_case("false"))
    assert plan.evictions == ()
    assert plan.pipelined == ()


def test_topology_aware_preemption_reprieves_victims_it_did_not_need() -> None:
    """n1 (cpu 4) runs a (priority 3, cpu 3) and b (priority 1, cpu 1); hi (priority 10,
    cpu 3) waits. Victims [a, b], order lowest priority first: b, a.

    - Normal preempt evicts the shortest prefix: b (1 free < 3), then a (4 free) → both.
    - Topology-aware: b off (1 free), a off (4 free) → fits. Reprieve, a first: a back → 1
      free → stays a victim; b back → 3 free ≥ 3 → reprieved. Only a is evicted.
    """
    jobs = [job("a", 3, priority=3, running=1), job("b", 1, priority=1, running=1)]
    jobs.append(job("hi", 3, priority=10))
    plan = checked(cluster(jobs))
    assert by_node(plan) == ({"a-t-0": "n1", "b-t-0": "n1"}, {"hi-t-0": "n1"})
    plan = checked(cluster(jobs, preempt=TOPOLOGY_AWARE))
    assert by_node(plan) == ({"a-t-0": "n1"}, {"hi-t-0": "n1"})


def two_candidates(seed: int, **arguments: Any) -> dict[str, str]:
    """n1 and n2 (cpu 2 each) run lo (job and pod priority 1) and mid (5); hi (10, cpu 2)
    waits; the evicted pod → its node."""
    jobs = [
        job("lo", 2, priority=1, running=1, node="n1", task={"priority": 1}),
        job("mid", 2, priority=5, running=1, node="n2", task={"priority": 5}),
        job("hi", 2, priority=10),
    ]
    instance = cluster(
        jobs, nodes=[node("n1", 2), node("n2", 2)], preempt={**TOPOLOGY_AWARE, **arguments}
    )
    plan = solve(instance, seed=seed)
    assert verify(instance, plan) == []
    return by_node(plan)[0]


def test_topology_aware_preemption_picks_the_node_with_the_lowest_priority_victim() -> None:
    """With ``minCandidateNodesAbsolute: 2`` both nodes are dry-run (2 × 10 / 100 = 0, raised
    to 2): n1's victims [lo], n2's [mid]. ``pickOneNodeForPreemption``: the lowest priority of
    the highest victim → n1 (1 < 5), whatever the random offset the scan starts from."""
    for seed in range(6):
        assert two_candidates(seed, minCandidateNodesAbsolute=2) == {"lo-t-0": "n1"}


def test_topology_aware_preemption_takes_the_first_working_node_from_a_random_offset() -> None:
    """By default one candidate is wanted (2 × 10 / 100 = 0, raised to 1), so the scan stops at
    the first node that works, starting at a random offset: over twenty seeds both n1 and n2
    are chosen, one victim each time. Scores play no part on this path."""
    seen = {tuple(sorted(two_candidates(seed).items())) for seed in range(20)}
    assert seen == {(("lo-t-0", "n1"),), (("mid-t-0", "n2"),)}


@pytest.mark.parametrize(
    ("nodes", "arguments", "expected"),
    [
        (10, {}, 1),  # 10 × 10 // 100 = 1
        (19, {}, 1),  # 1.9 → 1
        (50, {}, 5),
        (2000, {}, 100),  # 200, cut to maxCandidateNodesAbsolute 100
        (5, {}, 1),  # 0, raised to minCandidateNodesAbsolute 1
        (2, {"minCandidateNodesAbsolute": 3}, 2),  # 3, cut to the 2 nodes
        (10, {"minCandidateNodesPercentage": 50}, 5),
        (10, {"minCandidateNodesAbsolute": 0, "minCandidateNodesPercentage": 0}, 0),
    ],
)
def test_candidate_count(nodes: int, arguments: dict[str, int], expected: int) -> None:
    """``calculateNumCandidates``: percentage of the nodes (integer division), at least the
    absolute minimum, at most the absolute maximum and the number of nodes."""
    assert candidate_count(nodes, PreemptArguments.read(arguments)) == expected


def test_preempt_arguments_are_read_as_volcano_reads_them() -> None:
    """``Arguments.GetBool`` takes a bool or a ``strconv.ParseBool`` string; ``GetInt`` an int.
    Anything else keeps the default, with a warning naming the argument; unknown keys are
    warned about too."""
    diag = Diagnostics()
    raw = {
        "configurations": [
            {
                "name": "preempt",
                "arguments": {
                    "enableTopologyAwarePreemption": "T",
                    "minCandidateNodesPercentage": "20",
                    "maxCandidateNodesAbsolute": 7,
                    "enableTopologyAware": True,
                },
            }
        ]
    }
    conf = parse_scheduler_conf(raw, "Instance", diag, "scheduler")
    assert conf.preempt_arguments() == PreemptArguments(True, 10, 1, 7)
    prefix = "scheduler.configurations[0].arguments."
    assert sorted(w.field.removeprefix(prefix) for w in diag.warnings) == [
        "enableTopologyAware",
        "minCandidateNodesPercentage",
    ]
    assert diag.errors == []
    bad = {
        "configurations": [{"name": "preempt", "arguments": {"enableTopologyAwarePreemption": 1}}]
    }
    assert (
        not parse_scheduler_conf(bad, "Instance", Diagnostics()).preempt_arguments().topology_aware
    )


def test_pods_whose_job_is_not_in_the_session_are_never_victims() -> None:
    """n1 (cpu 4) holds ``foreign`` (cpu 2, priority 0; its PodGroup taken out of the session
    after it opens, as for a pod of another scheduler) and lo (priority 1, cpu 2); hi
    (priority 10, cpu 2) waits. Only lo can be a victim (Volcano's filter drops a task whose job
    is not in ``ssn.Jobs``), in both preempt modes: lo is evicted, hi pipelined."""
    jobs = [
        job("foreign", 2, running=1),
        job("lo", 2, priority=1, running=1),
        job("hi", 2, priority=10),
    ]
    for preempt_arguments in (None, TOPOLOGY_AWARE):
        ssn = open_session(cluster(jobs, preempt=preempt_arguments))
        del ssn.jobs["default/foreign"]
        run_actions(ssn)
        assert [t.uid for t in ssn.records.evictions] == ["default/lo-t-0"]
        assert [t.uid for t in ssn.records.pipelined] == ["default/hi-t-0"]
