"""One Volcano scheduling session: plugin hooks, how they combine, and the task operations.

Plugins register functions by hook name in ``on_session_open`` (tier order, then order within
a tier); actions call the combined hooks. Every combination rule is the one of
``framework/session_plugins.go`` as tabled in ``spec/volcano-scheduler.md`` §1.2: the first
non-zero order wins, predicates AND with short-circuit, scores add up, votes for
pipelined/enqueueable follow the Permit/Abstain/Reject rule, evictable candidates intersect per
tier and an empty intersection passes to the next tier.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

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
    Status,
    TaskInfo,
    vadd,
    vsub,
)
from .fit_cache import FitCache

PERMIT, ABSTAIN, REJECT = 1, 0, -1

UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"

HOOK_FLAGS = {
    "queue_order": "QueueOrder",
    "job_order": "JobOrder",
    "task_order": "TaskOrder",
    "predicate": "Predicate",
    "pre_predicate": "Predicate",
    "predicate_key": "Predicate",
    "node_order": "NodeOrder",
    "node_order_key": "NodeOrder",
    "batch_node_order": "NodeOrder",
    "hypernode_order": "HyperNodeOrder",
    "hypernode_gradient": "HyperNodeGradient",
    "allocatable": "Allocatable",
    "job_ready": "JobReady",
    "job_pipelined": "JobPipelined",
    "job_enqueueable": "JobEnqueued",
    "job_enqueued": "JobEnqueued",
    "job_starving": "JobStarving",
    "overused": "Overused",
    "preemptive": "Preemptive",
    "preemptable": "Preemptable",
    "reclaimable": "Reclaimable",
    "victim_tasks": "Victim",
    "job_valid": None,
    "victim_queue_order": None,
}
"""Hook → the ``enableXxx`` flag that gates it (None: never gated, as in Volcano)."""


@dataclass(frozen=True)
class FitFailure:
    """Why a predicate rejected a node (a Volcano ``FitError`` status)."""

    code: str
    reason: str
    plugin: str = ""

    @property
    def resolvable(self) -> bool:
        return self.code != UNRESOLVABLE


class ScoreSkip(Exception):
    """A NodeOrderFn error: the node gets no NodeOrder part of its score (§6 TDM)."""


@dataclass
class Event:
    task: TaskInfo


@dataclass
class EventHandler:
    allocate: Callable[[Event], None] | None = None
    deallocate: Callable[[Event], None] | None = None


@dataclass
class Operation:
    kind: str
    task: TaskInfo
    node: str
    reason: str = ""
    gpus: tuple[DeviceShare, ...] | None = None
    before: int = -1
    """The node's version before the operation (see :meth:`Session.undo`)."""
    after: int = -1
    """The node's version right after it."""


@dataclass
class Records:
    """What the session decided, in the order it happened."""

    binds: list[TaskInfo] = field(default_factory=list)
    pipelined: list[TaskInfo] = field(default_factory=list)
    evictions: list[TaskInfo] = field(default_factory=list)


class Plugin:
    """Base of every plugin: keeps its option and arguments."""

    name = ""

    def __init__(self, option: PluginOption) -> None:
        self.option = option
        self.arguments = option.arguments

    def on_session_open(self, ssn: Session) -> None:
        raise NotImplementedError

    def on_session_close(self, ssn: Session) -> None:
        return None


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


