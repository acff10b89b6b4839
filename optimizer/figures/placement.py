"""The placement map: which job holds each GPU after a plan, rack by rack.

A plan is judged first by *where* the work went, which no metric shows: two plans can admit
the same jobs and still differ in which nodes they break up. So the map draws every GPU. On a
small cluster each node is a row (grouped by its rack, the lowest-tier HyperNode holding it)
and each GPU a cell, filled from the bottom by the share each job holds. On a large one a
row per node would be a few pixels high, so each rack becomes a band of node blocks, one
square per GPU, and a partly used GPU is drawn paler in proportion to its free share.

Colours are per job while a reader can still tell them apart; beyond that they are per
queue, in shades that keep neighbouring jobs distinct. Pods that were already running
before the plan are hatched (grey in the large map) so that what the plan *decided* stands
out, and the GPUs of pods the plan evicts are marked in red.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from models.instance import Instance
from models.resources import NVIDIA_GPU
from models.tdm import node_zone
from models.topology import Topology
from models.workload import DeviceShare

from ..plan import PENDING, Plan

FREE = (0.93, 0.93, 0.93)
UNHEALTHY = (0.2, 0.2, 0.2)
RUNNING = (0.55, 0.55, 0.55)
EVICTED = (0.85, 0.1, 0.1)
MAX_JOB_COLOURS = 12
"""Beyond this many jobs on the map, colours stand for queues (see :data:`_JOB_COLOURS`)."""
MAX_DETAILED_NODES = 40
"""Up to this many GPU nodes, each node is a row of cells; above, racks become bands."""
MAX_BAND_NODES = 36
"""Nodes per band in the large map; a longer rack wraps onto the next band."""
MAX_PENDING_NAMED = 6


@dataclass(frozen=True)
class Holder:
    """One job's hold on one GPU."""

    job: str
    share: float
    """GPU-equivalents of the device: max(cores / 100, memory / device memory) per pod."""
    running: bool
    """Held by a pod that was running before the plan."""
    memory: float = 0.0
    """The share of the device's memory the pod holds."""
    cores: float = 0.0
    """The share of the device's cores the pod holds."""


OTHER_SCHEDULERS = "(other schedulers)"
"""The one legend entry for devices that pods of other schedulers hold."""


@dataclass(frozen=True)
class GpuCell:
    index: int
    healthy: bool
    holders: tuple[Holder, ...]
    evicted: bool
    """A pod the plan evicts held this device."""

    @property
    def used(self) -> float:
        return sum(h.share for h in self.holders)

    def label(self) -> str:
        """What the cell says of its use: one percentage, or memory and cores apart when
        they differ by two points or more (each is at most 100 %, while pods that take more
        of one than of the other add up past it in GPU-equivalents)."""
        memory = min(1.0, sum(h.memory for h in self.holders))
        cores = min(1.0, sum(h.cores for h in self.holders))
        if abs(memory - cores) < 0.02:  # a rounding apart, not a different use
            return f"{max(memory, cores):.0%}"
        return f"mem {memory:.0%}\ncores {cores:.0%}"

    @property
    def main(self) -> Holder | None:
        return max(self.holders, key=lambda h: h.share) if self.holders else None


@dataclass(frozen=True)
class NodeRow:
    name: str
    rack: str
    """The node's lowest-tier HyperNode; empty when it has none."""
    zone: str
    gpus: tuple[GpuCell, ...]


@dataclass(frozen=True)
class PlacementMap:
    """What one plan does with the GPUs, ready to draw."""

    nodes: tuple[NodeRow, ...]
    pending: tuple[str, ...]
    """Keys of the jobs still pending after the plan, in instance order."""
    undrawn: int
    """Bound pods that hold GPUs without naming devices (a hand-written plan may leave them
    open); they cannot be put on a cell."""
    cpu_only_nodes: int

    def jobs(self) -> list[str]:
        """Jobs holding at least one GPU, in first-seen order."""
        seen: dict[str, None] = {}
        for n in self.nodes:
            for g in n.gpus:
                for h in g.holders:
                    seen.setdefault(h.job, None)
        return list(seen)


