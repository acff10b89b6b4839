"""``reclaim`` (spec §8.2): starving jobs of queues that may still grow take resources back from
other queues' running tasks.

Per starving job (queue order, then job order) one statement: each pending task that passes
``Preemptive`` reclaims on the first node, in predicate-scan order, where the reclaimable
victims make room; nodes are not scored (§9.19). The statement stands only if the job is
pipelined afterwards. Which tasks are reclaimable is decided per plugin tier: a non-empty
tier-1 answer (gang) skips capacity's deserved and guarantee checks, and an empty one hands
the decision to the next tier (§8.2, §9.4).
"""

from __future__ import annotations

from collections.abc import Hashable

from models.workload import PENDING

from ..api import JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus, vle
from ..eviction_filters import reclaim_candidates
from ..heap import GoHeap
from ..session import Session, Statement
from ..victims import victim_order, victim_queue
from .preempt import NEVER, may_free, pending_tasks, pipeline, validate_victims

REASON = "reclaim"


def execute(ssn: Session) -> None:
    queues: GoHeap[QueueInfo] = GoHeap(ssn.queue_order)
    jobs_by_queue: dict[str, GoHeap[JobInfo]] = {}
    for job in sorted(ssn.jobs.values(), key=lambda j: (j.order, j.uid)):
        if job.phase in (PENDING, "") or ssn.job_valid(job) is not None:
            continue
        queue = ssn.queue_of(job)
        if queue is None:
            continue
        if queue.uid not in jobs_by_queue:
            jobs_by_queue[queue.uid] = GoHeap(ssn.job_order)
            queues.push(queue)
        if ssn.job_starving(job):
            jobs_by_queue[queue.uid].push(job)
    while not queues.empty():
        queue = queues.pop()
        if ssn.overused(queue):
            continue
        heap = jobs_by_queue[queue.uid]
        if heap.empty():
            continue
        _reclaim_for_job(ssn, queue, heap.pop())
        queues.push(queue)


def _reclaim_for_job(ssn: Session, queue: QueueInfo, job: JobInfo) -> None:
    """One statement for the job's pending tasks.

    A task that found no node changed nothing, so the next task asking the same of nodes and
    queues (:func:`_same_ask`) finds none either while the session stays as it was (no node
    changed since, by the change log): it is not tried again."""
    stmt = ssn.statement()
    tasks = pending_tasks(ssn, job)
    failed: dict[Hashable, int] = {}
    while not tasks.empty():
        task = tasks.pop()
        if task.preemption_policy == NEVER or not ssn.preemptive(queue, task):
            continue
        if ssn.pre_predicate(task) is not None:
            continue
        ask = _same_ask(ssn, task)
        if ask is not None and failed.get(ask) == len(ssn.node_changes):
            continue
        if not _reclaim_for_task(ssn, stmt, task) and ask is not None:
            failed[ask] = len(ssn.node_changes)
    if ssn.job_pipelined(job):
        stmt.commit()
    else:
        stmt.discard()


def _reclaimees(ssn: Session, task: TaskInfo, node: NodeInfo) -> list[TaskInfo]:
    """Running, preemptable tasks on ``node`` of other queues that allow reclaiming."""
    own_queue = ssn.jobs[task.job].queue
    out = []
    for other in node.tasks.values():
        if other.status is not TaskStatus.RUNNING or not other.preemptable:
            continue
        job = ssn.jobs.get(other.job)
        if job is None or job.queue == own_queue or not ssn.queues[job.queue].reclaimable:
            continue
        out.append(other)
    return out


def _same_ask(ssn: Session, task: TaskInfo) -> Hashable | None:
    """What :func:`_reclaim_for_task` reads of a task: its job (and so its queue), its requests
    and what the predicates read of it; None when the predicates read more (the task's
    verdicts are not cacheable)."""
    keys = ssn.predicate_key(task)
    if keys is None:
        return None
    return (task.job, tuple(task.init_resreq), tuple(task.resreq), keys)


def _reclaim_for_task(ssn: Session, stmt: Statement, task: TaskInfo) -> bool:
    """``reclaimForTask``: the first node, in node order, that passes the preempt-style
    predicate and whose reclaimable victims make room wins; whether one did.

    ``ValidateVictims`` has checked that evicting every victim makes room, and each eviction
    adds exactly the victim's request to the node's future idle, so the loop always ends with
    the task fitting. The nodes that cannot pass the first two checks are filtered out at
    once when the arrays allow (:func:`eviction_filters.reclaim_candidates`).
    """
    candidates = reclaim_candidates(ssn, task)
    for node in ssn.node_list if candidates is None else candidates:
        # The candidates read from arrays already pass these two checks.
        if candidates is None and not may_free(ssn, task, node):
            continue
        reclaimees = _reclaimees(ssn, task, node)
        # Victims are a subset of the reclaimees: if all of them cannot make room, no choice of
        # the plugins can, and asking them is wasted work on a busy cluster.
        if candidates is None and not validate_victims(task, node, reclaimees):
            continue
        # Capacity's Reclaimable walks its candidates in victim order (§5.4), and which tasks
        # it takes depends on that walk; the other plugins walk them in Go map order, i.e. in
        # any order. Handing every plugin the victim order is therefore faithful for all.
        victims = ssn.reclaimable(task, victim_order(ssn, reclaimees, task))
        if not validate_victims(task, node, victims):
            continue
        order = victim_queue(ssn, victims, task)
        while not vle(task.init_resreq, node.future_idle):
            stmt.evict(order.pop(), REASON)
        pipeline(stmt, task, node)
        return True
    return False
