"""Greedy (Volcano) against CP-SAT on generated clusters of growing size (DESIGN §8), and on
the realistic instances of ``realistic.py`` (shapes ``alibaba-1213`` and ``spot-4278``).

For each shape an instance is generated and loaded, both engines solve it, and both plans are
scored with the same staged objective (work, fairness, topology, packing) and checked by the
verifier. Wall and CPU seconds are both reported: the greedy engine is single-threaded, so its
CPU seconds are its wall time on an idle machine; CP-SAT's time limit is wall-clock, so on a
busy machine it searches less within it. Each shape runs in a fresh process, so that the peak
resident memory reported for it (the process high-water mark, which includes OR-Tools' native
allocations that tracemalloc cannot see) belongs to that shape alone.

    python benchmarks/scale.py --shapes S,M:10,M:60,L:60,XL:120 --seed 1 --workers 2 [--json]
    python benchmarks/scale.py --shapes alibaba-1213:60,spot-4278:120 [--realistic-nodes 300]

A shape may carry its own limit (``M:10``); the others take ``--time-limit``. The CP-SAT row's
wall time is what ``vcopt solve`` makes the user wait: one budget opens before the greedy
baseline, which is the first phase of it, so greedy's seconds count against the limit too.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import resource
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import ortools
import realistic

from models.load import from_dict
from optimizer.budget import Budget
from optimizer.cpsat.compile.data import compile_instance
from optimizer.cpsat.engine import solve as cpsat_solve
from optimizer.cpsat.model.objective import STAGES
from optimizer.cpsat.model.objective import evaluate as stage_values
from optimizer.generate import SHAPES, generate, stats
from optimizer.greedy.engine import solve as greedy_solve
from optimizer.options import SolveOptions
from optimizer.verify import verify


def _peak_mib() -> float:
    """The process's resident-memory high-water mark (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(
    shape: str,
    seed: int,
    load: float,
    time_limit: float,
    workers: int,
    realistic_nodes: int | None = None,
    dask: str | None = None,
) -> dict[str, Any]:
    """Everything reported for one shape; runs in its own process. A realistic shape is built
    by ``realistic.py`` (its load is its own; ``realistic_nodes`` makes a smaller one)."""
    started = time.perf_counter()
    if shape in realistic.names():
        doc = realistic.build(shape, seed, realistic_nodes)
    else:
        doc = generate(shape, seed, load)
    generated = time.perf_counter() - started
    started = time.perf_counter()
    instance = from_dict(doc, f"<generated {shape} seed {seed}>")
    loaded = time.perf_counter() - started
    facts = realistic.describe(instance) if shape in realistic.names() else stats(doc)
    compiled = compile_instance(instance)

    started, started_cpu = time.perf_counter(), time.process_time()
    greedy = greedy_solve(instance, seed)
    greedy_cpu = time.process_time() - started_cpu
    greedy_wall = time.perf_counter() - started
    greedy_peak = _peak_mib()

    options = SolveOptions.of(time_limit=time_limit, workers=workers, seed=seed, dask=dask)
    started_cpu = time.process_time()
    budget = Budget(time_limit, started=started)
    cpsat = cpsat_solve(instance, options, greedy, budget=budget)
    cpsat_cpu = greedy_cpu + time.process_time() - started_cpu
    cpsat_wall = time.perf_counter() - started
    cpsat_peak = _peak_mib()

    rows = []
    for engine, plan, wall, cpu, peak in (
        ("greedy", greedy, greedy_wall, greedy_cpu, greedy_peak),
        ("cpsat", cpsat, cpsat_wall, cpsat_cpu, cpsat_peak),
    ):
        info = plan.solver
        rows.append(
            {
                "engine": engine,
                "status": info.status if info else "",
                "stages": stage_values(compiled, plan).as_dict(),
                "bound": info.bound if info else None,
                "work_bound": info.stage_bounds.get("work") if info else None,
                "gap": info.gap if info else None,
                "wall_seconds": round(wall, 2),
                "cpu_seconds": round(cpu, 2),
                "peak_rss_mib": round(peak),
                "pods_placed": len(plan.placements),
                "evictions": len(plan.evictions),
                "violations": len(verify(instance, plan)),
                "variables": info.variables if info else None,
                "classes": info.classes if info else None,
                "message": info.message if info else "",
            }
        )
    _gains(rows)
    return {
        "shape": shape,
        "time_limit": time_limit,
        "seed": seed,
        "nodes": facts.nodes,
        "gpus": facts.gpus,
        "jobs": facts.jobs,
        "pods": facts.pods,
        "running_pods": facts.running_pods,
        "load": round(facts.load, 3),
        "generate_seconds": round(generated, 2),
        "load_seconds": round(loaded, 2),
        "engines": rows,
    }


