"""Volcano's enqueue gate: which jobs it judges, whose votes decide, and what each vote compares
(volcano-scheduler.md §1.2, §1.3, §5.1, §5.4, §5.5).

``enqueue`` moves a Pending PodGroup with ``minResources`` into Inqueue only when the
``JobEnqueueable`` votes allow it, and allocate never places a Pending job; so a job the gate
refuses gets no pod this cycle, whatever room the nodes have. The greedy engine runs the gate
job by job as Volcano does; the CP-SAT model, the verifier and ``explain`` judge the set of
Pending jobs a plan starts. All of them read the numbers from here, so that they compare the
same amounts on the same resource names.

**Why a set can be judged at once.** Every vote compares, on each resource a job's minimum asks
for (``LessEqualWithDimensionAndResourcesName``: positive amounts only, ``pods`` skipped, a
resource the limit lacks counting as 0), what was held back before the cycle plus the minimums
admitted so far with a limit; admitting only adds. On a resource, the last job of a set that
asks for it sees the whole set's sum, in whatever order Volcano took them. So a set of Pending
jobs passes exactly when, for every :class:`EnqueueLimit` and every resource a member in its
scope asks for, ``held + Σ minimums ≤ limit``.

**The limits.** proportion and capacity compare with the queue's realCapability (capacity's
hierarchical mode with every ancestor's too). realCapability is derived (``models.queues``):
``MinDimensionResource`` only clips the resources the cluster total and the guarantees name,
so a resource no node offers is in no realCapability, whatever a queue's capability says,
unless a guarantee names it. overcommit compares with the cluster's allocatable times its
factor, less what is used; a resource no node offers has no room at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from math import ceil
from typing import TYPE_CHECKING

from .queues import capacity_flat, capacity_hierarchical
from .resources import EMPTY, PODS, Resources
from .scheduler_conf import SchedulerConf
from .workload import INQUEUE, PENDING, RUNNING, Job

if TYPE_CHECKING:
    from .instance import Instance

ENQUEUE = "enqueue"
OVERCOMMIT = "overcommit"
PROPORTION = "proportion"
CAPACITY = "capacity"
ENQUEUE_PLUGINS = (OVERCOMMIT, PROPORTION, CAPACITY)
"""The modelled plugins that register ``JobEnqueueable``. For a job with ``minResources`` each
votes Permit or Reject, never Abstain."""
ENQUEUE_FLAG = "JobEnqueued"
"""The ``enableXxx`` switch that gates a plugin's ``JobEnqueueable`` and ``JobEnqueued``."""

FACTOR_ARGUMENT = "overcommit-factor"
DEFAULT_FACTOR = 1.2
TOLERANCE = 0.1
"""What overcommit lets a resource's sum pass its inflated idle by (Volcano's ``minResource``)."""


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


def enqueue_gates(conf: SchedulerConf) -> tuple[str, ...]:
    """The plugins whose ``JobEnqueueable`` votes decide whether a job is enqueued (empty: no
    gate, every job goes in).

    Votes combine by tier (§1.2): any Reject refuses, and a tier with a Permit ends the walk.
    The gate plugins never abstain on a job with ``minResources``, so the first tier that has
    one decides alone, and the job is enqueued when each of that tier's gate plugins permits.
    Without the ``enqueue`` action allocate takes Pending jobs in directly.
    """
    if ENQUEUE not in conf.actions:
        return ()
    for tier in conf.tiers:
        names = [o.name for o in tier if o.name in ENQUEUE_PLUGINS and o.enabled(ENQUEUE_FLAG)]
        if names:
            return tuple(dict.fromkeys(names))
    return ()


def judged_at_enqueue(job: Job) -> bool:
    """Whether enqueue judges ``job``: its PodGroup is Pending and has ``minResources``. A job
    already Inqueue or Running skips enqueue; one without ``minResources`` is let in
    unconditionally."""
    return job.phase in (PENDING, "") and job.min_resources is not None


def enqueue_minimum(job: Job) -> Resources:
    """``job.GetMinResources()`` without ``pods``, which no quota comparison reads (empty for a
    job without ``minResources``)."""
    minimum = job.min_resources
    if minimum is None:
        return EMPTY
    return Resources({k: v for k, v in minimum.items() if k != PODS})


def unmet_minimum(minimum: Mapping[str, int], allocated: Mapping[str, int]) -> Resources:
    """``util.GetInqueueResource``: the part of ``minimum`` a job does not hold yet, on each
    resource it names."""
    return Resources(
        {
            name: amount - allocated.get(name, 0)
            for name, amount in minimum.items()
            if amount > allocated.get(name, 0)
        }
    )


def overcommit_room(
    total: Mapping[str, int], used: Mapping[str, int], factor: float
) -> dict[str, int]:
    """Per resource, the largest sum of Inqueue minimums overcommit admits: Volcano refuses a
    job once ``inqueue + minimum ≥ total × factor − used + 0.1``, so for whole amounts the room
    is one less than that bound rounded up. A resource in neither mapping has room 0 (its idle
    is 0), as does the default :meth:`dict.get` callers use."""
    names = set(total) | set(used)
    return {
        name: ceil(total.get(name, 0) * factor - used.get(name, 0) + TOLERANCE) - 1
        for name in names
    }


