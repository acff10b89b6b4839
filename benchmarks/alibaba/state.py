"""The array picture of the cluster the simulator's policies read: free CPU, memory and the free
milli-GPU of every device, and node classes of identical states with their FGD fragmentation F
(§6, ``models.fragmentation``).

The simulator is array-based rather than a replay through :mod:`optimizer.greedy`, because the
benchmark needs ~10⁴ tasks × 1,213 nodes × 10 seeds per policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from models.fragmentation import TypicalTask, fragmentation
from optimizer.trace_import import MILLI, TraceNode, TraceTask

MAX_GPUS = 8
"""Most GPUs on one node of the trace; device arrays are padded to this width with 0 free."""


# --------------------------------------------------------------------------------------------
# Cluster state


@dataclass
class Cluster:
    """Free resources of every node; nodes are in name order, devices padded to 8."""

    names: tuple[str, ...]
    models: tuple[str, ...]
    model: np.ndarray
    cpu_total: np.ndarray
    mem_total: np.ndarray
    gpu_count: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray
    gpus: np.ndarray

    @classmethod
    def of(cls, nodes: Sequence[TraceNode]) -> Cluster:
        models = tuple(sorted({n.model for n in nodes}))
        index = {m: i for i, m in enumerate(models)}
        gpus = np.zeros((len(nodes), MAX_GPUS), dtype=np.int64)
        for i, n in enumerate(nodes):
            gpus[i, : n.gpus] = MILLI
        cpu = np.array([n.cpu_milli for n in nodes], dtype=np.int64)
        mem = np.array([n.memory_mib for n in nodes], dtype=np.int64)
        return cls(
            names=tuple(n.name for n in nodes),
            models=models,
            model=np.array([index[n.model] for n in nodes], dtype=np.int64),
            cpu_total=cpu,
            mem_total=mem,
            gpu_count=np.array([n.gpus for n in nodes], dtype=np.int64),
            cpu=cpu.copy(),
            mem=mem.copy(),
            gpus=gpus,
        )

    def copy(self) -> Cluster:
        return Cluster(
            self.names,
            self.models,
            self.model,
            self.cpu_total,
            self.mem_total,
            self.gpu_count,
            self.cpu.copy(),
            self.mem.copy(),
            self.gpus.copy(),
        )

    def allowed_models(self, task: TraceTask) -> np.ndarray:
        """Per model index, whether the task's ``gpu_spec`` admits it (cached per spec)."""
        return np.array([not task.models or m in task.models for m in self.models], dtype=bool)

    def feasible(self, task: TraceTask, allowed: np.ndarray | None = None) -> np.ndarray:
        """The simulator's filter: CPU and memory fit, GPU model, and GPU capacity (§4 step 6)."""
        ok = (self.cpu >= task.cpu_milli) & (self.mem >= task.memory_mib)
        if task.num_gpu:
            ok &= (self.gpus >= task.gpu_milli).sum(axis=1) >= task.num_gpu
            if task.models:
                ok &= (allowed if allowed is not None else self.allowed_models(task))[self.model]
        return ok

    def place(self, node: int, task: TraceTask, devices: Sequence[int]) -> None:
        self.cpu[node] -= task.cpu_milli
        self.mem[node] -= task.memory_mib
        for d in devices:
            self.gpus[node, d] -= task.gpu_milli

    @property
    def allocated(self) -> int:
        return int((self.gpu_count * MILLI).sum() - self.gpus.sum())


def best_devices(free: np.ndarray, task: TraceTask) -> tuple[int, ...]:
    """§5 "best": a share goes on the fitting device with the least free milli (lowest index
    on ties); whole GPUs are the lowest-index completely free devices."""
    if not task.num_gpu:
        return ()
    if task.fractional:
        fitting = [d for d in range(len(free)) if free[d] >= task.gpu_milli]
        return (min(fitting, key=lambda d: (free[d], d)),)
    whole = [d for d in range(len(free)) if free[d] == MILLI]
    return tuple(whole[: task.num_gpu])


# --------------------------------------------------------------------------------------------
# Node classes: identical node states share their scores


class NodeClasses:
    """Interns node states (model, free CPU, free milli per device) and keeps F of each.

    FGD's score of a task on a node depends only on that state, so it is computed once per
    (state, task spec) — the memoisation of §5 — and many nodes share a state (all idle nodes
    of one shape, for a start). Memory is not part of the state: no score reads it.
    """

    def __init__(self, cluster: Cluster, mix: Sequence[TypicalTask], room: int) -> None:
        self.mix = tuple(mix)
        self.models = cluster.models
        self._frag: dict[tuple[int, int, tuple[int, ...]], float] = {}
        self.ids: dict[tuple[int, int, bytes], int] = {}
        self.cpu = np.zeros(room, dtype=np.int64)
        self.gpus = np.zeros((room, MAX_GPUS), dtype=np.int64)
        self.model = np.zeros(room, dtype=np.int64)
        self.frag = np.zeros(room, dtype=np.float64)
        self.of_node = np.array(
            [
                self.intern(int(cluster.model[i]), int(cluster.cpu[i]), cluster.gpus[i])
                for i in range(len(cluster.names))
            ],
            dtype=np.int64,
        )

    def intern(self, model: int, cpu: int, gpus: np.ndarray) -> int:
        key = (model, cpu, gpus.tobytes())
        found = self.ids.get(key)
        if found is not None:
            return found
        k = len(self.ids)
        if k == len(self.cpu):
            self._grow()
        self.ids[key] = k
        self.cpu[k], self.model[k], self.gpus[k] = cpu, model, gpus
        self.frag[k] = self.frag_of(model, cpu, gpus)
        return k

    def frag_of(self, model: int, cpu: int, gpus: np.ndarray) -> float:
        """F (milli-GPU) of a node state, memoised on (model, free CPU, sorted free milli) as
        §5 says. A padded device (0 free) is neither room nor fragment for any GPU spec,
        since every spec asks a share above 0."""
        free = tuple(sorted(gpus.tolist()))
        key = (model, cpu, free)
        found = self._frag.get(key)
        if found is None:
            types = (self.models[model],) * len(free)
            found = self._frag[key] = fragmentation(cpu, free, types, self.mix)
        return found

    def _grow(self) -> None:
        room = 2 * len(self.cpu)
        self.cpu = np.resize(self.cpu, room)
        self.model = np.resize(self.model, room)
        self.frag = np.resize(self.frag, room)
        self.gpus = np.resize(self.gpus, (room, MAX_GPUS))

    def update(self, cluster: Cluster, node: int) -> None:
        self.of_node[node] = self.intern(
            int(cluster.model[node]), int(cluster.cpu[node]), cluster.gpus[node]
        )

    def total_frag(self) -> float:
        return float(self.frag[self.of_node].sum())