def _natural(text: str) -> list[object]:
    """Sort key that puts rack-2 before rack-10."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def _equivalents(memory: int, cores: int, device_memory: int) -> float:
    return max(cores / 100, memory / device_memory) if device_memory > 0 else cores / 100


def _holder(job: str, share: DeviceShare, device_memory: int, running: bool) -> Holder:
    memory = share.memory / device_memory if device_memory > 0 else 0.0
    return Holder(
        job,
        _equivalents(share.memory, share.cores, device_memory),
        running,
        memory,
        share.cores / 100,
    )


def placement_map(instance: Instance, plan: Plan) -> PlacementMap:
    """Every GPU node's devices and who holds them once ``plan`` is applied."""
    topology = instance.topology
    held: dict[tuple[str, str], list[Holder]] = {}
    undrawn = 0
    for bound in plan.bound_pods(instance).values():
        pod = instance.pod_by_key[bound.pod]
        if not bound.gpus:
            task = instance.job_by_key[pod.job].task(pod.task)
            undrawn += task.resources.get(NVIDIA_GPU) > 0
            continue
        node = instance.node_by_name[bound.node]
        for share in bound.gpus:
            device = node.device(share.id)
            memory = device.memory if device else 0
            held.setdefault((node.name, share.id), []).append(
                _holder(pod.job, share, memory, bound.running)
            )
    for _, pod in instance.foreign_pods:
        node = instance.node_by_name[pod.node or ""]
        for share in (d for c in pod.gpus for d in c):
            device = node.device(share.id)
            memory = device.memory if device else 0
            held.setdefault((node.name, share.id), []).append(
                _holder(OTHER_SCHEDULERS, share, memory, True)
            )
    evicted = set()
    for eviction in plan.evictions:
        pod = instance.pod_by_key[eviction.pod]
        evicted.update((eviction.node, d.id) for container in pod.gpus for d in container)
    rows = []
    for node in instance.nodes:
        if not node.gpus:
            continue
        leaf = topology.leaf_of(node.name)
        cells = tuple(
            GpuCell(
                d.index,
                d.health,
                tuple(held.get((node.name, d.id), ())),
                (node.name, d.id) in evicted,
            )
            for d in sorted(node.gpus, key=lambda d: d.index)
        )
        rack = "" if leaf in (None, Topology.TOP) else leaf
        rows.append(NodeRow(node.name, rack, node_zone(node.labels), cells))
    rows.sort(key=lambda r: (_natural(r.rack), _natural(r.name)))
    pending = tuple(
        j.key for j in instance.jobs if (d := plan.job(j.key)) is not None and d.status == PENDING
    )
    cpu_only = sum(1 for n in instance.nodes if not n.gpus)
    return PlacementMap(tuple(rows), pending, undrawn, cpu_only)


# -- colours ---------------------------------------------------------------------------


class Palette:
    """One colour per job, the same in every map of a figure."""

    def __init__(self, instance: Instance, jobs: Sequence[str]) -> None:
        self.by_queue = len(jobs) > MAX_JOB_COLOURS
        self._colour: dict[str, tuple[float, float, float]] = {}
        self._legend: list[tuple[str, tuple[float, float, float]]] = []
        if not self.by_queue:
            cmap = _qualitative(len(jobs))
            for i, job in enumerate(jobs):
                self._colour[job] = cmap[i]
                self._legend.append((job.split("/", 1)[-1], cmap[i]))
            return
        queues = list(dict.fromkeys(instance.job_by_key[j].queue for j in jobs))
        hues = _qualitative(len(queues))
        seen: dict[str, int] = {}
        for job in jobs:
            queue = instance.job_by_key[job].queue
            base = hues[queues.index(queue)]
            k = seen.get(queue, 0)
            seen[queue] = k + 1
            self._colour[job] = _shade(base, k)
        self._legend = list(zip(queues, hues, strict=True))

    def colour(self, job: str) -> tuple[float, float, float]:
        return self._colour.get(job, RUNNING)

    def legend(self) -> list[tuple[str, tuple[float, float, float]]]:
        return self._legend