def job_allocated(job: Job) -> Resources:
    """What the job's running pods request (``job.Allocated`` without ``pods``)."""
    running: dict[str, int] = {}
    for pod in job.pods:
        if pod.running:
            running[pod.task] = running.get(pod.task, 0) + 1
    return sum((job.task(t).resources.scaled(n) for t, n in running.items()), EMPTY)


def _gang_holds(job: Job) -> bool:
    """A Running job whose running pods reach minAvailable still holds back the rest of its
    minimum (``CalculateAllocatedTaskNum ≥ MinMember``)."""
    return job.phase == RUNNING and sum(1 for p in job.pods if p.running) >= job.min_available


def queue_held_back(job: Job) -> Resources:
    """What ``job`` adds to its queue's ``allocated + inqueue − elastic`` when a session opens
    (§5.1): its allocation, the unmet minimum of an Inqueue job or of a Running gang, less
    what it holds beyond its minimum."""
    held = job_allocated(job)
    minimum = enqueue_minimum(job)
    out = held - (held - minimum).clip_negative()
    if job.min_resources is not None and (job.phase == INQUEUE or _gang_holds(job)):
        out = out + unmet_minimum(minimum, held)
    return out


def overcommit_inqueue(jobs: Iterable[Job]) -> Resources:
    """What overcommit opens with as held back for admitted jobs: the whole minimum of an
    Inqueue job, the unmet minimum of a Running gang (``pods`` left out: never compared)."""
    inqueue = EMPTY
    for job in jobs:
        if job.min_resources is None:
            continue
        minimum = enqueue_minimum(job)
        if job.phase == INQUEUE:
            inqueue = inqueue + minimum
        elif _gang_holds(job):
            inqueue = inqueue + unmet_minimum(minimum, job_allocated(job))
    return inqueue


def cluster_used(instance: Instance) -> Resources:
    """Σ requests of every running pod, other schedulers' included (``node.Used``)."""
    used = EMPTY
    for job in (*instance.jobs, *instance.foreign_jobs):
        used = used + job_allocated(job)
    return used


@dataclass(frozen=True)
class EnqueueLimit:
    """One comparison the deciding plugins make for every job in its scope: on each resource a
    job's minimum asks for, ``held + the minimums admitted ≤ limit`` (a resource ``limit``
    lacks counts as 0)."""

    gates: tuple[str, ...]
    """The plugins that make it (flat capacity and proportion make the same one)."""
    queue: str | None
    """The queue it guards; None for overcommit's, which guards the cluster."""
    jobs: frozenset[str]
    """Keys of the jobs whose minimums it sums: the queue's own, its subtree's (hierarchical
    capacity), every job (overcommit)."""
    held: Resources
    """Held back before the cycle: ``allocated + inqueue − elastic`` of the queue, or the
    minimums overcommit counts as Inqueue."""
    limit: Resources
    """realCapability, or overcommit's room (:func:`overcommit_room`)."""

    def missing(self, resource: str) -> bool:
        """The limit does not name ``resource``: Volcano reads it as 0."""
        return resource not in self.limit


def enqueue_limits(instance: Instance) -> list[EnqueueLimit]:
    """Every comparison the deciding plugins of ``instance``'s configuration make at enqueue
    (read them through :attr:`Instance.enqueue_limits`, computed once per snapshot).

    Queue limits are the realCapability the plugins derive at session open: flat (proportion,
    and capacity without hierarchy) for each queue with jobs, over its own jobs; hierarchical
    capacity for every queue, over its subtree's jobs, root included.
    """
    conf = instance.scheduler
    gates = enqueue_gates(conf)
    if not gates:
        return []
    tree = instance.queue_tree
    total = instance.total_allocatable
    held = {j.key: queue_held_back(j) for j in instance.jobs if j.queue in tree}
    own: dict[str, list[str]] = {}
    subtree: dict[str, list[str]] = {}
    for job in instance.jobs:
        if job.queue in tree:
            own.setdefault(job.queue, []).append(job.key)
            for queue in tree.path(job.queue):
                subtree.setdefault(queue, []).append(job.key)
    out: list[EnqueueLimit] = []
    hierarchical = conf.hierarchy()
    flat = tuple(g for g in gates if g == PROPORTION or (g == CAPACITY and not hierarchical))
    if flat:
        real = capacity_flat(tree, total, own)
        for queue, keys in own.items():
            out.append(_queue_limit(flat, queue, keys, held, real[queue].real_capability))
    if CAPACITY in gates and hierarchical:
        attrs = capacity_hierarchical(tree, total)
        for queue in tree.names:
            if queue in subtree:
                limit = attrs[queue].real_capability
                out.append(_queue_limit((CAPACITY,), queue, subtree[queue], held, limit))
    if OVERCOMMIT in gates:
        option = conf.plugin(OVERCOMMIT)
        factor = overcommit_factor(option.arguments if option is not None else {})
        room = overcommit_room(total, cluster_used(instance), factor)
        keys = frozenset(j.key for j in instance.jobs)
        out.append(
            EnqueueLimit(
                (OVERCOMMIT,), None, keys, overcommit_inqueue(instance.jobs), Resources(room)
            )
        )
    return out


def _queue_limit(
    gates: tuple[str, ...],
    queue: str,
    keys: list[str],
    held: Mapping[str, Resources],
    limit: Resources,
) -> EnqueueLimit:
    total = sum((held[k] for k in keys), EMPTY)
    return EnqueueLimit(gates, queue, frozenset(keys), total, limit)
