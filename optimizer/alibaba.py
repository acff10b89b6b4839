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

from models.gpu import HAMI_CORES, HAMI_COUNT, HAMI_MEMORY_PERCENTAGE
from models.queues import DEFAULT_QUEUE
from models.vocabulary import API_VERSION, USE_GPU_TYPE, helm_default_scheduler

from .greedy.plugins.nodeorder import (
    LEAST_WEIGHTS,
    balanced_score,
    cpu_memory_average,
    least_requested_score,
)
from .greedy.scan import nodes_to_find

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
POD_CAPACITY = 110
"""Kubernetes' default ``pods`` allocatable, which the Volcano track checks."""
GPU_SPLIT = 20
"""HAMi time-slices per device in the imported instance: 1000 // 50, the smallest share of the
trace, so that slices never bind and sharing stays one-dimensional as in the FGD setup."""


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
    else:
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
# vcopt instance


def _scheduler_conf() -> dict[str, Any]:
    conf = helm_default_scheduler()
    conf["tiers"][-1]["plugins"].append(
        {
            "name": "deviceshare",
            "arguments": {"deviceshare.VGPUEnable": True, "deviceshare.SchedulePolicy": "binpack"},
        }
    )
    return conf


SCHEDULER_CONF: dict[str, Any] = _scheduler_conf()
"""Volcano's Helm-chart configuration plus ``deviceshare`` with the binpack device order, the
one Volcano plugin that shares GPUs; its node-score weight stays at the default 0."""
GPU_MODEL_LABEL = "gpu-model"
TRACE_RELEASED = "2023-06-05T00:00:00Z"
"""A fixed ``now`` (the trace's publication day): no TDM zone is involved, but an instance
without ``now`` would read the wall clock."""


def shape_sample(nodes: Sequence[TraceNode], per_shape: int) -> tuple[TraceNode, ...]:
    """The first ``per_shape`` nodes (by name) of each of the node shapes (model, GPUs, CPU,
    memory): a small cluster with the trace's variety."""
    seen: dict[tuple[str, int, int, int], int] = {}
    out = []
    for n in nodes:
        key = (n.model, n.gpus, n.cpu_milli, n.memory_mib)
        if seen.get(key, 0) < per_shape:
            seen[key] = seen.get(key, 0) + 1
            out.append(n)
    return tuple(out)


def import_trace(
    pods_csv: str | Path,
    nodes_csv: str | Path,
    seed: int,
    arrival: float = 1.3,
    *,
    nodes_per_shape: int | None = None,
) -> dict[str, Any]:
    """A compact vcopt instance: the trace's GPU nodes and the arrivals of one seed, each a
    one-pod job in arrival order (jobs keep file order, which is Volcano's creation order).

    ``nodes_per_shape`` keeps only that many nodes of each shape; the arrivals are then tuned
    to the smaller capacity (a long list loses tasks at random), which makes small slices.

    HAMi reading of a task: ``nvidia.com/gpu: num_gpu`` alone for whole GPUs (HAMi then books
    the whole card, 100 cores, exclusive); a share adds ``nvidia.com/gpumem-percentage`` and
    ``nvidia.com/gpucores`` both ``gpu_milli / 10`` (all trace shares are multiples of 10), so
    a 0.25 GPU books 25 % of the device memory and 25 cores on any model, one dimension as in
    the FGD setup. ``gpu_spec`` becomes ``nvidia.com/use-gputype`` with the allowed models,
    which HAMi and Volcano match as case-insensitive substrings of the device type
    ``NVIDIA-<model>``; the seven model names are not substrings of one another.
    """
    nodes = read_nodes(nodes_csv)
    if nodes_per_shape is not None:
        nodes = shape_sample(nodes, nodes_per_shape)
    tasks = read_tasks(pods_csv)
    drawn = draw(tasks, len(nodes), seed, arrival, capacity_milli(nodes))
    trace = Path(pods_csv).stem.removeprefix("openb_pod_list_")
    return {
        "apiVersion": API_VERSION,
        "kind": "Instance",
        "metadata": {"name": f"alibaba-{trace}-s{seed}-a{round(100 * arrival)}"},
        "now": TRACE_RELEASED,
        "scheduler": SCHEDULER_CONF,
        "nodes": [_node_doc(n) for n in nodes],
        "queues": [{"name": DEFAULT_QUEUE}],
        "jobs": [_job_doc(t) for t in drawn.tasks],
    }


