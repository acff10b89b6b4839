"""``overcommit`` (``plugins/overcommit/overcommit.go``): admit PodGroups into Inqueue while the
cluster, inflated by ``overcommit-factor``, still has room for their ``minResources``
(spec §1.3).

The factor multiplies every dimension of the cluster total, scalars such as GPUs included
(``Resource.Multi``), so with the default 1.2 a cluster of 8 GPUs admits gangs worth 9.6.
"""

from __future__ import annotations

from collections.abc import Mapping

from models.workload import INQUEUE, RUNNING

from ..api import ALLOCATED_STATUSES, JobInfo, vadd
from ..session import PERMIT, REJECT, Plugin, Session

FACTOR_ARGUMENT = "overcommit-factor"
DEFAULT_FACTOR = 1.2
TOLERANCE = 0.1
"""Volcano's ``minResource``: ``LessEqualWithDimension`` lets a dimension exceed by less."""


def overcommit_factor(arguments: Mapping[str, object]) -> float:
    """The configured factor; Volcano keeps the default for a value it cannot read or one
    below 1, which would make the cluster look smaller than it is."""
    raw = arguments.get(FACTOR_ARGUMENT)
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return DEFAULT_FACTOR
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_FACTOR
    return value if value >= 1.0 else DEFAULT_FACTOR


def reserved_rest(minimum: Mapping[str, int], allocated: Mapping[str, int]) -> dict[str, int]:
    """``util.GetInqueueResource``: the part of ``minResources`` a running job has not yet
    allocated, per resource it names."""
    return {
        name: amount - allocated.get(name, 0)
        for name, amount in minimum.items()
        if amount > allocated.get(name, 0)
    }


def inflated_idle(ssn: Session, factor: float) -> dict[str, float]:
    """The cluster total times ``factor``, less what the nodes already use."""
    used = ssn.dims.zero()
    for node in ssn.node_list:
        used = vadd(used, node.used)
    return {
        name: total * factor - taken
        for name, total, taken in zip(ssn.dims.names, ssn.total_resource, used, strict=True)
    }


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
            held = reserved_rest(minimum, ssn.dims.resources(job.allocated))
        else:
            continue
        for name, amount in held.items():
            inqueue[name] = inqueue.get(name, 0) + amount
    return inqueue


class OvercommitPlugin(Plugin):
    name = "overcommit"

    def on_session_open(self, ssn: Session) -> None:
        idle = inflated_idle(ssn, overcommit_factor(self.arguments))
        inqueue = inqueue_at_open(ssn)

        def job_enqueueable(job: JobInfo) -> int:
            """Permit when the Inqueue minimums plus this job's stay within the inflated idle
            resources, on the dimensions the job asks for (a resource no node offers has no
            idle at all)."""
            minimum = job.job.min_resources or {}
            for name, amount in minimum.items():
                if amount > 0 and inqueue.get(name, 0) + amount >= idle.get(name, 0.0) + TOLERANCE:
                    return REJECT
            return PERMIT

        def job_enqueued(job: JobInfo) -> None:
            for name, amount in (job.job.min_resources or {}).items():
                inqueue[name] = inqueue.get(name, 0) + amount

        ssn.add("job_enqueueable", self.name, job_enqueueable)
        ssn.add("job_enqueued", self.name, job_enqueued)