class Session:
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
        self.plugins: dict[str, Plugin] = {}
        self.hypernode_decisions: dict[str, str] = {}
        self.device_policy = ""
        """vGPU device order (deviceshare ``SchedulePolicy``); set by that plugin at open."""
        self.device_fits: dict[tuple[int, int], tuple[int, Any]] = {}
        """(task ``device_key``, node index) → (the node's ``gpu_version``, fit result)."""
        self.device_signatures: dict[Hashable, int] = {}
        """Device request signature → its number (a task's ``device_key``)."""
        self.device_rules: dict[int, Any] = {}
        """Device request number → its ``devices.DeviceRules``."""
        self._hypernode_nodes: dict[str, NodeList] = {}
        self.kube_nodes: Any = None
        """The kube-scheduler NodeInfo view ``predicates`` and ``nodeorder`` share."""
        self.score_keys: dict[str, Hashable] = {}
        """Task uid → its ``node_order_key`` (``nodes.node_orders``)."""
        self.score_tables: dict[Hashable, dict[int, tuple[int, float]]] = {}
        """Score key → node index → (node version, Σ NodeOrderFn)."""
        self.node_changes: list[int] = []
        """Index of every node touched, in order (``NodeInfo.touch``; read by ``fit_cache``)."""
        self.fit_cache = FitCache()
        """Node-check verdicts per fit shape and node version (``fit_cache``)."""
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
                status=Status.RUNNING if running else Status.PENDING,
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
            info.hard_tier = spec.search_limit(self.topology.top_tier)
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

    def add(self, hook: str, plugin: str, fn: Callable[..., Any]) -> None:
        """Register ``fn`` for ``hook`` on behalf of ``plugin``."""
        self._hooks[hook].append((plugin, fn))
        self._tier_cache.pop(hook, None)
        self._fn_cache.pop(hook, None)

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    def _tiers(self, hook: str) -> list[list[Callable[..., Any]]]:
        """The enabled functions of ``hook``, grouped by tier, in registration order.

        Cached: hooks are registered at open and never change afterwards, and this is called
        for every (task, node) pair."""
        cached = self._tier_cache.get(hook)
        if cached is None:
            cached = self._tier_cache[hook] = self._group(hook)
            self._fn_cache[hook] = [fn for tier in cached for fn in tier]
        return cached

    def _group(self, hook: str) -> list[list[Callable[..., Any]]]:
        flag = HOOK_FLAGS[hook]
        grouped: dict[int, list[Callable[..., Any]]] = {}
        for plugin, fn in self._hooks[hook]:
            if flag is not None and not self._options[plugin].enabled(flag):
                continue
            grouped.setdefault(self._tier_of[plugin], []).append(fn)
        return [grouped[t] for t in sorted(grouped)]

    def _fns(self, hook: str) -> list[Callable[..., Any]]:
        fns = self._fn_cache.get(hook)
        if fns is None:
            self._tiers(hook)
            fns = self._fn_cache[hook]
        return fns

    def has_hook(self, hook: str) -> bool:
        return bool(self._fns(hook))

    # -- orders --------------------------------------------------------------------------

    def _first_nonzero(self, hook: str, *args: Any) -> int:
        for fn in self._fns(hook):
            result = fn(*args)
            if result != 0:
                return result
        return 0

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> bool:
        """True if ``left`` is scheduled before ``right``."""
        result = self._first_nonzero("queue_order", left, right)
        if result != 0:
            return result < 0
        return (left.order, left.uid) < (right.order, right.uid)

    def job_order(self, left: JobInfo, right: JobInfo) -> bool:
        result = self._first_nonzero("job_order", left, right)
        if result != 0:
            return result < 0
        return (left.order, left.uid) < (right.order, right.uid)

    def job_order_compare(self, left: JobInfo, right: JobInfo) -> int:
        """``JobOrderCompareFn``: the plugin result, 0 when every plugin ties."""
        return self._first_nonzero("job_order", left, right)

    def task_order(self, left: TaskInfo, right: TaskInfo) -> bool:
        result = self._first_nonzero("task_order", left, right)
        if result != 0:
            return result < 0
        return compare_task(left, right) < 0

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> bool:
        """True if victims of ``left`` go before victims of ``right``."""
        for fn in self._fns("victim_queue_order"):
            result = fn(left, right, preemptor)
            if result != 0:
                return result < 0
        return not self.queue_order(left, right)

    # -- predicates and scores -------------------------------------------------------------

    def pre_predicate(self, task: TaskInfo) -> FitFailure | None:
        for fn in self._fns("pre_predicate"):
            failure = fn(task)
            if failure is not None:
                return failure
        return None

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitFailure | None:
        """AND over plugins, short-circuit at the first failure."""
        for fn in self._fns("predicate"):
            failure = fn(task, node)
            if failure is not None:
                return failure
        return None

    def predicate_key(self, task: TaskInfo) -> tuple[Hashable, ...] | None:
        """What the PredicateFns read of ``task``, one part per plugin (the fit-cache hook,
        see ``fit_cache``); None when the verdicts cannot be reused."""
        return self._hook_key("predicate", "predicate_key", task)

    def node_order_key(self, task: TaskInfo) -> tuple[Hashable, ...] | None:
        """What the NodeOrderFns read of ``task`` besides the node's own state (the same hook
        for scores, see ``nodes.node_orders``); None when the scores cannot be reused."""
        return self._hook_key("node_order", "node_order_key", task)

    def _hook_key(self, hook: str, key_hook: str, task: TaskInfo) -> tuple[Hashable, ...] | None:
        """One key part per enabled function of ``hook``, from its plugin's ``key_hook``; None
        if a plugin has no key function or its key function returns None."""
        keys = {plugin: fn for plugin, fn in self._hooks[key_hook]}
        flag = HOOK_FLAGS[hook]
        parts: list[Hashable] = []
        for plugin, _ in self._hooks[hook]:
            if flag is not None and not self._options[plugin].enabled(flag):
                continue
            key_fn = keys.get(plugin)
            part = key_fn(task) if key_fn is not None else None
            if part is None:
                return None
            parts.append(part)
        return tuple(parts)

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        """Σ NodeOrderFn; a plugin error drops the node's whole NodeOrder part (PrioritizeNodes)."""
        total = 0.0
        try:
            for fn in self._fns("node_order"):
                total += fn(task, node)
        except ScoreSkip:
            return 0.0
        return total

    def batch_node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        fns = self._fns("batch_node_order")
        if not fns:
            return {}
        scores = dict(fns[0](task, nodes))
        for fn in fns[1:]:
            for name, score in fn(task, nodes).items():
                scores[name] = scores.get(name, 0.0) + score
        return scores

    def hypernode_order(
        self, job: JobInfo, hypernodes: dict[str, list[NodeInfo]]
    ) -> dict[str, float]:
        scores: dict[str, float] = {}
        for fn in self._fns("hypernode_order"):
            for name, score in fn(job, hypernodes).items():
                scores[name] = scores.get(name, 0.0) + score
        return scores

    def hypernode_gradient(
        self, job: JobInfo, hypernode: str, purpose: str, subjob: bool
    ) -> list[list[str]]:
        """``HyperNodeGradientFor{Job,SubJob}Fn``: the first registered plugin decides; none →
        ``[[hypernode]]``. ``subjob`` selects the subjob variant (its minResource is the Σ
        InitResreq of its pending tasks instead of the PodGroup's minResources)."""
        fns = self._fns("hypernode_gradient")
        if not fns:
            return [[hypernode]]
        return fns[0](job, hypernode, purpose, subjob)

    # -- job and queue predicates ------------------------------------------------------------

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for fn in self._fns("allocatable"))

    def job_ready(self, job: JobInfo) -> bool:
        return all(fn(job) for fn in self._fns("job_ready"))

    def _vote(self, hook: str, job: JobInfo) -> bool:
        for tier in self._tiers(hook):
            permit = False
            for fn in tier:
                vote = fn(job)
                if vote < 0:
                    return False
                permit = permit or vote > 0
            if permit:
                return True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._vote("job_pipelined", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._vote("job_enqueueable", job)

    def enqueue_rejecters(self, job: JobInfo) -> list[str]:
        """The enabled plugins whose JobEnqueueable votes Reject for ``job`` (for reasons)."""
        flag = HOOK_FLAGS["job_enqueueable"]
        return [
            plugin
            for plugin, fn in self._hooks["job_enqueueable"]
            if (flag is None or self._options[plugin].enabled(flag)) and fn(job) < 0
        ]

    def job_enqueued(self, job: JobInfo) -> None:
        for fn in self._fns("job_enqueued"):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        """Only the first tier with a starving function decides, as an AND inside it
        (Volcano quirk (§9.5): with gang and priority in tier 1 that is gang's test)."""
        for tier in self._tiers("job_starving"):
            return all(fn(job) for fn in tier)
        return False

    def job_valid(self, job: JobInfo) -> str | None:
        for fn in self._fns("job_valid"):
            reason = fn(job)
            if reason is not None:
                return reason
        return None

    def overused(self, queue: QueueInfo) -> bool:
        return any(fn(queue) for fn in self._fns("overused"))

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for fn in self._fns("preemptive"))

    def _evictable(
        self, hook: str, preemptor: TaskInfo, candidates: list[TaskInfo]
    ) -> list[TaskInfo]:
        """Per tier, intersect the candidate lists of the non-abstaining plugins; an empty
        result moves on to the next tier.

        Volcano quirk (§9.4): a plugin answering "none" (TDM's Reject included) is no veto;
        a later tier decides, and a non-empty earlier tier skips the later ones."""
        for tier in self._tiers(hook):
            victims: list[TaskInfo] | None = None
            for fn in tier:
                chosen, vote = fn(preemptor, candidates)
                if vote == ABSTAIN:
                    continue
                if not chosen:
                    victims = None
                    break
                if victims is None:
                    victims = list(chosen)
                else:
                    keep = {t.uid for t in chosen}
                    victims = [t for t in victims if t.uid in keep]
            if victims:
                return victims
        return []

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._evictable("preemptable", preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._evictable("reclaimable", reclaimer, candidates)

    def victim_tasks(self) -> list[TaskInfo]:
        """Union per tier; the first tier with a non-empty union wins."""
        for tier in self._tiers("victim_tasks"):
            seen: dict[str, TaskInfo] = {}
            for fn in tier:
                for task in fn():
                    seen.setdefault(task.uid, task)
            if seen:
                return list(seen.values())
        return []

    # -- task operations ---------------------------------------------------------------------

    def _update_status(self, task: TaskInfo, status: Status) -> None:
        job = self.jobs[task.job]
        was = task.status in ALLOCATED_STATUSES
        job.set_status(task, status)
        now = status in ALLOCATED_STATUSES
        if was and not now:
            job.allocated = vsub(job.allocated, task.resreq)
        elif now and not was:
            job.allocated = vadd(job.allocated, task.resreq)

    def _fire(self, allocate: bool, task: TaskInfo) -> None:
        event = Event(task)
        for handler in self.event_handlers:
            fn = handler.allocate if allocate else handler.deallocate
            if fn is not None:
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
        return self._place(task, node, gpus, Status.ALLOCATED, "allocate")

    def pipeline(
        self, task: TaskInfo, node: NodeInfo, gpus: tuple[DeviceShare, ...] | None
    ) -> Operation:
        """``Statement.Pipeline``: the same events as allocate, but only future resources."""
        return self._place(task, node, gpus, Status.PIPELINED, "pipeline")

    def _place(
        self,
        task: TaskInfo,
        node: NodeInfo,
        gpus: tuple[DeviceShare, ...] | None,
        status: Status,
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
        """Mark a running task Releasing: it keeps its node resources until it is gone."""
        node = self.nodes[task.node]
        before = node.version
        node.remove_task(task)
        self._update_status(task, Status.RELEASING)
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
            self._update_status(task, Status.PENDING)
            self._fire(False, task)
            task.node = ""
            task.gpus = None
        elif op.kind == "evict":
            node.remove_task(task)
            self._update_status(task, Status.RUNNING)
            node.add_task(task)
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
            self._update_status(op.task, Status.BINDING)
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

    def queue_of(self, job: JobInfo) -> QueueInfo | None:
        return self.queues.get(job.queue)

    def tasks(self) -> Iterable[TaskInfo]:
        for job in self.jobs.values():
            yield from job.tasks.values()


class Statement:
    """A group of operations that is committed or discarded together (``framework.Statement``)."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[Operation] = []

    def allocate(
        self, task: TaskInfo, node: NodeInfo, gpus: tuple[DeviceShare, ...] | None = None
    ) -> None:
        self.operations.append(self.ssn.allocate(task, node, gpus))

    def pipeline(
        self, task: TaskInfo, node: NodeInfo, gpus: tuple[DeviceShare, ...] | None = None
    ) -> None:
        self.operations.append(self.ssn.pipeline(task, node, gpus))

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.operations.append(self.ssn.evict(task, reason))

    def discard(self) -> None:
        for op in reversed(self.operations):
            self.ssn.undo(op)
        self.operations = []

    def commit(self) -> None:
        for op in self.operations:
            self.ssn.commit_op(op)
        self.operations = []

    def merge(self, other: Statement) -> None:
        self.operations.extend(other.operations)
        other.operations = []

    def recover(self, operations: Sequence[Operation]) -> None:
        """Replay saved operations (the hard-topology path re-applies a dry run's winner)."""
        for op in operations:
            self.operations.append(self.ssn.redo(op))


@lru_cache(maxsize=1 << 16)
def pod_index(name: str) -> int | None:
    """The index suffix ``CompareTask`` reads: the last ``-`` token when there are ≥ 3
    (remembered: every sift of a task heap compares two names)."""
    parts = name.split("-")
    if len(parts) < 3:
        return None
    try:
        return int(parts[-1])
    except ValueError:
        return None


def compare_task(left: TaskInfo, right: TaskInfo) -> int:
    """``controllers/job/helpers.CompareTask``: index suffix, then creation time, then UID.

    Pods of one snapshot share a creation time, so the UID decides; vcopt's UID is the
    ``namespace/name`` key, which orders like Volcano's test UIDs (``namespace-name``).
    """
    li, ri = pod_index(left.name), pod_index(right.name)
    if li is not None and ri is not None and li != ri:
        return -1 if li < ri else 1
    if left.uid == right.uid:
        return 0
    return -1 if left.uid < right.uid else 1
