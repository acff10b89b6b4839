"""Volcano's ``proportion`` plugin: queues share the cluster by weight (volcano-scheduler.md §5.5).

Each queue with jobs gets a ``deserved`` share by water-filling the cluster total over the queues'
weights, capped by what the queue requests. Allocation may not take a queue above its deserved,
a queue at its deserved is dropped from allocate and reclaim (Overused), and reclaim takes back
what other queues hold above theirs.

The per-queue accounting of §5.1 (allocated, request, inqueue, elastic) is the same for
``capacity``; it lives here with :class:`QueueState` and ``capacity`` imports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models.queues import capacity_flat, proportion_deserved, share
from models.resources import CPU, EMPTY, MEMORY, PODS, Resources, format_amount
from models.workload import INQUEUE, RUNNING

from ..api import ALLOCATED_STATUSES, Dims, JobInfo, QueueInfo, Status, TaskInfo, vadd, vle, vsub
from ..session import PERMIT, REJECT, Event, EventHandler, Plugin, Session


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

    def update_share(self, empty_share: float) -> None:
        self.share = share(self.allocated_resources, self.deserved, empty_share=empty_share)

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
    minimum = job.job.min_resources
    if minimum is None:
        return EMPTY
    return Resources({k: v for k, v in minimum.items() if k != PODS})


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
            elif task.status is Status.PENDING:
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
        for name, r, u, c in zip(dims.names, request, used, limit, strict=True)
        if r > 0 and u > c
    ]


def fits_quota_vector(used: list[int], request: list[int], limit: list[int]) -> bool:
    """``LessEqualWithDimensionAndResourcesName(used, limit, request)`` on vectors."""
    return all(u <= c for r, u, c in zip(request, used, limit, strict=True) if r > 0)


class ProportionPlugin(Plugin):
    """Weight-proportional queue shares with a deserved cap (``plugins/proportion``)."""

    name = "proportion"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.attrs: dict[str, QueueState] = queue_usage(ssn)
        tree = ssn.queue_tree
        total = ssn.instance.total_allocatable
        flat = capacity_flat(tree, total, self.attrs)
        queues = [tree.queue(name) for name in tree.names if name in self.attrs]
        deserved = proportion_deserved(
            queues,
            total,
            {name: ssn.dims.resources(s.request) for name, s in self.attrs.items()},
            {name: flat[name].real_capability for name in self.attrs},
        )
        for name, state in self.attrs.items():
            state.set_limits(deserved[name], flat[name].real_capability, tree.queue(name).guarantee)
            state.update_share(empty_share=0.0)

        ssn.add("queue_order", self.name, self.queue_order)
        ssn.add("overused", self.name, self.overused)
        ssn.add("allocatable", self.name, self.allocatable)
        ssn.add("preemptive", self.name, self.preemptive)
        ssn.add("job_enqueueable", self.name, self.job_enqueueable)
        ssn.add("job_enqueued", self.name, self.job_enqueued)
        ssn.add("reclaimable", self.name, self.reclaimable)
        ssn.add_event_handler(
            EventHandler(allocate=self._on_allocate, deallocate=self._on_deallocate)
        )

    # -- hooks ---------------------------------------------------------------------------------

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        """Priority descending, then share ascending; an exact share tie is left to the
        session's creation-time fallback."""
        if left.priority != right.priority:
            return right.priority - left.priority
        lstate, rstate = self.attrs.get(left.name), self.attrs.get(right.name)
        if lstate is None or rstate is None or lstate.share == rstate.share:
            return 0
        return -1 if lstate.share < rstate.share else 1

    def overused(self, queue: QueueInfo) -> bool:
        """``deserved ≤ allocated`` on every dimension of deserved (Zero mode): a queue that has
        reached its deserved everywhere is dropped for the rest of the action.

        Volcano quirk (§9.3): a queue whose deserved is empty is always overused.
        """
        state = self.attrs.get(queue.name)
        if state is None:
            return False
        return not state.deserved_outside and vle(state.deserved_v, state.allocated)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """``allocated + Resreq ≤ deserved`` on the task's dimensions, strictly, a resource
        missing from deserved counting as 0 (§9.10), and only in an Open queue.

        The Open check is not in spec §5.5; it is in Volcano's AllocatableFn for proportion
        (the shared ``queueAllocatable`` used by Preemptive does not have it).
        """
        return queue.open and self._within_deserved(queue, task)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Reclaim's gate: the same deserved check as allocatable, without the state check."""
        return self._within_deserved(queue, task)

    def job_enqueueable(self, job: JobInfo) -> int:
        """Permit a job without minResources; otherwise minReq + allocated + inqueue − elastic
        must fit realCapability on the dimensions of minReq."""
        if job.job.min_resources is None:
            return PERMIT
        state = self.attrs.get(job.queue)
        if state is None:
            return REJECT
        minimum = job_min_request(job)
        need = minimum + state.allocated_resources + state.inqueue - state.elastic
        return PERMIT if need.fits_quota(state.real_capability, minimum) else REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        state = self.attrs.get(job.queue)
        if state is not None:
            state.inqueue = state.inqueue + job_min_request(job)

    def reclaimable(
        self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        """Walk the reclaimees in the given order; take one while its queue's running clone of
        allocated is not within deserved (Zero mode), then subtract it from the clone."""
        clones: dict[str, list[int]] = {}
        victims: list[TaskInfo] = []
        for task in reclaimees:
            queue = self.ssn.jobs[task.job].queue
            state = self.attrs.get(queue)
            if state is None:
                continue
            held = clones.setdefault(queue, list(state.allocated))
            if not vle(held, state.deserved_v):
                clones[queue] = vsub(held, task.resreq)
                victims.append(task)
        return victims, PERMIT

    # -- reasons -------------------------------------------------------------------------------

    def quota_reason(self, queue: QueueInfo, task: TaskInfo) -> str | None:
        """Why :meth:`allocatable` refuses ``task`` in ``queue``, or None if it does not."""
        if not queue.open:
            return f"queue {queue.name}: not Open"
        state = self.attrs.get(queue.name)
        if state is None:
            return None
        used = vadd(state.allocated, task.resreq)
        parts = exceeding_dims(self.ssn.dims, used, task.resreq, state.deserved_v, "deserved")
        return f"queue {queue.name}: {', '.join(parts)}" if parts else None

    # -- internals -----------------------------------------------------------------------------

    def _within_deserved(self, queue: QueueInfo, task: TaskInfo) -> bool:
        state = self.attrs.get(queue.name)
        if state is None:
            return False
        return fits_quota_vector(vadd(state.allocated, task.resreq), task.resreq, state.deserved_v)

    def _on_allocate(self, event: Event) -> None:
        self._account(event.task, +1)

    def _on_deallocate(self, event: Event) -> None:
        self._account(event.task, -1)

    def _account(self, task: TaskInfo, sign: int) -> None:
        state = self.attrs.get(self.ssn.jobs[task.job].queue)
        if state is None:
            return
        change = vadd if sign > 0 else vsub
        state.allocated = change(state.allocated, task.resreq)
        state.update_share(empty_share=0.0)
