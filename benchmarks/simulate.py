"""How fast ``vcopt simulate`` runs a generated cluster over a stretch of time.

The instance is ``vcopt generate --timeline``'s (docs/SIMULATE.md, "Generated timelines"): the
generated snapshot, its running jobs ending, and the jobs arriving over ``--timeline`` at an
offered load of ``--load``. Greedy decides every cycle for ``--hours`` of simulated time (default:
the whole timeline). Prints nodes, jobs, events, cycles, wall seconds and their rates; progress
lines go to stderr every 10 s of wall time.

    .venv/bin/python benchmarks/simulate.py --shape S --timeline 1d --seed 0
    .venv/bin/python benchmarks/simulate.py --shape custom --nodes 1000 --timeline 7d --load 0.8

The second is the week of a 1,000-node cluster (about 20,000 arriving jobs); it runs for long,
so measure it on an idle machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime, timedelta

from models.io import from_dict
from optimizer.generate import CUSTOM, SHAPES, generate, parse_span
from optimizer.options import SolveOptions
from optimizer.simulate import simulate

PROGRESS_EVERY = 10.0
"""Wall seconds between two progress lines."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shape", default="S", choices=(*SHAPES, CUSTOM))
    parser.add_argument("--nodes", type=int, help="node count of shape custom")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--load", type=float, default=1.3)
    parser.add_argument("--timeline", default="1d", help="span of the arrivals (default 1d)")
    parser.add_argument("--hours", type=float, help="simulated hours (default: the timeline)")
    parser.add_argument("--no-verify", action="store_true")
    args = parser.parse_args()
    try:
        span = parse_span(args.timeline)
        doc = generate(args.shape, args.seed, args.load, nodes=args.nodes, timeline=span)
    except ValueError as err:
        parser.error(str(err))
    instance = from_dict(doc, f"generated-{args.shape}")
    length = span if args.hours is None else timedelta(hours=args.hours)
    last = [time.perf_counter()]

    def progress(at: datetime, wall: float, events: int, cycles: int) -> None:
        if time.perf_counter() - last[0] >= PROGRESS_EVERY:
            last[0] = time.perf_counter()
            print(
                f"simulated {at}  wall {wall:.0f}s  events {events}  cycles {cycles}",
                file=sys.stderr,
            )

    started = time.perf_counter()
    run = simulate(
        instance,
        "greedy",
        SolveOptions(),
        until=instance.now + length,
        check=not args.no_verify,
        progress=progress,
    )
    wall = time.perf_counter() - started
    arriving = len(instance.arrivals)
    began = sum(1 for j in run.jobs if j.start is not None)
    print(
        f"shape {args.shape}: {len(instance.nodes)} nodes, {len(instance.jobs)} jobs at now + "
        f"{arriving} arriving over {args.timeline}, {length.total_seconds() / 3600:g} h simulated, "
        f"verify {'off' if args.no_verify else 'on'}: {began} jobs started, "
        f"{run.events} events, {run.cycles} cycles, {wall:.1f} s wall, "
        f"{run.events / wall:.1f} events/s, {run.cycles / wall:.2f} cycles/s"
    )


if __name__ == "__main__":
    main()
