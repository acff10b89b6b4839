"""Replaying an arrival sequence: one policy per task, or vcopt's engine per batch, with the
simulator's per-task log (§4 step 7) and its discretised read-out (§4 step 8)."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from models.fragmentation import COVERAGE, TypicalTask
from models.instance import Instance
from optimizer.options import SolveOptions
from optimizer.result import Status
from optimizer.solve import solve
from optimizer.trace_import import MILLI, TraceNode, TraceTask, capacity_milli, draw

from .batches import BatchInstances, batch_instance, fgd_lookahead
from .policies import Choice, Fgd, Online, Policy, VolcanoDefault, bestfit, dotprod, random_policy
from .state import Cluster, NodeClasses
from .trace import trace_mix


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


def new_state(
    nodes: Sequence[TraceNode], mix: Sequence[TypicalTask], rank: Sequence[int], seed: int
) -> Online:
    cluster = Cluster.of(nodes)
    return Online(
        cluster,
        NodeClasses(cluster, mix, 4 * len(nodes)),
        np.asarray(rank, dtype=np.int64),
        np.random.default_rng(seed),
    )


class Log:
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
    mix: Sequence[TypicalTask],
    seed: int = 0,
    arrival: float = 0.0,
) -> RunResult:
    """Each task gets one attempt against the current state; a task that fits nowhere is
    dropped (§4 step 6)."""
    start = time.perf_counter()
    state = new_state(nodes, mix, rank, seed)
    log = Log(state, len(sequence))
    allowed_cache: dict[tuple[str, ...], np.ndarray] = {}
    for i, task in enumerate(sequence):
        allowed = allowed_cache.get(task.models)
        if allowed is None:
            allowed = allowed_cache[task.models] = state.cluster.allowed_models(task)
        feasible = np.flatnonzero(state.cluster.feasible(task, allowed))
        node, devices = policy(state, task, feasible) if feasible.size else (-1, ())
        log.record(i, task, (node, devices) if node >= 0 else None)
    return log.result(name, seed, arrival, start)


@dataclass(frozen=True)
class BatchOptions:
    """vcopt's engine on batches of ``size`` arrivals, ``time_limit`` seconds each (the whole
    solve: greedy, compiling, the stages, expanding and verifying the plan)."""

    size: int = 64
    time_limit: float = 6.0
    workers: int = 2
    seed: int = 0
    engine: str = "cpsat"
    per_shape: int = 8
    """Node states per task shape of the batch that the batch's instance holds
    (``neighbourhood``); 0: every node some task fits on."""
    copies: int = 2
    """Nodes of each such state."""
    pin: bool = True
    """Each task may go only to its own shape's nodes (a required node affinity in the
    batch's instance); otherwise to every node of the batch's instance."""
    bound: bool = True
    """One CP-SAT worker solves the whole model for a bound (``SearchOptions.bound``), as in
    ``vcopt solve``. The replay reads no bound, but giving that worker to the neighbourhood
    search (``False``) saved more fragmentation per batch and still placed less over six seeds
    (docs/BENCHMARKS.md)."""
    mix_coverage: float = COVERAGE
    """Share of the original task list the typical mix's most common specs cover. FGD's 95 %
    holds no multi-GPU spec; at 98 % the two eight-GPU specs join, so the stage values keeping
    a node's eight devices whole (measured in docs/BENCHMARKS.md)."""


REPLAY_WEIGHTS = {"fairness": 0, "topology": 0, "fragmentation": 1, "packing": 0}
"""The stages the replay asks for: allocated work first, then fragmentation. The trace has one
queue and one-pod jobs, so fairness and topology could only spend time; packing (fewer devices
opened) would pull against fragmentation's choice between spoiling a device and opening one."""
REPLAY_OBJECTIVE = "weighted"
REPLAY_STRATEGY = "monolithic"
"""One solve of the weighted sum (work scaled above fragmentation's span, so still first) on
one model: a batch's budget is a few seconds, and a second stage or decomposition rounds would
each load and presolve the model again."""


def _solve_child(
    out: Connection,
    builder: BatchInstances,
    instance: Instance,
    batch: Sequence[TraceTask],
    engine: str,
    options: SolveOptions,
) -> None:
    plan = solve(instance, engine, options, reasons=False)
    info = plan.solver
    status = info.status.value if info else Status.FEASIBLE.value
    out.send((builder.choices(instance, plan, batch), status, bool(info and info.fallback)))
    out.close()


