"""The greedy engine's actions end to end: instance YAML → ``engine.solve`` → plan
(volcano-scheduler.md §1.3–§1.7, §2.1, §2.4, §3, §9 items 1, 2, 3, 14, 16, 17, 18).

Unless a test says otherwise the scheduler is Volcano's Helm default (§1.1): actions enqueue,
allocate, backfill; tier 1 priority, gang, conformance; tier 2 overcommit, drf, predicates,
proportion, nodeorder, binpack. Jobs and queues are ordered by file order when every plugin
ties (creation-time fallback, §1.2).
"""

from __future__ import annotations

import dataclasses

import pytest

from models.errors import InputError
from models.instance import Instance
from models.load import loads
from models.scheduler_conf import KNOWN_ACTIONS
from optimizer.greedy import engine
from optimizer.greedy.actions import allocate
from optimizer.greedy.api import TaskStatus
from optimizer.greedy.session import Session
from optimizer.plan import ADMITTED, PENDING, JobDecision, Plan
from optimizer.verify import verify

HEADER = """
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: actions}
now: "2026-11-30T14:00:00Z"
"""

NO_QUOTA = """
scheduler:
  actions: "enqueue, allocate, backfill"
  tiers:
  - plugins: [{name: priority}, {name: gang}, {name: conformance}]
  - plugins: [{name: drf}, {name: predicates}, {name: nodeorder}, {name: binpack}]
"""
"""The Helm tiers without overcommit and proportion, for tests about node resources only."""


def instance(body: str, scheduler: str = "") -> Instance:
    return loads(HEADER + scheduler + body)


def solve(body: str, scheduler: str = "", seed: int = 0) -> Plan:
    inst = instance(body, scheduler)
    plan = engine.solve(inst, seed)
    assert verify(inst, plan) == []
    return plan


def placed(plan: Plan) -> dict[str, str]:
    return {p.pod: p.node for p in plan.placements}


def job_of(plan: Plan, name: str) -> JobDecision:
    decision = plan.job(f"default/{name}")
    assert decision is not None
    return decision


def with_releasing(body: str, scheduler: str, evicted: list[str]) -> tuple[Session, Plan]:
    """Run a cycle in which the running pods ``evicted`` are already being released.

    Instances have no terminating pods, so the pods are evicted right after the session opens:
    they stay in their node's Used and are added to Releasing, which is what FutureIdle counts
    (conventions of the spec, §2.6)."""
    ssn = engine.open_session(instance(body, scheduler), seed=0)
    for uid in evicted:
        task = next(t for t in ssn.tasks() if t.uid == uid)
        ssn.evict(task, "test")
    engine.run_actions(ssn)
    return ssn, engine.to_plan(ssn)


def one_node(cpu: int, name: str = "n1") -> str:
    return f'nodes:\n- {{name: {name}, allocatable: {{cpu: "{cpu}", memory: 64Gi}}}}\n'


def job(
    name: str, cpu: int, replicas: int = 1, min_available: int | None = None, extra: str = ""
) -> str:
    """A job of ``replicas`` pods of ``cpu`` CPUs (``extra``: more job fields, YAML lines)."""
    minimum = replicas if min_available is None else min_available
    return (
        f"- name: {name}\n  minAvailable: {minimum}\n{extra}"
        f"  tasks: [{{name: w, replicas: {replicas}, resources: {{cpu: '{cpu}', memory: 1Gi}}}}]\n"
    )


# -- enqueue (§1.3) ------------------------------------------------------------------------------


def test_job_without_min_resources_is_always_enqueued() -> None:
    """§1.3: ``minResources == nil`` skips JobEnqueueable. On a 4-CPU node (overcommit idle
    4 × 1.2 = 4.8) a job asking for 8 CPUs with no minResources is still enqueued, so it fails
    in allocate, on proportion's Allocatable (deserved = the 4-CPU cluster, §5.5). The same job
    declaring minResources cpu 8 is rejected by overcommit (8 > 4.8) and never reaches
    allocate."""
    body = (
        one_node(4)
        + "jobs:\n"
        + job("free", 8)
        + job("declared", 8, extra="  minResources: {cpu: '8'}\n")
    )
    plan = solve(body)
    assert plan.placements == ()
    free, declared = job_of(plan, "free"), job_of(plan, "declared")
    assert free.status == PENDING and "not enqueued" not in free.reason
    assert "queue default: cpu 8 > deserved 4" in free.reason
    assert declared.status == PENDING
    assert declared.reason.startswith("not enqueued")
    assert "overcommit" in declared.reason


