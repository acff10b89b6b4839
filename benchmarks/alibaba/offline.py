"""Track B: every arrival known at once, solved by vcopt's own engine — its plan and the bound
CP-SAT proves on its first stage, an upper limit for any placement of the arrivals.

CPU-only tasks are left out: they add nothing to GPU allocation and only take CPU, so without
them the best GPU allocation can only grow and the bound stays an upper limit. What is left has
a work stage equal to the allocated milli-GPU (a share of m milli asked as m/10 % of memory and
cores is worth m, a whole GPU 1,000), so the bound is read in milli-GPU directly. On the idle
cluster the 1,213 nodes form 15 classes and the identical one-pod jobs a few hundred units,
which keeps the one model small.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from models.load import from_dict
from optimizer.options import SolveOptions
from optimizer.solve import solve
from optimizer.trace_import import (
    API_VERSION,
    SCHEDULER_CONF,
    TRACE_RELEASED,
    TraceNode,
    TraceTask,
    job_doc,
    node_doc,
)

OFFLINE_WEIGHTS = {"fairness": 0, "topology": 0, "packing": 0}


@dataclass(frozen=True)
class OfflineResult:
    feasible_milli: int
    """Allocated by the engine's plan."""
    bound_milli: int | None
    """CP-SAT's proven upper bound on allocated milli-GPU: no placement can exceed it (None
    when the search did not start or proved nothing)."""
    status: str
    wall_seconds: float


def offline(
    nodes: Sequence[TraceNode], sequence: Sequence[TraceTask], time_limit: float, seed: int = 0
) -> OfflineResult:
    start = time.perf_counter()
    gpu_tasks = [t for t in sequence if t.num_gpu]
    doc = {
        "apiVersion": API_VERSION,
        "kind": "Instance",
        "metadata": {"name": "alibaba-offline"},
        "now": TRACE_RELEASED,
        "scheduler": SCHEDULER_CONF,
        "nodes": [node_doc(n) for n in nodes],
        "queues": [{"name": "default"}],
        "jobs": [job_doc(t) for t in gpu_tasks],
    }
    instance = from_dict(doc, "alibaba-offline")
    options = SolveOptions.of(
        time_limit=time_limit, seed=seed, weights=OFFLINE_WEIGHTS, strategy="monolithic"
    )
    plan = solve(instance, "cpsat", options)
    milli = {f"{t.name}-task-0": t.gpu_request for t in gpu_tasks}
    placed = sum(milli[p.pod.split("/")[-1]] for p in plan.placements)
    info = plan.solver
    bound = info.bound if info is not None and info.bound is not None else None
    return OfflineResult(
        placed,
        None if bound is None else int(bound),
        info.status.value if info is not None else "UNKNOWN",
        time.perf_counter() - start,
    )