_JOB_COLOURS = tuple(
    to_rgb(c)
    for c in (
        *("tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan"),
        *("#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5"),
    )
)
"""Tableau's colours without blue and orange (the engines), red (evictions) and grey (pods
running before the plan); then their light variants."""


def _qualitative(n: int) -> list[tuple[float, float, float]]:
    return [_JOB_COLOURS[i % len(_JOB_COLOURS)] for i in range(n)]


def _shade(rgb: tuple[float, float, float], k: int) -> tuple[float, float, float]:
    """The k-th job of a queue: alternately darker and lighter than the queue's colour."""
    factor = (0.0, 0.35, -0.3, 0.55, -0.5)[k % 5]
    if factor < 0:
        return tuple(c * (1 + factor) for c in rgb)  # type: ignore[return-value]
    return tuple(c + (1 - c) * factor for c in rgb)  # type: ignore[return-value]


def _tint(rgb: tuple[float, float, float], used: float) -> tuple[float, float, float]:
    """Paler in proportion to the free share, never so pale it reads as free."""
    strength = 0.35 + 0.65 * min(max(used, 0.0), 1.0)
    return tuple(1 - strength * (1 - c) for c in rgb)  # type: ignore[return-value]


def legend_handles(palette: Palette, maps: Sequence[PlacementMap], detailed: bool) -> list[Artist]:
    """Jobs (or queues), then only the marks the maps actually use."""
    cells = [g for m in maps for n in m.nodes for g in n.gpus]
    handles: list[Artist] = [Patch(facecolor=c, label=label) for label, c in palette.legend()]
    if any(h.running for g in cells for h in g.holders):
        if detailed:
            handles.append(
                Patch(
                    facecolor="white", edgecolor="0.3", hatch="///", label="running before the plan"
                )
            )
        else:
            handles.append(Patch(facecolor=RUNNING, label="running before the plan"))
    if not detailed and any(g.holders and g.used < 0.999 for g in cells):
        handles.append(Patch(facecolor=_tint(_JOB_COLOURS[0], 0.25), label="paler: partly used"))
    handles.append(Patch(facecolor=FREE, edgecolor="0.7", label="free"))
    if any(not g.healthy for g in cells):
        handles.append(Patch(facecolor=UNHEALTHY, label="unhealthy"))
    if not any(g.evicted for g in cells):
        return handles
    if detailed:
        handles.append(
            Patch(facecolor="white", edgecolor=EVICTED, linewidth=2, label="held by an evicted pod")
        )
    else:
        handles.append(
            Line2D([], [], marker="x", color=EVICTED, linestyle="", label="held by an evicted pod")
        )
    return handles


def differing_gpus(maps: Sequence[PlacementMap]) -> int:
    """GPUs whose holders (job and share) are not the same in every map."""

    def key(gpu: GpuCell) -> tuple[tuple[str, float], ...]:
        return tuple(sorted((h.job, round(h.share, 6)) for h in gpu.holders))

    first, *others = maps
    count = 0
    for i, node in enumerate(first.nodes):
        for j, gpu in enumerate(node.gpus):
            if any(key(o.nodes[i].gpus[j]) != key(gpu) for o in others):
                count += 1
    return count


def is_detailed(maps: Sequence[PlacementMap]) -> bool:
    nodes = max(len(m.nodes) for m in maps)
    gpus = max((len(n.gpus) for m in maps for n in m.nodes), default=0)
    return nodes <= MAX_DETAILED_NODES and gpus <= 16


# -- drawing ---------------------------------------------------------------------------


