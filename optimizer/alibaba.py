"""The Alibaba GPU-sharing trace (FGD, ATC '23) as a vcopt benchmark.

Three things live here, because they share one picture of the cluster (free CPU, memory and the
free milli-GPU of every device, in numpy arrays):

- the trace import: nodes and tasks from the CSVs, the per-seed arrival sequence and node
  tie-break order of ``spec/fgd-benchmark.md`` §4 / §7.1, and a compact vcopt instance;
- the online policies of the FGD simulator (§5: Random, DotProd, BestFit, FGD) and a
  Volcano-default policy built from vcopt's own ``nodeorder`` and ``binpack`` formulas, each
  placing every arriving task once, irrevocably, or dropping it;
- the CP-SAT tracks: batches of arrivals solved with earlier placements fixed, and the offline
  bound over everything that arrived.

The simulator is array-based rather than a replay through :mod:`optimizer.greedy`, because the
benchmark needs ~10⁴ tasks × 1,213 nodes × 10 seeds per policy; the score formulas are the
same ones (imported where vcopt has them).
"""

from __future__ import annotations

import csv
import math
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from .greedy.nodes import nodes_to_find
from .greedy.plugins.nodeorder import (
    LEAST_WEIGHTS,
    balanced_score,
    cpu_memory_average,
    least_requested_score,
)

MILLI = 1000
"""Capacity of one GPU in milli-GPU."""
MAX_GPUS = 8
"""Most GPUs on one node of the trace; device arrays are padded to this width with 0 free."""
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8_000
"""The simulator's normalisers of BestFit and DotProd (§5)."""
MAX_SCORE = 100
COVERAGE = 0.95
"""Typical tasks cover this share of the original task list (§4 step 9)."""
GPU_MEMORY_MIB = {
    "T4": 15109,
    "V100M16": 16160,
    "P100": 16280,
    "A10": 22731,
    "V100M32": 32510,
    "G2": 20000,
    "G3": 30000,
}
"""The simulator's per-model table; G2 and G3 are its placeholders (data README)."""
DEFAULT_POD_MEMORY_MIB = 200
"""kube-scheduler's non-zero memory request for a pod that sets none."""
POD_CAPACITY = 110
"""Kubernetes' default ``pods`` allocatable, which the Volcano track checks."""


# --------------------------------------------------------------------------------------------
# Trace files


@dataclass(frozen=True)
class TraceNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True)
class TraceTask:
    """One row of an ``openb_pod_list_*.csv``; ``gpu_milli`` is the share of *each* GPU."""

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    models: tuple[str, ...] = ()
    """Allowed GPU models (``gpu_spec``), sorted and deduplicated; empty means any."""

    @property
    def gpu_request(self) -> int:
        """Total milli-GPU, the unit of arrival and allocation."""
        return self.num_gpu * self.gpu_milli

    @property
    def fractional(self) -> bool:
        return self.num_gpu == 1 and 0 < self.gpu_milli < MILLI

    @property
    def spec(self) -> tuple[int, int, int, tuple[str, ...]]:
        """The typical-task key of §4 step 9: memory is not part of it."""
        return (self.cpu_milli, self.gpu_milli, self.num_gpu, self.models)


def read_nodes(path: str | Path) -> tuple[TraceNode, ...]:
    """GPU nodes sorted by name (the simulator's order before the per-seed prefixes)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    nodes = [
        TraceNode(r["sn"], int(r["cpu_milli"]), int(r["memory_mib"]), int(r["gpu"]), r["model"])
        for r in rows
    ]
    return tuple(sorted(nodes, key=lambda n: n.name))


def read_tasks(path: str | Path) -> tuple[TraceTask, ...]:
    """Tasks sorted by name (§4 step 3). The multigpu* files have no ``gpu_spec`` column."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    tasks = [
        TraceTask(
            r["name"],
            int(r["cpu_milli"]),
            int(r["memory_mib"]),
            int(r["num_gpu"]),
            int(r["gpu_milli"]),
            tuple(sorted({m for m in (r.get("gpu_spec") or "").split("|") if m})),
        )
        for r in rows
    ]
    return tuple(sorted(tasks, key=lambda t: t.name))


def capacity_milli(nodes: Iterable[TraceNode]) -> int:
    return MILLI * sum(n.gpus for n in nodes)


# --------------------------------------------------------------------------------------------
# Arrival sequence


@dataclass(frozen=True)
class Draw:
    """What one seed fixes: the ordered arrivals and every node's tie-break rank."""

    tasks: tuple[TraceTask, ...]
    node_rank: tuple[int, ...]
    """``node_rank[i]`` is the permuted prefix of the i-th node by name; lower wins ties."""


