"""``drf`` (``plugins/drf/drf.go``): Dominant Resource Fairness between jobs (spec §1.6).

A job's share is its largest fraction of any cluster resource. Jobs with the smaller share are
scheduled first, and a preemptor may only take pods from jobs that would still hold at least
its own share afterwards. The allocation is kept here, from the allocate/deallocate events, and
not read from ``JobInfo.allocated``: the events also fire for pipelined tasks, which Volcano's
drf counts and ``JobInfo.allocated`` does not (§9.20).

Hierarchical DRF (``enableHierarchy: true`` on drf, which adds a queue order and a reclaim
rule over a queue tree) is not supported: the flag is ignored and only the job-level rules
below are registered.
"""

from __future__ import annotations

from models.resources import CPU, MEMORY

from ..api import JobInfo, TaskInfo, vadd, vsub
from ..session import PERMIT, Event, EventHandler, Plugin, Session

SHARE_DELTA = 0.000001
"""``shareDelta``: shares this close count as equal in the preemption test."""


def share_of(amount: int, total: int) -> float:
    """``helpers.Share``: a resource the cluster lacks is fully used as soon as it is held."""
    if total == 0:
        return 0.0 if amount == 0 else 1.0
    return amount / total


class DrfPlugin(Plugin):
    name = "drf"

    def on_session_open(self, ssn: Session) -> None:
        total = ssn.total_resource
        # Volcano walks the resource names of the cluster total: cpu and memory always, plus
        # the scalars some node offers; a scalar no node has is part of no share.
        always = {ssn.dims.index[CPU], ssn.dims.index[MEMORY]}
        dims = [i for i, amount in enumerate(total) if amount > 0 or i in always]
        allocated: dict[str, list[int]] = {}
        shares: dict[str, float] = {}

        def dominant_share(vector: list[int]) -> float:
            return max((share_of(vector[i], total[i]) for i in dims), default=0.0)

        for uid, job in ssn.jobs.items():
            allocated[uid] = list(job.allocated)
            shares[uid] = dominant_share(job.allocated)

        def on_allocate(event: Event) -> None:
            uid = event.task.job
            allocated[uid] = vadd(allocated[uid], event.task.resreq)
            shares[uid] = dominant_share(allocated[uid])

        def on_deallocate(event: Event) -> None:
            uid = event.task.job
            allocated[uid] = vsub(allocated[uid], event.task.resreq)
            shares[uid] = dominant_share(allocated[uid])

        def job_order(left: JobInfo, right: JobInfo) -> int:
            left_share, right_share = shares[left.uid], shares[right.uid]
            if left_share == right_share:
                return 0
            return 1 if left_share > right_share else -1

        def preemptable(
            preemptor: TaskInfo, candidates: list[TaskInfo]
        ) -> tuple[list[TaskInfo], int]:
            """A candidate is a victim if its job's share after losing it (and the candidates
            of the same job before it) is still ≥ the preemptor job's share after gaining the
            preemptor, within ``SHARE_DELTA``."""
            preemptor_share = dominant_share(vadd(allocated[preemptor.job], preemptor.resreq))
            remaining: dict[str, list[int]] = {}
            victims: list[TaskInfo] = []
            for task in candidates:
                left = vsub(remaining.get(task.job, allocated[task.job]), task.resreq)
                remaining[task.job] = left
                victim_share = dominant_share(left)
                if (
                    preemptor_share < victim_share
                    or abs(preemptor_share - victim_share) <= SHARE_DELTA
                ):
                    victims.append(task)
            return victims, PERMIT

        ssn.add("job_order", self.name, job_order)
        ssn.add("preemptable", self.name, preemptable)
        ssn.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate))
