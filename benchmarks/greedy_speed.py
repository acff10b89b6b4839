"""How fast the greedy engine (one Volcano cycle) runs: on instances/demo.yaml, many times, and
on one generated cluster of ``--nodes`` nodes and ``--pods`` pods (default 1,000 / 5,000).

The requirement it checks: the demo well under a second, the generated instance under a
minute, on 2 cores. The engine is single-threaded, so its CPU seconds are what its wall time
would be on an idle machine; the verdict uses them, because a shared machine inflates wall
time by however much else is running (both are printed). ``--profile`` adds the cProfile
hotspots of the generated run, so that a slow engine comes with the functions to look at.

    python benchmarks/greedy_speed.py [--repeat 50] [--nodes 1000 --pods 5000] [--profile]
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

from models.instance import Instance
from models.load import from_dict, load
from optimizer.generate import CUSTOM, generate
from optimizer.greedy.engine import solve

DEMO = Path(__file__).resolve().parent.parent / "instances" / "demo.yaml"
DEMO_LIMIT = 1.0
GENERATED_LIMIT = 60.0


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


def _row(name: str, instance: Instance, runs: Runs) -> list[str]:
    return [
        name,
        f"{len(instance.nodes):,}",
        f"{len(instance.pods):,}",
        f"{sum(1 for p in instance.pods if not p.running):,}",
        str(len(runs.wall)),
        f"{statistics.median(runs.cpu):.3f}",
        f"{statistics.median(runs.wall):.3f}",
        f"{min(runs.wall):.3f}",
        f"{max(runs.wall):.3f}",
        f"{runs.placed:,}",
    ]


def _table(rows: Sequence[Sequence[str]]) -> str:
    header = ["instance", "nodes", "pods", "pending", "runs", "median CPU s", "median wall s"]
    header += ["min wall s", "max wall s", "pods placed"]
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
    parser.add_argument("--profile", action="store_true", help="cProfile the generated run")
    parser.add_argument("--top", type=int, default=30, help="functions listed by --profile")
    args = parser.parse_args(argv)

    demo = load(DEMO)
    runs = _time(demo, args.seed, args.repeat)
    rows = [_row("instances/demo.yaml", demo, runs)]
    verdicts = [("demo", statistics.median(runs.cpu), DEMO_LIMIT)]

    doc = generate(CUSTOM, args.seed, args.load, nodes=args.nodes, pods=args.pods)
    name = f"custom {args.nodes}/{args.pods} seed {args.seed}"
    print(f"greedy_speed: running the greedy engine on {name} …", file=sys.stderr, flush=True)
    generated = from_dict(doc, f"<generated {name}>")
    runs = _time(generated, args.seed, args.generated_repeat)
    rows.append(_row(name, generated, runs))
    verdicts.append((name, statistics.median(runs.cpu), GENERATED_LIMIT))

    print(_table(rows))
    print()
    for what, seconds, limit in verdicts:
        verdict = "meets" if seconds < limit else "MISSES"
        print(f"- {what}: median {seconds:.3f} CPU s {verdict} the {limit:g} s requirement")
    if args.profile:
        print()
        print(_profile(generated, args.seed, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
