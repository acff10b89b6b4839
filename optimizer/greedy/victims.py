"""The order in which victims are evicted (``BuildVictimsPriorityQueue``, spec §8.3).

Preempt and reclaim evict one victim at a time until the preemptor fits, and capacity's
Reclaimable walks its candidates in the same order, so this order decides who loses work:
tasks of the same job in reverse task order, tasks of other jobs of the same queue in reverse
job order, and across queues the victim queue order (siblings before cousins with hierarchical
capacity, otherwise the queue that would be scheduled last).
"""

from __future__ import annotations

from collections.abc import Iterable

from .api import TaskInfo
from .heap import GoHeap
from .session import Session


def victim_queue(
    ssn: Session, victims: Iterable[TaskInfo], preemptor: TaskInfo
) -> GoHeap[TaskInfo]:
    """A heap that pops the victim to evict next.

    Like Volcano's priority queue its comparison reads live session state, so a victim popped
    after an eviction is chosen with the job order as it stands then (a gang that lost a
    member sorts differently).
    """
    preemptor_job = ssn.jobs.get(preemptor.job)

    def first(left: TaskInfo, right: TaskInfo) -> bool:
        if left.job == right.job:
            return not ssn.task_order(left, right)
        left_job, right_job = ssn.jobs.get(left.job), ssn.jobs.get(right.job)
        if left_job is None or right_job is None:
            return left_job is None
        if left_job.queue == right_job.queue or preemptor_job is None:
            result = ssn.job_order_compare(left_job, right_job)
            if result != 0:
                return result > 0
            return not ssn.task_order(left, right)
        return ssn.victim_queue_order(
            ssn.queues[left_job.queue],
            ssn.queues[right_job.queue],
            ssn.queues[preemptor_job.queue],
        )

    heap: GoHeap[TaskInfo] = GoHeap(first)
    for victim in victims:
        heap.push(victim)
    return heap


def victim_order(ssn: Session, victims: Iterable[TaskInfo], preemptor: TaskInfo) -> list[TaskInfo]:
    """All of ``victims``, first evicted first, for a walk that changes no session state."""
    heap = victim_queue(ssn, victims, preemptor)
    return [heap.pop() for _ in range(len(heap))]
