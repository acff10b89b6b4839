"""How fast ``vcopt simulate`` runs a generated cluster over a stretch of time.

The generated instance (``vcopt generate``) gets a timeline: every pending job arrives at a
uniformly drawn time within ``--hours`` and gets a duration drawn log-uniformly between 10 min
and 8 h (running jobs keep the generator's duration, else 4 h, from ``now``). Prints nodes,
jobs, events, cycles, wall seconds and events per second.

    .venv/bin/python benchmarks/simulate.py --shape S --hours 24 --seed 0
"""

from __future__ import annotations

import argparse
import math
import random
import time
from datetime import timedelta

from models.io import from_dict
from optimizer.generate import generate
from optimizer.options import SolveOptions
from optimizer.simulate import simulate


def timeline(doc: dict, hours: float, rng: random.Random) -> dict:
    for job in doc["jobs"]:
        if job.get("running"):
            job.setdefault("duration", "4h")
            continue
        job["arrival"] = f"{round(rng.uniform(0, hours * 3600))}s"
        minutes = math.exp(rng.uniform(math.log(10), math.log(480)))
        job["duration"] = f"{round(minutes)}m"
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shape", default="S")
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--load", type=float, default=1.3)
    parser.add_argument("--no-verify", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    doc = timeline(generate(args.shape, args.seed, args.load), args.hours, rng)
    instance = from_dict(doc, f"generated-{args.shape}")
    until = instance.now + timedelta(hours=args.hours)
    started = time.perf_counter()
    run = simulate(
        instance, "greedy", SolveOptions(quiet=True), until=until, check=not args.no_verify
    )
    wall = time.perf_counter() - started
    print(
        f"shape {args.shape}: {len(instance.nodes)} nodes, {len(instance.jobs)} jobs, "
        f"{args.hours:g} h, verify {'off' if args.no_verify else 'on'}: "
        f"{run.events} events, {run.cycles} cycles, {wall:.1f} s wall, "
        f"{run.events / wall:.1f} events/s, {run.cycles / wall:.2f} cycles/s"
    )


if __name__ == "__main__":
    main()
