"""``preempt`` (spec §8.1): starving jobs take resources from lower-priority work of their queue.

Phase A lets whole jobs preempt other jobs of the same queue, one statement per preemptor job,
committed only if the job becomes pipelined; phase B lets a starving job's pending tasks preempt
tasks of their own job, one statement per task. Nodes are tried best score first, and on each
node victims are evicted in victim order only until the preemptor fits (the shortest prefix, no
reprieve). Preemptors are pipelined onto the node they freed, never bound in this cycle, and
jobs with any network topology never preempt (§9.5).

The helpers shared with ``reclaim`` (preemptor tasks, candidate nodes, ``ValidateVictims``,
pipelining with GPU devices) live here too.
"""

from __future__ import annotations

from models.workload import PENDING

from ..api import PREEMPTABLE_STATUSES, JobInfo, NodeInfo, QueueInfo, Status, TaskInfo, vadd, vle
from ..heap import GoHeap
from ..nodes import check_node, device_fit
from ..session import Session, Statement
from ..victims import victim_queue

NEVER = "Never"
REASON = "preempt"


def execute(ssn: Session) -> None:
    queues: GoHeap[QueueInfo] = GoHeap(ssn.queue_order)
    seen: set[str] = set()
    preemptors: dict[str, GoHeap[JobInfo]] = {}
    tasks: dict[str, GoHeap[TaskInfo]] = {}
    starving: dict[str, list[JobInfo]] = {}
    for job in sorted(ssn.jobs.values(), key=lambda j: (j.order, j.uid)):
        if job.phase in (PENDING, "") or ssn.job_valid(job) is not None:
            continue
        queue = ssn.queue_of(job)
        if queue is None:
            continue
        if queue.uid not in seen:
            seen.add(queue.uid)
            queues.push(queue)
        # Volcano quirk (§9.5): a job with any network topology never preempts.
        if job.has_topology or not ssn.job_starving(job):
            continue
        preemptors.setdefault(queue.uid, GoHeap(ssn.job_order)).push(job)
        starving.setdefault(queue.uid, []).append(job)
        tasks[job.uid] = pending_tasks(ssn, job)
    while not queues.empty():
        # Unlike allocate and reclaim, preempt never asks Overused: every queue with starving
        # jobs runs both phases (``preempt.go:Execute``).
        queue = queues.pop()
        heap = preemptors.get(queue.uid)
        while heap is not None and not heap.empty():
            _between_jobs(ssn, heap, heap.pop(), tasks)
        for job in starving.get(queue.uid, []):
            _within_job(ssn, job)


def _between_jobs(
    ssn: Session, heap: GoHeap[JobInfo], job: JobInfo, tasks: dict[str, GoHeap[TaskInfo]]
) -> None:
    """Phase A for one popped preemptor job: its tasks preempt other jobs of its queue while it
    is starving; the statement stands only if the job is pipelined afterwards."""
    stmt = ssn.statement()
    assigned = False
    others = _other_jobs_of_queue(ssn, job)
    while ssn.job_starving(job) and not tasks[job.uid].empty():
        assigned = preempt(ssn, stmt, tasks[job.uid].pop(), others)
    if not ssn.job_pipelined(job):
        stmt.discard()
        return
    stmt.commit()
    if assigned:
        heap.push(job)


def _within_job(ssn: Session, job: JobInfo) -> None:
    """Phase B: each pending task (task order) may preempt tasks of its own job; every success
    is committed at once, the first failure ends the job's turn."""
    own = pending_tasks(ssn, job)
    itself = frozenset({job.uid})
    while not own.empty():
        stmt = ssn.statement()
        assigned = preempt(ssn, stmt, own.pop(), itself)
        stmt.commit()
        if not assigned:
            return


def pending_tasks(ssn: Session, job: JobInfo) -> GoHeap[TaskInfo]:
    """The job's Pending tasks in task order (the preemptor/reclaimer task heap)."""
    heap: GoHeap[TaskInfo] = GoHeap(ssn.task_order)
    for task in sorted(job.tasks.values(), key=lambda t: t.uid):
        if task.status is Status.PENDING:
            heap.push(task)
    return heap


def _other_jobs_of_queue(ssn: Session, job: JobInfo) -> frozenset[str]:
    """Phase A's victims come from the other jobs of the preemptor's queue."""
    return frozenset(uid for uid, j in ssn.jobs.items() if j.queue == job.queue and uid != job.uid)