OVERCOMMIT_ONLY = """
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: overcommit}, {name: predicates}, {name: nodeorder}]
"""


def test_overcommit_admits_up_to_the_factor_and_rejects_beyond() -> None:
    """§1.3 item 4: overcommit idle = 10 CPUs × 1.2 = 12. Jobs a and b (minResources 6 each)
    are admitted (6, then 6 + 6 = 12 ≤ 12) although together they exceed the cluster; c (1 CPU)
    would make 13 > 12 and is rejected. In allocate a takes 6 CPUs, b finds only 4 and fails;
    c never gets there."""
    body = (
        one_node(10)
        + "jobs:\n"
        + "".join(
            job(n, cpu, extra=f"  minResources: {{cpu: '{cpu}'}}\n")
            for n, cpu in (("a", 6), ("b", 6), ("c", 1))
        )
    )
    plan = solve(body, OVERCOMMIT_ONLY)
    assert placed(plan) == {"default/a-w-0": "n1"}
    assert "not enqueued" not in job_of(plan, "b").reason
    assert "Insufficient cpu" in job_of(plan, "b").reason
    assert job_of(plan, "c").reason.startswith("not enqueued")
    assert "overcommit" in job_of(plan, "c").reason


def test_rejected_job_does_not_block_its_queue() -> None:
    """§1.3 step 3: one job per queue pop; a job that is not enqueued is dropped and the queue
    is pushed back while it has pending jobs. "big" pops first (PodGroup priority 10, §1.6) and
    is rejected (20 > 12); "small" behind it in the same queue is still admitted and placed.
    (Queue order is static during enqueue, so the one-job-per-pop rule only shows in this
    not-blocking behaviour.)"""
    body = (
        one_node(10)
        + "jobs:\n"
        + job("small", 2, extra="  minResources: {cpu: '2'}\n")
        + job("big", 20, extra="  priority: 10\n  minResources: {cpu: '20'}\n")
    )
    plan = solve(body, OVERCOMMIT_ONLY)
    assert placed(plan) == {"default/small-w-0": "n1"}
    assert job_of(plan, "big").reason.startswith("not enqueued")


def test_queue_order_decides_who_gets_admission_room() -> None:
    """§1.3 steps 2–3 with proportion's queue order (§1.6: spec.priority descending first):
    queue "urgent" (priority 5) is popped before "default" although it comes later in the file,
    so its job takes the overcommit room (8 of 12) and the default queue's job (8) no longer
    fits (16 > 12)."""
    scheduler = """
scheduler:
  actions: "enqueue"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: overcommit}, {name: proportion}, {name: predicates}]
"""
    body = (
        one_node(10)
        + "queues:\n- {name: default}\n- {name: urgent, priority: 5}\n"
        + "jobs:\n"
        + job("plain", 8, extra="  minResources: {cpu: '8'}\n")
        + job("rush", 8, extra="  queue: urgent\n  minResources: {cpu: '8'}\n")
    )
    ssn = engine.run_session(instance(body, scheduler))
    assert ssn.jobs["default/rush"].phase == "Inqueue"
    assert ssn.jobs["default/plain"].phase == "Pending"
    assert "overcommit" in ssn.jobs["default/plain"].reason


# -- allocate: orderings and re-pushing (§1.5, §1.6, §9.2) ----------------------------------------


def test_ready_jobs_get_one_task_per_pop_and_interleave() -> None:
    """§1.5 / §9.2: a's first pop stops at minAvailable 1 and a goes back behind the not-ready
    b (gang JobOrder); then both are ready with equal drf shares, so creation order alternates
    them, each pop placing one task. The 4-CPU node takes four 1-CPU pods: a-0, b-0, a-1, b-1
    in that commit order, and neither job gets its third replica."""
    body = one_node(4) + "jobs:\n" + job("a", 1, 3, 1) + job("b", 1, 3, 1)
    plan = solve(body)
    assert [p.pod for p in plan.placements] == [
        "default/a-w-0",
        "default/b-w-0",
        "default/a-w-1",
        "default/b-w-1",
    ]
    assert job_of(plan, "a").status == ADMITTED and job_of(plan, "b").status == ADMITTED


