"""The mutable scheduling state of one Volcano session: tasks, jobs, nodes and queues.

These mirror ``pkg/scheduler/api`` (TaskInfo, JobInfo, NodeInfo, QueueInfo) closely enough
that each accounting rule of ``spec/volcano-scheduler.md`` (conventions, §1–§3) maps to one
method here. Resource vectors are dense lists of integers indexed by :class:`Dims`, because a
session compares them millions of times and Python dictionaries would dominate the run time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from operator import add, le, sub

import numpy as np

from models.cluster import Node
from models.gpu import GpuDevice, GpuFilter, GpuRequest
from models.resources import CPU, MEMORY, PODS, Resources
from models.workload import DeviceShare, Job, Pod, Task


class TaskStatus(Enum):
    """A pod's state within one session (``api.TaskStatus``), not a solve's outcome
    (``optimizer.result.Status``)."""

    PENDING = "Pending"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


ALLOCATED_STATUSES = frozenset(
    {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED}
)
"""``api.AllocatedStatus``: tasks that hold node resources."""
READY_STATUSES = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}
PREEMPTABLE_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})


POD_DIM = 2
"""Position of ``pods`` in every session vector (after cpu and memory)."""


class Dims:
    """Maps resource names to positions in the dense vectors of one session.

    ``pods`` is an ordinary scalar of the vectors, always at :data:`POD_DIM`: Volcano's
    ``GetPodResourceRequest`` adds ``pods: 1`` to every task's request and a node's ``pods``
    allocatable is a scalar like any other, so the action-level fits count pod slots. The
    comparisons Volcano makes without it (``IsEmpty``, the quota checks) skip that position.
    """

    def __init__(self, names: Iterable[str]) -> None:
        extra = sorted({n for n in names if n not in (CPU, MEMORY, PODS)})
        self.names: list[str] = [CPU, MEMORY, PODS, *extra]
        self.index: dict[str, int] = {n: i for i, n in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def vector(self, resources: Mapping[str, int]) -> list[int]:
        out = [0] * len(self.names)
        for name, amount in resources.items():
            if name in self.index:
                out[self.index[name]] = amount
        return out

    def resources(self, vector: list[int]) -> Resources:
        return Resources({n: v for n, v in zip(self.names, vector, strict=True) if v})

    def zero(self) -> list[int]:
        return [0] * len(self.names)


def vadd(a: list[int], b: list[int]) -> list[int]:
    """Element-wise sum; every vector of a session has one entry per :class:`Dims` name."""
    return list(map(add, a, b))


def vsub(a: list[int], b: list[int]) -> list[int]:
    return list(map(sub, a, b))


def vle(a: list[int], b: list[int]) -> bool:
    """Volcano ``LessEqual`` in Zero mode on integer vectors (the 0.1 tolerance cannot matter
    between integers)."""
    return all(map(le, a, b))


def vempty(a: list[int]) -> bool:
    """Volcano ``IsEmpty``: nothing positive but the ``pods`` slot, which it ignores."""
    return all(x <= 0 for i, x in enumerate(a) if i != POD_DIM)


def pod_index(name: str) -> int | None:
    """The index suffix ``CompareTask`` reads: the last ``-`` token when there are ≥ 3."""
    parts = name.split("-")
    if len(parts) < 3:
        return None
    try:
        return int(parts[-1])
    except ValueError:
        return None


@dataclass(eq=False)
class TaskInfo:
    """One pod in the session (``api.TaskInfo``)."""

    uid: str
    name: str
    namespace: str
    job: str
    pod: Pod
    task: Task
    index: int
    resreq: list[int]
    init_resreq: list[int]
    status: TaskStatus
    node: str = ""
    priority: int = 0
    role: str = ""
    preemptable: bool = True
    revocable_zone: str = ""
    order: int = 0
    """Creation order of the pod (UID tie-break)."""
    gpus: tuple[DeviceShare, ...] | None = None
    nominated_node: str = ""
    evict_reason: str = ""
    device_key: int = -1
    """Number of the task's device request signature (tasks asking the same of a GPU node
    share it); -1 until the first device fit."""
    fit_shape: int = -1
    """Number of the task's fit shape in the session's fit cache (``fit_cache``); -1 until
    the first node check, -2 when a predicate plugin declared the task uncacheable."""

    @cached_property
    def name_index(self) -> int | None:
        """:func:`pod_index` of the pod's name, parsed once: every comparison of two tasks
        reads it."""
        return pod_index(self.name)

    @cached_property
    def init_needs(self) -> tuple[tuple[int, int], ...]:
        """(dimension, amount) pairs the node fit compares: cpu and memory always, and each
        scalar the pod requests, its ``pods`` slot included (Volcano's ``LessEqual`` walks the
        request's scalars only). Positions 0 and 1 are cpu and memory in every :class:`Dims`."""
        return tuple(
            (i, amount) for i, amount in enumerate(self.init_resreq) if i < 2 or amount > 0
        )

    @property
    def gpu_requests(self) -> tuple[GpuRequest, ...]:
        return self.task.gpu

    @property
    def gpu_filter(self) -> GpuFilter | None:
        return self.task.gpu_filter

    @property
    def best_effort(self) -> bool:
        """An empty ``Resreq``: the tasks allocate skips and backfill places (spec §1.4)."""
        return vempty(self.resreq)

    @property
    def preemption_policy(self) -> str:
        return self.task.preemption_policy


@dataclass(eq=False)
class JobInfo:
    """One PodGroup with its tasks (``api.JobInfo``)."""

    uid: str
    job: Job
    queue: str
    priority: int
    min_available: int
    min_task_member: Mapping[str, int]
    tasks: dict[str, TaskInfo]
    phase: str
    order: int
    preemptable: bool = False
    revocable_zone: str = ""
    allocated: list[int] = field(default_factory=list)
    allocated_hypernode: str = ""
    """LCA HyperNode of the job's allocated tasks (rebuilt from running pods at open)."""
    tier_limit: int | None = None
    """The highest tier the topology search may use, after ``adjustNetworkTopologySpec``
    (hard: ``highestTierAllowed``; soft: the top tier); None for jobs that take the plain
    path. Not ``NetworkTopology.hard_tier``, which is None in soft mode."""
    subjob_hypernode: str = ""
    """The default subjob's ``AllocatedHyperNode``: LCA of the HyperNodes its placements were
    chosen in (lower than the job's when a tier-k candidate placed the job in a descendant)."""
    running_lca: str = ""
    """``task.JobAllocatedHyperNode`` during one task loop: LCA of what it placed so far."""
    fit_errors: dict[str, str] = field(default_factory=dict)
    """Per task uid, why it could not be placed (for pending reasons)."""
    role_fit_failed: set[str] = field(default_factory=set)
    reason: str = ""
    topology_reason: str = ""
    """Why the hard-topology search found no HyperNode (the tiers it tried), for reasons."""

    @property
    def name(self) -> str:
        return self.job.name

    @property
    def namespace(self) -> str:
        return self.job.namespace

    status_counts: dict[TaskStatus, int] = field(default_factory=dict)
    """Tasks per status, kept by :meth:`set_status`: gang asks for them at every placement,
    and counting the tasks each time would be quadratic in the size of the job."""
    pending_best_effort: int = 0
    status_changes: int = 0
    """How many status changes the job's tasks went through: what is derived from the
    statuses can be kept while it stays the same."""

    def __post_init__(self) -> None:
        for task in self.tasks.values():
            self._tally(task, 1)

    def _tally(self, task: TaskInfo, sign: int) -> None:
        self.status_counts[task.status] = self.status_counts.get(task.status, 0) + sign
        if task.status is TaskStatus.PENDING and task.best_effort:
            self.pending_best_effort += sign

    def set_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Change the status of one of the job's tasks (the only place statuses change)."""
        self._tally(task, -1)
        task.status = status
        self._tally(task, 1)
        self.status_changes += 1

    def count(self, statuses: frozenset[TaskStatus] | set[TaskStatus]) -> int:
        return sum(self.status_counts.get(s, 0) for s in statuses)

    def tasks_with(self, status: TaskStatus) -> list[TaskInfo]:
        return [t for t in self.tasks.values() if t.status is status]

    @property
    def ready_task_num(self) -> int:
        return self.count(READY_STATUSES)

    @property
    def waiting_task_num(self) -> int:
        return self.count({TaskStatus.PIPELINED})

    @property
    def pending_best_effort_num(self) -> int:
        return self.pending_best_effort

    def is_ready(self) -> bool:
        """``JobInfo.IsReady``: ready + pending BestEffort ≥ minAvailable.

        Volcano quirk (§9.17): BestEffort pods count as ready before anything places them."""
        return self.ready_task_num + self.pending_best_effort_num >= self.min_available

    def is_pipelined(self) -> bool:
        """``JobInfo.IsPipelined``: waiting + ready + pending BestEffort ≥ minAvailable."""
        return (
            self.waiting_task_num + self.ready_task_num + self.pending_best_effort_num
            >= self.min_available
        )

    def valid_task_num(self) -> int:
        """Tasks that count towards gang validity: allocated, succeeded, pipelined, pending."""
        valid = READY_STATUSES | {TaskStatus.PIPELINED, TaskStatus.PENDING}
        return self.count(valid)

    @property
    def has_topology(self) -> bool:
        return self.job.network_topology is not None


@dataclass(eq=False)
class GpuState:
    """Usage of one physical GPU during the session (Volcano vGPU ``GPUDevice``)."""

    device: GpuDevice
    used_num: int = 0
    used_mem: int = 0
    used_core: int = 0
    pods: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Pod uid → (memory, cores) booked by that pod on this device."""


@dataclass(eq=False)
class NodeInfo:
    """One node's accounting (``api.NodeInfo``): Idle = Allocatable − Used; releasing tasks
    stay in Used; pipelined tasks only in Pipelined; FutureIdle = Idle + Releasing − Pipelined."""

    name: str
    node: Node
    allocatable: list[int]
    used: list[int]
    releasing: list[int]
    pipelined: list[int]
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    gpus: list[GpuState] = field(default_factory=list)
    revocable_zone: str = ""
    index: int = 0
    gpu_version: int = 0
    """Bumped whenever a pod books or releases devices here, so device fits can be cached."""
    version: int = 0
    """Names the node's state: changed by :meth:`touch` whenever the state changes, and by
    :meth:`restore` when it returns to an earlier one, so that one version always means one
    state and node checks and scores can be cached by it (``fit_cache``)."""
    changes: list[int] = field(default_factory=list)
    """The session's node change log (shared by its nodes): the index of every touched node."""
    pod_capacity: int = 110
    """The node's ``pods`` allocatable (read once: the pod-count predicate runs per task)."""

    @cached_property
    def gpus_by_id(self) -> dict[str, list[GpuState]]:
        """The node's devices by id (the inventory is fixed for the session)."""
        by_id: dict[str, list[GpuState]] = {}
        for state in self.gpus:
            by_id.setdefault(state.device.id, []).append(state)
        return by_id

    @property
    def idle(self) -> list[int]:
        return vsub(self.allocatable, self.used)

    @property
    def future_idle(self) -> list[int]:
        return vsub(vadd(self.idle, self.releasing), self.pipelined)

    def touch(self) -> None:
        """Record a change of the node's tasks, resources or devices: the new state gets a
        version no state of this node had before (the log only grows)."""
        self.changes.append(self.index)
        self.version = len(self.changes)

    def restore(self, version: int) -> None:
        """Back to the exact state that had ``version`` (an operation undone)."""
        self.changes.append(self.index)
        self.version = version

    def add_task(self, task: TaskInfo) -> None:
        """``NodeInfo.AddTask`` for the task's current status."""
        self.touch()
        self.tasks[task.uid] = task
        if task.status is TaskStatus.PIPELINED:
            self.pipelined = vadd(self.pipelined, task.resreq)
        else:
            self.used = vadd(self.used, task.resreq)
            if task.status is TaskStatus.RELEASING:
                self.releasing = vadd(self.releasing, task.resreq)

    def remove_task(self, task: TaskInfo) -> None:
        """``NodeInfo.RemoveTask``, using the status the task had when it was added."""
        stored = self.tasks.pop(task.uid, None)
        if stored is None:
            return
        self.touch()
        if task.status is TaskStatus.PIPELINED:
            self.pipelined = vsub(self.pipelined, task.resreq)
        else:
            self.used = vsub(self.used, task.resreq)
            if task.status is TaskStatus.RELEASING:
                self.releasing = vsub(self.releasing, task.resreq)


class NodeList(list[NodeInfo]):
    """A fixed list of nodes (the cluster's or one HyperNode's in node-index order, or the
    nodes a scan found) with their indices as an array, which lets a scan read per-node
    arrays at those positions."""

    @classmethod
    def of(cls, nodes: list[NodeInfo], indices: np.ndarray) -> NodeList:
        """``nodes`` whose indices (in order) are already known."""
        made = cls(nodes)
        made.__dict__["indices"] = indices
        return made

    @cached_property
    def indices(self) -> np.ndarray:
        return np.fromiter((node.index for node in self), dtype=np.intp, count=len(self))

    @cached_property
    def objects(self) -> np.ndarray:
        """The nodes as an object array, to pick many of them by position at once."""
        objects = np.empty(len(self), dtype=object)
        objects[:] = self
        return objects


@dataclass(eq=False)
class QueueInfo:
    uid: str
    name: str
    weight: int
    priority: int
    order: int
    reclaimable: bool = True
    open: bool = True