def draw(
    tasks: Sequence[TraceTask], node_count: int, seed: int, arrival: float, capacity: int
) -> Draw:
    """The arrival sequence and node order of one seed (§4 steps 2–5, §7.1).

    One Python generator makes every draw in the simulator's call order (one discarded draw,
    the shuffle, the tuning draws, the node permutation); the values are not Go's, so runs are
    comparable to the authors' in distribution only.

    Tuning to ``arrival × capacity``: a short list gets uniform with-replacement draws from the
    original list appended; the stop test adds only the draw's *per-GPU* milli (the simulator's
    quirk), so an 8-GPU draw can overshoot the target by up to 7,000 milli. A long list loses
    tasks at random positions until it is within the target.
    """
    rng = random.Random(seed)
    rng.random()
    original = sorted(tasks, key=lambda t: t.name)
    sequence = list(original)
    rng.shuffle(sequence)
    target = math.floor(Fraction(str(arrival)) * capacity)
    total = sum(t.gpu_request for t in sequence)
    if total < target:
        copies: dict[str, int] = {}
        while total < target:
            pick = original[rng.randrange(len(original))]
            if total + pick.gpu_milli > target:
                break
            copies[pick.name] = copies.get(pick.name, 0) + 1
            sequence.append(TraceTask(f"{pick.name}-r{copies[pick.name]}", *_fields(pick)))
            total += pick.gpu_request
    while total > target:
        total -= sequence.pop(rng.randrange(len(sequence))).gpu_request
    permutation = list(range(node_count))
    rng.shuffle(permutation)
    return Draw(tuple(sequence), tuple(permutation))


def _fields(task: TraceTask) -> tuple[int, int, int, int, tuple[str, ...]]:
    return (task.cpu_milli, task.memory_mib, task.num_gpu, task.gpu_milli, task.models)


def arrivals(
    pods_csv: str | Path, nodes_csv: str | Path, seed: int, arrival: float = 1.3
) -> list[TraceTask]:
    """The ordered arrival sequence of one seed, for the online tracks and the CLI."""
    nodes = read_nodes(nodes_csv)
    return list(draw(read_tasks(pods_csv), len(nodes), seed, arrival, capacity_milli(nodes)).tasks)


# --------------------------------------------------------------------------------------------
# Typical tasks and fragmentation (§4 step 9, §6)


@dataclass(frozen=True)
class Typical:
    """The typical-task mix as arrays: one column per spec m."""

    cpu: np.ndarray
    milli: np.ndarray
    count: np.ndarray
    allowed: np.ndarray
    """``allowed[m, model]``: whether spec m may use a node of that model index."""
    gpu: np.ndarray
    """Whether spec m asks for GPUs; CPU-only specs count every free milli as fragment."""
    weight: np.ndarray
    """p_m, renormalised to sum to 1."""