def test_queues_are_reordered_by_share_after_every_pop() -> None:
    """§1.5 (the queue is always pushed back) and §5.4 (flat capacity: share ascending, then
    creation order). Queues q1 and q2 deserve 2 CPUs each; after a's first pod q1's share is
    0.5 > q2's 0, so q2 goes next; at equal shares q1 wins by creation. Commit order a-0, b-0,
    a-1, b-1, and each job ends with 2 of its 4 replicas on the 4-CPU node."""
    scheduler = """
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: drf}, {name: predicates}, {name: capacity}, {name: nodeorder}]
"""
    body = (
        one_node(4)
        + "queues:\n- {name: q1, deserved: {cpu: '2'}}\n- {name: q2, deserved: {cpu: '2'}}\n"
        + "jobs:\n"
        + job("a", 1, 4, 1, extra="  queue: q1\n")
        + job("b", 1, 4, 1, extra="  queue: q2\n")
    )
    plan = solve(body, scheduler)
    assert [p.pod for p in plan.placements] == [
        "default/a-w-0",
        "default/b-w-0",
        "default/a-w-1",
        "default/b-w-1",
    ]


def test_task_priority_orders_tasks_inside_a_job() -> None:
    """§1.6 Task: the priority plugin puts the higher pod priority first, before CompareTask's
    index order. Job j has task "low" (priority 1) and "high" (priority 100); minAvailable 1
    and room for one 3-CPU pod: the first pop places the high task and the job is then ready,
    the second pop finds no room for the low one."""
    body = (
        one_node(4)
        + """jobs:
- name: j
  minAvailable: 1
  tasks:
  - {name: low, replicas: 1, priority: 1, resources: {cpu: '3', memory: 1Gi}}
  - {name: high, replicas: 1, priority: 100, resources: {cpu: '3', memory: 1Gi}}
"""
    )
    plan = solve(body, NO_QUOTA)
    assert placed(plan) == {"default/j-high-0": "n1"}


# -- gang (§3, §9.1, §9.3, §9.18) -------------------------------------------------------------


def test_gang_is_discarded_when_min_available_cannot_be_met() -> None:
    """§2.1 after-loop / §3: g (minAvailable 3, three 2-CPU pods) pops first and places two on
    the 4-CPU node, the third does not fit; g is neither ready nor pipelined, so the statement
    is discarded. Nothing of g is placed, its reason is the gang message, and the 4 CPUs are
    free again for s (one 2-CPU pod) behind it."""
    body = one_node(4) + "jobs:\n" + job("g", 2, 3) + job("s", 2)
    plan = solve(body)
    assert placed(plan) == {"default/s-w-0": "n1"}
    g = job_of(plan, "g")
    assert g.status == PENDING
    assert "gang" in g.reason


def test_pipelined_only_job_keeps_its_resources_and_is_not_bound() -> None:
    """§9.1 / §1.5: n2's only pod (4 CPUs) is being released. Gang p (two 4-CPU pods) gets
    p-w-0 allocated on n1 (idle fit) and p-w-1 pipelined on n2 (future fit): not ready, but
    pipelined, so its statement is neither committed nor discarded. Its pods are listed as
    pipelined, not placed, and q (one 4-CPU pod, later in the file) finds n1 taken by p's
    uncommitted allocation and n2's future idle taken by p's pipelined pod."""
    body = (
        "nodes:\n"
        '- {name: n1, allocatable: {cpu: "4", memory: 64Gi}}\n'
        '- {name: n2, allocatable: {cpu: "4", memory: 64Gi}}\n'
        "jobs:\n"
        + job("old", 4)
        + "  running: [{index: 0, node: n2}]\n"
        + job("p", 4, 2)
        + job("q", 4)
    )
    ssn, plan = with_releasing(body, NO_QUOTA, ["default/old-w-0"])
    assert plan.placements == ()
    assert {(p.pod, p.node) for p in plan.pipelined} == {
        ("default/p-w-0", "n1"),
        ("default/p-w-1", "n2"),
    }
    assert job_of(plan, "p").status == PENDING
    assert "pipelined" in job_of(plan, "p").reason
    q = job_of(plan, "q")
    assert q.status == PENDING and "Insufficient cpu" in q.reason
    assert ssn.jobs["default/q"].tasks["default/q-w-0"].status is TaskStatus.PENDING


