"""How fast the greedy engine (one Volcano cycle) runs: on instances/demo.yaml, many times, and
on one generated cluster of ``--nodes`` nodes and ``--pods`` pods (default 1,000 / 5,000).

The requirement it checks: the demo well under a second, the generated instance under a
minute, on 2 cores. ``--profile`` adds the cProfile hotspots of the generated run, so that a
slow engine comes with the functions to look at.

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
from pathlib import Path

from models.instance import Instance
from models.load import from_dict, load
from optimizer.generate import CUSTOM, generate
from optimizer.greedy.engine import solve

DEMO = Path(__file__).resolve().parent.parent / "instances" / "demo.yaml"
DEMO_LIMIT = 1.0
GENERATED_LIMIT = 60.0


def _time(instance: Instance, seed: int, repeat: int) -> tuple[list[float], int]:
    """Wall seconds of each run, and the pods the (deterministic) plan places."""
    times = []
    placed = 0
    for _ in range(repeat):
        started = time.perf_counter()
        plan = solve(instance, seed)
        times.append(time.perf_counter() - started)
        placed = len(plan.placements)
    return times, placed


def _row(name: str, instance: Instance, times: Sequence[float], placed: int) -> list[str]:
    return [
        name,
        f"{len(instance.nodes):,}",
        f"{len(instance.pods):,}",
        f"{sum(1 for p in instance.pods if not p.running):,}",
        str(len(times)),
        f"{statistics.median(times):.3f}",
        f"{min(times):.3f}",
        f"{max(times):.3f}",
        f"{placed:,}",
    ]


def _table(rows: Sequence[Sequence[str]]) -> str:
    header = ["instance", "nodes", "pods", "pending", "runs", "median s", "min s", "max s"]
    header.append("pods placed")
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
    times, placed = _time(demo, args.seed, args.repeat)
    rows = [_row("instances/demo.yaml", demo, times, placed)]
    verdicts = [("demo", statistics.median(times), DEMO_LIMIT)]

    doc = generate(CUSTOM, args.seed, args.load, nodes=args.nodes, pods=args.pods)
    name = f"custom {args.nodes}/{args.pods} seed {args.seed}"
    print(f"greedy_speed: running the greedy engine on {name} …", file=sys.stderr, flush=True)
    generated = from_dict(doc, f"<generated {name}>")
    times, placed = _time(generated, args.seed, args.generated_repeat)
    rows.append(_row(name, generated, times, placed))
    verdicts.append((name, statistics.median(times), GENERATED_LIMIT))

    print(_table(rows))
    print()
    for what, seconds, limit in verdicts:
        verdict = "meets" if seconds < limit else "MISSES"
        print(f"- {what}: median {seconds:.3f} s {verdict} the {limit:g} s requirement")
    if args.profile:
        print()
        print(_profile(generated, args.seed, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
