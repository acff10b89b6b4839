"""One Volcano scheduling session (``framework/session.go``): the snapshot of the cluster as
the session's task, job, queue and node records, the plugins opened on it, and the state
changes actions make (allocate, pipeline, evict and their undo). How the plugins' hooks
combine is ``session_plugins.py``; operations and statements are ``statement.py``."""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from models.cluster import Node
from models.instance import Instance
from models.scheduler_conf import PluginOption
from models.tdm import job_preemptable, node_zone, pod_preemptable, pod_revocable_zone
from models.workload import DeviceShare, Job

from .api import (
    ALLOCATED_STATUSES,
    POD_DIM,
    Dims,
    GpuState,
    JobInfo,
    NodeInfo,
    NodeList,
    QueueInfo,
    TaskInfo,
    TaskStatus,
    pod_index,
    vadd,
    vsub,
)
from .fit_cache import FitCache
from .framework import (
    ABSTAIN,
    HOOK_FLAGS,
    PERMIT,
    REJECT,
    UNRESOLVABLE,
    UNSCHEDULABLE,
    Event,
    EventHandler,
    FitFailure,
    Plugin,
    ScoreSkip,
    compare_task,
)
from .node_arrays import NodeArrays
from .score_arrays import Versioned
from .session_plugins import SessionPlugins
from .statement import Operation, Statement

if TYPE_CHECKING:
    from .eviction_filters import ReclaimableRoom

__all__ = [
    "ABSTAIN",
    "PERMIT",
    "REJECT",
    "UNRESOLVABLE",
    "UNSCHEDULABLE",
    "Event",
    "EventHandler",
    "FitFailure",
    "Operation",
    "Plugin",
    "Records",
    "ScoreSkip",
    "Session",
    "Statement",
    "compare_task",
    "pod_index",
]


@dataclass
class Records:
    """What the session decided, in the order it happened."""

    binds: list[TaskInfo] = field(default_factory=list)
    pipelined: list[TaskInfo] = field(default_factory=list)
    evictions: list[TaskInfo] = field(default_factory=list)


def _pod_request(dims: Dims, resources: Mapping[str, int]) -> list[int]:
    """A task's request vector with its ``pods: 1`` slot (``api.GetPodResourceRequest``)."""
    vector = dims.vector(resources)
    vector[POD_DIM] = 1
    return vector


def _node_allocatable(dims: Dims, node: Node) -> list[int]:
    """A node's allocatable vector; ``pods`` is :attr:`Node.pod_capacity`, so an explicit 0
    (a node declaring no pod slots) fits no pod at all."""
    vector = dims.vector(node.allocatable)
    vector[POD_DIM] = node.pod_capacity
    return vector


