"""``overcommit`` (``plugins/overcommit/overcommit.go``): admit PodGroups into Inqueue while the
cluster, inflated by ``overcommit-factor``, still has room for their ``minResources``
(spec §1.3).

The factor multiplies every dimension of the cluster total, scalars such as GPUs included
(``Resource.Multi``), so with the default 1.2 a cluster of 8 GPUs admits gangs worth 9.6. The
factor and the room it leaves are :mod:`models.admission`'s, which the CP-SAT model and the
verifier read too.
"""

from __future__ import annotations

from models.admission import overcommit_factor, overcommit_room, unmet_minimum
from models.workload import INQUEUE, RUNNING

from ..api import ALLOCATED_STATUSES, JobInfo, vadd
from ..session import PERMIT, REJECT, Plugin, Session


def inqueue_at_open(ssn: Session) -> dict[str, int]:
    """What the session opens with as held back for admitted jobs: the minimums of Inqueue
    jobs, and of running gangs the part of their minimum they have not been given yet (the
    same rule as proportion/capacity, §5.1)."""
    inqueue: dict[str, int] = {}
    for job in ssn.jobs.values():
        minimum = job.job.min_resources
        if minimum is None:
            continue
        if job.phase == INQUEUE:
            held = dict(minimum)
        elif job.phase == RUNNING and job.count(ALLOCATED_STATUSES) >= job.min_available:
            held = dict(unmet_minimum(minimum, ssn.dims.resources(job.allocated)))
        else:
            continue
        for name, amount in held.items():
            inqueue[name] = inqueue.get(name, 0) + amount
    return inqueue


class OvercommitPlugin(Plugin):
    name = "overcommit"

    def on_session_open(self, ssn: Session) -> None:
        used = ssn.dims.zero()
        for node in ssn.node_list:
            used = vadd(used, node.used)
        room = overcommit_room(
            ssn.dims.resources(ssn.total_resource),
            ssn.dims.resources(used),
            overcommit_factor(self.arguments),
        )
        inqueue = inqueue_at_open(ssn)

        def job_enqueueable(job: JobInfo) -> int:
            """Permit when the Inqueue minimums plus this job's stay within the room, on the
            dimensions the job asks for (a resource no node offers has no room at all)."""
            minimum = job.job.min_resources or {}
            for name, amount in minimum.items():
                if amount > 0 and inqueue.get(name, 0) + amount > room.get(name, 0):
                    return REJECT
            return PERMIT

        def job_enqueued(job: JobInfo) -> None:
            for name, amount in (job.job.min_resources or {}).items():
                inqueue[name] = inqueue.get(name, 0) + amount

        ssn.add("job_enqueueable", self.name, job_enqueueable)
        ssn.add("job_enqueued", self.name, job_enqueued)
