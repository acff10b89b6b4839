"""Queue position: the order in which Volcano would try each queue's pending jobs.

Volcano pops the jobs of a queue from a heap ordered by the configured ``JobOrderFn``
plugins (priority, gang readiness, DRF share …), creation order breaking ties; the position
of a pending job in that order is what Kueue's visibility API shows as its place in the queue.
The greedy engine's session holds exactly those plugins, so the order is read from it.
"""

from __future__ import annotations

from functools import cmp_to_key

from models.instance import Instance

from ..greedy.api import JobInfo, TaskStatus
from ..greedy.engine import open_session

WAITING = frozenset({TaskStatus.PENDING, TaskStatus.PIPELINED})


def queue_positions(instance: Instance) -> dict[str, int]:
    """Job key → its place (1 = tried first) among the pending jobs of its queue; jobs with
    no pending pod have no place."""
    ssn = open_session(instance)

    def compare(left: JobInfo, right: JobInfo) -> int:
        if ssn.job_order(left, right):
            return -1
        return 1 if ssn.job_order(right, left) else 0

    by_queue: dict[str, list[JobInfo]] = {}
    for job in ssn.jobs.values():
        if any(t.status in WAITING for t in job.tasks.values()):
            by_queue.setdefault(job.queue, []).append(job)
    positions: dict[str, int] = {}
    for jobs in by_queue.values():
        for place, job in enumerate(sorted(jobs, key=cmp_to_key(compare)), start=1):
            positions[job.uid] = place
    return positions