class Session(SessionPlugins):
    """Snapshot state plus the registered hooks of the configured plugins."""

    def __init__(self, instance: Instance, seed: int = 0) -> None:
        self.instance = instance
        self.conf = instance.scheduler
        self.seed = seed
        self.rng = random.Random(seed)
        self.topology = instance.topology
        self.queue_tree = instance.queue_tree
        self.now = instance.now
        names: set[str] = set()
        for node in instance.nodes:
            names.update(node.allocatable)
        for job in instance.jobs:
            for task in job.tasks:
                names.update(task.resources)
                names.update(task.init_resources)
        self.dims = Dims(names)
        self.nodes: dict[str, NodeInfo] = {}
        self.node_list = NodeList()
        self.jobs: dict[str, JobInfo] = {}
        self.queues: dict[str, QueueInfo] = {}
        self.records = Records()
        self._hooks: dict[str, list[tuple[str, Callable[..., Any]]]] = {h: [] for h in HOOK_FLAGS}
        self._tier_of: dict[str, int] = {}
        self._tier_cache: dict[str, list[list[Callable[..., Any]]]] = {}
        self._fn_cache: dict[str, list[Callable[..., Any]]] = {}
        self._options: dict[str, PluginOption] = {}
        self.event_handlers: list[EventHandler] = []
        self._handled = 0
        """How many of ``event_handlers`` the two lists below were made from."""
        self._on_allocate: list[Callable[[Event], None]] = []
        self._on_deallocate: list[Callable[[Event], None]] = []
        self.plugins: dict[str, Plugin] = {}
        self.hypernode_decisions: dict[str, str] = {}
        self.device_policy = ""
        """vGPU device order (deviceshare ``SchedulePolicy``); set by that plugin at open."""
        self.device_fits: dict[tuple[int, int], tuple[int, Any]] = {}
        """(task ``device_key``, node index) → (the node's ``gpu_version``, fit result)."""
        self.device_fits_by_version: dict[tuple[int, int, int], Any] = {}
        """(task ``device_key``, node index, node ``version``) → fit result."""
        self.device_signatures: dict[Hashable, int] = {}
        """Device request signature → its number (a task's ``device_key``)."""
        self.device_rules: dict[int, Any] = {}
        """Device request number → its ``devices.DeviceRules``."""
        self.device_usable: dict[Hashable, dict[tuple[int, bool], tuple[bool, ...]]] = {}
        """Device filters → the usable devices of each node (``DeviceRules.usable``)."""
        self._hypernode_nodes: dict[str, NodeList] = {}
        self.kube_nodes: Any = None
        """The kube-scheduler NodeInfo view ``predicates`` and ``nodeorder`` share."""
        self.score_keys: dict[str, Hashable] = {}
        """Task uid → its ``node_order_key`` (``nodes.node_orders``)."""
        self.score_tables: dict[Hashable, Versioned] = {}
        """Score key → Σ NodeOrderFn per node, with the version it holds for."""
        self.node_changes: list[int] = []
        """Index of every node touched, in order (``NodeInfo.touch``; read by ``fit_cache``)."""
        self.fit_cache = FitCache()
        """Node-check verdicts per fit shape and node version (``fit_cache``)."""
        self._arrays: NodeArrays | None = None
        self._arrays_made = False
        self.reclaim_room: ReclaimableRoom | None = None
        """What reclaim may take on each node (``eviction_filters``), made by its first use."""
        self.last_processed_node = 0
        """Volcano's global rotating scan offset (``lastProcessedNodeIndex``)."""
        self._build_state()
        self.total_resource = [0] * len(self.dims)
        for node in self.node_list:
            self.total_resource = vadd(self.total_resource, node.allocatable)

    # -- snapshot --------------------------------------------------------------------------

    def _build_state(self) -> None:
        d = self.dims
        for i, node in enumerate(self.instance.nodes):
            info = NodeInfo(
                name=node.name,
                node=node,
                allocatable=_node_allocatable(d, node),
                used=d.zero(),
                releasing=d.zero(),
                pipelined=d.zero(),
                gpus=[GpuState(dev) for dev in node.gpus],
                revocable_zone=node_zone(node.labels),
                index=i,
                pod_capacity=node.pod_capacity,
                changes=self.node_changes,
            )
            self.nodes[node.name] = info
            self.node_list.append(info)
        for q in self.queue_tree.names:
            model = self.queue_tree.queue(q)
            self.queues[q] = QueueInfo(
                q, q, model.weight, model.priority, model.order, model.reclaimable, model.is_open
            )
        order = 0
        for job in self.instance.jobs:
            info = self._job_info(job)
            for task in info.tasks.values():
                task.order = order
                order += 1
                if task.node:
                    self.nodes[task.node].add_task(task)
                    self._book_gpus(task, self.nodes[task.node])
            self.jobs[info.uid] = info
        for job in self.instance.foreign_jobs:
            # Volcano's cache puts another scheduler's pod on its node and in no job: it holds
            # room and counts for inter-pod terms, but no action sees it as a victim.
            for task in self._job_info(job).tasks.values():
                if task.node:
                    task.preemptable = False
                    self.nodes[task.node].add_task(task)
                    self._book_gpus(task, self.nodes[task.node])

    def _job_info(self, job: Job) -> JobInfo:
        d = self.dims
        tasks: dict[str, TaskInfo] = {}
        for pod in job.pods:
            task = job.task(pod.task)
            running = pod.node is not None
            tasks[pod.key] = TaskInfo(
                uid=pod.key,
                name=pod.name,
                namespace=pod.namespace,
                job=job.key,
                pod=pod,
                task=task,
                index=pod.index,
                resreq=_pod_request(d, task.resources),
                init_resreq=_pod_request(d, task.init_resources),
                status=TaskStatus.RUNNING if running else TaskStatus.PENDING,
                node=pod.node or "",
                priority=task.priority,
                role=task.role,
                preemptable=pod_preemptable(task.annotations, task.labels),
                revocable_zone=pod_revocable_zone(task.annotations),
                gpus=tuple(dev for c in pod.gpus for dev in c) if running else None,
            )
        info = JobInfo(
            uid=job.key,
            job=job,
            queue=job.queue,
            priority=job.priority,
            min_available=job.min_available,
            min_task_member=dict(job.min_task_member),
            tasks=tasks,
            phase=job.phase,
            order=job.order,
            preemptable=job_preemptable(job.annotations, job.labels),
            revocable_zone=pod_revocable_zone(job.annotations),
            allocated=d.zero(),
        )
        for task in tasks.values():
            if task.status in ALLOCATED_STATUSES:
                info.allocated = vadd(info.allocated, task.resreq)
        spec = job.network_topology
        if spec is not None:
            # Volcano quirk (§9.6): soft is hard with the virtual top as the limit, and hard
            # without a (resolved) tier is not hard at all: it takes the plain path.
            info.tier_limit = spec.search_limit(self.topology.top_tier)
            placed = {t.node for t in tasks.values() if t.node}
            if placed:
                info.allocated_hypernode = self.topology.lowest_common(placed) or ""
                info.subjob_hypernode = info.allocated_hypernode
        return info

    # -- plugins -----------------------------------------------------------------------------

    def open(self, registry: dict[str, type[Plugin]]) -> None:
        """``OpenSession``: instantiate configured plugins and let them register hooks."""
        for tier_index, tier in enumerate(self.conf.tiers):
            for option in tier:
                cls = registry.get(option.name)
                if cls is None:
                    continue
                plugin = cls(option)
                self.plugins[option.name] = plugin
                self._tier_of[option.name] = tier_index
                self._options[option.name] = option
        for tier in self.conf.tiers:
            for option in tier:
                plugin = self.plugins.get(option.name)
                if plugin is not None:
                    plugin.on_session_open(self)

    def close(self) -> None:
        for plugin in self.plugins.values():
            plugin.on_session_close(self)

    def _update_status(self, task: TaskInfo, status: TaskStatus) -> None:
        job = self.jobs[task.job]
        was = task.status in ALLOCATED_STATUSES
        job.set_status(task, status)
        now = status in ALLOCATED_STATUSES
        if was and not now:
            job.allocated = vsub(job.allocated, task.resreq)
        elif now and not was:
            job.allocated = vadd(job.allocated, task.resreq)

    def _fire(self, allocate: bool, task: TaskInfo) -> None:
        """Every handler's allocate (or deallocate) function, in registration order."""
        if self._handled != len(self.event_handlers):
            self._on_allocate = [h.allocate for h in self.event_handlers if h.allocate]
            self._on_deallocate = [h.deallocate for h in self.event_handlers if h.deallocate]
            self._handled = len(self.event_handlers)
        event = Event(task)
        for fn in self._on_allocate if allocate else self._on_deallocate:
            fn(event)

    def _book_gpus(self, task: TaskInfo, node: NodeInfo) -> None:
        if task.gpus:
            node.gpu_version += 1
            node.touch()
        for share in task.gpus or ():
            for state in node.gpus_by_id.get(share.id, ()):
                state.used_num += 1
                state.used_mem += share.memory
                state.used_core += share.cores
                state.pods[task.uid] = (share.memory, share.cores)

    def _release_gpus(self, task: TaskInfo, node: NodeInfo) -> None:
        if task.gpus:
            node.gpu_version += 1
            node.touch()
        for share in task.gpus or ():
            for state in node.gpus_by_id.get(share.id, ()):
                if task.uid in state.pods:
                    state.used_num -= 1
                    state.used_mem -= share.memory
                    state.used_core -= share.cores
                    del state.pods[task.uid]

    def allocate(
        self, task: TaskInfo, node: NodeInfo, gpus: tuple[DeviceShare, ...] | None
    ) -> Operation:
        """``Statement.Allocate`` without the statement bookkeeping."""
        return self._place(task, node, gpus, TaskStatus.ALLOCATED, "allocate")

    def pipeline(
        self, task: TaskInfo, node: NodeInfo, gpus: tuple[DeviceShare, ...] | None
    ) -> Operation:
        """``Statement.Pipeline``: the same events as allocate, but only future resources."""
        return self._place(task, node, gpus, TaskStatus.PIPELINED, "pipeline")

    def _place(
        self,
        task: TaskInfo,
        node: NodeInfo,
        gpus: tuple[DeviceShare, ...] | None,
        status: TaskStatus,
        kind: str,
    ) -> Operation:
        before = node.version
        self._update_status(task, status)
        task.node = node.name
        task.gpus = gpus
        node.add_task(task)
        self._book_gpus(task, node)
        self._fire(True, task)
        return Operation(kind, task, node.name, gpus=gpus, before=before, after=node.version)

    def evict(self, task: TaskInfo, reason: str) -> Operation:
        """Mark a running task Releasing: it keeps its node resources until it is gone, but
        its device shares are free at once. Volcano's ``NodeInfo.UpdateTask`` removes the
        Running task, which subtracts its shares from the node's devices (``subResource``),
        and adds it back as Releasing, which books none; so a GPU preemptor passes the
        device fit once its victims are evicted (``preemptorFitsOnNode``)."""
        node = self.nodes[task.node]
        before = node.version
        node.remove_task(task)
        self._release_gpus(task, node)
        self._update_status(task, TaskStatus.RELEASING)
        node.add_task(task)
        task.evict_reason = reason
        self._fire(False, task)
        return Operation("evict", task, node.name, reason, before=before, after=node.version)

    def undo(self, op: Operation) -> None:
        """Reverse one operation (``Statement.Discard`` walks them backwards).

        A node still in the state the operation left it in (its version is the one the
        operation ended with) goes back to the state before it, so it gets that state's
        version back: verdicts and scores cached for it hold again, and a dry run that is
        discarded does not make every later scan re-check the nodes it tried."""
        task = op.task
        node = self.nodes[op.node]
        restorable = op.after == node.version
        self._reverse(op, task, node)
        if restorable:
            node.restore(op.before)

    def _reverse(self, op: Operation, task: TaskInfo, node: NodeInfo) -> None:
        if op.kind in ("allocate", "pipeline"):
            self._release_gpus(task, node)
            node.remove_task(task)
            self._update_status(task, TaskStatus.PENDING)
            self._fire(False, task)
            task.node = ""
            task.gpus = None
        elif op.kind == "evict":
            node.remove_task(task)
            self._update_status(task, TaskStatus.RUNNING)
            node.add_task(task)
            self._book_gpus(task, node)
            task.evict_reason = ""
            self._fire(True, task)

    def redo(self, op: Operation) -> Operation:
        """Re-apply a recorded operation on the same node (``RecoverOperations``)."""
        node = self.nodes[op.node]
        if op.kind == "allocate":
            return self.allocate(op.task, node, op.gpus)
        if op.kind == "pipeline":
            return self.pipeline(op.task, node, op.gpus)
        return self.evict(op.task, op.reason)

    def commit_op(self, op: Operation) -> None:
        if op.kind == "allocate":
            self._update_status(op.task, TaskStatus.BINDING)
            self.records.binds.append(op.task)
        elif op.kind == "pipeline":
            self.records.pipelined.append(op.task)
        else:
            self.records.evictions.append(op.task)

    def statement(self) -> Statement:
        return Statement(self)

    # -- helpers -----------------------------------------------------------------------------

    def nodes_in(self, hypernode: str) -> NodeList:
        """The nodes of a HyperNode in node order (the topology is fixed for the session)."""
        found = self._hypernode_nodes.get(hypernode)
        if found is None:
            members = (self.nodes[n] for n in self.topology.real_nodes(hypernode))
            found = NodeList(sorted(members, key=lambda n: n.index))
            self._hypernode_nodes[hypernode] = found
        return found

    def arrays(self) -> NodeArrays | None:
        """The nodes' resource arrays, current (``node_arrays``); None when the instance's
        amounts are too large for them. Made at the first call, after every plugin has
        opened, so that the snapshot is complete."""
        if not self._arrays_made:
            self._arrays = NodeArrays.of(self.node_list, self.node_changes, len(self.dims))
            self._arrays_made = True
        return self._arrays.sync() if self._arrays is not None else None

    def queue_of(self, job: JobInfo) -> QueueInfo | None:
        return self.queues.get(job.queue)

    def tasks(self) -> Iterable[TaskInfo]:
        for job in self.jobs.values():
            yield from job.tasks.values()