def test_idle_fit_node_wins_over_a_better_scored_future_fit_node() -> None:
    """§2.4 / §9.16: n1 has 5 of 8 CPUs idle, n2 has 2 idle and 6 being released. For a 4-CPU
    pod n1 is idle-fit and n2 only future-fit. nodeorder alone would prefer n2 (LeastAllocated:
    the released pod no longer counts in kube-scheduler's NodeInfo, (8−4)/8 = 50 vs n1's
    (8−7)/8 = 12), but the idle-fit group is used first and, having one node, is taken
    unscored: the pod is bound on n1."""
    scheduler = """
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: nodeorder}]
"""
    body = (
        "nodes:\n"
        '- {name: n1, allocatable: {cpu: "8", memory: 64Gi}}\n'
        '- {name: n2, allocatable: {cpu: "8", memory: 64Gi}}\n'
        "jobs:\n"
        + job("busy", 3)
        + "  running: [{index: 0, node: n1}]\n"
        + job("old", 6)
        + "  running: [{index: 0, node: n2}]\n"
        + job("new", 4)
    )
    _, plan = with_releasing(body, scheduler, ["default/old-w-0"])
    assert placed(plan) == {"default/new-w-0": "n1"}


def test_future_fit_node_pipelines_when_no_node_is_idle_fit() -> None:
    """§2.4 / §2.6: the same cluster with a 6-CPU pod: n1 (5 idle, nothing releasing) cannot
    hold it at all, n2 can only in the future (2 idle + 6 releasing), so it is pipelined there.
    A one-pod gang that is only pipelined is not bound (§9.1): the pod is listed as pipelined
    on n2 and there is no placement."""
    scheduler = """
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: nodeorder}]
"""
    body = (
        "nodes:\n"
        '- {name: n1, allocatable: {cpu: "8", memory: 64Gi}}\n'
        '- {name: n2, allocatable: {cpu: "8", memory: 64Gi}}\n'
        "jobs:\n"
        + job("busy", 3)
        + "  running: [{index: 0, node: n1}]\n"
        + job("old", 6)
        + "  running: [{index: 0, node: n2}]\n"
        + job("new", 6)
    )
    _, plan = with_releasing(body, scheduler, ["default/old-w-0"])
    assert plan.placements == ()
    assert [(p.pod, p.node) for p in plan.pipelined] == [("default/new-w-0", "n2")]


def test_failed_job_is_not_retried_in_the_same_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    """§1.5 / §9.3: a job that did not become ready is not pushed back. "big" (8 CPUs on a
    4-CPU node) pops first and fails: one placement attempt. The elastic job (minAvailable 1,
    three 1-CPU pods) is pushed back after each pop that leaves tasks: three attempts, one pod
    each. The reason for big names the quota it hit (proportion deserved is the 4-CPU cluster,
    §5.5)."""
    calls: dict[str, int] = {}
    real = allocate.allocate_tasks

    def spy(ssn, job, sheet, nodes):  # type: ignore[no-untyped-def]
        calls[job.name] = calls.get(job.name, 0) + 1
        return real(ssn, job, sheet, nodes)

    monkeypatch.setattr(allocate, "allocate_tasks", spy)
    body = one_node(4) + "jobs:\n" + job("big", 8) + job("elastic", 1, 3, 1)
    plan = solve(body)
    assert calls == {"big": 1, "elastic": 3}
    assert len([p for p in plan.placements if "elastic" in p.pod]) == 3
    assert "queue default: cpu 8 > deserved 4" in job_of(plan, "big").reason


ROLE_JOB = """jobs:
- name: j
  minAvailable: {minimum}
  tasks:
  - {{name: a, replicas: 1, nodeSelector: {{zone: x}}, resources: {{cpu: '1', memory: 1Gi}}{a}}}
  - {{name: b, replicas: 2, resources: {{cpu: '{cpu}', memory: 1Gi}}{b}}}
"""


def test_min_available_equal_to_tasks_aborts_at_the_first_failure() -> None:
    """§2.1 step 7 / §9.18: with minAvailable == #tasks (3) NeedContinueAllocating is false,
    so the loop breaks at the first unplaceable task. Task order (§1.2 CompareTask: index,
    then UID) tries j-a-0 first, whose nodeSelector matches nothing. The b pods (100 CPUs,
    which fit nowhere either) are never tried, so j-a-0 is the only task with a fit error; had
    the loop continued, j-b-0 would have one too (Insufficient cpu)."""
    body = one_node(8) + ROLE_JOB.format(minimum=3, a="", b="", cpu=100)
    ssn = engine.run_session(instance(body, NO_QUOTA))
    job = ssn.jobs["default/j"]
    assert set(job.fit_errors) == {"default/j-a-0"}
    assert "didn't match Pod's node affinity/selector" in job.fit_errors["default/j-a-0"]


