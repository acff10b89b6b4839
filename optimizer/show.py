"""``vcopt show``: an instance as a platform engineer reads a cluster.

HyperNodes print the way ``kubectl get hypernodes`` does (plain columns, no boxes) so the
output can be compared with a live cluster line by line; the queue tree shows the values the
capacity plugin derives (deserved, capability, realCapability), which are what decides
admission and which users rarely see, beside what running pods already hold.

Quantities are written for people, not for the API server: CPU in cores, memory in the
largest binary unit that keeps three significant digits (``4G`` reads ``3.73Gi``), GPUs as
cards with HAMi's time-slices apart (``models.resources.readable_amount``). A value that is
not set is always ``-`` and an unlimited one ``∞``, so a blank never has two spellings.

Tables keep to the terminal's width, because a real cluster's resource lists (every extended
resource its nodes report) would otherwise run to hundreds of columns: the columns of a table
that is too wide go on in a second table below, led again by the first column, and a cell
wider than the room beside the first column (a long resource list) wraps between its words.
Cells keep their whole width wherever they fit, so a value is never cut where it need not be.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from itertools import zip_longest

from models.gpu import GPU_RESOURCE_NAMES, GpuRequest
from models.instance import Instance
from models.queues import ROOT, QueueAttrs, capacity_flat, capacity_hierarchical
from models.resources import (
    CPU,
    INFINITE,
    MEMORY,
    NVIDIA_GPU,
    PODS,
    Resources,
    readable_amount,
    readable_bytes,
)
from models.tdm import node_zone
from models.workload import Task

from .reasons.position import queue_positions

UNSET = "-"
UNLIMITED = "∞"
GAP = 3
"""Spaces between columns, as kubectl prints them."""
LEGEND_WIDTH = 100
FIRST = (CPU, MEMORY, NVIDIA_GPU)
"""The resources people compare first, listed before the others (alphabetical)."""


def columns(
    header: Sequence[str], rows: Sequence[Sequence[object]], width: int | None = None
) -> str:
    """kubectl-style table: left-aligned columns separated by three spaces, within ``width``
    characters (None: as wide as the cells).

    Too wide, the columns that do not fit go to a second table below (and a third…), each
    led again by the first column; a column wider than the room beside the first one wraps
    between words, and the first column wraps beyond half the width."""
    table = [list(header), *[[str(c) for c in row] for row in rows]]
    natural = [max(len(r[i]) for r in table) for i in range(len(header))]
    if width is None or _span(natural) <= width:
        return _lines(table, natural)
    key = min(natural[0], max(width // 2, 1))
    room = max(width - key - GAP, 1)
    groups: list[tuple[list[int], list[int]]] = [([0], [key])]
    for i in range(1, len(header)):
        wide = min(natural[i], room)
        picked, widths = groups[-1]
        if len(picked) > 1 and _span([*widths, wide]) > width:
            groups.append(([0], [key]))
            picked, widths = groups[-1]
        picked.append(i)
        widths.append(wide)
    return "\n".join(
        _lines([[r[i] for i in picked] for r in table], widths) for picked, widths in groups
    )


def _span(widths: Sequence[int]) -> int:
    return sum(widths) + GAP * (len(widths) - 1)


def _lines(table: Sequence[Sequence[str]], widths: Sequence[int]) -> str:
    out = []
    for row in table:
        cells = [_wrap(cell, w) for cell, w in zip(row, widths, strict=True)]
        for parts in zip_longest(*cells, fillvalue=""):
            line = (" " * GAP).join(p.ljust(w) for p, w in zip(parts, widths, strict=True))
            out.append(line.rstrip())
    return "\n".join(out) + "\n"


def _wrap(cell: str, width: int) -> list[str]:
    if len(cell) <= width:
        return [cell]
    return textwrap.wrap(cell, width, break_on_hyphens=False) or [""]


def resources_text(resources: Resources | None, *, zeros: bool = False) -> str:
    """``cpu=2, memory=3.73Gi``. Unlimited dimensions are folded into ``∞`` (all of them) or
    ``others ∞`` (some); ``zeros`` keeps explicit zero amounts, which in a capability are a
    limit of nothing, not an absent value."""
    if resources is None:
        return UNSET
    shown = {k: v for k, v in resources.items() if v > 0 or (zeros and v == 0)}
    if not shown:
        return UNSET
    finite = {k: v for k, v in shown.items() if v < INFINITE // 2}
    if not finite:
        return UNLIMITED
    ordered = sorted(finite, key=lambda k: (FIRST.index(k) if k in FIRST else len(FIRST), k))
    text = ", ".join(f"{k}={readable_amount(k, finite[k])}" for k in ordered)
    return text + (", others ∞" if len(finite) < len(shown) else "")


def queue_attrs(instance: Instance) -> Mapping[str, QueueAttrs]:
    """The capacity plugin's derived values for the configured mode."""
    tree = instance.queue_tree
    total = instance.total_allocatable
    if instance.scheduler.hierarchy():
        return capacity_hierarchical(tree, total)
    return capacity_flat(tree, total, [j.queue for j in instance.jobs])


