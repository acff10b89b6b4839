"""How much the engine improves on FGD within single batches, from the states FGD's own run
reaches — seconds per question where a replay (``--policy cpsat-batch``) takes minutes, and
free of a replay's compounding, so that a model or parameter change can be judged batch by
batch before a replay confirms it.

    python -m benchmarks.alibaba.probe --seed 42 --at 640,3008,6400 --time-limit 5 \\
        --param cp_model_presolve=true

FGD runs the seed's arrivals one by one; at each ``--at`` arrival the next ``--batch`` tasks
are put to the engine exactly as a replay puts them (neighbourhood, FGD's choices as the start
plan, the replay's options) and set aside. Per batch the table gives the simulator's F (FGD's
fragmentation amount, milli-GPU) after FGD's choices and after the engine's, and the engine's
gain: F saved, at equal allocation (the engine never allocates less than its start plan).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from optimizer import trace_import as ti
from optimizer.solve import solve

from .__main__ import DATA
from .batches import BatchInstances, batch_instance, fgd_lookahead
from .policies import Choice, Fgd, Online
from .replay import BatchOptions, engine_options, new_state
from .trace import trace_mix


@dataclass(frozen=True)
class Probe:
    at: int
    nodes: int
    allocated_fgd: int
    allocated_engine: int
    frag_fgd: float
    frag_engine: float
    status: str
    seconds: float

    @property
    def gain(self) -> float:
        return self.frag_fgd - self.frag_engine


def frag_after(
    state: Online, batch: Sequence[ti.TraceTask], choices: Sequence[Choice | None]
) -> tuple[int, float]:
    """(milli allocated, F) after ``choices`` on a copy of the state."""
    cluster = state.cluster.copy()
    saved = state.classes.of_node.copy()
    allocated = 0
    try:
        for task, choice in zip(batch, choices, strict=True):
            if choice is not None:
                cluster.place(choice[0], task, choice[1])
                state.classes.update(cluster, choice[0])
                allocated += task.gpu_request
        return allocated, state.classes.total_frag()
    finally:
        state.classes.of_node = saved


def probe(
    nodes: Sequence[ti.TraceNode],
    tasks: Sequence[ti.TraceTask],
    seed: int,
    points: Sequence[int],
    batch: BatchOptions,
    parameters: dict[str, Any],
    arrival: float = 1.3,
) -> list[Probe]:
    drawn = ti.draw(tasks, len(nodes), seed, arrival, ti.capacity_milli(nodes))
    state = new_state(nodes, trace_mix(tasks), drawn.node_rank, seed)
    builder = BatchInstances(nodes)
    fgd = Fgd()
    options = engine_options(tasks, batch).replaced(parameters=parameters)
    out: list[Probe] = []
    done = 0
    for at in sorted(points):
        for task in drawn.tasks[done:at]:
            feasible = np.flatnonzero(state.cluster.feasible(task))
            if feasible.size:
                node, devices = fgd(state, task, feasible)
                state.cluster.place(node, task, devices)
                state.classes.update(state.cluster, node)
                builder.place(node, task, devices)
        done = at
        tasks_of = drawn.tasks[at : at + batch.size]
        lookahead = fgd_lookahead(state, tasks_of, fgd)
        instance = batch_instance(
            builder, state, tasks_of, lookahead, fgd, batch.per_shape, batch.copies, batch.pin
        )
        began = time.perf_counter()
        plan = solve(
            instance,
            batch.engine,
            options.replaced(start=builder.plan(instance, tasks_of, lookahead)),
            reasons=False,
        )
        seconds = time.perf_counter() - began
        engine = builder.choices(instance, plan, tasks_of)
        (a_fgd, f_fgd), (a_engine, f_engine) = (
            frag_after(state, tasks_of, c) for c in (lookahead, engine)
        )
        status = plan.solver.status.value if plan.solver else "greedy"
        nodes_in = len(instance.nodes)
        out.append(Probe(at, nodes_in, a_fgd, a_engine, f_fgd, f_engine, status, seconds))
    return out


def table(rows: Sequence[Probe]) -> str:
    """The probe's markdown table and its one-line total."""
    lines = [
        "| at | nodes | status | s | F, FGD | F, engine | gain | milli placed (FGD / engine) |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.at} | {r.nodes} | {r.status} | {r.seconds:.2f} | {r.frag_fgd:,.1f} | "
            f"{r.frag_engine:,.1f} | {r.gain:,.1f} | {r.allocated_fgd:,} / {r.allocated_engine:,} |"
        )
    improved = sum(1 for r in rows if r.gain > 0)
    lines.append(
        f"\nimproved {improved} of {len(rows)} batches; F saved in all: "
        f"{sum(r.gain for r in rows):,.1f} milli"
    )
    return "\n".join(lines)


def parameter(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r}: expected name=value")
    return name, json.loads(value)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=42)
    p.add_argument(
        "--at",
        default="640,1920,3008,5056,6400,7040,7488",
        help="comma list of arrival indices where a batch starts",
    )
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--time-limit", type=float, default=5.0)
    p.add_argument("--per-shape", type=int, default=8)
    p.add_argument("--copies", type=int, default=2)
    p.add_argument("--no-pin", action="store_true", help="tasks not pinned to their shape's nodes")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument(
        "--param",
        type=parameter,
        action="append",
        default=[],
        help="a CP-SAT parameter, name=JSON value (repeatable)",
    )
    p.add_argument(
        "--no-bound",
        action="store_true",
        help="no worker proves a bound; every worker improves the start plan (as --no-bound)",
    )
    p.add_argument("--trace", default="default")
    p.add_argument("--data", type=Path, default=DATA)
    args = p.parse_args(argv)
    try:
        points = [int(x) for x in args.at.split(",")]
    except ValueError:
        p.error(f"--at {args.at!r}: expected a comma list of arrival indices")
    nodes = ti.read_nodes(args.data / "openb_node_list_gpu_node.csv")
    tasks = ti.read_tasks(args.data / f"openb_pod_list_{args.trace}.csv")
    batch = BatchOptions(
        args.batch,
        args.time_limit,
        args.workers,
        args.seed,
        per_shape=args.per_shape,
        copies=args.copies,
        pin=not args.no_pin,
        bound=not args.no_bound,
    )
    rows = probe(nodes, tasks, args.seed, points, batch, dict(args.param))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
