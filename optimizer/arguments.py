"""The options several ``vcopt`` commands share: input files, the solver's options, and how
an answer about one plan is read. Declared once, so every command spells an option alike, and
read once: :func:`solve_options` turns a command's options into the engines' options."""

from __future__ import annotations

import argparse

from models.errors import InputError, Problem
from models.load import STDIN

from .options import (
    OBJECTIVES,
    STRATEGIES,
    OptionError,
    SolveOptions,
    parse_queue_budgets,
    parse_weights,
)
from .solve import ENGINES
from .typical_mix import load_mix


def solver_arguments(p: argparse.ArgumentParser) -> None:
    """The solve options. Each defaults to None, "not given": :func:`solve_options` starts
    from ``--preset`` (or the options' own defaults) and lets what is given override it, so a
    switch has both spellings (``--bound``/``--no-bound``) to override a preset either way."""
    p.add_argument(
        "--preset",
        metavar="FILE",
        help="solve options from a TOML file ([search], [objective], [disruption]); the "
        "options given here override it",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        help="wall-clock seconds for the whole solve, every phase in (default 30)",
    )
    p.add_argument("--workers", type=int, help="CP-SAT search workers (default 2)")
    p.add_argument("--seed", type=int, help="random seed of both engines (default 0)")
    p.add_argument(
        "--deterministic",
        action=argparse.BooleanOptionalAction,
        help="reproducible CP-SAT search (default off)",
    )
    p.add_argument("--gap", type=float, help="stop CP-SAT at this relative gap")
    p.add_argument(
        "--objective",
        choices=OBJECTIVES,
        help="CP-SAT stages solved one after another, or as one weighted sum "
        "(default lexicographic)",
    )
    p.add_argument(
        "--strategy",
        choices=STRATEGIES,
        help="one model, or part by part then large-neighbourhood rounds; auto picks by size "
        "(default auto)",
    )
    p.add_argument(
        "--aggregate",
        action=argparse.BooleanOptionalAction,
        help="one CP-SAT node class per class of interchangeable nodes (default); "
        "--no-aggregate: one per node (slow; checks the exact class reduction)",
    )
    p.add_argument(
        "--weights",
        help="per-stage weights, e.g. work=1,packing=0; fragmentation=1 switches on FGD's "
        "fragmentation stage",
    )
    p.add_argument(
        "--typical-mix",
        metavar="FILE",
        help="typical-task mix of the fragmentation stage (YAML list; default: the instance's "
        "own pods)",
    )
    p.add_argument(
        "--tdm-lookahead",
        action=argparse.BooleanOptionalAction,
        help="keep jobs off revocable nodes whose window closes before the job's duration ends "
        "(default off)",
    )
    p.add_argument(
        "--max-evictions",
        type=int,
        help="CP-SAT evicts at most this many running pods (greedy follows Volcano, which has "
        "no cap: a breach is reported)",
    )
    p.add_argument(
        "--queue-eviction-budget",
        help="per-queue eviction caps for CP-SAT, e.g. team-a=2,team-b=0 (a queue's budget "
        "counts its subtree)",
    )
    p.add_argument(
        "--bound",
        action=argparse.BooleanOptionalAction,
        help="one CP-SAT worker proves a bound, and so a gap (default); --no-bound: every "
        "worker improves the plan by large-neighbourhood search (more improvement from a good "
        "--start in the same time)",
    )
    p.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="a Dask scheduler (e.g. tcp://10.0.0.5:8786) whose workers solve a decomposed "
        "solve's rounds side by side, one per worker thread (default: in this process)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no warnings, no progress")


def reasons_argument(p: argparse.ArgumentParser) -> None:
    """``--no-reasons``: what ``solve`` and ``compare`` report, not how the engines solve."""
    p.add_argument(
        "--no-reasons",
        action="store_true",
        help="do not name why pending jobs are pending; the search gets that time (up to a "
        "tenth of the limit)",
    )


def solve_options(args: argparse.Namespace) -> SolveOptions:
    """The solve options of a command: its ``--preset``, overridden by the options given on
    the command line; a value no engine can honour is a usage error naming the option."""
    if args.preset == STDIN and STDIN in args.files:
        raise InputError(
            [Problem("standard input is read once: give - as a FILE or here", field="--preset")]
        )
    base = SolveOptions.from_toml(args.preset) if args.preset else SolveOptions()
    try:
        given = {
            "time_limit": args.time_limit,
            "workers": args.workers,
            "seed": args.seed,
            "deterministic": args.deterministic,
            "gap": args.gap,
            "objective": args.objective,
            "weights": None if args.weights is None else parse_weights(args.weights),
            "typical_mix": load_mix(args.typical_mix) if args.typical_mix else None,
            "strategy": args.strategy,
            "aggregate": args.aggregate,
            "tdm_lookahead": args.tdm_lookahead,
            "bound": args.bound,
            "dask": args.dask,
            "max_evictions": args.max_evictions,
            "queue_eviction_budgets": None
            if args.queue_eviction_budget is None
            else parse_queue_budgets(args.queue_eviction_budget),
        }
        return base.replaced(**{k: v for k, v in given.items() if v is not None})
    except OptionError as err:
        raise InputError([Problem(err.message, field=err.option)]) from None


def engine_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="cpsat",
        help="whose plan to read: cpsat or greedy (Volcano's own cycle); default cpsat",
    )
    p.add_argument(
        "--format",
        choices=("text", "yaml", "json"),
        default="text",
        help="how to print the answer (default text)",
    )
    p.add_argument(
        "--no-check",
        action="store_true",
        help="do not solve again with the change applied (faster; no round-trip verdict)",
    )
    solver_arguments(p)


INSTANCE_HELP = (
    "instance file(s): one vcopt YAML, or kubectl get -o yaml dumps read as one (- is "
    "standard input); options may come before, between or after them"
)


def input_arguments(p: argparse.ArgumentParser, *, last: str = "", last_help: str = "") -> None:
    """The instance files, then (``last``) one more positional that ends the list, such as
    the job ``explain`` asks about: ``FILE... JOB``, the last word being the job."""
    p.add_argument("files", nargs="+", metavar="FILE", help=INSTANCE_HELP)
    if last:
        p.add_argument(last.lower(), metavar=last, help=last_help)
    p.add_argument(
        "--scheduler-conf",
        metavar="FILE",
        help="a volcano-scheduler.conf, or the ConfigMap holding it (kubectl get configmap -n "
        "volcano-system volcano-scheduler-configmap -o yaml), that replaces the input's "
        "scheduler configuration",
    )
    p.add_argument(
        "--now", metavar="TIME", help="the snapshot's time, RFC 3339 (TDM windows are read on it)"
    )