def draw_detailed(ax: Axes, pmap: PlacementMap, palette: Palette, *, labels: bool) -> None:
    """One row per node, one cell per GPU; the share each job holds fills the cell from the
    bottom, and a shared or partly used GPU prints its use."""
    width = max(len(n.gpus) for n in pmap.nodes)
    height = len(pmap.nodes)
    font = 7 if width <= 8 else 5.5
    for y, node in enumerate(pmap.nodes):
        for x, gpu in enumerate(node.gpus):
            ax.add_patch(Rectangle((x - 0.45, y - 0.45), 0.9, 0.9, facecolor=FREE, linewidth=0))
            if not gpu.healthy:
                ax.add_patch(Rectangle((x - 0.45, y - 0.45), 0.9, 0.9, facecolor=UNHEALTHY))
                ax.text(x, y, "unhealthy", ha="center", va="center", fontsize=5, color="white")
                continue
            bottom = y + 0.45
            for holder in sorted(gpu.holders, key=lambda h: (not h.running, -h.share)):
                h = min(0.9 * holder.share, bottom - (y - 0.45))
                ax.add_patch(
                    Rectangle(
                        (x - 0.45, bottom - h),
                        0.9,
                        h,
                        facecolor=palette.colour(holder.job),
                        hatch="///" if holder.running else None,
                        edgecolor=(1, 1, 1, 0.7),
                        linewidth=0,
                    )
                )
                bottom -= h
            if gpu.holders and (gpu.used < 0.999 or len(gpu.holders) > 1):
                text = gpu.label()
                if len(gpu.holders) > 1:
                    text += f"\n{len(gpu.holders)} pods"
                ax.text(x, y, text, ha="center", va="center", fontsize=font, color="black")
            if gpu.evicted:
                ax.add_patch(
                    Rectangle(
                        (x - 0.45, y - 0.45),
                        0.9,
                        0.9,
                        fill=False,
                        edgecolor=EVICTED,
                        linewidth=2,
                    )
                )
    ax.set_xlim(-0.5, width - 0.5)
    ax.set_ylim(height - 0.5, -0.5)
    ax.set_xticks(range(width))
    ax.set_xlabel("GPU index on the node")
    names = [n.name + (f"  [{n.zone}]" if n.zone else "") for n in pmap.nodes]
    ax.set_yticks(range(height), names if labels else [""] * height, fontsize=7)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    groups = _groups([n.rack for n in pmap.nodes])
    for start, _, _ in groups[1:]:
        ax.axhline(start - 0.5, color="black", linewidth=1.5)
    if any(rack for _, _, rack in groups):
        rack_axis = ax.secondary_yaxis("right")
        rack_axis.set_yticks(
            [(start + end - 1) / 2 for start, end, _ in groups],
            [rack or "no HyperNode" for _, _, rack in groups],
            fontsize=7,
        )
        rack_axis.tick_params(length=0)
        rack_axis.spines["right"].set_visible(False)


def _groups(racks: Sequence[str]) -> list[tuple[int, int, str]]:
    """(first row, end row, rack) for each run of equal racks."""
    out: list[tuple[int, int, str]] = []
    for i, rack in enumerate(racks):
        if out and out[-1][2] == rack:
            out[-1] = (out[-1][0], i + 1, rack)
        else:
            out.append((i, i + 1, rack))
    return out


@dataclass(frozen=True)
class _Band:
    label: str
    nodes: tuple[NodeRow, ...]


def _bands(pmap: PlacementMap) -> list[_Band]:
    out = []
    for start, end, rack in _groups([n.rack for n in pmap.nodes]):
        nodes = pmap.nodes[start:end]
        for k in range(0, len(nodes), MAX_BAND_NODES):
            label = (rack or "no HyperNode") if k == 0 else "…"
            out.append(_Band(label, nodes[k : k + MAX_BAND_NODES]))
    return out


def _block_shape(gpus: int) -> tuple[int, int]:
    """Rows and columns of one node's block: 8 GPUs make 2 × 4."""
    rows = max(1, math.isqrt(gpus))
    return rows, math.ceil(gpus / rows)