def _gains(rows: list[dict[str, Any]]) -> None:
    """The CP-SAT row's work gain over greedy, and the share of the headroom (greedy to the
    proven work bound) it closes."""
    greedy, cpsat = rows[0]["stages"]["work"], rows[1]["stages"]["work"]
    rows[1]["gain_percent"] = round(100 * (cpsat - greedy) / max(1, abs(greedy)), 3)
    bound = rows[1]["work_bound"]
    rows[1]["headroom_percent"] = (
        round(100 * (bound - greedy) / max(1, abs(greedy)), 3) if bound is not None else None
    )
    rows[1]["headroom_closed"] = (
        round((cpsat - greedy) / (bound - greedy), 3)
        if bound is not None and bound > greedy
        else None
    )


def _cell(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1 else f"{value:,.2f}".rstrip("0").rstrip(".")
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table, so the output can be pasted into docs/BENCHMARKS.md as printed."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    lines += [
        "| " + " | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in cells
    ]
    return "\n".join(lines)


def render(results: Sequence[dict[str, Any]]) -> str:
    instances = table(
        ["shape", "nodes", "GPUs", "jobs", "pods", "running", "load", "generate s", "load s"],
        [
            [
                r["shape"],
                r["nodes"],
                r["gpus"],
                r["jobs"],
                r["pods"],
                r["running_pods"],
                r["load"],
                r["generate_seconds"],
                r["load_seconds"],
            ]
            for r in results
        ],
    )
    engines = table(
        [
            "shape",
            "engine",
            "limit s",
            "status",
            *STAGES,
            "work bound",
            "gain %",
            "headroom %",
            "closed",
            "gap",
            "wall s",
            "CPU s",
            "peak RSS MiB",
            "placed",
            "violations",
        ],
        [
            [
                r["shape"],
                e["engine"],
                r["time_limit"] if e["engine"] == "cpsat" else None,
                e["status"],
                *(e["stages"][s] for s in STAGES),
                e["work_bound"],
                e.get("gain_percent"),
                e.get("headroom_percent"),
                e.get("headroom_closed"),
                e["gap"],
                e["wall_seconds"],
                e["cpu_seconds"],
                e["peak_rss_mib"],
                e["pods_placed"],
                e["violations"],
            ]
            for r in results
            for e in r["engines"]
        ],
    )
    notes = [
        f"- {r['shape']} cpsat ({r['time_limit']:g} s): {e['message']} "
        f"({_cell(e['variables'])} variables, {_cell(e['classes'])} node classes)"
        for r in results
        for e in r["engines"]
        if e["engine"] == "cpsat" and e["message"]
    ]
    return "\n\n".join([instances, engines, "\n".join(notes)]).rstrip() + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    kinds = [*SHAPES, *realistic.names()]
    parser.add_argument("--shapes", default="S,M", help="comma-separated, from " + ",".join(kinds))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--load", type=float, default=1.3, help="GPU demand / GPU capacity")
    parser.add_argument("--time-limit", type=float, default=60.0, help="CP-SAT seconds per shape")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--realistic-nodes", type=int, default=None, help="build smaller realistic instances"
    )
    parser.add_argument(
        "--dask", metavar="ADDRESS", help="solve decomposition rounds on this Dask scheduler"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = parser.parse_args(argv)
    runs = []
    for item in (s.strip() for s in args.shapes.split(",") if s.strip()):
        shape, _, limit = item.partition(":")
        if shape not in kinds:
            parser.error(f"unknown shape {shape!r}; choose from {', '.join(kinds)}")
        if shape in realistic.names() and realistic.missing(shape):
            parser.error(f"{shape} needs the trace file {realistic.missing(shape)[0]}")
        try:
            seconds = float(limit) if limit else args.time_limit
        except ValueError:
            parser.error(f"{item!r}: the limit after ':' must be a number of seconds")
        if not seconds > 0:
            parser.error(f"{item!r}: the limit must be positive")
        runs.append((shape, seconds))
    results = []
    spawn = multiprocessing.get_context("spawn")
    for shape, seconds in runs:
        print(f"scale: shape {shape}, limit {seconds:g} s …", file=sys.stderr, flush=True)
        with spawn.Pool(1) as pool:
            results.append(
                pool.apply(
                    measure,
                    (
                        shape,
                        args.seed,
                        args.load,
                        seconds,
                        args.workers,
                        args.realistic_nodes,
                        args.dask,
                    ),
                )
            )
    if args.json:
        env = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "ortools": ortools.__version__,
            "cpus": multiprocessing.cpu_count(),
            "time_limit": args.time_limit,
            "workers": args.workers,
            "dask": args.dask,
        }
        print(json.dumps({"environment": env, "results": results}, indent=2))
    else:
        print(render(results), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
