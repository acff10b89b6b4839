"""vcopt's own engine on batches of arrivals: each batch becomes an ``Instance`` — the trace's
nodes as ``vcopt import alibaba`` writes them, what earlier batches placed as running pods, the
batch as pending one-pod jobs — solved by the engine ``vcopt solve`` calls, and its plan read
back as node and device choices.

Earlier placements are fixed (the scheduler configuration has no preemption, so no running pod
is evicted). They are written as one running *holder* pod per node holding what they hold
together — CPU, memory, ``nvidia.com/gpu`` and each device's booked memory and cores — which
is everything any rule or score reads of them here, the pod count aside: the trace's tasks
never leave, and the FGD setup has no pod limit (``pods: 110`` then binds on no node, where
the tasks written one by one would bind it on nodes holding more than 109 of them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from models.gpu import HAMI_COUNT
from models.instance import Instance
from models.load import from_dict
from models.queues import DEFAULT_QUEUE
from models.vocabulary import HOSTNAME_LABEL
from models.workload import DeviceShare
from optimizer.options import SolveOptions
from optimizer.plan import Placement, Plan
from optimizer.solve import solve
from optimizer.trace_import import (
    API_VERSION,
    GPU_MEMORY_MIB,
    MILLI,
    SCHEDULER_CONF,
    TRACE_RELEASED,
    TraceNode,
    TraceTask,
    job_doc,
    node_doc,
)

from .policies import Fgd, Online
from .state import MAX_GPUS, Cluster

Choice = tuple[int, tuple[int, ...]]
HOLDER = "held"
"""Name prefix of the holder jobs (trace task names never start with it)."""


def share_memory(device_memory: int, task: TraceTask) -> int:
    """MiB HAMi books on one device for ``task``: ⌊memory × percentage / 100⌋ for a share (the
    import asks shares as percentages), the whole device otherwise."""
    if task.fractional:
        return device_memory * (task.gpu_milli // 10) // 100
    return device_memory


class BatchInstances:
    """Turns the cluster state and a batch into an ``Instance`` and a plan back into choices."""

    def __init__(self, nodes: Sequence[TraceNode]) -> None:
        self.nodes = tuple(nodes)
        self.node_docs = [node_doc(n) for n in nodes]
        self.index = {n.name: i for i, n in enumerate(nodes)}
        self.device_memory = np.array([GPU_MEMORY_MIB[n.model] for n in nodes], dtype=np.int64)
        self.booked = np.zeros((len(nodes), MAX_GPUS), dtype=np.int64)
        """Per device, the MiB the placed tasks booked (HAMi floors each share's memory)."""
        self.gpu_requests = np.zeros(len(nodes), dtype=np.int64)
        """Per node, the placed tasks' ``nvidia.com/gpu`` (what Volcano's resource fit and
        BalancedAllocation count)."""

    def place(self, node: int, task: TraceTask, devices: Sequence[int]) -> None:
        self.gpu_requests[node] += task.num_gpu
        for d in devices:
            self.booked[node, d] += share_memory(int(self.device_memory[node]), task)

    def document(
        self,
        cluster: Cluster,
        batch: Sequence[TraceTask],
        open_nodes: Sequence[int] | None = None,
        allowed: Sequence[Sequence[int]] | None = None,
    ) -> dict[str, Any]:
        """The instance of one batch: ``open_nodes``, by default the nodes some task of the
        batch fits on (by CPU, memory, GPU model and GPU capacity — a node none fits cannot
        change the plan, nothing is evicted), their holders, and the batch; ``allowed`` (per
        task, nodes among the open ones) becomes each task's required node affinity on
        ``kubernetes.io/hostname``, as a user pins pods to nodes."""
        if open_nodes is None:
            fits = np.zeros(len(self.nodes), dtype=bool)
            for task in batch:
                fits |= cluster.feasible(task)
            open_nodes = np.flatnonzero(fits).tolist()
        open_nodes = list(open_nodes) or [0]
        jobs = [self._holder(cluster, n) for n in open_nodes]
        if allowed is None:
            pending = [job_doc(t) for t in batch]
        else:
            pending = [self._pinned(t, a) for t, a in zip(batch, allowed, strict=True)]
        return {
            "apiVersion": API_VERSION,
            "kind": "Instance",
            "metadata": {"name": "alibaba-batch"},
            "now": TRACE_RELEASED,
            "scheduler": SCHEDULER_CONF,
            "nodes": [self.node_docs[n] for n in open_nodes],
            "queues": [{"name": DEFAULT_QUEUE}],
            "jobs": [j for j in jobs if j is not None] + pending,
        }

    def _pinned(self, task: TraceTask, nodes: Sequence[int]) -> dict[str, Any]:
        """The task's job, pinned to ``nodes``; a task with none fits no node of the cluster
        (``shape_nodes`` is empty only then), so it needs no pin."""
        doc = job_doc(task)
        if not nodes:
            return doc
        names = [self.nodes[n].name for n in nodes]
        term = {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": names}]}
        doc["tasks"][0]["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term]}}
        }  # fmt: skip
        return doc

    def instance(
        self,
        cluster: Cluster,
        batch: Sequence[TraceTask],
        open_nodes: Sequence[int] | None = None,
        allowed: Sequence[Sequence[int]] | None = None,
    ) -> Instance:
        return from_dict(self.document(cluster, batch, open_nodes, allowed), "alibaba-batch")

    def _holder(self, cluster: Cluster, n: int) -> dict[str, Any] | None:
        node = self.nodes[n]
        cpu = int(cluster.cpu_total[n] - cluster.cpu[n])
        mem = int(cluster.mem_total[n] - cluster.mem[n])
        used = [d for d in range(node.gpus) if cluster.gpus[n, d] < MILLI]
        if not cpu and not mem and not used:
            return None
        resources: dict[str, Any] = {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}
        if used:
            resources[HAMI_COUNT] = int(self.gpu_requests[n])
        shares = [
            {
                "id": f"GPU-{node.name}-{d}",
                "memory": int(self.booked[n, d]),
                "cores": (MILLI - int(cluster.gpus[n, d])) // 10,
            }
            for d in used
        ]
        return {
            "name": f"{HOLDER}-{node.name}",
            "minAvailable": 1,
            "tasks": [{"name": "task", "resources": resources}],
            "running": [{"index": 0, "node": node.name, "task": "task", "gpus": shares}],
        }

    def plan(
        self, instance: Instance, batch: Sequence[TraceTask], choices: Sequence[Choice | None]
    ) -> Plan:
        """The plan of ``choices`` (per task of the batch, as :meth:`choices` reads them)."""
        pod_of = {p.job.split("/")[-1]: p.key for p in instance.pods if not p.running}
        placements = []
        for task, choice in zip(batch, choices, strict=True):
            if choice is None:
                continue
            n, devices = choice
            node = self.nodes[n]
            memory = share_memory(int(self.device_memory[n]), task)
            cores = task.gpu_milli // 10 if task.fractional else MILLI // 10
            shares = tuple(DeviceShare(f"GPU-{node.name}-{d}", memory, cores) for d in devices)
            placements.append(Placement(pod_of[task.name], node.name, shares))
        return Plan(instance=instance.name, engine="fgd", placements=tuple(placements))

    def choices(
        self, instance: Instance, plan: Plan, batch: Sequence[TraceTask]
    ) -> list[Choice | None]:
        """Per task of the batch, (node, devices) where the plan places it, None if it stays
        pending."""
        position = {t.name: i for i, t in enumerate(batch)}
        pod_task = {p.key: position[p.job.split("/")[-1]] for p in instance.pods if not p.running}
        out: list[Choice | None] = [None] * len(batch)
        for p in plan.placements:
            n = self.index[p.node]
            devices = tuple(int(s.id.rsplit("-", 1)[1]) for s in p.gpus or ())
            out[pod_task[p.pod]] = (n, devices)
        return out


def fgd_lookahead(state: Online, batch: Sequence[TraceTask], fgd: Fgd) -> list[Choice | None]:
    """FGD's choices for the batch, one task after another, on a copy of the cluster (the
    node states FGD interns on the way are kept: a state's F does not depend on the run)."""
    cluster = state.cluster.copy()
    saved = state.classes.of_node.copy()
    trial = Online(cluster, state.classes, state.rank, state.rng)
    out: list[Choice | None] = []
    try:
        for task in batch:
            feasible = np.flatnonzero(cluster.feasible(task))
            if not feasible.size:
                out.append(None)
                continue
            node, devices = fgd(trial, task, feasible)
            cluster.place(node, task, devices)
            state.classes.update(cluster, node)
            out.append((node, devices))
    finally:
        state.classes.of_node = saved
    return out


Shape = tuple[int, int, int, int, tuple[str, ...]]


def shape_of(task: TraceTask) -> Shape:
    """What the neighbourhood of a task depends on: CPU, memory, GPU count, milli per GPU,
    models (tasks alike in all of them fit the same nodes)."""
    return (task.cpu_milli, task.memory_mib, task.num_gpu, task.gpu_milli, task.models)


def shape_nodes(state: Online, task: TraceTask, per_shape: int, fgd: Fgd, copies: int) -> list[int]:
    """The ``per_shape`` node *states* (nodes alike in model, free CPU and free milli per
    device) where one task of this shape grows FGD's fragmentation least in the state before
    the batch, ``copies`` nodes of each (ties to the lower permuted name). Alike nodes are one
    choice for a single task, so counting states, not nodes, offers the engine ``per_shape``
    different choices; the copies let it stack tasks of the batch without using up a state."""
    feasible = np.flatnonzero(state.cluster.feasible(task))
    if not feasible.size:
        return []
    classes = state.classes
    ids = classes.of_node[feasible]
    _, deltas, _ = fgd.evaluate(classes, ids, task)
    order = np.lexsort((state.rank[feasible], deltas[ids]))
    chosen: list[int] = []
    taken: dict[int, int] = {}
    for j in order.tolist():
        cid = int(ids[j])
        if cid not in taken and len(taken) == per_shape:
            continue
        if taken.get(cid, 0) < copies:
            taken[cid] = taken.get(cid, 0) + 1
            chosen.append(int(feasible[j]))
        if len(taken) == per_shape and all(k == copies for k in taken.values()):
            break
    return chosen


def candidates(
    state: Online,
    batch: Sequence[TraceTask],
    per_shape: int,
    fgd: Fgd,
    copies: int,
    lookahead: Sequence[Choice | None],
) -> list[list[int]]:
    """Per task of the batch, the nodes it may go to: its shape's :func:`shape_nodes` and the
    nodes FGD's choices for the batch (``lookahead``) give tasks of its shape, so the start
    plan is always open to the engine and alike tasks stay interchangeable."""
    near: dict[Shape, set[int]] = {}
    for task, choice in zip(batch, lookahead, strict=True):
        key = shape_of(task)
        if key not in near:
            near[key] = set(shape_nodes(state, task, per_shape, fgd, copies))
        if choice is not None:
            near[key].add(choice[0])
    return [sorted(near[shape_of(task)]) for task in batch]


def neighbourhood(
    state: Online, batch: Sequence[TraceTask], per_shape: int, fgd: Fgd, copies: int = 2
) -> list[int]:
    """The nodes of every task shape of the batch (:func:`shape_nodes`), joined."""
    chosen: set[int] = set()
    seen: set[Shape] = set()
    for task in batch:
        if shape_of(task) not in seen:
            seen.add(shape_of(task))
            chosen.update(shape_nodes(state, task, per_shape, fgd, copies))
    return sorted(chosen)


def batch_instance(
    builder: BatchInstances,
    state: Online,
    batch: Sequence[TraceTask],
    lookahead: Sequence[Choice | None],
    fgd: Fgd,
    per_shape: int,
    copies: int,
    pin: bool,
) -> Instance:
    """The instance a replay puts a batch in: every feasible node when ``per_shape`` is 0,
    else the nodes of the batch's :func:`candidates`, each task pinned to its own when
    ``pin``."""
    if not per_shape:
        return builder.instance(state.cluster, batch)
    allowed = candidates(state, batch, per_shape, fgd, copies, lookahead)
    open_nodes = sorted({n for nodes in allowed for n in nodes})
    return builder.instance(state.cluster, batch, open_nodes, allowed if pin else None)


def solve_batch(
    builder: BatchInstances,
    cluster: Cluster,
    batch: Sequence[TraceTask],
    options: SolveOptions,
    engine: str = "cpsat",
    open_nodes: Sequence[int] | None = None,
) -> tuple[list[Choice | None], Plan]:
    """One batch through ``optimizer.solve`` (greedy first, then the engine asked for)."""
    instance = builder.instance(cluster, batch, open_nodes)
    plan = solve(instance, engine, options)
    return builder.choices(instance, plan, batch), plan