def typical_tasks(
    tasks: Sequence[TraceTask], models: Sequence[str], coverage: float = COVERAGE
) -> Typical:
    """The most common specs until they cover ``coverage`` of the tasks, renormalised.

    Specs with equal counts are ordered by the spec itself; on ``default`` the 35th and 36th
    specs have different counts (31, 29), so the choice does not depend on it there.
    """
    counts: dict[tuple[int, int, int, tuple[str, ...]], int] = {}
    for t in tasks:
        counts[t.spec] = counts.get(t.spec, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    kept: list[tuple[tuple[int, int, int, tuple[str, ...]], int]] = []
    covered = 0
    for spec, n in ranked:
        kept.append((spec, n))
        covered += n
        if covered >= coverage * len(tasks):
            break
    total = sum(n for _, n in kept)
    model_index = {m: i for i, m in enumerate(models)}
    allowed = np.ones((len(kept), len(models)), dtype=bool)
    for j, ((_, _, _, names), _) in enumerate(kept):
        if names:
            allowed[j, :] = False
            for name in names:
                if name in model_index:
                    allowed[j, model_index[name]] = True
    return Typical(
        cpu=np.array([s[0] for s, _ in kept], dtype=np.int64),
        milli=np.array([s[1] for s, _ in kept], dtype=np.int64),
        count=np.array([s[2] for s, _ in kept], dtype=np.int64),
        allowed=allowed,
        gpu=np.array([s[2] > 0 for s, _ in kept], dtype=bool),
        weight=np.array([n / total for _, n in kept], dtype=np.float64),
    )


def frag_amount(cpu: np.ndarray, gpus: np.ndarray, model: np.ndarray, typ: Typical) -> np.ndarray:
    """F_n = Σ_m p_m Frag_n(m) in milli-GPU for a batch of node states (§6).

    ``cpu[S]`` is free CPU, ``gpus[S, 8]`` free milli per device (0 for a missing device, which
    then neither fits nor adds), ``model[S]`` the model index. Frag_n(m) is every free milli when
    m is CPU-only or does not fit the node, else the free milli of devices below m's per-GPU
    request.
    """
    total = gpus.sum(axis=1)
    enough = gpus[:, None, :] >= typ.milli[None, :, None]
    below = np.where(enough, 0, gpus[:, None, :]).sum(axis=2)
    fits = (
        (enough.sum(axis=2) >= typ.count[None, :])
        & (cpu[:, None] >= typ.cpu[None, :])
        & typ.allowed[:, model].T
        & typ.gpu[None, :]
    )
    frag = np.where(fits, below, total[:, None])
    return frag @ typ.weight


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

    def __init__(self, cluster: Cluster, typ: Typical, room: int) -> None:
        self.typ = typ
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
        self.frag[k] = frag_amount(
            self.cpu[k : k + 1], self.gpus[k : k + 1], self.model[k : k + 1], self.typ
        )[0]
        return k

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

    @property
    def size(self) -> int:
        return len(self.ids)

    def total_frag(self) -> float:
        return float(self.frag[self.of_node].sum())


# --------------------------------------------------------------------------------------------
# Online policies (§5)


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
        self.scores: dict[tuple[int, int, int], np.ndarray] = {}
        self.devices: dict[tuple[int, int, int], np.ndarray] = {}

    def __call__(self, state: Online, task: TraceTask, nodes: np.ndarray) -> Choice:
        classes = state.classes
        key = (task.cpu_milli, task.num_gpu, task.gpu_milli)
        scores, devices = self._tables(key, len(classes.cpu))
        of_nodes = classes.of_node[nodes]
        unknown = np.unique(of_nodes[scores[of_nodes] < 0])
        if unknown.size:
            delta, device = self.deltas(classes, unknown, task)
            scores[unknown] = fgd_score(delta)
            devices[unknown] = device
        node = pick(scores[of_nodes], nodes, state.rank)
        if task.fractional:
            return node, (int(devices[classes.of_node[node]]),)
        return node, best_devices(state.cluster.gpus[node], task)

    @staticmethod
    def deltas(
        classes: NodeClasses, ids: np.ndarray, task: TraceTask
    ) -> tuple[np.ndarray, np.ndarray]:
        """Δ = F(after) − F(before) of the best variant per class, and that variant's device."""
        cpu, gpus = after_states(classes.cpu[ids], classes.gpus[ids], task)[:2]
        valid = after_states(classes.cpu[ids], classes.gpus[ids], task)[2]
        variants = valid.shape[1]
        flat = np.flatnonzero(valid.reshape(-1))
        after = np.full(valid.size, np.inf)
        after[flat] = frag_amount(
            cpu[flat], gpus[flat], np.repeat(classes.model[ids], variants)[flat], classes.typ
        )
        delta = after.reshape(valid.shape) - classes.frag[ids][:, None]
        best = np.argmin(delta, axis=1)
        return delta[np.arange(len(ids)), best], best

    def _tables(self, key: tuple[int, int, int], size: int) -> tuple[np.ndarray, np.ndarray]:
        scores = self.scores.get(key)
        if scores is None or len(scores) < size:
            old = scores if scores is not None else np.zeros(0, dtype=np.int64)
            scores = np.full(size, -1, dtype=np.int64)
            scores[: len(old)] = old
            devices = np.zeros(size, dtype=np.int64)
            devices[: len(old)] = self.devices.get(key, np.zeros(0, dtype=np.int64))
            self.scores[key], self.devices[key] = scores, devices
        return scores, self.devices[key]


# --------------------------------------------------------------------------------------------
# Running a sequence


@dataclass(frozen=True)
class RunResult:
    """One policy on one arrival sequence; curves hold one point per arriving task."""

    policy: str
    seed: int
    arrival: float
    capacity: int
    arrived: np.ndarray
    """Cumulative requested milli-GPU after each task, failed ones included (§4 step 7)."""
    allocated: np.ndarray
    frag: np.ndarray
    """Fragmentation amount (milli-GPU) after each task."""
    placed: np.ndarray
    """Node index of each task, −1 when it was dropped."""
    wall_seconds: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def allocation_ratio(self) -> float:
        """Final allocated milli over capacity, in %."""
        return 100.0 * float(self.allocated[-1]) / self.capacity

    def at(self, pct: int) -> float:
        """The discretised allocation ratio at arrival ``pct`` % (§4 step 8): the mean over the
        log points whose arrived share rounds to ``pct``, else to ``pct ± 1``."""
        rounded = np.floor(100.0 * self.arrived / self.capacity + 0.5)
        for target in (pct, pct - 1, pct + 1):
            hit = rounded == target
            if hit.any():
                return float(100.0 * self.allocated[hit].mean() / self.capacity)
        return float("nan")

    def frag_rate_at(self, pct: int) -> float:
        """Fragmentation rate (fragment over idle milli, in %) at arrival ``pct`` %."""
        rounded = np.floor(100.0 * self.arrived / self.capacity + 0.5)
        hit = rounded == pct
        idle = self.capacity - self.allocated[hit]
        return float(100.0 * (self.frag[hit] / idle).mean()) if hit.any() else float("nan")


def new_state(nodes: Sequence[TraceNode], typ: Typical, rank: Sequence[int], seed: int) -> Online:
    cluster = Cluster.of(nodes)
    return Online(
        cluster,
        NodeClasses(cluster, typ, 4 * len(nodes)),
        np.asarray(rank, dtype=np.int64),
        np.random.default_rng(seed),
    )


def run_online(
    policy: Policy,
    name: str,
    nodes: Sequence[TraceNode],
    sequence: Sequence[TraceTask],
    rank: Sequence[int],
    typ: Typical,
    seed: int = 0,
    arrival: float = 0.0,
) -> RunResult:
    """Each task gets one attempt against the current state; a task that fits nowhere is
    dropped (§4 step 6)."""
    start = time.perf_counter()
    state = new_state(nodes, typ, rank, seed)
    cluster, classes = state.cluster, state.classes
    n = len(sequence)
    arrived = np.zeros(n, dtype=np.int64)
    allocated = np.zeros(n, dtype=np.int64)
    frag = np.zeros(n, dtype=np.float64)
    placed = np.full(n, -1, dtype=np.int64)
    total_arrived = 0
    total_allocated = cluster.allocated
    total_frag = classes.total_frag()
    allowed_cache: dict[tuple[str, ...], np.ndarray] = {}
    for i, task in enumerate(sequence):
        total_arrived += task.gpu_request
        allowed = allowed_cache.get(task.models)
        if allowed is None:
            allowed = allowed_cache[task.models] = cluster.allowed_models(task)
        feasible = np.flatnonzero(cluster.feasible(task, allowed))
        node, devices = policy(state, task, feasible) if feasible.size else (-1, ())
        if node >= 0:
            before = classes.frag[classes.of_node[node]]
            cluster.place(node, task, devices)
            classes.update(cluster, node)
            total_frag += classes.frag[classes.of_node[node]] - before
            total_allocated += task.gpu_request
            placed[i] = node
        arrived[i], allocated[i], frag[i] = total_arrived, total_allocated, total_frag
    return RunResult(
        name,
        seed,
        arrival,
        int((cluster.gpu_count * MILLI).sum()),
        arrived,
        allocated,
        frag,
        placed,
        time.perf_counter() - start,
    )


# --------------------------------------------------------------------------------------------
# Volcano with the Helm default scores


UNTAINTED_SCORE = 300
"""``tainttoleration`` (weight 3) on nodes without PreferNoSchedule taints: 100 × 3 everywhere;
kept in the sum so that float ties come out as Volcano's."""
GPU_SPLIT = 20
"""HAMi time-slices per device in the imported instance: 1000 // 50, the smallest share of the
trace, so that slices never bind and sharing stays one-dimensional as in the FGD setup."""


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
        c = state.cluster
        nodes = nodes[self.pods[nodes] < POD_CAPACITY]
        if task.num_gpu:
            nodes = nodes[self.gpu_requested[nodes] + task.num_gpu <= self.gpu_allocatable[nodes]]
        if not nodes.size:
            return -1, ()
        group = self.scan(nodes, len(c.names))
        if len(group) == 1:
            node = int(group[0])
        else:
            scores = [self.score(c, int(i), task) for i in group]
            top = max(scores)
            best = [int(i) for i, s in zip(group, scores, strict=True) if s == top]
            node = best[0] if len(best) == 1 else self.rng.choice(best)
        devices = self.devices(c, node, task)
        self.pods[node] += 1
        self.gpu_requested[node] += task.num_gpu
        for d in devices:
            self.used_mem[node, d] += self.share_memory(node, task)
        return node, devices

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