def _node_doc(node: TraceNode) -> dict[str, Any]:
    return {
        "name": node.name,
        "labels": {GPU_MODEL_LABEL: node.model},
        "allocatable": {
            "cpu": f"{node.cpu_milli}m",
            "memory": f"{node.memory_mib}Mi",
            "pods": POD_CAPACITY,
        },
        "gpus": {
            "count": node.gpus,
            "type": f"NVIDIA-{node.model}",
            "memory": GPU_MEMORY_MIB[node.model],
            "split": GPU_SPLIT,
        },
    }


def _job_doc(task: TraceTask) -> dict[str, Any]:
    resources: dict[str, Any] = {"cpu": f"{task.cpu_milli}m", "memory": f"{task.memory_mib}Mi"}
    if task.num_gpu:
        resources[HAMI_COUNT] = task.num_gpu
    if task.fractional:
        resources[HAMI_MEMORY_PERCENTAGE] = task.gpu_milli // 10
        resources[HAMI_CORES] = task.gpu_milli // 10
    spec: dict[str, Any] = {"name": "task", "resources": resources}
    if task.models and task.num_gpu:
        spec["annotations"] = {USE_GPU_TYPE: ",".join(task.models)}
    return {"name": task.name, "minAvailable": 1, "tasks": [spec]}


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
        flat = np.flatnonzero(valid.reshape(-1))
        after = np.full(valid.size, np.inf)
        after[flat] = frag_amount(
            cpu[flat], gpus[flat], np.repeat(classes.model[ids], variants)[flat], classes.typ
        )
        delta = after.reshape(valid.shape) - classes.frag[ids][:, None]
        best = np.argmin(delta, axis=1)
        return delta[np.arange(len(ids)), best], best


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


