"""The online policies of the FGD simulator (§5: Random, DotProd, BestFit, FGD) and Volcano's
Helm-default scores; each places an arriving task once, irrevocably, or drops it."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from optimizer.greedy.plugins.nodeorder import (
    LEAST_WEIGHTS,
    balanced_score,
    cpu_memory_average,
    least_requested_score,
)
from optimizer.greedy.scan import nodes_to_find
from optimizer.trace_import import GPU_MEMORY_MIB, GPU_SPLIT, MILLI, POD_CAPACITY, TraceTask

from .state import MAX_GPUS, Cluster, NodeClasses, best_devices

MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8_000
"""The simulator's normalisers of BestFit and DotProd (§5)."""
MAX_SCORE = 100


@dataclass
class Online:
    """What a policy sees: the cluster, its node classes, the seed's tie-break ranks."""

    cluster: Cluster
    classes: NodeClasses
    rank: np.ndarray
    rng: np.random.Generator


Choice = tuple[int, tuple[int, ...]]
Policy = Callable[[Online, TraceTask, np.ndarray], Choice]
"""Given the feasible nodes (non-empty, in name order), the node and the devices to use."""


def pick(scores: np.ndarray, nodes: np.ndarray, rank: np.ndarray) -> int:
    """The highest score; ties go to the lowest permuted name (the simulator's patched
    kube-scheduler, §4 step 5)."""
    tied = nodes[scores == scores.max()]
    return int(tied[np.argmin(rank[tied])])


def min_max_normalise(raw: np.ndarray) -> np.ndarray:
    """kube-scheduler's helper: ``(s − lo)·100 // (hi − lo)``, with lo lowered by one when all
    scores are equal."""
    hi, lo = int(raw.max()), int(raw.min())
    if hi == lo:
        lo -= 1
    return (raw - lo) * MAX_SCORE // (hi - lo)


def bestfit_raw(free_cpu: np.ndarray, free_gpu: np.ndarray, cpu: int, gpu: int) -> np.ndarray:
    """⌊100·(1 − L)⌋ with leftover L = ½·(cpu left)/128k + ½·(GPU milli left)/8k; Go's int64
    conversion truncates toward zero."""
    leftover = 0.5 * (free_cpu - cpu) / MAX_SPEC_CPU + 0.5 * (free_gpu - gpu) / MAX_SPEC_GPU
    return np.trunc((1.0 - leftover) * MAX_SCORE).astype(np.int64)


def bestfit(state: Online, task: TraceTask, nodes: np.ndarray) -> Choice:
    c = state.cluster
    raw = bestfit_raw(c.cpu[nodes], c.gpus[nodes].sum(axis=1), task.cpu_milli, task.gpu_request)
    node = pick(min_max_normalise(raw), nodes, state.rank)
    return node, best_devices(c.gpus[node], task)


def dotprod(state: Online, task: TraceTask, nodes: np.ndarray) -> Choice:
    """Tetris alignment, smallest dot product of free and requested (normalised) wins."""
    c = state.cluster
    dot = (c.cpu[nodes] / MAX_SPEC_CPU) * (task.cpu_milli / MAX_SPEC_CPU) + (
        c.gpus[nodes].sum(axis=1) / MAX_SPEC_GPU
    ) * (task.gpu_request / MAX_SPEC_GPU)
    scores = np.trunc(MAX_SCORE * (1.0 - dot / 2)).astype(np.int64)
    node = pick(scores, nodes, state.rank)
    return node, best_devices(c.gpus[node], task)


def random_policy(state: Online, task: TraceTask, nodes: np.ndarray) -> Choice:
    node = int(state.rng.choice(nodes))
    free = state.cluster.gpus[node]
    if not task.num_gpu:
        return node, ()
    fitting = np.flatnonzero(free >= task.gpu_milli)
    chosen = state.rng.choice(fitting, size=task.num_gpu, replace=False)
    return node, tuple(int(d) for d in sorted(chosen))


def fgd_score(delta: np.ndarray) -> np.ndarray:
    """⌊100·sigmoid(−Δ/1000)⌋: Δ = 0 scores 50, growth of fragmentation scores less."""
    return np.trunc(MAX_SCORE / (1.0 + np.exp(delta / MILLI))).astype(np.int64)