def _preemptees(node: NodeInfo, jobs: frozenset[str], best_effort: bool) -> list[TaskInfo]:
    """The tasks on ``node`` a preemptor may consider: of one of ``jobs``, Bound or Running,
    marked preemptable, and not a non-BestEffort pod for a ``best_effort`` preemptor (Volcano:
    "BestEffort pod is not supported to preempt unBestEffort pod")."""
    return [
        t
        for t in node.tasks.values()
        if t.job in jobs
        and t.status in PREEMPTABLE_STATUSES
        and t.preemptable
        and (not best_effort or t.best_effort)
    ]


def candidate_nodes(ssn: Session, task: TaskInfo) -> list[NodeInfo]:
    """``PredicateForPreemptAction`` over all nodes, in node order (see :func:`may_free`)."""
    return [node for node in ssn.node_list if may_free(ssn, task, node)]


def may_free(ssn: Session, task: TaskInfo, node: NodeInfo) -> bool:
    """Whether evicting could make ``node`` usable for ``task``: the node passes the
    predicates or fails them only with resolvable reasons (lack of room is exactly what
    eviction fixes); UnschedulableAndUnresolvable nodes, as they were in allocate, are out."""
    failure = ssn.predicate(task, node)
    return failure is None or failure.resolvable


def validate_victims(task: TaskInfo, node: NodeInfo, victims: list[TaskInfo]) -> bool:
    """``ValidateVictims``: there are victims, and all of them together would make room."""
    if not victims:
        return False
    freed = node.future_idle
    for victim in victims:
        freed = vadd(freed, victim.resreq)
    return vle(task.init_resreq, freed)


def pipeline(stmt: Statement, task: TaskInfo, node: NodeInfo) -> None:
    """Pipeline ``task`` on ``node``, booking the GPU devices it would get there, if any."""
    devices = device_fit(stmt.ssn, task, node)
    stmt.pipeline(task, node, getattr(devices, "gpus", None))


def _fits(ssn: Session, queue: QueueInfo, task: TaskInfo, node: NodeInfo) -> bool:
    """``preemptorFitsOnNode``: queue quota, ``InitResreq ≤ FutureIdle`` and every predicate."""
    return ssn.allocatable(queue, task) and check_node(ssn, task, node) is None


def _by_score(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
    """``PrioritizeNodes`` then ``SortNodes``: best total score first; equal scores keep the
    predicate order (Volcano appends nodes of one score in that order)."""
    batch = ssn.batch_node_order(task, nodes)
    scores = {n.name: ssn.node_order(task, n) + batch.get(n.name, 0.0) for n in nodes}
    return sorted(nodes, key=lambda n: -scores[n.name])


def preempt(ssn: Session, stmt: Statement, task: TaskInfo, jobs: frozenset[str]) -> bool:
    """``preempt(task)``: on the best-scored node where the preemptable tasks of ``jobs`` could
    make room, evict them in victim order until ``task`` fits, then pipeline it there.

    Victims are chosen for every node before any node is tried. Volcano chooses them node by
    node, but a node that does not work out is discarded, which restores every state the
    Preemptable hooks read, so the choice is the same; choosing first lets a task with no
    possible victims, or victims on one node only, skip the scoring of every node.
    """
    if task.preemption_policy == NEVER or ssn.pre_predicate(task) is not None:
        return False
    nodes = candidate_nodes(ssn, task)
    best_effort = task.best_effort
    choices: dict[str, list[TaskInfo]] = {}
    for node in nodes:
        preemptees = _preemptees(node, jobs, best_effort)
        # Victims are a subset of the preemptees: if all of them cannot make room, asking the
        # plugins is wasted work.
        if not validate_victims(task, node, preemptees):
            continue
        victims = ssn.preemptable(task, preemptees)
        if validate_victims(task, node, victims):
            choices[node.name] = victims
    if not choices:
        return False
    queue = ssn.queues[ssn.jobs[task.job].queue]
    ranked = _by_score(ssn, task, nodes) if len(choices) > 1 else nodes
    for node in ranked:
        if node.name not in choices:
            continue
        local = ssn.statement()
        order = victim_queue(ssn, choices[node.name], task)
        while not _fits(ssn, queue, task, node) and not order.empty():
            local.evict(order.pop(), REASON)
        if _fits(ssn, queue, task, node):
            stmt.merge(local)
            pipeline(stmt, task, node)
            return True
        local.discard()
    return False