def hypernode_table(instance: Instance, width: int | None = None) -> str:
    return columns(["NAME", "TIER", "TIERNAME", "NODECOUNT"], instance.topology.table(), width)


def allocated(instance: Instance) -> dict[str, Resources]:
    """What running pods request, per queue, ancestors summing their subtree (capacity's
    ``allocated``, which counts a pod's Resreq whatever share of a GPU it holds)."""
    tree = instance.queue_tree
    out: dict[str, Resources] = {name: Resources() for name in tree.names}
    for job in instance.jobs:
        if job.queue not in out:
            continue
        for pod in job.pods:
            if not pod.running:
                continue
            request = job.task(pod.task).resources
            for name in (*tree.ancestors(job.queue), job.queue):
                out[name] = out[name] + request
    return out


def queue_table(instance: Instance, width: int | None = None) -> str:
    tree = instance.queue_tree
    attrs = queue_attrs(instance)
    held = allocated(instance)
    jobs: dict[str, int] = {}
    for job in instance.jobs:
        jobs[job.queue] = jobs.get(job.queue, 0) + 1
    rows = []

    def visit(name: str, depth: int) -> None:
        a = attrs.get(name)
        queue = tree.queue(name)
        rows.append(
            [
                "  " * depth + name,
                queue.weight,
                resources_text(a.deserved if a else queue.deserved),
                resources_text(a.guarantee if a else queue.guarantee),
                resources_text(a.capability if a else queue.capability, zeros=True),
                resources_text(_real_capability(a), zeros=True),
                resources_text(held.get(name)),
                jobs.get(name, 0),
            ]
        )
        for child in tree.children(name):
            visit(child, depth + 1)

    visit(ROOT, 0)
    header = [
        "QUEUE",
        "WEIGHT",
        "DESERVED",
        "GUARANTEE",
        "CAPABILITY",
        "REALCAPABILITY",
        "ALLOCATED",
        "JOBS",
    ]
    return columns(header, rows, width) + queue_legend(instance, width)


def _real_capability(attrs: QueueAttrs | None) -> Resources | None:
    """realCapability with a zero kept only where the capability names the resource: the
    others are resources no node offers (a node's ``hugepages-1Gi: 0``), not limits."""
    if attrs is None:
        return None
    real = attrs.real_capability
    return Resources({k: v for k, v in real.items() if v or k in attrs.capability})


def queue_legend(instance: Instance, width: int | None = None) -> str:
    """What the quota columns count, which is not what a GPU count suggests."""
    gpus = [d for n in instance.nodes for d in n.gpus]
    lines = [
        "ALLOCATED: what the pods already running request (Volcano's Resreq), summed up the "
        "tree; capacity compares it with DESERVED and REALCAPABILITY."
    ]
    if gpus:
        slices = sum(d.count for d in gpus)
        lines.append(
            f"{NVIDIA_GPU} in quotas counts GPUs as pods request them: a pod holding a share of "
            f"a card counts 1 (vcopt's gpu_allocated metric counts the share). The cluster's "
            f"{len(gpus)} GPUs register {slices} HAMi slices, the {NVIDIA_GPU} Volcano sees."
        )
    wrap = min(width or LEGEND_WIDTH, LEGEND_WIDTH)
    return "".join(
        textwrap.fill(line, wrap, initial_indent="  ", subsequent_indent="  ") + "\n"
        for line in lines
    )


def node_table(instance: Instance, width: int | None = None) -> str:
    topology = instance.topology
    rows = []
    for node in instance.nodes:
        types = sorted({d.type for d in node.gpus})
        memory = sorted({d.memory for d in node.gpus})
        gpus = UNSET
        if node.gpus:
            size = "/".join(readable_bytes(m * 2**20) for m in memory)
            slices = sum(d.count for d in node.gpus)
            gpus = f"{len(node.gpus)} × {'/'.join(types)} {size} ({slices} slices)"
        elif node.plain_gpus:
            gpus = f"{readable_amount(NVIDIA_GPU, node.allocatable.get(NVIDIA_GPU))} (plain count)"
        used = sum(1 for p in instance.pods if p.node == node.name)
        used += sum(1 for _, p in instance.foreign_pods if p.node == node.name)
        rows.append(
            [
                node.name,
                resources_text(
                    Resources({k: v for k, v in node.allocatable.items() if k in ("cpu", "memory")})
                ),
                gpus,
                f"{used}/{node.pod_capacity}",
                topology.leaf_of(node.name) or UNSET,
                node_zone(node.labels) or UNSET,
                "SchedulingDisabled" if node.unschedulable else "Ready",
            ]
        )
    header = ["NODE", "ALLOCATABLE", "GPUS", "PODS", "HYPERNODE", "ZONE", "STATUS"]
    return columns(header, rows, width)


