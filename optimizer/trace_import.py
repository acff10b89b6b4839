"""The Alibaba GPU-sharing trace (FGD, ATC '23) read into vcopt: `vcopt import alibaba`.

The trace's node and task lists, the per-seed arrival sequence and node tie-break order of
``spec/fgd-benchmark.md`` §4 / §7.1, and a compact vcopt instance of one seed. The benchmark that
replays the trace (policies, array simulator, replay through the engines) lives in
``benchmarks/alibaba/`` and builds on this module; nothing here depends on it.
"""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from models.gpu import HAMI_CORES, HAMI_COUNT, HAMI_MEMORY_PERCENTAGE
from models.queues import DEFAULT_QUEUE
from models.vocabulary import API_VERSION, USE_GPU_TYPE, helm_default_scheduler

MILLI = 1000
"""Capacity of one GPU in milli-GPU."""
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
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    nodes = [
        TraceNode(r["sn"], int(r["cpu_milli"]), int(r["memory_mib"]), int(r["gpu"]), r["model"])
        for r in rows
    ]
    return tuple(sorted(nodes, key=lambda n: n.name))


def read_tasks(path: str | Path) -> tuple[TraceTask, ...]:
    """Tasks sorted by name (§4 step 3). The multigpu* files have no ``gpu_spec`` column."""
    with open(path, newline="", encoding="utf-8-sig") as f:
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
    """The ordered arrival sequence of one seed."""
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
        "nodes": [node_doc(n) for n in nodes],
        "queues": [{"name": DEFAULT_QUEUE}],
        "jobs": [job_doc(t) for t in drawn.tasks],
    }


def node_doc(node: TraceNode) -> dict[str, Any]:
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


def job_doc(task: TraceTask) -> dict[str, Any]:
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
