"""Volcano's ``proportion`` plugin: queues share the cluster by weight (volcano-scheduler.md §5.5).

Each queue with jobs gets a ``deserved`` share by water-filling the cluster total over the queues'
weights, capped by what the queue requests. Allocation may not take a queue above its deserved,
a queue at its deserved is dropped from allocate and reclaim (Overused), and reclaim takes back
what other queues hold above theirs.
"""

from __future__ import annotations

from models.admission import enqueue_minimum
from models.queues import capacity_flat, proportion_deserved

from ..api import JobInfo, QueueInfo, TaskInfo, vadd, vle, vsub
from ..session import PERMIT, REJECT, Event, EventHandler, Plugin, Session
from .queue_usage import QueueState, exceeding_dims, fits_quota_vector, queue_usage


class ProportionPlugin(Plugin):
    """Weight-proportional queue shares with a deserved cap (``plugins/proportion``)."""

    name = "proportion"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.attrs: dict[str, QueueState] = queue_usage(ssn)
        tree = ssn.queue_tree
        # ``ssn.TotalResource`` with every node's ``pods`` slots, which the water-filling
        # shares out like any other scalar (tasks request one each).
        total = ssn.dims.resources(ssn.total_resource)
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
        """``queueAllocatable``: ``allocated + Resreq ≤ deserved`` on the task's dimensions,
        strictly, a resource missing from deserved counting as 0 (§9.10), and only in an Open
        queue (the Open check is not in spec §5.5)."""
        return queue.open and self._within_deserved(queue, task)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Reclaim's gate: Volcano registers the same ``queueAllocatable`` for Preemptive as for
        Allocatable, so a queue that is not Open never reclaims."""
        return self.allocatable(queue, task)

    def job_enqueueable(self, job: JobInfo) -> int:
        """Permit a job without minResources; otherwise minReq + allocated + inqueue − elastic
        must fit realCapability on the dimensions of minReq."""
        if job.job.min_resources is None:
            return PERMIT
        state = self.attrs.get(job.queue)
        if state is None:
            return REJECT
        minimum = enqueue_minimum(job.job)
        need = minimum + state.allocated_resources + state.inqueue - state.elastic
        return PERMIT if need.fits_quota(state.real_capability, minimum) else REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        state = self.attrs.get(job.queue)
        if state is not None:
            state.inqueue = state.inqueue + enqueue_minimum(job.job)

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
