"""Synthetic instances for benchmarks and tests (DESIGN §8): a named cluster shape, a seeded
workload mix and a contention knob.

Real snapshots are scarce and cannot be shared, so the engines are measured on clusters built
to look like the ones vcopt is for: racks of identical GPU nodes under spines or blocks, a
department/team queue tree on hierarchical capacity, a TDM revocable zone, HAMi GPU sharing, and
a mix of topology-bound gangs, single pods, fractional-GPU pods and revocable batch work, with
about 30 % of the GPUs already busy. ``load`` sets how much work there is: running plus pending
GPU requests as a fraction of all GPUs, so 1.3 means 30 % more demand than the cluster holds and
the engines must choose.

Every choice comes from one ``random.Random(seed)``, drawn in a fixed order, so a seed names the
same instance on every machine. Demand is counted in GPU-equivalents (a whole GPU is 1; a
fractional pod counts its ``gpucores`` share, which the fractions below keep at or above its
memory share even on the 48 GB devices).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from models.gpu import HAMI_CORES, HAMI_COUNT
from models.vocabulary import API_VERSION
from models.yamlio import dump_yaml

from ..atomic import write_atomic
from .cluster import build_cluster, hypernodes, node_groups
from .mix import Mix, pending_jobs, queue_tree, running_jobs
from .params import CENTI, NOW, PRIORITY_CLASSES, RUNNING_SHARE, SCHEDULER
from .shapes import CUSTOM, SHAPES, Shape, shape_of
from .timeline import Timeline, check_span, parse_span, span_text

__all__ = [
    "CUSTOM",
    "RUNNING_SHARE",
    "SHAPES",
    "Shape",
    "Stats",
    "generate",
    "parse_span",
    "shape_of",
    "stats",
    "write_instance",
]


def generate(
    shape: str,
    seed: int,
    load: float = 1.3,
    *,
    nodes: int | None = None,
    pods: int | None = None,
    timeline: timedelta | None = None,
) -> dict[str, Any]:
    """A compact instance document (DESIGN §3) of ``shape`` (S, M, L, XL, or custom with
    ``nodes``) whose running plus pending GPU demand is ``load`` × the GPUs; ``pods`` fixes the
    total pod count as well (then pods are made smaller or larger to keep the load).

    ``timeline`` adds the work arriving over that span after ``now`` at an offered load of
    ``load``, a ``duration`` on every job and a ``startedAt`` on running ones (the
    ``timeline`` module); the snapshot at ``now`` is the same as without it, durations apart."""
    if not load > 0:
        raise ValueError(f"load must be > 0, got {load}")
    if pods is not None and pods < 1:
        raise ValueError(f"pods must be ≥ 1, got {pods}")
    if timeline is not None:
        check_span(timeline)
    layout = shape_of(shape, nodes)
    rng = random.Random(seed)
    cluster = build_cluster(layout, rng)
    capacity = cluster.capacity_centi
    queues, teams = queue_tree(capacity // CENTI, rng)
    mix = Mix(cluster, teams, rng)
    budget = round(load * capacity)
    running = running_jobs(cluster, mix, round(min(RUNNING_SHARE, load / 2) * capacity))
    running_pods = sum(j.replicas for j in running)
    if pods is not None and running_pods >= pods:
        running, running_pods = [], 0
    left = None if pods is None else pods - running_pods
    pending = pending_jobs(mix, budget - sum(j.centi for j in running), left)
    label = f"shape={layout.name} seed={seed} load={load}"
    if nodes is not None:
        label += f" nodes={nodes}"
    if pods is not None:
        label += f" pods={pods}"
    if timeline is None:
        jobs = [j.document() for j in [*running, *pending]]
    else:
        label += f" timeline={span_text(timeline)}"
        now = datetime.fromisoformat(NOW.replace("Z", "+00:00"))
        draw = Timeline(cluster, teams, load, timeline, seed, now, mix.count + 1)
        jobs = draw.documents(running, pending)
    return {
        "apiVersion": API_VERSION,
        "kind": "Instance",
        "metadata": {
            "name": f"gen-{layout.name.lower()}-{seed}",
            "annotations": {"vcopt/generator": label},
        },
        "now": NOW,
        "timezone": "UTC",
        "scheduler": copy.deepcopy(SCHEDULER),
        "priorityClasses": copy.deepcopy(list(PRIORITY_CLASSES)),
        "nodeGroups": node_groups(cluster),
        "hypernodes": hypernodes(cluster),
        "queues": queues,
        "jobs": jobs,
    }


@dataclass(frozen=True)
class Stats:
    """What a generated document holds, read from the document alone (no loading)."""

    nodes: int
    gpus: int
    jobs: int
    pods: int
    running_pods: int
    demand: float
    """Running plus pending GPU-equivalents."""

    @property
    def load(self) -> float:
        return self.demand / self.gpus if self.gpus else 0.0


def stats(doc: Mapping[str, Any]) -> Stats:
    groups = doc.get("nodeGroups", [])
    demand = 0
    pods = running = 0
    for job in doc.get("jobs", []):
        for task in job["tasks"]:
            res = task["resources"]
            per_device = res.get(HAMI_CORES, CENTI)
            demand += task["replicas"] * res.get(HAMI_COUNT, 0) * per_device
            pods += task["replicas"]
        running += len(job.get("running", []))
    return Stats(
        nodes=sum(g["count"] for g in groups),
        gpus=sum(g["count"] * g["gpus"]["count"] for g in groups),
        jobs=len(doc.get("jobs", [])),
        pods=pods,
        running_pods=running,
        demand=demand / CENTI,
    )


def write_instance(doc: Mapping[str, Any], path: str | Path) -> None:
    """Write ``doc`` as YAML, atomically; leaf mappings and lists stay on one line, so a
    1,000-node instance is a few thousand lines."""
    text = dump_yaml(dict(doc), sort_keys=False, default_flow_style=None, width=120)
    write_atomic(path, text)
