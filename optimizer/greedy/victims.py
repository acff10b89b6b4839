"""The order in which victims are evicted (``BuildVictimsPriorityQueue``, spec §8.3).

Preempt and reclaim both evict one victim at a time until the preemptor fits, so which victim
comes first decides who loses work: tasks of the same job in reverse task order, tasks of other
jobs of the same queue in reverse job order, and across queues by the victim queue order
(siblings before cousins with hierarchical capacity).
"""

from __future__ import annotations

from collections.abc import Iterable

from .api import TaskInfo
from .heap import GoHeap
from .session import Session


def victim_queue(
    ssn: Session, victims: Iterable[TaskInfo], preemptor: TaskInfo
) -> GoHeap[TaskInfo]:
    preemptor_job = ssn.jobs.get(preemptor.job)
    preemptor_queue = ssn.queues.get(preemptor_job.queue) if preemptor_job else None

    def first(left: TaskInfo, right: TaskInfo) -> bool:
        if left.job == right.job:
            return ssn.task_order(right, left)
        lj, rj = ssn.jobs.get(left.job), ssn.jobs.get(right.job)
        if lj is None or rj is None:
            return lj is None and rj is not None
        if lj.queue == rj.queue or preemptor_queue is None:
            result = ssn.job_order_compare(lj, rj)
            if result != 0:
                return result > 0
            return ssn.task_order(right, left)
        lq, rq = ssn.queues[lj.queue], ssn.queues[rj.queue]
        return ssn.victim_queue_order(lq, rq, preemptor_queue)

    heap: GoHeap[TaskInfo] = GoHeap(first)
    for victim in victims:
        heap.push(victim)
    return heap
