"""``enqueue`` (spec §1.3): admit Pending PodGroups into Inqueue when the quota plugins agree.

Jobs are taken queue by queue in queue order, one job per pop, so that one queue's backlog
cannot starve the others' admission; a job that is not admitted simply waits for the next
cycle and does not stop the jobs behind it.
"""

from __future__ import annotations

from models.resources import format_amount
from models.workload import INQUEUE, PENDING

from ..api import JobInfo
from ..heap import GoHeap
from ..session import Session

WHY = {
    "overcommit": "the cluster's allocatable × overcommit-factor, less what is used and what "
    "Inqueue jobs reserve, cannot hold them",
    "capacity": "minResources + allocated + inqueue − elastic would exceed the realCapability "
    "of queue {queue} or of an ancestor (or the queue is closed, not a leaf, or the plugin "
    "is disabled this cycle)",
    "proportion": "minResources + allocated + inqueue − elastic would exceed the realCapability "
    "of queue {queue}",
}
"""Per plugin, what its JobEnqueueable Reject means."""


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
            job.reason = rejection(ssn, job)
        if not heap.empty():
            queues.push(queue)


def rejection(ssn: Session, job: JobInfo) -> str:
    """``not enqueued: <plugin> rejected minResources (…): <what that plugin checks>``."""
    minimum = job.job.min_resources or {}
    amounts = ", ".join(f"{k} {format_amount(k, v)}" for k, v in sorted(minimum.items()) if v)
    rejecters = ssn.enqueue_rejecters(job)
    if not rejecters:
        return f"not enqueued: minResources ({amounts}) not admitted"
    why = "; ".join(
        f"{name}: {WHY.get(name, 'rejected').format(queue=job.queue)}" for name in rejecters
    )
    return f"not enqueued: minResources ({amounts}) rejected by {why}"
