"""FGD's expected fragmentation (ATC '23, fgd-benchmark.md §4 step 9 and §6): the typical-task
mix, how an instance's pods make one, and F of a node state.

F is a fact about a cluster state, not a decision: the metric reports it, the CP-SAT stage
minimises its growth and the Alibaba simulator's FGD policy scores with it, so all three read
the one definition here and agree on what a state is worth.

A node's fragmentation against a mix is F = Σ_m p_m · Frag(m): when task m fits the node (CPU,
and at least m's GPU count of devices of a type m may use, each with m's per-GPU share free),
the free milli-GPU of the devices that cannot take one of m's GPUs; when it does not fit, or is
CPU-only, all the node's free milli-GPU. A node state is its free CPU and, per device, its free
milli-GPU and type; how free milli is read off a plan, a compiled model or an array is each
reader's business.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

from .gpu import FULL_CORES, GpuRequest
from .instance import Instance
from .resources import CPU
from .workload import Task

COVERAGE = 0.95
"""Typical tasks are the most common shapes up to this share of the pods (FGD's choice)."""
MILLI = 1000
"""One whole device in milli-GPU."""

K = TypeVar("K", bound=Hashable)
Shape = tuple[int, int, int, tuple[str, ...]]
"""(CPU milli, per-GPU milli, GPUs, allowed device types) of one task."""


@lru_cache(maxsize=4096)
def allows(types: tuple[str, ...], device_type: str) -> bool:
    """Whether a task limited to ``types`` may use a device of ``device_type``: types match as
    case-insensitive substrings, as ``nvidia.com/use-gputype`` matches them; none: any."""
    upper = device_type.upper()
    return not types or any(t.upper() in upper for t in types)


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
        return allows(self.types, device_type)


def fragmentation(
    cpu: int, free: Sequence[int], types: Sequence[str], mix: Iterable[TypicalTask]
) -> float:
    """F of one node state in milli-GPU: ``cpu`` free milli-CPU, ``free[i]`` the free milli
    of device i and ``types[i]`` its type (fgd-benchmark.md §6)."""
    total = sum(free)
    value = 0.0
    for m in mix:
        frag = total
        if m.gpus > 0 and cpu >= m.cpu:
            usable = [r for r, t in zip(free, types, strict=True)
                      if r >= m.milli and allows(m.types, t)]  # fmt: skip
            if len(usable) >= m.gpus:
                frag = total - sum(usable)
        value += m.weight * frag
    return value


# -- the typical mix -------------------------------------------------------------------------


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


def mix_of(counted: Sequence[tuple[Shape, int]]) -> tuple[TypicalTask, ...]:
    """Counted shapes as a mix whose weights sum to 1."""
    total = sum(n for _, n in counted) or 1
    return tuple(TypicalTask(c, q, k, types, n / total) for (c, q, k, types), n in counted)


def share_milli(request: GpuRequest, device_memory: int) -> int:
    """Milli-GPU one device share of ``request`` takes on a device of ``device_memory`` MiB."""
    if request.exclusive:
        return MILLI
    memory = request.memory_on(device_memory) / device_memory if device_memory > 0 else 0.0
    return min(MILLI, round(MILLI * max(request.booked_cores / FULL_CORES, memory)))


def task_shape(task: Task, largest_memory: int) -> Shape:
    """The shape of one pod of ``task``; the share is read against the largest device, as a
    pod's worth is, so one request is one shape however many device sizes the cluster has."""
    cpu = task.resources.get(CPU)
    if not task.gpu:
        return (cpu, 0, 0, ())
    gpus = sum(r.nums for r in task.gpu)
    milli = max(share_milli(r, largest_memory) for r in task.gpu)
    types = tuple(sorted(task.gpu_filter.use_types)) if task.gpu_filter else ()
    return (cpu, milli, gpus, types)


def instance_mix(instance: Instance, coverage: float = COVERAGE) -> tuple[TypicalTask, ...]:
    """The typical mix of the instance's own pods, pending and running: what the cluster is
    asked to hold is what it should stay able to take."""
    largest = max((d.memory for n in instance.nodes for d in n.gpus), default=1) or 1
    tasks = {(j.key, t.name): t for j in instance.jobs for t in j.tasks}
    shapes = [task_shape(tasks[p.job, p.task], largest) for p in instance.pods]
    return mix_of(most_common(shapes, coverage))
