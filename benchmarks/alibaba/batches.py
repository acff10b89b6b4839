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
from optimizer.options import SolveOptions
from optimizer.plan import Plan
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

    def document(self, cluster: Cluster, batch: Sequence[TraceTask]) -> dict[str, Any]:
        """The instance of one batch: the nodes some task of the batch fits on (by CPU, memory,
        GPU model and GPU capacity — a node none fits cannot change the plan, nothing is
        evicted), their holders, and the batch."""
        fits = np.zeros(len(self.nodes), dtype=bool)
        for task in batch:
            fits |= cluster.feasible(task)
        open_nodes = np.flatnonzero(fits).tolist() or [0]
        jobs = [self._holder(cluster, n) for n in open_nodes]
        return {
            "apiVersion": API_VERSION,
            "kind": "Instance",
            "metadata": {"name": "alibaba-batch"},
            "now": TRACE_RELEASED,
            "scheduler": SCHEDULER_CONF,
            "nodes": [self.node_docs[n] for n in open_nodes],
            "queues": [{"name": DEFAULT_QUEUE}],
            "jobs": [j for j in jobs if j is not None] + [job_doc(t) for t in batch],
        }

    def instance(self, cluster: Cluster, batch: Sequence[TraceTask]) -> Instance:
        return from_dict(self.document(cluster, batch), "alibaba-batch")

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


def solve_batch(
    builder: BatchInstances,
    cluster: Cluster,
    batch: Sequence[TraceTask],
    options: SolveOptions,
    engine: str = "cpsat",
) -> tuple[list[Choice | None], Plan]:
    """One batch through ``optimizer.solve`` (greedy first, then the engine asked for)."""
    instance = builder.instance(cluster, batch)
    plan = solve(instance, engine, options)
    return builder.choices(instance, plan, batch), plan
