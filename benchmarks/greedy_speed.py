"""How fast the greedy engine (one Volcano cycle) runs: on instances/demo.yaml, many times, on
one generated cluster of ``--nodes`` nodes and ``--pods`` pods (default 1,000 / 5,000), on
the generated shapes named by ``--shapes`` (e.g. ``XL``, as ``vcopt generate --shape XL``) and
on the realistic instances named by ``--realistic`` (``alibaba-1213``, ``spot-4278``, built by
``realistic.py``; ``--realistic-nodes`` builds smaller ones of the same kind).

The requirements it checks: the demo well under a second; the 1,000-node cluster and the
realistic ``alibaba-1213`` at ≥ 1,000 pending pods decided (placed or left pending) per
second; a generated shape (the target is set for XL) in ≤ 10 s. ``spot-4278`` is measured
without a requirement. The engine is single-threaded, so its
CPU seconds are what its wall time would be on an idle machine; the verdicts use them,
because a shared machine inflates wall time by however much else is running (both are
printed, with pods per second on each). ``--profile`` adds the cProfile hotspots of the
realistic runs (of the generated run when there are none), so that a slow engine comes with
the functions to look at.

    python benchmarks/greedy_speed.py [--repeat 50] [--nodes 1000 --pods 5000] [--shapes XL]
        [--realistic alibaba-1213,spot-4278] [--seed 1] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import realistic

from models.instance import Instance
from models.load import from_dict, load
from optimizer.generate import CUSTOM, generate
from optimizer.greedy.engine import solve

DEMO = Path(__file__).resolve().parent.parent / "instances" / "demo.yaml"
DEMO_LIMIT = 1.0
PODS_PER_SECOND = 1000.0
"""Pending pods decided per CPU second required on the ``--nodes`` / ``--pods`` cluster."""
SHAPE_LIMIT = 10.0
"""CPU seconds allowed on a generated shape (the target is set for XL)."""
REALISTIC_REQUIRED = frozenset({"alibaba-1213"})
"""The realistic instances held to ``PODS_PER_SECOND``."""


@dataclass(frozen=True)
class Runs:
    wall: list[float]
    cpu: list[float]
    placed: int
    """Pods the (deterministic) plan places."""


def _time(instance: Instance, seed: int, repeat: int) -> Runs:
    wall, cpu = [], []
    placed = 0
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        plan = solve(instance, seed)
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started)
        placed = len(plan.placements)
    return Runs(wall, cpu, placed)


def _pending(instance: Instance) -> int:
    return sum(1 for p in instance.pods if not p.running)


def _row(name: str, instance: Instance, runs: Runs) -> list[str]:
    pending = _pending(instance)
    cpu, wall = statistics.median(runs.cpu), statistics.median(runs.wall)
    return [
        name,
        f"{len(instance.nodes):,}",
        f"{len(instance.pods):,}",
        f"{pending:,}",
        str(len(runs.wall)),
        f"{cpu:.3f}",
        f"{wall:.3f}",
        f"{min(runs.wall):.3f}",
        f"{max(runs.wall):.3f}",
        f"{pending / cpu:,.0f}" if cpu > 0 else "-",
        f"{pending / wall:,.0f}" if wall > 0 else "-",
        f"{runs.placed:,}",
    ]


def _table(rows: Sequence[Sequence[str]]) -> str:
    header = ["instance", "nodes", "pods", "pending", "runs", "median CPU s", "median wall s"]
    header += ["min wall s", "max wall s", "pods/CPU s", "pods/wall s", "pods placed"]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    lines += [
        "| " + " | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    return "\n".join(lines)


def _profile(instance: Instance, seed: int, top: int) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    solve(instance, seed)
    profiler.disable()
    out = io.StringIO()
    report = pstats.Stats(profiler, stream=out)
    report.sort_stats("tottime").print_stats(top)
    report.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=50, help="runs on the demo")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--load", type=float, default=1.3, help="GPU demand / GPU capacity")
    parser.add_argument("--generated-repeat", type=int, default=1, help="runs on the generated")
    parser.add_argument("--shapes", default="", help="generated shapes to run too, e.g. XL")
    parser.add_argument(
        "--realistic",
        default="",
        help="realistic instances to run too: " + ", ".join(realistic.names()),
    )
    parser.add_argument(
        "--realistic-nodes", type=int, default=None, help="build smaller realistic instances"
    )
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the realistic (else generated) runs"
    )
    parser.add_argument("--top", type=int, default=30, help="functions listed by --profile")
    args = parser.parse_args(argv)

    demo = load(DEMO)
    runs = _time(demo, args.seed, args.repeat)
    rows = [_row("instances/demo.yaml", demo, runs)]
    cpu = statistics.median(runs.cpu)
    verdicts = [(f"demo: median {cpu:.3f} CPU s", cpu < DEMO_LIMIT, f"< {DEMO_LIMIT:g} s")]

    doc = generate(CUSTOM, args.seed, args.load, nodes=args.nodes, pods=args.pods)
    name = f"custom {args.nodes}/{args.pods} seed {args.seed}"
    print(f"greedy_speed: running the greedy engine on {name} …", file=sys.stderr, flush=True)
    generated = from_dict(doc, f"<generated {name}>")
    runs = _time(generated, args.seed, args.generated_repeat)
    rows.append(_row(name, generated, runs))
    rate = _pending(generated) / statistics.median(runs.cpu)
    verdicts.append(
        (f"{name}: {rate:,.0f} pods/CPU s", rate >= PODS_PER_SECOND, f"≥ {PODS_PER_SECOND:,.0f}")
    )

    for shape in [s for s in args.shapes.split(",") if s]:
        name = f"shape {shape} seed {args.seed}"
        print(f"greedy_speed: running the greedy engine on {name} …", file=sys.stderr, flush=True)
        instance = from_dict(generate(shape, args.seed, args.load), f"<generated {name}>")
        runs = _time(instance, args.seed, 1)
        rows.append(_row(name, instance, runs))
        cpu = statistics.median(runs.cpu)
        verdicts.append((f"{name}: {cpu:.2f} CPU s", cpu <= SHAPE_LIMIT, f"≤ {SHAPE_LIMIT:g} s"))

    built = []
    for kind in [s for s in args.realistic.split(",") if s]:
        if kind not in realistic.names():
            parser.error(f"unknown realistic instance {kind!r}; choose from {realistic.names()}")
        if realistic.missing(kind):
            parser.error(f"{kind} needs the trace file {realistic.missing(kind)[0]}")
        name = f"{kind} seed {args.seed}"
        if args.realistic_nodes is not None:
            name += f" ({args.realistic_nodes} nodes)"
        print(f"greedy_speed: building {name} …", file=sys.stderr, flush=True)
        instance = realistic.load(kind, args.seed, args.realistic_nodes)
        built.append(instance)
        print(f"greedy_speed: running the greedy engine on {name} …", file=sys.stderr, flush=True)
        runs = _time(instance, args.seed, args.generated_repeat)
        rows.append(_row(name, instance, runs))
        if kind in REALISTIC_REQUIRED:
            rate = _pending(instance) / statistics.median(runs.cpu)
            need = f"≥ {PODS_PER_SECOND:,.0f}"
            verdicts.append((f"{name}: {rate:,.0f} pods/CPU s", rate >= PODS_PER_SECOND, need))

    print(_table(rows))
    print()
    for what, met, requirement in verdicts:
        print(f"- {what} {'meets' if met else 'MISSES'} the requirement {requirement}")
    if args.profile:
        for instance in built or [generated]:
            print()
            print(f"profile of {instance.name}:")
            print(_profile(instance, args.seed, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
