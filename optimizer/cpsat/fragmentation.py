"""FGD's expected fragmentation (ATC '23): the typical-task mix and F of a node state, the
definitions the fragmentation stage (``frag_stage.py``) writes into the model.

A node's fragmentation against a *typical-task mix* is F = Σ_m p_m · Frag(m): when task m fits
the node (CPU, and enough devices each with m's per-GPU share free), the free milli-GPU of the
devices that cannot take one of m's GPUs; when it does not fit (or is CPU-only), all the node's
free milli-GPU. Placing pods changes F; the stage minimises the growth, so of two placements
of equal worth the one that leaves whole devices and fitting room for the common shapes wins —
what keeps a cluster able to take the next arrivals.

A device's free milli-GPU is min(free cores / cores, free memory / memory) × 1000 (0 when it
has no time-slice left or is not in the pool): one dimension, as FGD's milli, exact for shares
asked as percentages of cores and memory. The mix is the instance's own pods unless the
options give one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from models.gpu import FULL_CORES, GpuRequest
from models.instance import Instance
from models.workload import Task

from ..options import SolveOptions
from .classes import DeviceClass

COVERAGE = 0.95
"""Typical tasks are the most common shapes up to this share of the pods (FGD's choice)."""
SCALE = 1000
"""F (milli-GPU) enters the model as integers ⌊SCALE·F⌉."""
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


def typical_for(instance: Instance, options: SolveOptions) -> tuple[TypicalTask, ...]:
    """The mix the options ask for: none while the stage is off, else the given one or the
    instance's own."""
    if "fragmentation" not in options.active_stages:
        return ()
    if options.typical_mix is not None:
        return options.typical_mix
    return instance_mix(instance)
