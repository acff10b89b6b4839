"""The per-queue accounting both quota plugins keep (volcano-scheduler.md §5.1).

``proportion`` and ``capacity`` read the same allocated / request / inqueue / elastic sums and
compare them with the same strict quota rule; they differ only in the limits they compare with
(water-filled deserved vs realCapability), so the accounting lives here once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models.admission import enqueue_minimum
from models.queues import share
from models.resources import CPU, EMPTY, MEMORY, PODS, Resources, format_amount
from models.workload import INQUEUE, RUNNING

from ..api import ALLOCATED_STATUSES, POD_DIM, Dims, JobInfo, TaskStatus, vadd
from ..session import Session


@dataclass(eq=False)
class QueueState:
    """One queue's quota accounting during a session (Volcano's ``queueAttr``).

    ``allocated`` and ``request`` are dense vectors over the session's :class:`Dims`, because
    every allocation event and quota check touches them; the values the plugin derives at open
    (deserved, realCapability, guarantee) and the enqueue counters (inqueue, elastic) are
    :class:`Resources`, since they may name resources no node or task has.
    """

    name: str
    dims: Dims = field(repr=False)
    allocated: list[int]
    request: list[int]
    inqueue: Resources = EMPTY
    elastic: Resources = EMPTY
    deserved: Resources = EMPTY
    real_capability: Resources = EMPTY
    guarantee: Resources = EMPTY
    share: float = 0.0
    deserved_v: list[int] = field(default_factory=list, repr=False)
    real_capability_v: list[int] = field(default_factory=list, repr=False)
    guarantee_v: list[int] = field(default_factory=list, repr=False)
    relevant: list[bool] = field(default_factory=list, repr=False)
    """Per dimension, whether ``deserved`` defines it for ``GreaterPartlyWithRelevantDimensions``:
    cpu and memory when positive, a scalar whenever its key is present (even at 0)."""
    deserved_outside: bool = False
    """``deserved`` is positive on a resource outside the vectors (it can never be reached)."""
    guarantee_outside: bool = False
    """``guarantee`` is positive on a resource outside the vectors (it can never be met)."""
    _share_terms: list[tuple[int, int]] | None = field(default=None, repr=False)
    """(vector position or -1, deserved amount) of each positive dimension of ``deserved``;
    None until :meth:`set_limits`."""

    @property
    def allocated_resources(self) -> Resources:
        return self.dims.resources(self.allocated)

    def set_limits(
        self, deserved: Resources, real_capability: Resources, guarantee: Resources
    ) -> None:
        """Install the values derived at session open, with their vector forms.

        A resource missing from a limit is 0 in its vector, which is how the quota comparisons
        (``LessEqualWithDimensionAndResourcesName``, ``LessEqual`` in Zero mode) read it.
        """
        self.deserved = deserved
        self.real_capability = real_capability
        self.guarantee = guarantee
        self.deserved_v = self.dims.vector(deserved)
        self.real_capability_v = self.dims.vector(real_capability)
        self.guarantee_v = self.dims.vector(guarantee)
        self.relevant = [
            deserved.get(name) > 0 if name in (CPU, MEMORY) else name in deserved
            for name in self.dims.names
        ]
        self.deserved_outside = _outside(deserved, self.dims)
        self.guarantee_outside = _outside(guarantee, self.dims)
        index = self.dims.index
        self._share_terms = [
            (index.get(name, -1), deserved[name]) for name in sorted(deserved.dims())
        ]

    def update_share(self, empty_share: float) -> None:
        """``share`` of the allocated vector: every allocation event of the queue asks for it,
        so it is computed from the vector and the deserved terms kept by :meth:`set_limits`
        (a deserved resource outside the vectors is held at 0, a 0.0 term)."""
        terms = self._share_terms
        if terms is None:
            self.share = share(self.allocated_resources, self.deserved, empty_share=empty_share)
            return
        if not terms:
            self.share = empty_share
            return
        allocated = self.allocated
        self.share = max(allocated[i] / amount if i >= 0 else 0.0 for i, amount in terms)

    def add_usage(self, other: QueueState) -> None:
        """Roll a child's accounting up into this ancestor (capacity's ``updateParentQueue``)."""
        self.allocated = vadd(self.allocated, other.allocated)
        self.request = vadd(self.request, other.request)
        self.inqueue = self.inqueue + other.inqueue
        self.elastic = self.elastic + other.elastic


def _outside(resources: Resources, dims: Dims) -> bool:
    return any(v > 0 and k not in dims.index and k != PODS for k, v in resources.items())


def job_min_request(job: JobInfo) -> Resources:
    """``job.GetMinResources()`` without ``pods``, which no quota comparison reads."""
    return enqueue_minimum(job.job)


def _job_inqueue(job: JobInfo, allocated: Resources) -> Resources:
    """``util.GetInqueueResource``: what the job's minResources still reserves beyond what it
    holds, per resource named in minResources."""
    return Resources({k: max(0, v - allocated.get(k)) for k, v in job_min_request(job).items()})


def queue_usage(ssn: Session) -> dict[str, QueueState]:
    """The §5.1 accounting of every queue that has jobs, from the session snapshot.

    ``allocated`` sums the Resreq of AllocatedStatus tasks, ``request`` adds the Pending ones;
    ``inqueue`` reserves the unmet minResources of Inqueue jobs, and of Running jobs whose
    allocated task count has reached minMember; ``elastic`` is what jobs hold beyond their
    minResources (all of it for a job without minResources).
    """
    dims = ssn.dims
    states: dict[str, QueueState] = {}
    for job in ssn.jobs.values():
        if job.queue not in ssn.queues:
            continue
        state = states.get(job.queue)
        if state is None:
            state = QueueState(job.queue, dims, dims.zero(), dims.zero())
            states[job.queue] = state
        for task in job.tasks.values():
            if task.status in ALLOCATED_STATUSES:
                state.allocated = vadd(state.allocated, task.resreq)
                state.request = vadd(state.request, task.resreq)
            elif task.status is TaskStatus.PENDING:
                state.request = vadd(state.request, task.resreq)
        held = dims.resources(job.allocated)
        has_minimum = job.job.min_resources is not None
        if has_minimum and (
            job.phase == INQUEUE
            or (job.phase == RUNNING and job.count(ALLOCATED_STATUSES) >= job.min_available)
        ):
            state.inqueue = state.inqueue + _job_inqueue(job, held)
        state.elastic = state.elastic + (held - job_min_request(job)).clip_negative()
    return states


def exceeding_dims(
    dims: Dims, used: list[int], request: list[int], limit: list[int], label: str
) -> list[str]:
    """``<resource> <used> > <label> <limit>`` for each dimension where ``request`` is positive
    and ``used`` passes ``limit``: the parts of a pending reason."""
    return [
        f"{name} {format_amount(name, u)} > {label} {format_amount(name, c)}"
        for i, (name, r, u, c) in enumerate(zip(dims.names, request, used, limit, strict=True))
        if r > 0 and u > c and i != POD_DIM
    ]


def fits_quota_vector(used: list[int], request: list[int], limit: list[int]) -> bool:
    """``LessEqualWithDimensionAndResourcesName(used, limit, request)`` on vectors; like
    Volcano's it ignores the ``pods`` slot every request carries."""
    return all(
        u <= c
        for i, (r, u, c) in enumerate(zip(request, used, limit, strict=True))
        if r > 0 and i != POD_DIM
    )
