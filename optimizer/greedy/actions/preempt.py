"""``preempt`` (spec §8.1): starving jobs take resources from lower-priority work of their queue.

Phase A lets whole jobs preempt other jobs of the same queue, one statement per preemptor job,
committed only if the job becomes pipelined; phase B lets a starving job's pending tasks preempt
its own lower-priority tasks. Preemptors are pipelined onto the node they freed, never bound in
this cycle, and jobs with any network topology never preempt (§9.5).
"""

from __future__ import annotations

from collections.abc import Callable

from models.workload import PENDING

from ..api import PREEMPTABLE_STATUSES, JobInfo, NodeInfo, Status, TaskInfo, vadd, vle
from ..heap import GoHeap
from ..nodes import check_node
from ..session import Session, Statement
from ..victims import victim_queue

Filter = Callable[[TaskInfo], bool]


def execute(ssn: Session) -> None:
    queues: GoHeap = GoHeap(ssn.queue_order)
    preemptors: dict[str, GoHeap] = {}
    tasks: dict[str, GoHeap] = {}
    starving: dict[str, list[JobInfo]] = {}
    for job in sorted(ssn.jobs.values(), key=lambda j: (j.order, j.uid)):
        if job.phase in (PENDING, "") or ssn.job_valid(job) is not None or job.has_topology:
            continue
        queue = ssn.queue_of(job)
        if queue is None or not ssn.job_starving(job):
            continue
        if queue.uid not in preemptors:
            preemptors[queue.uid] = GoHeap(ssn.job_order)
            queues.push(queue)
        preemptors[queue.uid].push(job)
        starving.setdefault(queue.uid, []).append(job)
        tasks[job.uid] = pending_tasks(ssn, job)
    while not queues.empty():
        queue = queues.pop()
        if ssn.overused(queue):
            continue
        heap = preemptors[queue.uid]
        while not heap.empty():
            job = heap.pop()
            stmt = ssn.statement()
            assigned = False
            while ssn.job_starving(job) and not tasks[job.uid].empty():
                task = tasks[job.uid].pop()
                if preempt(ssn, stmt, task, _between_jobs(ssn, task)):
                    assigned = True
            if not ssn.job_pipelined(job):
                stmt.discard()
                continue
            stmt.commit()
            if assigned:
                heap.push(job)
        for job in starving.get(queue.uid, []):
            own = pending_tasks(ssn, job)
            while not own.empty():
                task = own.pop()
                stmt = ssn.statement()
                assigned = preempt(ssn, stmt, task, lambda t, job=job: t.job == job.uid)
                stmt.commit()
                if not assigned:
                    break


def pending_tasks(ssn: Session, job: JobInfo) -> GoHeap:
    heap: GoHeap = GoHeap(ssn.task_order)
    for task in sorted(job.tasks.values(), key=lambda t: t.uid):
        if task.status is Status.PENDING:
            heap.push(task)
    return heap


def _between_jobs(ssn: Session, preemptor: TaskInfo) -> Filter:
    queue = ssn.jobs[preemptor.job].queue

    def keep(task: TaskInfo) -> bool:
        if task.job == preemptor.job or ssn.jobs[task.job].queue != queue:
            return False
        return task.best_effort == preemptor.best_effort

    return keep


def candidate_nodes(ssn: Session, task: TaskInfo) -> list[NodeInfo]:
    """Nodes that fail the predicates only with resolvable reasons (``PredicateForPreemptAction``):
    lack of resources is exactly what eviction can fix."""
    out = []
    for node in ssn.node_list:
        failure = ssn.predicate(task, node)
        if failure is None or failure.resolvable:
            out.append(node)
    return out


def fits(ssn: Session, task: TaskInfo, node: NodeInfo) -> bool:
    """``preemptorFitsOnNode``: queue quota, ``InitResreq ≤ FutureIdle`` and every predicate."""
    queue = ssn.queue_of(ssn.jobs[task.job])
    if queue is None or not ssn.allocatable(queue, task):
        return False
    return check_node(ssn, task, node) is None


def validate_victims(task: TaskInfo, node: NodeInfo, victims: list[TaskInfo]) -> bool:
    """``ValidateVictims``: the victims together could make room at all."""
    if not victims:
        return False
    freed = node.future_idle
    for victim in victims:
        freed = vadd(freed, victim.resreq)
    return vle(task.init_resreq, freed)


def preempt(ssn: Session, stmt: Statement, task: TaskInfo, keep: Filter) -> bool:
    if task.preemption_policy == "Never" or ssn.pre_predicate(task) is not None:
        return False
    nodes = candidate_nodes(ssn, task)
    batch = ssn.batch_node_order(task, nodes)
    scored = sorted(
        nodes, key=lambda n: (-(ssn.node_order(task, n) + batch.get(n.name, 0.0)), n.index)
    )
    for node in scored:
        preemptees = [
            t
            for t in node.tasks.values()
            if t.status in PREEMPTABLE_STATUSES and t.preemptable and keep(t)
        ]
        victims = ssn.preemptable(task, preemptees)
        if not validate_victims(task, node, victims):
            continue
        local = ssn.statement()
        queue = victim_queue(ssn, victims, task)
        while not fits(ssn, task, node) and not queue.empty():
            local.evict(queue.pop(), "preempt")
        if fits(ssn, task, node):
            stmt.merge(local)
            stmt.pipeline(task, node, _devices(ssn, task, node))
            return True
        local.discard()
    return False


def _devices(ssn: Session, task: TaskInfo, node: NodeInfo):  # type: ignore[no-untyped-def]
    from ..nodes import device_fit

    found = device_fit(ssn, task, node)
    return getattr(found, "gpus", None)