def solve_apart(
    builder: BatchInstances,
    instance: Instance,
    batch: Sequence[TraceTask],
    engine: str,
    options: SolveOptions,
) -> tuple[list[Choice | None], str, bool] | None:
    """One batch's ``vcopt solve`` in a forked process: (choices, solver status, whether the
    start or greedy plan was kept), or None when the process died. OR-Tools 9.15's LNS
    workers abort the process now and then on these models (``absl::btree_map::at``, a C++
    exception no Python code can catch); a replay of hundreds of solves must survive that,
    and the batch then keeps its start plan."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(
        target=_solve_child, args=(send, builder, instance, batch, engine, options)
    )
    child.start()
    send.close()
    try:
        result: tuple[list[Choice | None], str, bool] | None = receive.recv()
    except EOFError:
        result = None
    child.join()
    return result


def run_batched(
    name: str,
    nodes: Sequence[TraceNode],
    sequence: Sequence[TraceTask],
    rank: Sequence[int],
    mix: Sequence[TypicalTask],
    options: SolveOptions,
    size: int,
    engine: str = "cpsat",
    seed: int = 0,
    arrival: float = 0.0,
    progress: Callable[[dict[str, Any]], None] | None = None,
    per_shape: int = 0,
    copies: int = 2,
    pin: bool = True,
) -> RunResult:
    """Arrivals in batches of ``size``; each batch is one ``vcopt solve`` of the current
    state, placed at once and never revisited, started from FGD's choices for the batch
    (``SolveOptions.start``) over the nodes of :func:`neighbourhood` (all feasible ones when
    ``per_shape`` is 0). The log still has one point per task; ``progress`` is told each
    batch's statistics as it ends."""
    start = time.perf_counter()
    state = new_state(nodes, mix, rank, seed)
    log = Log(state, len(sequence))
    builder = BatchInstances(nodes)
    fgd = Fgd()
    stats: list[dict[str, Any]] = []
    for first in range(0, len(sequence), size):
        batch = sequence[first : first + size]
        began = time.perf_counter()
        lookahead = fgd_lookahead(state, batch, fgd)
        instance = batch_instance(builder, state, batch, lookahead, fgd, per_shape, copies, pin)
        batch_options = options.replaced(start=builder.plan(instance, batch, lookahead))
        solved = solve_apart(builder, instance, batch, engine, batch_options)
        choices, status, kept = solved or (lookahead, "CRASHED", True)
        for j, (task, choice) in enumerate(zip(batch, choices, strict=True)):
            if choice is not None:
                builder.place(choice[0], task, choice[1])
            log.record(first + j, task, choice)
        stats.append(
            {
                "status": status,
                "greedy": kept,
                "seconds": round(time.perf_counter() - began, 3),
                "first": first,
                "nodes": len(instance.nodes),
                "allocated": int(log.total_allocated),
            }
        )
        if progress is not None:
            progress(stats[-1])
    cluster = state.cluster
    assert (cluster.cpu >= 0).all() and (cluster.mem >= 0).all() and (cluster.gpus >= 0).all()
    return log.result(name, seed, arrival, start, {"batches": stats})


def engine_options(tasks: Sequence[TraceTask], batch: BatchOptions) -> SolveOptions:
    """The options each batch's ``vcopt solve`` runs with (typical mix from ``tasks``, the
    original list). The batches' solves name no pending reasons (``_solve_child``): the replay
    reads only placements."""
    return SolveOptions.of(
        time_limit=batch.time_limit,
        workers=batch.workers,
        seed=batch.seed,
        weights=REPLAY_WEIGHTS,
        objective=REPLAY_OBJECTIVE,
        strategy=REPLAY_STRATEGY,
        typical_mix=trace_mix(tasks, batch.mix_coverage),
        bound=batch.bound,
    )


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
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> RunResult:
    """One online or batch policy on the arrivals of one seed (typical tasks from ``tasks``,
    the original list)."""
    drawn = draw(tasks, len(nodes), seed, arrival, capacity_milli(nodes))
    cluster = Cluster.of(nodes)
    mix = trace_mix(tasks)
    if policy == "cpsat-batch":
        batch = batch or BatchOptions(seed=seed)
        result = run_batched(
            policy, nodes, drawn.tasks, drawn.node_rank, mix, engine_options(tasks, batch),
            batch.size, batch.engine, seed, arrival, progress, batch.per_shape, batch.copies,
            batch.pin,
        )  # fmt: skip
    else:
        chosen: Policy
        if policy == "fgd":
            chosen = Fgd()
        elif policy == "volcano":
            chosen = VolcanoDefault(cluster, seed)
        else:
            chosen = {"random": random_policy, "dotprod": dotprod, "bestfit": bestfit}[policy]
        result = run_online(chosen, policy, nodes, drawn.tasks, drawn.node_rank, mix, seed, arrival)
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
