"""``enqueue`` (spec §1.3): admit Pending PodGroups into Inqueue when the quota plugins agree.

Jobs are taken queue by queue in queue order, one job per pop, so that one queue's backlog
cannot starve the others' admission; a job that is not admitted simply waits for the next
cycle.
"""

from __future__ import annotations

from models.workload import INQUEUE, PENDING

from ..heap import GoHeap
from ..session import Session


def execute(ssn: Session) -> None:
    queues: GoHeap = GoHeap(ssn.queue_order)
    jobs_by_queue: dict[str, GoHeap] = {}
    for job in sorted(ssn.jobs.values(), key=lambda j: (j.order, j.uid)):
        if job.phase not in (PENDING, ""):
            continue
        queue = ssn.queue_of(job)
        if queue is None:
            continue
        if queue.uid not in jobs_by_queue:
            jobs_by_queue[queue.uid] = GoHeap(ssn.job_order)
            queues.push(queue)
        jobs_by_queue[queue.uid].push(job)
    while not queues.empty():
        queue = queues.pop()
        heap = jobs_by_queue[queue.uid]
        if heap.empty():
            continue
        job = heap.pop()
        if job.job.min_resources is None or ssn.job_enqueueable(job):
            ssn.job_enqueued(job)
            job.phase = INQUEUE
        elif not job.reason:
            job.reason = "not enqueued: queue or cluster has no room for the job's minResources"
        if not heap.empty():
            queues.push(queue)