def test_min_available_below_tasks_continues_past_a_failure() -> None:
    """§2.1 NeedContinueAllocating, the contrast: with minAvailable 2 < 3 tasks and no
    minTaskMember, a failed role only stops the loop if it is below its minimum (0), so the
    loop goes on, places both b pods and the job is ready: b-0 and b-1 are bound."""
    body = one_node(8) + ROLE_JOB.format(minimum=2, a="", b="", cpu=1)
    plan = solve(body, NO_QUOTA)
    assert set(placed(plan)) == {"default/j-b-0", "default/j-b-1"}


def test_tasks_of_a_failed_role_are_skipped() -> None:
    """§2.1 step 3 / §9.18: with ``volcano.sh/task-spec: w`` on both tasks they share the role
    w. j-a-0 fails, so j-b-0 and j-b-1, although they would fit, are skipped as "a task with the
    same role already failed": nothing is placed (minAvailable 1) and the reason says so."""
    role = ", annotations: {volcano.sh/task-spec: w}"
    body = one_node(8) + ROLE_JOB.format(minimum=1, a=role, b=role, cpu=1)
    plan = solve(body, NO_QUOTA)
    assert plan.placements == ()
    reason = job_of(plan, "j").reason
    assert "task role 'w' already failed in this job" in reason
    assert "didn't match Pod's node affinity/selector" in reason


# -- backfill (§1.7, §9.17) --------------------------------------------------------------------


def test_backfill_places_best_effort_pods_without_queue_quota() -> None:
    """§1.4 / §1.7 / §9.17: allocate skips BestEffort pods (empty Resreq), backfill places them
    with no queue check. Queue capped at 1 CPU (capacity capability). Job mix (minAvailable 2:
    one 1-CPU pod, one BestEffort pod) is ready after allocate places the CPU pod, because the
    pending BestEffort pod counts as ready; backfill then binds the BestEffort pod although
    the queue is at its cap. Job idle (only BestEffort pods) has no allocate worksheet and is
    placed entirely by backfill."""
    scheduler = """
scheduler:
  actions: "enqueue, allocate, backfill"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: nodeorder}]
"""
    body = (
        one_node(8)
        + "queues:\n- {name: default, capability: {cpu: '1'}}\n"
        + """jobs:
- name: mix
  minAvailable: 2
  tasks:
  - {name: cpu, replicas: 1, resources: {cpu: '1'}}
  - {name: be, replicas: 1}
- name: idle
  minAvailable: 2
  tasks:
  - {name: be, replicas: 2}
"""
    )
    plan = solve(body, scheduler)
    assert set(placed(plan)) == {
        "default/mix-cpu-0",
        "default/mix-be-0",
        "default/idle-be-0",
        "default/idle-be-1",
    }


def test_backfill_does_not_bind_best_effort_pods_of_an_unready_job() -> None:
    """§1.7: ``ssn.Allocate`` binds a job's Allocated tasks only once JobReady holds. Job mix
    (minAvailable 2) cannot place its 16-CPU pod, so it is not ready after allocate; backfill
    still allocates its BestEffort pod in the session, but the job stays unready (ready 1 <
    2), so the pod is not bound: it is held (listed as pipelined), not placed."""
    body = (
        one_node(8)
        + """jobs:
- name: mix
  minAvailable: 2
  tasks:
  - {name: cpu, replicas: 1, resources: {cpu: '16'}}
  - {name: be, replicas: 1}
"""
    )
    plan = solve(body, NO_QUOTA)
    assert plan.placements == ()
    assert [p.pod for p in plan.pipelined] == ["default/mix-be-0"]
    assert job_of(plan, "mix").status == PENDING


# -- random ties (§2.4, §9.14) -----------------------------------------------------------------


SYMMETRIC = (
    "nodes:\n"
    + "".join(f'- {{name: n{i}, allocatable: {{cpu: "8", memory: 64Gi}}}}\n' for i in range(4))
    + "jobs:\n"
    + job("j", 1)
)


def test_same_seed_gives_the_same_plan() -> None:
    """§9.14: ties are broken by the session's seeded generator, so one seed always gives one
    plan."""
    assert placed(solve(SYMMETRIC, seed=7)) == placed(solve(SYMMETRIC, seed=7))


def test_different_seeds_can_break_a_symmetric_tie_differently() -> None:
    """§2.4 / §9.14: four identical empty nodes score exactly the same for one pod, so the
    node is drawn uniformly at random (``SelectBestNodeAndScore``). Over 20 seeds a uniform
    choice among 4 picks more than one node (all equal has probability 4·4⁻²⁰)."""
    nodes = {placed(solve(SYMMETRIC, seed=s))["default/j-w-0"] for s in range(20)}
    assert len(nodes) > 1


