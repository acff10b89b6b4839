"""Volcano's ``capacity`` plugin: queue quotas by deserved, capability and guarantee, flat or as a
queue tree (volcano-scheduler.md §5.2–§5.4, seed 004 §5–§6).

A queue may use up to its ``realCapability``; above its ``deserved`` it lends resources that
reclaim can take back, but never below its ``guarantee``. With ``enableHierarchy`` the queues
form a tree: jobs sit in leaves, a leaf's usage counts against every ancestor, queues are ordered
down the tree, and ``ancestorReclaimLevel`` makes reclaim check the victim's ancestors too.

The static values come from :mod:`models.queues`; this module keeps the per-session accounting
and the hooks.
"""

from __future__ import annotations

from models.admission import enqueue_minimum
from models.queues import ROOT, capacity_flat, capacity_hierarchical
from models.scheduler_conf import reclaim_level

from ..api import POD_DIM, JobInfo, QueueInfo, TaskInfo, vadd, vle, vsub
from ..session import PERMIT, REJECT, Event, EventHandler, Plugin, Session
from .queue_usage import QueueState, exceeding_dims, fits_quota_vector, queue_usage


def _overlap(a: list[int], b: list[int]) -> bool:
    """Some dimension other than ``pods`` is positive in both (``shouldSkipReclaimee`` and
    ``isImmediateVictim`` ignore the slot every request carries)."""
    return any(x > 0 and y > 0 for i, (x, y) in enumerate(zip(a, b, strict=True)) if i != POD_DIM)


def _partly_within(used: list[int], limit: list[int], request: list[int]) -> bool:
    """``LessEqualPartlyWithDimensionZeroFiltered(used, limit, request)``: some requested
    dimension has ``used ≤ limit``. On a requested dimension ``used`` is positive, so the
    "zero in both" filter never drops one."""
    return any(r > 0 and u <= c for r, u, c in zip(request, used, limit, strict=True))


def _immediate_victim(state: QueueState, request: list[int]) -> bool:
    """``isImmediateVictim``: the queue deserves none of what ``request`` uses, so anything it
    holds of it is borrowed."""
    return not _overlap(state.deserved_v, request)


def _exceeds_deserved(state: QueueState, held: list[int], request: list[int]) -> bool:
    """``GreaterPartlyWithRelevantDimensions``: on some dimension ``request`` uses and deserved
    defines, the queue holds more than it deserves."""
    return any(
        r > 0 and rel and h > d
        for r, rel, h, d in zip(request, state.relevant, held, state.deserved_v, strict=True)
    )