def gpu_request_text(request: GpuRequest) -> str:
    """``2 GPUs`` for whole cards, ``1 GPU share (20000Mi, 25 % cores)`` for HAMi shares."""
    cards = f"{request.nums} GPU" + ("s" if request.nums > 1 else "")
    if request.exclusive and not request.memory and request.percentage in (None, 100):
        return cards
    parts = []
    if request.memory:
        parts.append(f"{readable_bytes(request.memory * 2**20)} memory")
    elif request.percentage is not None:
        parts.append(f"{request.percentage} % memory")
    parts.append(f"{request.booked_cores} % cores")
    return f"{cards} share ({', '.join(parts)})"


def request_text(task: Task) -> str:
    """A pod's request as people read it: cores, memory, GPU cards or shares, then any other
    resource as ``name=amount``."""
    r = task.resources
    parts = []
    if r.get(CPU):
        parts.append(f"{readable_amount(CPU, r.get(CPU))} cores")
    if r.get(MEMORY):
        parts.append(readable_bytes(r.get(MEMORY)))
    parts.extend(gpu_request_text(g) for g in task.gpu)
    if not task.gpu and r.get(NVIDIA_GPU):
        parts.append(f"{readable_amount(NVIDIA_GPU, r.get(NVIDIA_GPU))} {NVIDIA_GPU}")
    shown = {CPU, MEMORY, PODS, *GPU_RESOURCE_NAMES}
    parts.extend(f"{k}={readable_amount(k, v)}" for k, v in r.items() if v and k not in shown)
    return ", ".join(parts) or UNSET


def job_table(instance: Instance, width: int | None = None) -> str:
    """Jobs with their queue position: the order Volcano would try each queue's pending jobs."""
    positions = queue_positions(instance)
    rows = []
    for job in instance.jobs:
        topo = job.network_topology
        topology = UNSET
        if topo is not None:
            limit = topo.highest_tier if topo.highest_tier is not None else topo.highest_tier_name
            topology = f"{topo.mode}≤{limit}" if limit is not None else topo.mode
        running = sum(1 for p in job.pods if p.running)
        rows.append(
            [
                job.key,
                job.queue,
                positions.get(job.key, UNSET),
                job.priority,
                f"{running}/{job.replicas}",
                job.min_available,
                topology,
                job.phase,
                "; ".join(f"{t.replicas} × {request_text(t)}" for t in job.tasks),
            ]
        )
    header = [
        "JOB",
        "QUEUE",
        "POSITION",
        "PRIORITY",
        "RUNNING",
        "MINAVAILABLE",
        "TOPOLOGY",
        "PHASE",
        "PODS × REQUEST",
    ]
    return columns(header, rows, width)


def summary(instance: Instance, width: int | None = None) -> str:
    """One line of totals: nodes, cores, memory, GPU cards by type and their HAMi slices."""
    total = instance.total_allocatable
    gpus = [d for n in instance.nodes for d in n.gpus]
    text = (
        f"{len(instance.nodes)} nodes, {readable_amount(CPU, total.get(CPU))} cpu, "
        f"{readable_bytes(total.get(MEMORY))} memory"
    )
    if gpus:
        by_type: dict[str, int] = {}
        for d in gpus:
            by_type[d.type] = by_type.get(d.type, 0) + 1
        kinds = ", ".join(f"{n} × {t}" for t, n in sorted(by_type.items()))
        healthy = sum(1 for d in gpus if d.health)
        text += f", {len(gpus)} GPUs ({kinds}; {healthy} healthy, {sum(d.count for d in gpus)} "
        text += "HAMi slices)"
    return (textwrap.fill(text, width) if width else text) + "\n"


def foreign_summary(instance: Instance) -> str:
    """One line per other scheduler: its running pods are node usage, never jobs, and a
    DaemonSet's hundreds of pods should not read as hundreds of jobs."""
    by_scheduler: dict[str, list[tuple[Task, str]]] = {}
    for job, pod in instance.foreign_pods:
        assert pod.node is not None
        by_scheduler.setdefault(job.scheduler_name, []).append((job.task(pod.task), pod.node))
    lines = []
    for name, pods in sorted(by_scheduler.items()):
        nodes = len({node for _, node in pods})
        total = sum((task.resources for task, _ in pods), Resources())
        held = resources_text(Resources({k: v for k, v in total.items() if k != PODS}))
        lines.append(
            f"{len(pods)} running pod(s) of {name} (not Volcano's) on {nodes} node(s), "
            f"holding {held}: node usage only\n"
        )
    return "".join(lines)


def render(instance: Instance, width: int | None = None) -> str:
    """Every section, separated by blank lines, each within ``width`` characters (None: as
    wide as its longest line)."""
    sections = [
        f"Instance {instance.name} at {instance.now.isoformat()} ({instance.timezone})\n"
        + summary(instance, width),
        hypernode_table(instance, width) if instance.hypernodes else "No HyperNodes.\n",
        queue_table(instance, width),
        node_table(instance, width),
        job_table(instance, width) if instance.jobs else "No jobs.\n",
    ]
    if instance.foreign_pods:
        sections.append(foreign_summary(instance))
    return "\n".join(sections)