# -- pending reasons ---------------------------------------------------------------------------


def test_pending_reason_counts_predicate_failures_per_cause() -> None:
    """§2.2: a 4-CPU pod with nodeSelector zone=a. n1 and n3 are in zone a but have 2 CPUs
    (the allocate action's own resource check fails: Insufficient cpu), n2 has room but is in
    zone b (NodeAffinity, UnschedulableAndUnresolvable). The reason counts nodes per cause,
    most frequent first, like Volcano's FitErrors."""
    body = """nodes:
- {name: n1, labels: {zone: a}, allocatable: {cpu: "2", memory: 64Gi}}
- {name: n2, labels: {zone: b}, allocatable: {cpu: "8", memory: 64Gi}}
- {name: n3, labels: {zone: a}, allocatable: {cpu: "2", memory: 64Gi}}
jobs:
- name: j
  tasks: [{name: w, replicas: 1, nodeSelector: {zone: a}, resources: {cpu: '4', memory: 1Gi}}]
"""
    plan = solve(body, NO_QUOTA)
    assert (
        "0/3 nodes are available: 2 Insufficient cpu, "
        "1 node(s) didn't match Pod's node affinity/selector" in job_of(plan, "j").reason
    )


def test_every_pending_job_has_a_reason() -> None:
    """Whatever stopped it — not enqueued, gang, fit — every pending job in a plan says why."""
    body = (
        one_node(4) + "jobs:\n" + job("g", 2, 3) + job("m", 8, extra="  minResources: {cpu: '8'}\n")
    )
    plan = solve(body)
    pending = [d for d in plan.jobs if d.status == PENDING]
    assert {d.job for d in pending} == {"default/g", "default/m"}
    assert all(d.reason for d in pending)


# -- the configured actions ------------------------------------------------------------------


def test_every_action_the_loader_accepts_is_run_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each name ``scheduler.actions`` may hold (``KNOWN_ACTIONS``) has an implementation, and
    a configuration naming all of them, in reverse, runs each once in that order (each action
    replaced by a recorder)."""
    assert set(engine.ACTIONS) == set(KNOWN_ACTIONS)
    ran: list[str] = []
    for name in engine.ACTIONS:
        monkeypatch.setitem(engine.ACTIONS, name, lambda _ssn, name=name: ran.append(name))
    order = list(reversed(KNOWN_ACTIONS))
    scheduler = (
        f'scheduler:\n  actions: "{", ".join(order)}"\n'
        "  tiers:\n  - plugins: [{name: priority}, {name: gang}]\n"
    )
    engine.solve(instance(one_node(4) + "jobs: []\n", scheduler))
    assert ran == order


def test_an_action_without_an_implementation_is_refused() -> None:
    """A configuration built in code may name an action the loader would have dropped with a
    warning (``gangpreempt``): the engine refuses it, naming it and ``scheduler.actions``,
    rather than answer for a configuration without it."""
    inst = instance(one_node(4) + "jobs: []\n")
    conf = dataclasses.replace(inst.scheduler, actions=("enqueue", "gangpreempt", "allocate"))
    with pytest.raises(InputError) as raised:
        engine.solve(dataclasses.replace(inst, scheduler=conf))
    (problem,) = raised.value.problems
    assert problem.field == "scheduler.actions"
    assert "'gangpreempt'" in problem.message


def test_the_loader_warns_about_each_action_it_drops() -> None:
    """``gangpreempt`` and ``gangreclaim`` (Volcano actions vcopt does not model) are dropped
    with a warning naming each; an unknown name is an error."""
    scheduler = (
        'scheduler:\n  actions: "enqueue, gangpreempt, allocate, gangreclaim"\n'
        "  tiers:\n  - plugins: [{name: priority}, {name: gang}]\n"
    )
    inst = instance(one_node(4) + "jobs: []\n", scheduler)
    assert inst.scheduler.actions == ("enqueue", "allocate")
    messages = [w.message for w in inst.warnings if w.field == "scheduler.actions"]
    assert len(messages) == 2
    assert "'gangpreempt'" in messages[0] and "'gangreclaim'" in messages[1]
    with pytest.raises(InputError, match=r"scheduler\.actions.*unknown action 'shufle'"):
        instance(one_node(4) + "jobs: []\n", scheduler.replace("gangreclaim", "shufle"))
