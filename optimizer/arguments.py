"""The options several ``vcopt`` commands share: input files, the solver's options, and how
an answer about one plan is read. Declared once, so every command spells an option alike."""

from __future__ import annotations

import argparse

from .options import OBJECTIVES, STRATEGIES
from .solve import ENGINES


def solver_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--time-limit",
        type=float,
        default=30.0,
        help="wall-clock seconds for the whole solve, every phase in (default 30)",
    )
    p.add_argument("--workers", type=int, default=2, help="CP-SAT search workers (default 2)")
    p.add_argument("--seed", type=int, default=0, help="random seed of both engines (default 0)")
    p.add_argument("--deterministic", action="store_true", help="reproducible CP-SAT search")
    p.add_argument("--gap", type=float, default=0.0, help="stop CP-SAT at this relative gap")
    p.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default="lexicographic",
        help="CP-SAT stages solved one after another, or as one weighted sum "
        "(default lexicographic)",
    )
    p.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="auto",
        help="one model, or part by part then large-neighbourhood rounds; auto picks by size "
        "(default auto)",
    )
    p.add_argument(
        "--no-aggregate",
        action="store_true",
        help="one CP-SAT node class per node (slow; checks the exact class reduction)",
    )
    p.add_argument(
        "--weights",
        default="",
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
        action="store_true",
        help="keep jobs off revocable nodes whose window closes before the job's duration ends",
    )
    p.add_argument(
        "--max-evictions",
        type=int,
        default=None,
        help="CP-SAT evicts at most this many running pods (greedy follows Volcano, which has "
        "no cap: a breach is reported)",
    )
    p.add_argument(
        "--queue-eviction-budget",
        default="",
        help="per-queue eviction caps for CP-SAT, e.g. team-a=2,team-b=0 (a queue's budget "
        "counts its subtree)",
    )
    p.add_argument(
        "--no-reasons",
        action="store_true",
        help="do not name why pending jobs are pending; the search gets that time (up to a "
        "tenth of the limit)",
    )
    p.add_argument(
        "--no-bound",
        action="store_true",
        help="no bound or gap: every CP-SAT worker improves the plan by large-neighbourhood "
        "search (more improvement from a good --start in the same time)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no warnings, no progress")


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