def after_states(
    cpu: np.ndarray, gpus: np.ndarray, task: TraceTask
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every state a task can leave a node in: (cpu[S·V], gpus[S·V, 8], valid[S, V]).

    A share has one variant per device (V = 8, valid where it fits); whole GPUs take the
    lowest-index free devices and CPU-only tasks only take CPU (V = 1).
    """
    s = len(cpu)
    if task.fractional:
        after = np.repeat(gpus[:, None, :], MAX_GPUS, axis=1)
        idx = np.arange(MAX_GPUS)
        after[:, idx, idx] -= task.gpu_milli
        valid = gpus >= task.gpu_milli
        return (
            np.repeat(cpu - task.cpu_milli, MAX_GPUS),
            after.reshape(s * MAX_GPUS, MAX_GPUS),
            valid,
        )
    after = gpus
    if task.num_gpu:
        full = gpus == MILLI
        take = full & (np.cumsum(full, axis=1) <= task.num_gpu)
        after = np.where(take, 0, gpus)
    return cpu - task.cpu_milli, after, np.ones((s, 1), dtype=bool)


class Fgd:
    """FGD (§5): minimise the growth of fragmentation against the typical-task mix.

    Scores are memoised per (node class, task shape): a task's model constraint only filters
    nodes, so it is not part of the key. A share tries every fitting device and keeps the
    smallest Δ, the lowest index on ties.
    """

    def __init__(self) -> None:
        self.tables: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def __call__(self, state: Online, task: TraceTask, nodes: np.ndarray) -> Choice:
        classes = state.classes
        of_nodes = classes.of_node[nodes]
        scores, _, devices = self.evaluate(classes, of_nodes, task)
        node = pick(scores[of_nodes], nodes, state.rank)
        if task.fractional:
            return node, (int(devices[classes.of_node[node]]),)
        return node, best_devices(state.cluster.gpus[node], task)

    def evaluate(
        self, classes: NodeClasses, ids: np.ndarray, task: TraceTask
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The memo tables (score, Δ, device per class id) of the task's shape, filled in for
        ``ids``."""
        key = (task.cpu_milli, task.num_gpu, task.gpu_milli)
        size = len(classes.cpu)
        tables = self.tables.get(key)
        if tables is None or len(tables[0]) < size:
            grown = (
                np.full(size, -1, dtype=np.int64),
                np.zeros(size, dtype=np.float64),
                np.zeros(size, dtype=np.int64),
            )
            if tables is not None:
                for old, new in zip(tables, grown, strict=True):
                    new[: len(old)] = old
            tables = self.tables[key] = grown
        scores, deltas, devices = tables
        unknown = np.unique(ids[scores[ids] < 0])
        if unknown.size:
            delta, device = self.deltas(classes, unknown, task)
            scores[unknown] = fgd_score(delta)
            deltas[unknown] = delta
            devices[unknown] = device
        return tables

    @staticmethod
    def deltas(
        classes: NodeClasses, ids: np.ndarray, task: TraceTask
    ) -> tuple[np.ndarray, np.ndarray]:
        """Δ = F(after) − F(before) of the best variant per class, and that variant's device."""
        cpu, gpus, valid = after_states(classes.cpu[ids], classes.gpus[ids], task)
        variants = valid.shape[1]
        models = np.repeat(classes.model[ids], variants)
        after = np.full(valid.size, np.inf)
        for i in np.flatnonzero(valid.reshape(-1)).tolist():
            after[i] = classes.frag_of(int(models[i]), int(cpu[i]), gpus[i])
        delta = after.reshape(valid.shape) - classes.frag[ids][:, None]
        best = np.argmin(delta, axis=1)
        return delta[np.arange(len(ids)), best], best


UNTAINTED_SCORE = 300
"""``tainttoleration`` (weight 3) on nodes without PreferNoSchedule taints: 100 × 3 everywhere;
kept in the sum so that float ties come out as Volcano's."""


class VolcanoDefault:
    """One pod per scheduling cycle, in arrival order, scored as the Helm default configuration
    scores it: ``nodeorder`` (LeastAllocated + BalancedAllocation, vcopt's own formulas) plus
    ``binpack`` (cpu and memory, weight 1), ties broken uniformly at random.

    Also as Volcano: the feasible-node scan starts at a rotating offset and stops after
    ``nodes_to_find(1213)`` = 497 feasible nodes (spec §2.3); the resource fit includes pod
    count and ``nvidia.com/gpu`` (devices × time-slices); devices are chosen by
    ``deviceshare.SchedulePolicy: binpack`` (most used memory first, then lowest index), which
    books ⌊device memory × percentage / 100⌋ MiB per share.
    """

    def __init__(self, cluster: Cluster, seed: int) -> None:
        n = len(cluster.names)
        self.rng = random.Random(seed)
        self.offset = 0
        self.want = nodes_to_find(n)
        self.pods = np.zeros(n, dtype=np.int64)
        self.gpu_requested = np.zeros(n, dtype=np.int64)
        self.gpu_allocatable = cluster.gpu_count * GPU_SPLIT
        memory = np.array([GPU_MEMORY_MIB[cluster.models[m]] for m in cluster.model])
        self.device_memory = memory
        self.used_mem = np.zeros((n, MAX_GPUS), dtype=np.int64)

    def scan(self, feasible: np.ndarray, n: int) -> np.ndarray:
        """The first ``want`` feasible nodes from the rotating offset; advances the offset."""
        order = (self.offset + np.arange(n)) % n
        hits = np.flatnonzero(np.isin(order, feasible, assume_unique=True))
        taken = hits[: self.want]
        processed = int(taken[-1]) + 1 if len(taken) == self.want else n
        self.offset = (self.offset + processed) % n
        return order[taken]

    def __call__(self, state: Online, task: TraceTask, nodes: np.ndarray) -> Choice:
        best = self.best(state.cluster, task, nodes)
        if not best:
            return -1, ()
        node = best[0] if len(best) == 1 else self.rng.choice(best)
        return node, self.commit(state.cluster, node, task)

    def best(self, c: Cluster, task: TraceTask, nodes: np.ndarray) -> list[int]:
        """The nodes of this cycle's scan with the top score (empty: the pod stays pending);
        advances the scan offset."""
        nodes = nodes[self.pods[nodes] < POD_CAPACITY]
        if task.num_gpu:
            nodes = nodes[self.gpu_requested[nodes] + task.num_gpu <= self.gpu_allocatable[nodes]]
        if not nodes.size:
            return []
        group = self.scan(nodes, len(c.names))
        if len(group) == 1:
            return [int(group[0])]
        scores = [self.score(c, int(i), task) for i in group]
        top = max(scores)
        return [int(i) for i, s in zip(group, scores, strict=True) if s == top]

    def commit(self, c: Cluster, node: int, task: TraceTask) -> tuple[int, ...]:
        """Book the pod on ``node``; returns the devices ``binpack`` gives it there."""
        devices = self.devices(c, node, task)
        self.pods[node] += 1
        self.gpu_requested[node] += task.num_gpu
        for d in devices:
            self.used_mem[node, d] += self.share_memory(node, task)
        return devices

    def share_memory(self, node: int, task: TraceTask) -> int:
        return int(self.device_memory[node]) * (task.gpu_milli // 10) // 100

    def score(self, c: Cluster, i: int, task: TraceTask) -> float:
        cpu_total, mem_total = int(c.cpu_total[i]), int(c.mem_total[i])
        cpu_used = cpu_total - int(c.cpu[i]) + task.cpu_milli
        mem_used = mem_total - int(c.mem[i]) + task.memory_mib
        least = cpu_memory_average(
            least_requested_score, LEAST_WEIGHTS, (cpu_used, cpu_total), (mem_used, mem_total)
        )
        fractions = [min(cpu_used / cpu_total, 1.0), min(mem_used / mem_total, 1.0)]
        if task.num_gpu:
            gpu = (int(self.gpu_requested[i]) + task.num_gpu) / int(self.gpu_allocatable[i])
            fractions.append(min(gpu, 1.0))
        binpack = 0.0
        terms = 0
        for request, used, total in (
            (task.cpu_milli, cpu_used, cpu_total),
            (task.memory_mib, mem_used, mem_total),
        ):
            if request > 0:
                binpack += float(used) / float(total)
                terms += 1
        binpack = binpack / float(terms) * float(MAX_SCORE) if terms else 0.0
        return binpack + float(least + balanced_score(fractions) + UNTAINTED_SCORE)

    def devices(self, c: Cluster, node: int, task: TraceTask) -> tuple[int, ...]:
        """``binpack`` device order; whole GPUs need an unused device (cores 100)."""
        if not task.num_gpu:
            return ()
        count = int(c.gpu_count[node])
        order = sorted(range(count), key=lambda d: (-self.used_mem[node, d], d))
        if task.fractional:
            return (next(d for d in order if c.gpus[node, d] >= task.gpu_milli),)
        return tuple(d for d in order if c.gpus[node, d] == MILLI)[: task.num_gpu]
