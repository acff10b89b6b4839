"""``reclaim`` (spec §8.2): starving jobs of queues below their share take resources back from
other queues' running tasks.

Unlike preempt, nodes are not scored: the first node in predicate-scan order where the
reclaimable victims make room wins (§9.19). Which tasks are reclaimable is decided per plugin
tier, and a non-empty tier-1 answer (gang) skips capacity's deserved and guarantee checks
(§8.2, §9.4).
"""

from __future__ import annotations

from models.workload import PENDING

from ..api import JobInfo, Status, TaskInfo
from ..heap import GoHeap
from ..session import Session, Statement
from ..victims import victim_queue
from .preempt import _devices, candidate_nodes, fits, pending_tasks, validate_victims


def execute(ssn: Session) -> None:
    queues: GoHeap = GoHeap(ssn.queue_order)
    jobs_by_queue: dict[str, GoHeap] = {}
    for job in sorted(ssn.jobs.values(), key=lambda j: (j.order, j.uid)):
        if job.phase in (PENDING, "") or ssn.job_valid(job) is not None:
            continue
        queue = ssn.queue_of(job)
        if queue is None or not ssn.job_starving(job):
            continue
        if queue.uid not in jobs_by_queue:
            jobs_by_queue[queue.uid] = GoHeap(ssn.job_order)
            queues.push(queue)
        jobs_by_queue[queue.uid].push(job)
    while not queues.empty():
        queue = queues.pop()
        if ssn.overused(queue):
            continue
        heap = jobs_by_queue[queue.uid]
        if heap.empty():
            continue
        job = heap.pop()
        reclaim_job(ssn, job)
        if not heap.empty():
            queues.push(queue)


def reclaim_job(ssn: Session, job: JobInfo) -> None:
    stmt = ssn.statement()
    queue = ssn.queues[job.queue]
    tasks = pending_tasks(ssn, job)
    while not tasks.empty():
        task = tasks.pop()
        if task.preemption_policy == "Never" or not ssn.preemptive(queue, task):
            continue
        if ssn.pre_predicate(task) is not None:
            continue
        reclaim_for_task(ssn, stmt, task)
    if ssn.job_pipelined(job):
        stmt.commit()
    else:
        stmt.discard()


def reclaim_for_task(ssn: Session, stmt: Statement, task: TaskInfo) -> bool:
    own_queue = ssn.jobs[task.job].queue
    for node in candidate_nodes(ssn, task):
        reclaimees = [
            t
            for t in node.tasks.values()
            if t.status is Status.RUNNING
            and t.preemptable
            and ssn.jobs[t.job].queue != own_queue
            and ssn.queues[ssn.jobs[t.job].queue].reclaimable
        ]
        victims = ssn.reclaimable(task, reclaimees)
        if not validate_victims(task, node, victims):
            continue
        local = ssn.statement()
        order = victim_queue(ssn, victims, task)
        while not fits(ssn, task, node) and not order.empty():
            local.evict(order.pop(), "reclaim")
        if fits(ssn, task, node):
            stmt.merge(local)
            stmt.pipeline(task, node, _devices(ssn, task, node))
            return True
        local.discard()
    return False