class _Replay:
    """The per-task log of a run (§4 step 7): every arrival is recorded, placed or dropped,
    with the cumulative arrived and allocated milli and the fragmentation amount after it."""

    def __init__(self, state: Any, n: int) -> None:
        self.cluster, self.classes = state.cluster, state.classes
        self.arrived = np.zeros(n, dtype=np.int64)
        self.allocated = np.zeros(n, dtype=np.int64)
        self.frag = np.zeros(n, dtype=np.float64)
        self.placed = np.full(n, -1, dtype=np.int64)
        self.total_arrived = 0
        self.total_allocated = self.cluster.allocated
        self.total_frag = self.classes.total_frag()

    def record(self, i: int, task: TraceTask, choice: tuple[int, Any] | None) -> None:
        self.total_arrived += task.gpu_request
        if choice is not None:
            node, devices = choice
            classes = self.classes
            before = classes.frag[classes.of_node[node]]
            self.cluster.place(node, task, devices)
            classes.update(self.cluster, node)
            self.total_frag += classes.frag[classes.of_node[node]] - before
            self.total_allocated += task.gpu_request
            self.placed[i] = node
        self.arrived[i] = self.total_arrived
        self.allocated[i] = self.total_allocated
        self.frag[i] = self.total_frag

    def result(
        self,
        name: str,
        seed: int,
        arrival: float,
        start: float,
        extra: dict[str, Any] | None = None,
    ) -> RunResult:
        return RunResult(
            name,
            seed,
            arrival,
            int((self.cluster.gpu_count * MILLI).sum()),
            self.arrived,
            self.allocated,
            self.frag,
            self.placed,
            time.perf_counter() - start,
            extra or {},
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
    log = _Replay(state, len(sequence))
    allowed_cache: dict[tuple[str, ...], np.ndarray] = {}
    for i, task in enumerate(sequence):
        allowed = allowed_cache.get(task.models)
        if allowed is None:
            allowed = allowed_cache[task.models] = state.cluster.allowed_models(task)
        feasible = np.flatnonzero(state.cluster.feasible(task, allowed))
        node, devices = policy(state, task, feasible) if feasible.size else (-1, ())
        log.record(i, task, (node, devices) if node >= 0 else None)
    return log.result(name, seed, arrival, start)


# --------------------------------------------------------------------------------------------
# Volcano with the Helm default scores


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


# --------------------------------------------------------------------------------------------
# CP-SAT on batches of arrivals (track A′)


FRAG_SCALE = 1000
"""Device fragment weights w_j enter the CP-SAT objective as integers ⌊1000·w_j⌉."""


CPU_TASK_VALUE = 100
"""Milli-GPU a placed CPU-only task is worth in the batch objective. GPU allocation does not
count them, but an online policy places what fits: worth more than any fragmentation its CPU
can cause (≤ 8,000 milli of F, divided by ``alloc_weight``), less than a GPU task it would
crowd out of a node's CPU."""


@dataclass(frozen=True)
class BatchOptions:
    size: int = 64
    time_limit: float = 2.0
    """Seconds per batch."""
    workers: int = 2
    classes_per_spec: int = 8
    """Best node classes (by FGD's Δ for a single placement) offered to each task shape."""
    copies: int = 2
    """Nodes offered per class, besides those the FGD hint uses."""
    alloc_weight: int = 100
    """Fragment milli-GPU that one allocated milli-GPU outweighs in the objective."""
    seed: int = 0


def device_frag_steps(
    typ: Typical, model: int, cpu: int, full: int
) -> tuple[list[int], list[float]]:
    """φ(r), the fragment a device with r milli free adds to F, as steps: φ(r) = r·w_j on
    [t_j, t_{j+1}); returns (t, w) with t_0 = 0.

    F_n is a sum over devices when every typical task asks for one GPU: a device's free milli
    counts for m unless m fits the node and the device holds m's share. Whether m fits the node
    is read on the state before the batch (its CPU and, for multi-GPU m, its count of free
    devices); CPU the batch consumes is modelled separately (:meth:`_BatchModel._cpu_frag`).
    """
    fits = typ.gpu & typ.allowed[:, model] & (cpu >= typ.cpu)
    fits &= (typ.count == 1) | (full >= typ.count)
    starts = [0, *sorted({int(q) for q in typ.milli[fits]})]
    weights = [1.0 - float(typ.weight[fits & (typ.milli <= t)].sum()) for t in starts]
    return starts, weights


@dataclass
class _Spec:
    """Identical tasks of one batch: solved as integer counts (cpsat-practice B.1)."""

    task: TraceTask
    members: list[int]
    nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


class BatchSolver:
    """Each batch of arrivals is placed by one CP-SAT model, earlier placements fixed.

    Objective: maximise ``alloc_weight`` × allocated milli − fragmentation growth, where the
    fragmentation is FGD's F against the typical-task mix, written per device (see
    :func:`device_frag_table`) so that shares packed together on one device are valued jointly,
    which FGD's one-task-at-a-time Δ cannot see. The model is hinted with FGD run over the
    batch in arrival order; when the solver returns nothing, the hint is used.
    """

    def __init__(self, options: BatchOptions) -> None:
        self.options = options
        self.fgd = Fgd()
        self.stats: list[dict[str, Any]] = []

    def solve(self, state: Online, batch: Sequence[TraceTask]) -> list[Choice | None]:
        hint = self.hint(state, batch)
        specs = self.specs(state, batch, hint)
        if not any(len(s.nodes) for s in specs):
            return hint
        started = time.perf_counter()
        built = _BatchModel(state, specs, hint, self.options)
        choices, info = built.run()
        info["seconds"] = time.perf_counter() - started
        info["tasks"] = len(batch)
        self.stats.append(info)
        return choices if choices is not None else hint

    def hint(self, state: Online, batch: Sequence[TraceTask]) -> list[Choice | None]:
        """FGD over the batch in arrival order, on a scratch copy of the state."""
        cluster = state.cluster.copy()
        classes = state.classes
        saved = classes.of_node.copy()
        scratch = Online(cluster, classes, state.rank, state.rng)
        out: list[Choice | None] = []
        for task in batch:
            feasible = np.flatnonzero(cluster.feasible(task))
            if not feasible.size:
                out.append(None)
                continue
            node, devices = self.fgd(scratch, task, feasible)
            cluster.place(node, task, devices)
            classes.update(cluster, node)
            out.append((node, devices))
        classes.of_node = saved
        return out

    def specs(
        self, state: Online, batch: Sequence[TraceTask], hint: Sequence[Choice | None]
    ) -> list[_Spec]:
        """Group identical tasks and choose the nodes each group may use."""
        groups: dict[tuple[Any, ...], _Spec] = {}
        for i, task in enumerate(batch):
            key = (*_fields(task),)
            if key not in groups:
                groups[key] = _Spec(task, [])
            groups[key].members.append(i)
        cluster, classes = state.cluster, state.classes
        opts = self.options
        for spec in groups.values():
            feasible = np.flatnonzero(cluster.feasible(spec.task))
            used = {c[0] for i in spec.members if (c := hint[i]) is not None}
            if not feasible.size:
                continue
            ids = classes.of_node[feasible]
            _, deltas, _ = self.fgd.evaluate(classes, ids, spec.task)
            order = np.lexsort((state.rank[feasible], deltas[ids]))
            chosen: list[int] = []
            per_class: dict[int, int] = {}
            for j in order:
                cid = int(ids[j])
                if cid not in per_class and len(per_class) == opts.classes_per_spec:
                    continue
                if per_class.get(cid, 0) < opts.copies:
                    per_class[cid] = per_class.get(cid, 0) + 1
                    chosen.append(int(feasible[j]))
                if len(per_class) == opts.classes_per_spec and all(
                    v >= opts.copies for v in per_class.values()
                ):
                    break
            spec.nodes = np.array(sorted(set(chosen) | used), dtype=np.int64)
        return list(groups.values())


class _BatchModel:
    """The CP-SAT model of one batch: integer counts per (task shape, node[, device]).

    Fragmentation is F of §6, exact for typical tasks of one GPU: per device a piecewise-linear
    φ(r) on intervals split at the typical shares (an interval boolean and an interval part
    per piece), plus, on nodes where the batch can push free CPU below a typical task's CPU,
    that task's usable milli added back when it happens (``v ≥ U − BIG·e``, which the
    objective keeps tight). Multi-GPU typical tasks are read on the state before the batch.
    """

    def __init__(
        self,
        state: Online,
        specs: Sequence[_Spec],
        hint: Sequence[Choice | None],
        options: BatchOptions,
    ) -> None:
        from ortools.sat.python import cp_model

        self.cp = cp_model
        self.model = cp_model.CpModel()
        self.state, self.specs, self.options = state, specs, options
        self.objective: list[Any] = []
        self.hint_value = 0
        self.offset = 0
        self.vars: list[tuple[int, int, int, Any]] = []
        """(spec index, node, device or −1, count variable)."""
        self.on_node: dict[int, list[tuple[TraceTask, Any, int, int]]] = {}
        """Per node: (task, count variable, its upper bound, its hint)."""
        self.on_device: dict[tuple[int, int], list[tuple[int, Any, int]]] = {}
        """Per device: (milli per unit, variable, hint)."""
        self.pieces: dict[tuple[int, int], list[tuple[int, Any, int]]] = {}
        """Per device: (interval start, interval part, hint) of its free milli."""
        self.whole_devices: dict[int, list[tuple[int, Any]]] = {}
        self.steps: dict[int, tuple[list[int], list[float]]] = {}
        self._counts(hint)
        self._whole(hint)
        self._node_limits()
        self._device_frag()
        self._cpu_frag()
        self.model.maximize(sum(self.objective) + self.offset)
        self.hint_value += self.offset

    def _counts(self, hint: Sequence[Choice | None]) -> None:
        cluster = self.state.cluster
        hinted: dict[tuple[int, int, int], int] = {}
        for si, spec in enumerate(self.specs):
            for i in spec.members:
                choice = hint[i]
                if choice is not None:
                    node, devices = choice
                    d = devices[0] if spec.task.fractional else -1
                    hinted[(si, node, d)] = hinted.get((si, node, d), 0) + 1
        gain = FRAG_SCALE * self.options.alloc_weight
        for si, spec in enumerate(self.specs):
            t = spec.task
            mine = []
            for n in spec.nodes.tolist():
                cap = len(spec.members)
                if t.cpu_milli:
                    cap = min(cap, int(cluster.cpu[n]) // t.cpu_milli)
                if t.memory_mib:
                    cap = min(cap, int(cluster.mem[n]) // t.memory_mib)
                slots: list[tuple[int, int]] = []
                if t.fractional:
                    for d in range(int(cluster.gpu_count[n])):
                        free = int(cluster.gpus[n, d])
                        if free >= t.gpu_milli:
                            slots.append((d, min(cap, free // t.gpu_milli)))
                elif t.num_gpu:
                    full = int((cluster.gpus[n] == MILLI).sum())
                    slots.append((-1, min(cap, full // t.num_gpu)))
                else:
                    slots.append((-1, cap))
                for d, ub in slots:
                    if ub <= 0:
                        continue
                    h = hinted.get((si, n, d), 0)
                    var = self.model.new_int_var(0, ub, f"c{si}_{n}_{d}")
                    self.model.add_hint(var, h)
                    self.vars.append((si, n, d, var))
                    mine.append(var)
                    value = gain * (t.gpu_request or CPU_TASK_VALUE)
                    self.objective.append(value * var)
                    self.hint_value += value * h
                    self.on_node.setdefault(n, []).append((t, var, ub, h))
                    if t.fractional:
                        self.on_device.setdefault((n, d), []).append((t.gpu_milli, var, h))
            if mine:
                self.model.add(sum(mine) <= len(spec.members))

    def _whole(self, hint: Sequence[Choice | None]) -> None:
        """Whole-GPU tasks take free devices: one boolean per free device of the node."""
        cluster = self.state.cluster
        taken: dict[int, set[int]] = {}
        for spec in self.specs:
            if spec.task.num_gpu and not spec.task.fractional:
                for i in spec.members:
                    choice = hint[i]
                    if choice is not None:
                        taken.setdefault(choice[0], set()).update(choice[1])
        for n, terms in self.on_node.items():
            whole = [(t.num_gpu, v) for t, v, _, _ in terms if t.num_gpu and not t.fractional]
            if not whole:
                continue
            zs = []
            for d in range(int(cluster.gpu_count[n])):
                if cluster.gpus[n, d] == MILLI:
                    z = self.model.new_bool_var(f"z{n}_{d}")
                    h = int(d in taken.get(n, ()))
                    self.model.add_hint(z, h)
                    zs.append((d, z))
                    self.on_device.setdefault((n, d), []).append((MILLI, z, h))
            self.whole_devices[n] = zs
            self.model.add(sum(z for _, z in zs) == sum(k * v for k, v in whole))

    def _node_limits(self) -> None:
        cluster = self.state.cluster
        for n, terms in self.on_node.items():
            if sum(t.cpu_milli * ub for t, _, ub, _ in terms) > cluster.cpu[n]:
                self.model.add(sum(t.cpu_milli * v for t, v, _, _ in terms) <= int(cluster.cpu[n]))
            if sum(t.memory_mib * ub for t, _, ub, _ in terms) > cluster.mem[n]:
                self.model.add(sum(t.memory_mib * v for t, v, _, _ in terms) <= int(cluster.mem[n]))

    def _node_steps(self, n: int) -> tuple[list[int], list[float]]:
        if n not in self.steps:
            cluster = self.state.cluster
            full = int((cluster.gpus[n] == MILLI).sum())
            self.steps[n] = device_frag_steps(
                self.state.classes.typ, int(cluster.model[n]), int(cluster.cpu[n]), full
            )
        return self.steps[n]

    def _device_frag(self) -> None:
        """φ(r) of every device the batch may change, piecewise linear in its free milli."""
        cluster = self.state.cluster
        for (n, d), terms in self.on_device.items():
            free = int(cluster.gpus[n, d])
            starts, weights = self._node_steps(n)
            left_hint = free - sum(q * h for q, _, h in terms)
            pieces, parts, record = [], [], []
            for j, lo in enumerate(starts):
                if lo > free:
                    break
                hi = min(starts[j + 1] - 1, free) if j + 1 < len(starts) else free
                coef = round(FRAG_SCALE * weights[j])
                on = self.model.new_bool_var(f"a{n}_{d}_{j}")
                part = self.model.new_int_var(0, hi, f"p{n}_{d}_{j}")
                self.model.add(part >= lo * on)
                self.model.add(part <= hi * on)
                inside = lo <= left_hint <= hi
                self.model.add_hint(on, int(inside))
                self.model.add_hint(part, left_hint if inside else 0)
                pieces.append(on)
                parts.append(part)
                record.append((lo, part, left_hint if inside else 0))
                self.objective.append(-coef * part)
                self.hint_value -= coef * left_hint if inside else 0
                if lo <= free <= hi:
                    self.offset += coef * free
            self.pieces[(n, d)] = record
            self.model.add_exactly_one(pieces)
            self.model.add(sum(parts) == free - sum(q * v for q, v, _ in terms))

    def _cpu_frag(self) -> None:
        """Typical tasks the batch's CPU use can stop fitting: their usable milli becomes
        fragment (``v ≥ U − BIG·e``, e = "free CPU stays ≥ c")."""
        cluster, typ = self.state.cluster, self.state.classes.typ
        for n, terms in self.on_node.items():
            cpu = int(cluster.cpu[n])
            lowest = cpu - sum(t.cpu_milli * ub for t, _, ub, _ in terms)
            cpu_hint = cpu - sum(t.cpu_milli * h for t, _, _, h in terms)
            model = int(cluster.model[n])
            risky = typ.gpu & typ.allowed[:, model] & (typ.cpu <= cpu) & (typ.cpu > lowest)
            risky &= typ.count == 1
            if not risky.any():
                continue
            used = sum(t.cpu_milli * v for t, v, _, _ in terms)
            big = int(MILLI * cluster.gpu_count[n])
            for c in sorted({int(x) for x in typ.cpu[risky]}):
                keep = self.model.new_bool_var(f"e{n}_{c}")
                self.model.add(used <= cpu - c).only_enforce_if(keep)
                keep_hint = cpu_hint >= c
                self.model.add_hint(keep, int(keep_hint))
                for q in sorted({int(x) for x in typ.milli[risky & (typ.cpu == c)]}):
                    weight = float(typ.weight[risky & (typ.cpu == c) & (typ.milli == q)].sum())
                    usable, usable_hint = self._usable(n, q)
                    lost = self.model.new_int_var(0, big, f"v{n}_{c}_{q}")
                    self.model.add(lost >= usable - big * keep)
                    lost_hint = 0 if keep_hint else usable_hint
                    self.model.add_hint(lost, lost_hint)
                    coef = round(FRAG_SCALE * weight)
                    self.objective.append(-coef * lost)
                    self.hint_value -= coef * lost_hint

    def _usable(self, n: int, q: int) -> tuple[Any, int]:
        """Σ over the node's devices of the free milli on devices with at least q free."""
        cluster = self.state.cluster
        expr: Any = 0
        hint = 0
        for d in range(int(cluster.gpu_count[n])):
            record = self.pieces.get((n, d))
            if record is None:
                free = int(cluster.gpus[n, d])
                if free >= q:
                    expr += free
                    hint += free
                continue
            for lo, part, h in record:
                if lo >= q:
                    expr += part
                    hint += h
        return expr, hint

    def run(self) -> tuple[list[Choice | None] | None, dict[str, Any]]:
        solver = self.cp.CpSolver()
        p = solver.parameters
        p.max_time_in_seconds = self.options.time_limit
        p.num_workers = self.options.workers
        p.random_seed = self.options.seed
        status = solver.solve(self.model)
        info: dict[str, Any] = {
            "status": solver.status_name(status),
            "hint": self.hint_value,
            "variables": len(self.model.proto.variables),
        }
        if status not in (self.cp.OPTIMAL, self.cp.FEASIBLE):
            return None, info
        info["objective"] = solver.objective_value
        info["bound"] = solver.best_objective_bound
        if solver.objective_value <= self.hint_value:
            return None, info
        return self.extract(solver), info

    def extract(self, solver: Any) -> list[Choice | None]:
        count = sum(len(s.members) for s in self.specs)
        out: list[Choice | None] = [None] * count
        queues = [list(s.members) for s in self.specs]
        wholes: dict[int, list[int]] = {
            n: [d for d, z in zs if solver.value(z)] for n, zs in self.whole_devices.items()
        }
        for si, n, d, var in self.vars:
            task = self.specs[si].task
            for _ in range(solver.value(var)):
                i = queues[si].pop(0)
                if task.fractional:
                    out[i] = (n, (d,))
                elif task.num_gpu:
                    taken, wholes[n] = wholes[n][: task.num_gpu], wholes[n][task.num_gpu :]
                    out[i] = (n, tuple(taken))
                else:
                    out[i] = (n, ())
        return out


def run_batched(
    solver: BatchSolver,
    name: str,
    nodes: Sequence[TraceNode],
    sequence: Sequence[TraceTask],
    rank: Sequence[int],
    typ: Typical,
    seed: int = 0,
    arrival: float = 0.0,
) -> RunResult:
    """Arrivals in batches of ``size``; a batch is placed at once, then never revisited. The
    log still has one point per task, in arrival order."""
    start = time.perf_counter()
    state = new_state(nodes, typ, rank, seed)
    log = _Replay(state, len(sequence))
    size = solver.options.size
    for first in range(0, len(sequence), size):
        batch = sequence[first : first + size]
        choices = solver.solve(state, batch)
        for j, (task, choice) in enumerate(zip(batch, choices, strict=True)):
            log.record(first + j, task, choice)
    cluster = state.cluster
    assert (cluster.cpu >= 0).all() and (cluster.mem >= 0).all() and (cluster.gpus >= 0).all()
    return log.result(name, seed, arrival, start, {"batches": solver.stats})


# --------------------------------------------------------------------------------------------
# Offline (track B): everything that arrived, known at once


@dataclass(frozen=True)
class OfflineResult:
    feasible_milli: int
    """Allocated by the offline heuristic (FGD over the arrivals sorted by decreasing size)."""
    bound_milli: int
    """CP-SAT's proven upper bound on the relaxation by node shape: no placement can exceed it."""
    status: str
    wall_seconds: float


def offline(
    nodes: Sequence[TraceNode],
    sequence: Sequence[TraceTask],
    rank: Sequence[int],
    typ: Typical,
    time_limit: float = 60.0,
    workers: int = 2,
) -> OfflineResult:
    """An upper limit for any placement of the arrivals, and a feasible offline placement.

    The bound relaxes per-node and per-device packing to per-shape totals (CPU, memory, GPU
    milli, whole devices; a multi-GPU task needs a node of the shape with that many devices;
    at most one task above 500 milli per device), so it is valid but optimistic.
    """
    from ortools.sat.python import cp_model

    start = time.perf_counter()
    ordered = sorted(sequence, key=lambda t: -t.gpu_request)
    feasible = run_online(Fgd(), "offline", nodes, ordered, rank, typ)
    shapes: dict[tuple[str, int, int, int], int] = {}
    for n in nodes:
        key = (n.model, n.gpus, n.cpu_milli, n.memory_mib)
        shapes[key] = shapes.get(key, 0) + 1
    specs: dict[tuple[int, int, int, int, tuple[str, ...]], int] = {}
    for t in sequence:
        specs[_fields(t)] = specs.get(_fields(t), 0) + 1
    model = cp_model.CpModel()
    placed: dict[tuple[int, int, int, int, tuple[str, ...]], list[Any]] = {s: [] for s in specs}
    gain = []
    for (model_name, gpus, cpu, mem), count in shapes.items():
        terms: list[tuple[tuple[int, int, int, int, tuple[str, ...]], Any]] = []
        for spec, many in specs.items():
            c, m, k, q, models = spec
            if c > cpu or m > mem or k > gpus or (models and k and model_name not in models):
                continue
            per_node = min(cpu // c if c else many, mem // m if m else many)
            if k:
                per_node = min(per_node, (gpus // k) * (MILLI // q))
            var = model.new_int_var(0, min(many, per_node * count), "x")
            terms.append((spec, var))
            placed[spec].append(var)
            gain.append(k * q * var)
        if not terms:
            continue
        model.add(sum(s[0] * v for s, v in terms) <= cpu * count)
        model.add(sum(s[1] * v for s, v in terms) <= mem * count)
        model.add(sum(s[2] * s[3] * v for s, v in terms) <= MILLI * gpus * count)
        model.add(sum(s[2] * v for s, v in terms if s[3] > MILLI // 2) <= gpus * count)
    for spec, vars_ in placed.items():
        if vars_:
            model.add(sum(vars_) <= specs[spec])
    model.maximize(sum(gain))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    status = solver.solve(model)
    return OfflineResult(
        int(feasible.allocated[-1]),
        int(solver.best_objective_bound),
        solver.status_name(status),
        time.perf_counter() - start,
    )


# --------------------------------------------------------------------------------------------
# Entry point for benchmarks


ONLINE_POLICIES = ("random", "dotprod", "bestfit", "fgd", "volcano")
FAILURE_CLASSES = ("cpu-only", "share", "1-gpu", "2-gpu", "4-gpu", "8-gpu")


def failure_class(task: TraceTask) -> str:
    if not task.num_gpu:
        return "cpu-only"
    return "share" if task.fractional else f"{task.num_gpu}-gpu"


def run_policy(
    policy: str,
    nodes: Sequence[TraceNode],
    tasks: Sequence[TraceTask],
    seed: int,
    arrival: float,
    batch: BatchOptions | None = None,
) -> RunResult:
    """One online or batch policy on the arrivals of one seed (typical tasks from ``tasks``,
    the original list)."""
    drawn = draw(tasks, len(nodes), seed, arrival, capacity_milli(nodes))
    cluster = Cluster.of(nodes)
    typ = typical_tasks(tasks, cluster.models)
    if policy == "cpsat-batch":
        solver = BatchSolver(batch or BatchOptions(seed=seed))
        result = run_batched(
            solver, policy, nodes, drawn.tasks, drawn.node_rank, typ, seed, arrival
        )
    else:
        chosen: Policy
        if policy == "fgd":
            chosen = Fgd()
        elif policy == "volcano":
            chosen = VolcanoDefault(cluster, seed)
        else:
            chosen = {"random": random_policy, "dotprod": dotprod, "bestfit": bestfit}[policy]
        result = run_online(chosen, policy, nodes, drawn.tasks, drawn.node_rank, typ, seed, arrival)
    result.extra["failures"] = failures(result, drawn.tasks)
    return result


def failures(result: RunResult, sequence: Sequence[TraceTask]) -> dict[str, dict[str, int]]:
    """Dropped tasks and their GPU demand (milli) by class (§7.4 item 4)."""
    out = {c: {"tasks": 0, "milli": 0} for c in FAILURE_CLASSES}
    for task, node in zip(sequence, result.placed.tolist(), strict=True):
        if node < 0:
            entry = out[failure_class(task)]
            entry["tasks"] += 1
            entry["milli"] += task.gpu_request
    return out