def _cell_colour(gpu: GpuCell, palette: Palette) -> tuple[float, float, float]:
    if not gpu.healthy:
        return UNHEALTHY
    main = gpu.main
    if main is None:
        return FREE
    base = RUNNING if main.running else palette.colour(main.job)
    return _tint(base, gpu.used)


def band_count(pmap: PlacementMap) -> int:
    return len(_bands(pmap))


def draw_bands(ax: Axes, pmap: PlacementMap, palette: Palette, *, labels: bool) -> None:
    """One band per rack (wrapped after :data:`MAX_BAND_NODES` nodes), one block per node,
    one square per GPU; the free GPU-equivalents of each band are printed at its end."""
    bands = _bands(pmap)
    most = max(len(n.gpus) for n in pmap.nodes)
    rows, cols = _block_shape(most)
    per_band = max(len(b.nodes) for b in bands)
    image = np.ones(((rows + 1) * len(bands), (cols + 1) * per_band, 3))
    for b, band in enumerate(bands):
        for k, node in enumerate(band.nodes):
            for i, gpu in enumerate(node.gpus):
                r, c = divmod(i, cols)
                image[b * (rows + 1) + r, k * (cols + 1) + c] = _cell_colour(gpu, palette)
    ax.imshow(image, aspect="auto", interpolation="nearest")
    marks = [
        (k * (cols + 1) + i % cols, b * (rows + 1) + i // cols)
        for b, band in enumerate(bands)
        for k, node in enumerate(band.nodes)
        for i, gpu in enumerate(node.gpus)
        if gpu.evicted
    ]
    if marks:
        xs, ys = zip(*marks, strict=True)
        ax.scatter(xs, ys, marker="x", s=14, color=EVICTED, linewidths=1.2)
    centres = [b * (rows + 1) + (rows - 1) / 2 for b in range(len(bands))]
    ax.set_yticks(centres, [b.label for b in bands] if labels else [""] * len(bands), fontsize=6)
    step = 1 if per_band <= 20 else 5
    ax.set_xticks(
        [k * (cols + 1) + (cols - 1) / 2 for k in range(0, per_band, step)],
        [str(k) for k in range(0, per_band, step)],
        fontsize=6,
    )
    ax.set_xlabel(f"node within the rack (a block of {rows} × {cols} squares = one node's GPUs)")
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    free = ax.secondary_yaxis("right")
    free.set_yticks(
        centres,
        [
            f"{sum(1 - min(g.used, 1) for n in b.nodes for g in n.gpus if g.healthy):.0f} free"
            for b in bands
        ],
        fontsize=5.5,
    )
    free.tick_params(length=0)
    free.spines["right"].set_visible(False)


def pending_text(instance: Instance, pmap: PlacementMap) -> str:
    """The pending jobs by name when few, otherwise counted with the GPUs they ask for."""
    if not pmap.pending:
        return "pending: none"

    def gpus(key: str) -> float:
        job = instance.job_by_key[key]
        return sum(t.replicas * t.resources.get(NVIDIA_GPU) / 1000 for t in job.tasks)

    if len(pmap.pending) <= MAX_PENDING_NAMED:
        parts = []
        for key in pmap.pending:
            job = instance.job_by_key[key]
            shape = " + ".join(
                f"{t.replicas} × {t.resources.get(NVIDIA_GPU) / 1000:g} GPU" for t in job.tasks
            )
            parts.append(f"{job.name} ({shape})")
        return f"pending ({len(parts)}): " + ", ".join(parts)
    total = sum(gpus(k) for k in pmap.pending)
    largest = sorted(pmap.pending, key=lambda k: -gpus(k))[:3]
    names = ", ".join(instance.job_by_key[k].name for k in largest)
    return f"pending: {len(pmap.pending)} jobs asking {total:,.0f} GPUs (largest: {names})"
