"""FGD's expected fragmentation (ATC '23) as an objective stage: keep the free GPU capacity
usable by the tasks that typically arrive.

A node's fragmentation against a *typical-task mix* is F = Σ_m p_m · Frag(m): when task m fits
the node (CPU, and enough devices each with m's per-GPU share free), the free milli-GPU of the
devices that cannot take one of m's GPUs; when it does not fit (or is CPU-only), all the node's
free milli-GPU. Placing a pod changes F by Δ; the stage minimises Σ Δ over the plan's new pods,
so of two placements of equal worth the one that leaves whole devices and fitting room for the
common shapes wins — what keeps a cluster able to take the next arrivals.

Δ is read per pod against the node's state before the plan, which node classes make cheap:
nodes of a class are in one state, so one Δ per (group, class, device class) serves all of
them and the stage is one term per count. Pods landing together on one node are valued one
by one (FGD itself places one task at a time); the stage is exact for plans that add at most
one pod per node and device.

A device's free milli-GPU is min(free cores / cores, free memory / memory) × 1000 (0 when it
has no time-slice left or is not in the pool): one dimension, as FGD's milli, exact for shares
asked as percentages of cores and memory. The mix is the instance's own pods unless the
options give one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from models.gpu import FULL_CORES, GpuRequest
from models.instance import Instance
from models.workload import Task

from ..options import SolveOptions
from ..plan import Placement
from .classes import DeviceClass, NodeClass
from .records import Group
from .variables import Expr, wsum

if TYPE_CHECKING:
    from .data import Compiled
    from .variables import Variables

COVERAGE = 0.95
"""Typical tasks are the most common shapes up to this share of the pods (FGD's choice)."""
SCALE = 1000
"""Δ (milli-GPU) enters the model as integers ⌊SCALE·Δ⌉."""
MILLI = 1000

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class TypicalTask:
    """One shape of the typical mix: CPU (milli), per-GPU share (milli), GPUs, device types."""

    cpu: int
    milli: int
    gpus: int
    types: tuple[str, ...] = ()
    """Device types it may use (case-insensitive substrings, as ``use-gputype``); empty: any."""
    weight: float = 1.0
    """p_m; a mix's weights sum to 1."""

    def allows(self, device_type: str) -> bool:
        upper = device_type.upper()
        return not self.types or any(t.upper() in upper for t in self.types)


def most_common(specs: Iterable[K], coverage: float = COVERAGE) -> list[tuple[K, int]]:
    """The most common specs, with their counts, until they cover ``coverage`` of all; ties in
    count go to the smaller spec, so the cut does not depend on input order."""
    counts = Counter(specs)
    total = sum(counts.values())
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    kept: list[tuple[K, int]] = []
    covered = 0
    for spec, n in ranked:
        kept.append((spec, n))
        covered += n
        if covered >= coverage * total:
            break
    return kept


def share_milli(request: GpuRequest, device_memory: int) -> int:
    """Milli-GPU one device share of ``request`` takes on a device of ``device_memory`` MiB."""
    if request.exclusive:
        return MILLI
    memory = request.memory_on(device_memory) / device_memory if device_memory > 0 else 0.0
    return min(MILLI, round(MILLI * max(request.booked_cores / FULL_CORES, memory)))


def task_shape(task: Task, largest_memory: int) -> tuple[int, int, int, tuple[str, ...]]:
    """(CPU milli, per-GPU milli, GPUs, allowed types) of one pod of ``task``; the share is read
    against the largest device, as a pod's worth is."""
    cpu = task.resources.get("cpu")
    if not task.gpu:
        return (cpu, 0, 0, ())
    gpus = sum(r.nums for r in task.gpu)
    milli = max(share_milli(r, largest_memory) for r in task.gpu)
    types = tuple(sorted(task.gpu_filter.use_types)) if task.gpu_filter else ()
    return (cpu, milli, gpus, types)


def instance_mix(instance: Instance, coverage: float = COVERAGE) -> tuple[TypicalTask, ...]:
    """The typical mix of the instance's own pods, pending and running."""
    largest = max((d.memory for n in instance.nodes for d in n.gpus), default=1) or 1
    tasks = {(j.key, t.name): t for j in instance.jobs for t in j.tasks}
    shapes = [task_shape(tasks[p.job, p.task], largest) for p in instance.pods]
    return mix_of(most_common(shapes, coverage))


def mix_of(
    counted: Sequence[tuple[tuple[int, int, int, tuple[str, ...]], int]],
) -> tuple[TypicalTask, ...]:
    """Counted shapes as a mix whose weights sum to 1."""
    total = sum(n for _, n in counted) or 1
    return tuple(TypicalTask(c, q, k, types, n / total) for (c, q, k, types), n in counted)


# -- a node state's F ------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeState:
    """What F reads of a node: free CPU, and per device its free milli-GPU and type."""

    cpu: int
    free: tuple[int, ...]
    types: tuple[str, ...]


class Mix:
    """A typical mix as arrays, with F of node states memoised (many classes share a state)."""

    def __init__(self, tasks: Sequence[TypicalTask]) -> None:
        self.tasks = tuple(tasks)
        self.cpu = np.array([t.cpu for t in tasks], dtype=np.int64)
        self.milli = np.array([t.milli for t in tasks], dtype=np.int64)
        self.gpus = np.array([t.gpus for t in tasks], dtype=np.int64)
        self.weight = np.array([t.weight for t in tasks], dtype=np.float64)
        self._allowed: dict[str, np.ndarray] = {}
        self._memo: dict[NodeState, float] = {}

    def allowed(self, device_type: str) -> np.ndarray:
        if device_type not in self._allowed:
            self._allowed[device_type] = np.array(
                [t.gpus > 0 and t.allows(device_type) for t in self.tasks], dtype=bool
            )
        return self._allowed[device_type]

    def frag(self, state: NodeState) -> float:
        """F of one node state in milli-GPU (§6 of the FGD benchmark spec)."""
        found = self._memo.get(state)
        if found is not None:
            return found
        free = np.array(state.free, dtype=np.int64)
        if free.size == 0 or not self.tasks:
            value = 0.0
        else:
            allowed = np.array([self.allowed(t) for t in state.types])  # [devices, tasks]
            usable = allowed & (free[:, None] >= self.milli[None, :])
            fits = (usable.sum(axis=0) >= self.gpus) & (self.gpus > 0) & (state.cpu >= self.cpu)
            unusable = np.where(usable, 0, free[:, None]).sum(axis=0)
            value = float(np.where(fits, unusable, free.sum()) @ self.weight)
        self._memo[state] = value
        return value


def device_free(dc: DeviceClass, used_memory: int = 0, used_cores: int = 0, slots: int = 0) -> int:
    """Free milli-GPU of a device of ``dc`` after running pods and the given new use."""
    dev = dc.device
    if not dc.pool or dc.free_slots - slots <= 0:
        return 0
    parts = []
    if dev.cores > 0:
        parts.append(MILLI * (dc.free_cores - used_cores) // dev.cores)
    if dev.memory > 0:
        parts.append(MILLI * (dc.free_memory - used_memory) // dev.memory)
    return max(0, min(parts, default=0))


def class_state(cls: NodeClass) -> tuple[int, list[int], list[str], list[int]]:
    """(free CPU, free milli per device, device types, device class of each device) of one node
    of ``cls`` before the plan."""
    free: list[int] = []
    types: list[str] = []
    owner: list[int] = []
    for dc in cls.devices:
        for _ in range(dc.per_node):
            free.append(device_free(dc))
            types.append(dc.device.type)
            owner.append(dc.index)
    return cls.free("cpu"), free, types, owner


class Deltas:
    """Δ of one new pod per (group, class, device class of its first container), memoised."""

    def __init__(self, mix: Mix, classes: Sequence[NodeClass]) -> None:
        self.mix = mix
        self.classes = classes
        self._states = [class_state(c) for c in classes]
        self._memo: dict[tuple[object, ...], int] = {}

    def coefficient(self, group: Group, c: int, dc: int | None) -> int:
        """⌊SCALE·Δ⌉ of one pod of ``group`` on a node of class ``c``, its first container on
        device class ``dc`` (None: its first option there), the others on their first; a
        container whose class has fewer devices than it asks for goes on to its next options."""
        containers = group.where.containers.get(c, [])
        choice = tuple(
            tuple(sorted(options, key=lambda o: o[0] != dc)) if k == 0 else tuple(options)
            for k, options in enumerate(containers)
        )
        key = (c, group.request.get("cpu", 0), group.gpus, choice)
        if key not in self._memo:
            self._memo[key] = round(SCALE * self._delta(group, c, choice))
        return self._memo[key]

    def _delta(
        self, group: Group, c: int, choice: tuple[tuple[tuple[int, bool], ...], ...]
    ) -> float:
        cpu, free, types, owner = self._states[c]
        before = self.mix.frag(NodeState(cpu, tuple(free), tuple(types)))
        after = list(free)
        cls = self.classes[c]
        taken: set[int] = set()
        for request, options in zip(group.gpus, choice, strict=True):
            slots = [
                (i, d, whole)
                for d, whole in options
                for i, o in enumerate(owner)
                if o == d and i not in taken
            ]
            for i, d, whole in slots[: request.nums]:
                taken.add(i)
                if whole or request.exclusive:
                    after[i] = 0
                else:
                    dc = cls.devices[d]
                    memory = request.memory_on(dc.device.memory)
                    after[i] = device_free(dc, memory, request.booked_cores, 1)
        cpu_after = cpu - group.request.get("cpu", 0)
        return self.mix.frag(NodeState(cpu_after, tuple(after), tuple(types))) - before


# -- the stage -------------------------------------------------------------------------------


def _per_device(group: Group, c: int) -> bool:
    """Whether the first container chooses among device classes that it shares (then Δ is
    counted per device use, each with its own class's Δ); otherwise per pod."""
    containers = group.where.containers.get(c, [])
    return bool(containers) and len(containers[0]) > 1 and not all(w for _, w in containers[0])


def deltas_for(data: Compiled) -> Deltas | None:
    """The Δ tables of ``data`` (memoised on it), None when the stage has no mix."""
    if not data.typical:
        return None
    if data.fragmentation_deltas is None:
        data.fragmentation_deltas = Deltas(Mix(data.typical), data.classes)
    return data.fragmentation_deltas


def stage_expression(v: Variables, data: Compiled) -> Expr:
    """− Σ ⌊SCALE·Δ⌉ over the plan's new pods (per device use where the first container
    chooses a device class to share)."""
    deltas = deltas_for(data)
    if deltas is None:
        return 0
    terms: list[tuple[int, Expr]] = []
    for g in data.groups:
        for c in g.classes:
            if _per_device(g, c):
                nums = g.gpus[0].nums
                for d, _ in g.where.containers[c][0]:
                    coef = round(deltas.coefficient(g, c, d) / nums)
                    terms.append((-coef, v.uses(g.index, 0, c, d)))
            else:
                terms.append((-deltas.coefficient(g, c, None), v.count[g.index, c]))
    return wsum(terms)


def stage_span(data: Compiled) -> int:
    """Bound on max − min of the stage: every pod's largest |Δ| on any class."""
    deltas = deltas_for(data)
    if deltas is None:
        return 0
    span = 0
    for g in data.groups:
        worst = 0
        for c in g.classes:
            containers = g.where.containers.get(c, [])
            options = [d for d, _ in containers[0]] if containers else [None]
            worst = max(worst, *(abs(deltas.coefficient(g, c, d)) for d in options))
        span += worst * g.size
    return span


def plan_value(data: Compiled, placements: Iterable[Placement]) -> int:
    """The stage's value of a plan's placements, as the model counts it."""
    deltas = deltas_for(data)
    if deltas is None:
        return 0
    group_of = {p.key: g for g in data.groups for p in g.pods}
    total = 0
    for p in placements:
        g = group_of.get(p.pod)
        if g is None:
            continue
        n = data.node_index(p.node)
        c = data.node_class[n]
        if not _per_device(g, c):
            total -= deltas.coefficient(g, c, None)
            continue
        nums = g.gpus[0].nums
        index = {dev.id: i for i, dev in enumerate(data.nodes[n].gpus)}
        for share in (p.gpus or ())[:nums]:
            d = data.device_class[n, index[share.id]]
            total -= round(deltas.coefficient(g, c, d) / nums)
    return total


def typical_for(instance: Instance, options: SolveOptions) -> tuple[TypicalTask, ...]:
    """The mix the options ask for: none while the stage is off, else the given one or the
    instance's own."""
    if "fragmentation" not in options.active_stages:
        return ()
    if options.typical_mix is not None:
        return options.typical_mix
    return instance_mix(instance)
