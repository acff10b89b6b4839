"""The ``vcopt simulate`` command: its options, their checks, and one run per engine on the
same timeline (per engine and what-if variant with ``--what-if``), written out at the end (the
command module only loads the input and maps the outcome to an exit code)."""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from models.errors import InputError, Problem
from models.golang import parse_go_duration
from models.instance import Instance
from models.io.values import as_utc, read_datetime

from ..atomic import write_all
from ..options import OptionError, SolveOptions
from ..solve import ENGINES
from .cycle import InvalidState
from .results import jobs_csv, series_csv, table, to_json
from .variants import Scenario, Setup, load_what_if, run_on_dask, simulation_png

OPTIMIZER = "cpsat"
"""The engine ``--optimize-every`` runs periodically."""

__all__ = ["InvalidState", "add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``simulate`` beside the instance files."""
    p.add_argument(
        "--engines",
        default="greedy",
        help="engines to run on the same timeline, comma-separated: greedy (Volcano every "
        "cycle), cpsat (CP-SAT every cycle, greedy as hint and floor); default greedy",
    )
    p.add_argument(
        "--optimize-every",
        metavar="DURATION",
        help="cpsat runs CP-SAT only on cycles at least this long (simulated time, a Go "
        "duration) after its last CP-SAT cycle and greedy on the cycles between, a periodic "
        "optimiser beside Volcano; the run is named cpsat@DURATION",
    )
    p.add_argument(
        "--until",
        metavar="TIME",
        help="stop here: an RFC 3339 time, or a Go duration after now (default: when nothing "
        "can change any more)",
    )
    p.add_argument(
        "--cycle-limit",
        type=float,
        default=10.0,
        metavar="S",
        help="wall-clock seconds of each cpsat cycle (default 10)",
    )
    p.add_argument(
        "--schedule-period",
        default="1s",
        metavar="DURATION",
        help="the least time between two cycles, Volcano's --schedule-period (default 1s)",
    )
    p.add_argument(
        "--grace-period",
        default="30s",
        metavar="DURATION",
        help="how long an evicted pod goes on holding its node, resources and GPUs before it "
        "is gone, Kubernetes' terminationGracePeriodSeconds (default 30s, Kubernetes' "
        "default; 0: the room is free at once)",
    )
    p.add_argument(
        "--max-evictions",
        type=int,
        metavar="N",
        help="each cpsat cycle evicts at most N running pods (default: no cap; Volcano's "
        "greedy cycles keep their own evictions)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="a job that loses its gang keeps the work done (checkpointing); default: it "
        "restarts from scratch",
    )
    p.add_argument("--seed", type=int, default=0, help="random seed of both engines (default 0)")
    p.add_argument(
        "--what-if",
        metavar="SWEEP",
        help="also simulate each variant of this sweep file (the format vcopt sweep reads: "
        "nodes added or removed, queues, TDM windows, topology limits, plugin arguments) on "
        "the same jobs and arrivals, with every engine, on Dask; the instance as given is "
        "variant base",
    )
    p.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run the simulations on the Dask scheduler at this address (default: a local "
        "cluster of two worker processes when there are variants, else in this process)",
    )
    p.add_argument(
        "--no-verify", action="store_true", help="do not verify each cycle's plan (faster)"
    )
    p.add_argument(
        "--jobs",
        dest="jobs_out",
        metavar="CSV",
        help="write one row per job and engine here (Parquet when the name ends in .parquet)",
    )
    p.add_argument(
        "--series",
        metavar="CSV",
        help="write the time series (GPUs allocated, pending and running jobs) here (Parquet "
        "when the name ends in .parquet)",
    )
    p.add_argument("--json", help="write the summaries, the jobs and the series as JSON here")
    p.add_argument(
        "--plot",
        metavar="PNG",
        help="draw GPUs allocated, pending jobs, queue shares and waits per engine here",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no warnings, no progress")


@dataclass(frozen=True)
class Settings:
    """The checked options a run needs beside the instance."""

    engines: list[str]
    until: datetime | None
    period: timedelta
    optimize_every: timedelta | None
    grace: timedelta


def settings(args: argparse.Namespace, instance: Instance) -> Settings:
    """``--engines``, ``--until``, ``--schedule-period``, ``--optimize-every`` and
    ``--grace-period`` (``--cycle-limit`` checked too), every problem reported at once."""
    problems = []
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = [e for e in engines if e not in ENGINES]
    if unknown or not engines or len(set(engines)) < len(engines):
        problems.append(
            Problem(
                f"must list engines among {', '.join(ENGINES)}, each once, got {args.engines!r}",
                field="--engines",
            )
        )
    until = None
    if args.until is not None:
        when = read_datetime(args.until)
        if when is not None and when.tzinfo is not None:
            until = as_utc(when)
        else:
            try:
                until = instance.now + parse_go_duration(args.until)
            except ValueError:
                until = None
        if until is None or until < instance.now:
            problems.append(
                Problem(
                    "must be an RFC 3339 time with its offset, or a Go duration after now "
                    f"(e.g. 24h), not before now; got {args.until!r}",
                    field="--until",
                )
            )
    period = _duration(args.schedule_period, "--schedule-period", problems)
    grace = _duration(args.grace_period, "--grace-period", problems, zero=True)
    every = None
    if args.optimize_every is not None:
        every = _duration(args.optimize_every, "--optimize-every", problems)
        if OPTIMIZER not in engines:
            problems.append(
                Problem(
                    f"applies to the {OPTIMIZER} engine, which --engines {args.engines!r} "
                    "does not list",
                    field="--optimize-every",
                )
            )
    if not (math.isfinite(args.cycle_limit) and args.cycle_limit > 0):
        problems.append(Problem("must be a number of seconds above 0", field="--cycle-limit"))
    if problems:
        raise InputError(problems)
    assert period is not None and grace is not None  # else a problem was raised
    return Settings(engines, until, period, every, grace)


def _duration(
    text: str, option: str, problems: list[Problem], zero: bool = False
) -> timedelta | None:
    """A Go duration above 0 (or of 0 and more, with ``zero``), or None with the problem
    (naming the value) added."""
    try:
        value = parse_go_duration(text)
    except ValueError as err:
        problems.append(Problem(str(err), field=option))
        return None
    if value < timedelta(0) or (value == timedelta(0) and not zero):
        least = "of 0 or more" if zero else "above 0"
        problems.append(Problem(f"must be a Go duration {least}, got {text!r}", field=option))
        return None
    return value


def run(args: argparse.Namespace, instance: Instance) -> str:
    """Every engine's run on ``instance``'s timeline; the outputs written, the comparison
    table returned. :class:`InvalidState` when a cycle's plan fails verification."""
    chosen = settings(args, instance)
    try:
        options = SolveOptions.of(
            time_limit=args.cycle_limit, seed=args.seed, max_evictions=args.max_evictions
        )
    except OptionError as err:
        raise InputError([Problem(err.message, field=err.option)]) from None
    variants: list[tuple[str | None, Instance]] = [(None, instance)]
    if args.what_if is not None:
        what_if = load_what_if(args.what_if, instance)
        variants = list(what_if.variants)
        for warning in [] if args.quiet else what_if.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    scenarios = []
    for variant, changed in variants:
        for engine in chosen.engines:
            every = chosen.optimize_every if engine == OPTIMIZER else None
            name = engine if every is None else f"{engine}@{args.optimize_every}"
            scenarios.append(Scenario(variant, changed, engine, name, every))
    setup = Setup(
        options, chosen.until, chosen.period, args.resume, not args.no_verify, chosen.grace
    )
    if len(variants) > 1 or args.dask is not None:
        runs = run_on_dask(scenarios, setup, args.dask, None if args.quiet else _finished)
    else:
        runs = [s.run(setup, None if args.quiet else _throttled(_progress)) for s in scenarios]
    outputs: list[tuple[str, str | bytes]] = []
    if args.jobs_out:
        outputs.append((args.jobs_out, _table_file(args.jobs_out, jobs_csv(runs))))
    if args.series:
        outputs.append((args.series, _table_file(args.series, series_csv(runs))))
    if args.json:
        outputs.append((args.json, to_json(runs)))
    if args.plot:
        outputs.append((args.plot, simulation_png(runs, instance.name)))
    write_all(outputs)
    return table(runs)


def _table_file(path: str, csv_text: str) -> str | bytes:
    """The table as written to ``path``: Parquet when the name ends in ``.parquet`` (columns
    typed as pandas reads the CSV), the CSV otherwise."""
    if not path.endswith(".parquet"):
        return csv_text
    import io

    import pandas as pd

    return pd.read_csv(io.StringIO(csv_text)).to_parquet(index=False)


def _progress(at: object, seconds: float, events: int, cycles: int) -> None:
    print(f"simulated {at}  wall {seconds:.1f}s  events {events}  cycles {cycles}", file=sys.stderr)


def _finished(scenario: Scenario, done: int, total: int, seconds: float) -> None:
    """A line per simulation done on Dask: a run there reports nothing until it ends."""
    run = scenario.name if scenario.variant is None else f"{scenario.variant} with {scenario.name}"
    print(f"simulated {run}  ({done} of {total})  wall {seconds:.1f}s", file=sys.stderr)


def _throttled(report: Callable[..., None], every: float = 5.0) -> Callable[..., None]:
    """``report`` at most once every ``every`` wall seconds: a line a cycle would flood."""
    last = [-math.inf]

    def call(*values: object) -> None:
        now = time.perf_counter()
        if now - last[0] >= every:
            last[0] = now
            report(*values)

    return call