class CapacityPlugin(Plugin):
    """Queue quotas with elastic borrowing (``plugins/capacity``)."""

    name = "capacity"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.tree = ssn.queue_tree
        self.hierarchy = self.option.enabled("Hierarchy")
        self.level = reclaim_level(self.arguments)
        # Why the plugin refuses everything this session (empty: it is ready).
        self.not_ready = ""
        usage = queue_usage(ssn)
        total = ssn.instance.total_allocatable
        if self.hierarchy:
            derived = capacity_hierarchical(self.tree, total)
            self.attrs: dict[str, QueueState] = {
                name: QueueState(name, ssn.dims, ssn.dims.zero(), ssn.dims.zero())
                for name in self.tree.names
            }
            for name, leaf in usage.items():
                for queue in self.tree.path(name):
                    self.attrs[queue].add_usage(leaf)
                if not self.not_ready and not self.tree.is_leaf(name):
                    job = next(j for j in ssn.jobs.values() if j.queue == name)
                    self.not_ready = f"job {job.uid} is in non-leaf queue {name}"
        else:
            derived = capacity_flat(self.tree, total, usage)
            self.attrs = usage
        for name, state in self.attrs.items():
            values = derived[name]
            state.set_limits(values.deserved, values.real_capability, values.guarantee)
            state.update_share(empty_share=1.0)

        # Volcano quirk (§9.9): a job in a non-leaf queue leaves the plugin without a queue
        # order for the whole session (and allocatable, enqueueable, reclaimable refuse).
        if self.ready:
            ssn.add("queue_order", self.name, self.queue_order)
        if self.hierarchy:
            ssn.add("victim_queue_order", self.name, self.victim_queue_order)
        # Volcano quirk (§9.9): no Overused hook, so allocate never drops a capacity queue.
        ssn.add("allocatable", self.name, self.allocatable)
        ssn.add("preemptive", self.name, self.preemptive)
        ssn.add("job_enqueueable", self.name, self.job_enqueueable)
        ssn.add("job_enqueued", self.name, self.job_enqueued)
        ssn.add("reclaimable", self.name, self.reclaimable)
        ssn.add_event_handler(
            EventHandler(allocate=self._on_allocate, deallocate=self._on_deallocate)
        )

    @property
    def ready(self) -> bool:
        return not self.not_ready

    # -- orders --------------------------------------------------------------------------------

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        """Priority descending; flat: ``compareShareWithDeserved``; hierarchical: a leaf before a
        non-leaf, two non-leaves by their own shares, two leaves by the shares of the children
        of their deepest common ancestor on each side."""
        if left.priority != right.priority:
            return right.priority - left.priority
        lstate, rstate = self.attrs.get(left.name), self.attrs.get(right.name)
        if lstate is None or rstate is None or left.name == right.name:
            return 0
        if not self.hierarchy:
            return self._compare_share(lstate, rstate)
        lleaf, rleaf = self.tree.is_leaf(left.name), self.tree.is_leaf(right.name)
        if lleaf != rleaf:
            return -1 if lleaf else 1
        if not lleaf:
            if lstate.share == rstate.share:
                return 0
            return -1 if lstate.share < rstate.share else 1
        level = self.tree.common_ancestor_level(left.name, right.name)
        lbranch = self.tree.path(left.name)[level + 1]
        rbranch = self.tree.path(right.name)[level + 1]
        return self._compare_share(self.attrs[lbranch], self.attrs[rbranch])

    @staticmethod
    def _compare_share(left: QueueState, right: QueueState) -> int:
        """``compareShareWithDeserved``: share ascending; on a tie a queue with a deserved goes
        before a best-effort one (Volcano quirk (§9.9): whose share is 1)."""
        if left.share == right.share:
            lempty, rempty = left.deserved.is_empty(), right.deserved.is_empty()
            if lempty == rempty:
                return 0
            return 1 if lempty else -1
        return -1 if left.share < right.share else 1

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
        """Victims from the queue whose common ancestor with the preemptor's queue is deeper go
        first: siblings before cousins. Equal depth → 0 (the session falls back to reverse
        queue order)."""
        if (
            left.name not in self.tree
            or right.name not in self.tree
            or preemptor.name not in self.tree
        ):
            return 0
        llevel = self.tree.common_ancestor_level(left.name, preemptor.name)
        rlevel = self.tree.common_ancestor_level(right.name, preemptor.name)
        if llevel == rlevel:
            return 0
        return -1 if llevel > rlevel else 1

    # -- allocation and admission ----------------------------------------------------------------

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Open, ready, a leaf (hierarchical), and within realCapability at the queue and every
        ancestor up to root."""
        return self.quota_reason(queue, task) is None

    def quota_reason(self, queue: QueueInfo, task: TaskInfo) -> str | None:
        """Why :meth:`allocatable` refuses ``task`` in ``queue`` (None when it allows it), e.g.
        ``queue team-a: nvidia.com/gpu 18 > realCapability 16``."""
        if not queue.open:
            return f"queue {queue.name}: not Open"
        if not self.ready:
            return f"queue {queue.name}: capacity plugin disabled this session ({self.not_ready})"
        if self.hierarchy and not self.tree.is_leaf(queue.name):
            return f"queue {queue.name}: not a leaf queue"
        if queue.name not in self.attrs:
            return None
        for name in self._chain(queue.name):
            state = self.attrs[name]
            used = vadd(state.allocated, task.resreq)
            # Volcano quirk (§9.10): strict comparison, a resource the limit lacks counts as 0.
            if not fits_quota_vector(used, task.resreq, state.real_capability_v):
                parts = exceeding_dims(
                    self.ssn.dims, used, task.resreq, state.real_capability_v, "realCapability"
                )
                return f"queue {name}: {', '.join(parts)}"
        return None

    def job_enqueueable(self, job: JobInfo) -> int:
        """Reject when not ready, not a leaf or not Open; permit a job without minResources;
        else minReq + allocated + inqueue − elastic must fit realCapability on the dimensions of
        minReq at the leaf and at every ancestor."""
        if not self.ready:
            return REJECT
        queue = self.ssn.queues.get(job.queue)
        if queue is None or job.queue not in self.attrs:
            return REJECT
        if self.hierarchy and not self.tree.is_leaf(job.queue):
            return REJECT
        if not queue.open:
            return REJECT
        if job.job.min_resources is None:
            return PERMIT
        minimum = enqueue_minimum(job.job)
        for name in self._chain(job.queue):
            state = self.attrs[name]
            need = minimum + state.allocated_resources + state.inqueue - state.elastic
            if not need.fits_quota(state.real_capability, minimum):
                return REJECT
        return PERMIT

    def job_enqueued(self, job: JobInfo) -> None:
        if job.queue not in self.attrs:
            return
        minimum = enqueue_minimum(job.job)
        for name in self._chain(job.queue):
            state = self.attrs[name]
            state.inqueue = state.inqueue + minimum

    # -- reclaim -------------------------------------------------------------------------------

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """May ``queue`` reclaim for ``task``: Open, within realCapability afterwards, and still
        within deserved on some requested dimension, at the leaf or (hierarchical, level L > 0)
        at one of its ancestors 1..L levels up, root excluded."""
        state = self.attrs.get(queue.name)
        if not queue.open or state is None:
            return False
        request = task.resreq
        used = vadd(state.allocated, request)
        if not fits_quota_vector(used, request, state.real_capability_v):
            return False
        if _partly_within(used, state.deserved_v, request):
            return True
        if not (self.hierarchy and self.level > 0):
            return False
        for name in self._near_ancestors(queue.name):
            ancestor = self.attrs[name]
            if _partly_within(vadd(ancestor.allocated, request), ancestor.deserved_v, request):
                return True
        return False

    def reclaimable(
        self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        """The reclaimees (walked in the given order) that ``reclaimer`` may take, §5.4 steps 1–6.

        Each victim's queue keeps a running clone of its allocated, and so does each ancestor
        checked for it; a taken victim is subtracted from all of them.
        """
        if not self.ready:
            return [], REJECT
        mine = self.ssn.jobs[reclaimer.job].queue
        tiered = self.hierarchy and self.level > 0
        # The contention gate's reclaimer side: no deserved signal for what it asks for.
        gate = tiered and _immediate_victim(self.attrs[mine], reclaimer.resreq)
        mine_near = set(self._near_ancestors(mine)) if gate else set()
        clones: dict[str, list[int]] = {}
        victims: list[TaskInfo] = []
        for task in reclaimees:
            request = task.resreq
            if not _overlap(request, reclaimer.init_resreq):
                continue
            queue = self.ssn.jobs[task.job].queue
            state = self.attrs.get(queue)
            if state is None:
                continue
            held = clones.setdefault(queue, list(state.allocated))
            if state.guarantee_outside or not vle(state.guarantee_v, vsub(held, request)):
                continue
            if _immediate_victim(state, request):
                # Volcano quirk (§9.11): both sides lack a deserved signal under a shared
                # ancestor within L levels, so there is no real contention to resolve.
                if gate and mine_near.intersection(self._near_ancestors(queue)):
                    continue
            elif not _exceeds_deserved(state, held, request):
                continue
            checked = self._ancestors_allow(queue, mine, request, clones) if tiered else []
            if checked is None:
                continue
            for name in (queue, *checked):
                clones[name] = vsub(clones[name], request)
            victims.append(task)
        return victims, PERMIT

    def _ancestors_allow(
        self, queue: str, mine: str, request: list[int], clones: dict[str, list[int]]
    ) -> list[str] | None:
        """The ancestors of ``queue`` checked for one victim, or None if one of them refuses.

        For level 1..L (1 = parent) the victim queue's ancestor at that level must be an
        immediate victim or above its deserved, unless it is root, missing, or the reclaimer
        queue's ancestor at the same depth from root (the two branches have not split there).
        """
        ancestors = self.tree.ancestors(queue)
        mine_ancestors = self.tree.ancestors(mine)
        checked: list[str] = []
        for level in range(1, self.level + 1):
            depth = len(ancestors) - level
            if depth < 0:
                break
            name = ancestors[depth]
            # Volcano quirk (§9.11): the comparison is by position in the tree, not by LCA.
            if name == ROOT or (depth < len(mine_ancestors) and mine_ancestors[depth] == name):
                continue
            state = self.attrs[name]
            held = clones.setdefault(name, list(state.allocated))
            if not (_immediate_victim(state, request) or _exceeds_deserved(state, held, request)):
                return None
            checked.append(name)
        return checked

    # -- internals -----------------------------------------------------------------------------

    def _chain(self, queue: str) -> tuple[str, ...]:
        """The queue, then its ancestors up to root (hierarchical); the queue alone (flat)."""
        if not self.hierarchy:
            return (queue,)
        return (queue, *reversed(self.tree.ancestors(queue)))

    def _near_ancestors(self, queue: str) -> list[str]:
        """The ancestors 1..L levels above ``queue``, nearest first, root excluded."""
        ancestors = self.tree.ancestors(queue)
        near = ancestors[max(len(ancestors) - self.level, 0) :]
        return [name for name in reversed(near) if name != ROOT]

    def _on_allocate(self, event: Event) -> None:
        self._account(event.task, +1)

    def _on_deallocate(self, event: Event) -> None:
        self._account(event.task, -1)

    def _account(self, task: TaskInfo, sign: int) -> None:
        """Add (or remove) the task at its queue and every ancestor; only the queue's own share
        is recomputed. Volcano quirk (§9.9): ancestor shares stay as they were at open."""
        queue = self.ssn.jobs[task.job].queue
        if queue not in self.attrs:
            return
        change = vadd if sign > 0 else vsub
        for name in self._chain(queue):
            state = self.attrs[name]
            state.allocated = change(state.allocated, task.resreq)
        self.attrs[queue].update_share(empty_share=1.0)
