"""The kinds of ``vcopt import``: the options each reads and the instance each builds.

One command line serves every kind, so an option of another kind (``--arrival`` to a spot
import) is refused by name rather than silently ignored, and a kind's missing input file is
named as its option.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from models.errors import InputError, Problem
from models.names import qualified_name_problem

from .history_import import MODEL_LABEL, import_history
from .spot_import import RACK_SIZE, RACKS_PER_SPINE, import_spot
from .trace_import import GPU_MEMORY_MIB, import_trace
from .trace_input import check_options, check_trace

Built = tuple[dict[str, Any], str]
"""An imported instance document, and the file its problems are named after."""


@dataclass(frozen=True)
class Kind:
    summary: str
    required: tuple[str, ...]
    """Options (argparse dests) the kind needs."""
    optional: dict[str, Any]
    """Options it may take, with their defaults (None: absent unless given)."""
    build: Callable[[argparse.Namespace], Built]


def _alibaba(args: argparse.Namespace) -> Built:
    check_options(args.arrival, args.nodes_per_shape)
    check_trace(args.pods, args.nodes, GPU_MEMORY_MIB)
    doc = import_trace(
        args.pods, args.nodes, args.seed, args.arrival, nodes_per_shape=args.nodes_per_shape
    )
    if not doc["jobs"]:
        raise InputError([Problem("draws no task at this arrival: raise it", field="--arrival")])
    return doc, args.pods


def _spot(args: argparse.Namespace) -> Built:
    problems = [
        Problem(f"must be at least 1, got {value}", field=option(dest))
        for dest in ("rack_size", "racks_per_spine")
        if (value := getattr(args, dest)) < 1
    ]
    if problems:
        raise InputError(problems)
    doc = import_spot(args.nodes, args.jobs, args.rack_size, args.racks_per_spine)
    return doc, args.jobs or args.nodes


def _history(args: argparse.Namespace) -> Built:
    problem = qualified_name_problem(args.model_label)
    if problem:
        raise InputError([Problem(f"not a label key: {problem}", field="--model-label")])
    return import_history(args.jobs, args.cluster, args.model_label), args.jobs


KINDS = {
    "alibaba": Kind(
        "the GPU-sharing trace of FGD (--pods, --nodes)",
        ("pods", "nodes"),
        {"seed": 42, "arrival": 1.3, "nodes_per_shape": None},
        _alibaba,
    ),
    "spot": Kind(
        "the spot-GPU trace v2026 (--nodes, --jobs)",
        ("nodes",),
        {"jobs": None, "rack_size": RACK_SIZE, "racks_per_spine": RACKS_PER_SPINE},
        _spot,
    ),
    "history": Kind(
        "a CSV of jobs run on a cluster of an instance file (--jobs, --cluster)",
        ("jobs", "cluster"),
        {"model_label": MODEL_LABEL},
        _history,
    ),
}


def option(dest: str) -> str:
    """An option as the user types it."""
    return "--" + dest.replace("_", "-")


def default(dest: str) -> Any:
    """The default of an option, for its help."""
    return next(kind.optional[dest] for kind in KINDS.values() if dest in kind.optional)


def imported(args: argparse.Namespace) -> Built:
    """The instance of ``vcopt import <args.source>``: its options checked (a missing one,
    another kind's), its defaults filled in, its files read."""
    kind = KINDS[args.source]
    problems = [
        Problem(f"required by vcopt import {args.source}", field=option(dest))
        for dest in kind.required
        if getattr(args, dest) is None
    ]
    takers: dict[str, list[str]] = {}
    for name, other in KINDS.items():
        for dest in (*other.required, *other.optional):
            takers.setdefault(dest, []).append(name)
    for dest, names in takers.items():
        if args.source not in names and getattr(args, dest) is not None:
            problems.append(
                Problem(
                    f"is an option of vcopt import {' and '.join(names)}, not of {args.source}",
                    field=option(dest),
                )
            )
    if problems:
        raise InputError(problems)
    for dest, value in kind.optional.items():
        if getattr(args, dest) is None:
            setattr(args, dest, value)
    return kind.build(args)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``vcopt import`` beside ``-o``: every kind's, each saying whose it is."""
    p.add_argument(
        "source",
        choices=tuple(KINDS),
        help="; ".join(f"{name}: {kind.summary}" for name, kind in KINDS.items()),
    )
    p.add_argument("--pods", help="alibaba: openb_pod_list_*.csv")
    p.add_argument("--nodes", help="alibaba: openb_node_list_gpu_node.csv; spot: node_info_df.csv")
    p.add_argument(
        "--jobs",
        help="spot: the job table (job_info_df.csv; without it, the cluster alone); "
        "history: the jobs CSV (docs/INSTANCE.md)",
    )
    p.add_argument("--cluster", help="history: the instance file whose cluster runs the jobs")
    p.add_argument(
        "--seed",
        type=int,
        help=f"alibaba: seed of the arrival shuffle (default {default('seed')})",
    )
    p.add_argument(
        "--arrival",
        type=float,
        help=f"alibaba: arrived GPU demand / capacity (default {default('arrival')})",
    )
    p.add_argument(
        "--nodes-per-shape", type=int, help="alibaba: keep this many nodes of each shape"
    )
    p.add_argument(
        "--rack-size",
        type=int,
        help="spot: at most this many nodes, of one GPU model, per rack "
        f"(default {default('rack_size')})",
    )
    p.add_argument(
        "--racks-per-spine",
        type=int,
        help=f"spot: at most this many racks per spine (default {default('racks_per_spine')})",
    )
    p.add_argument(
        "--model-label",
        help="history: the node label a job's gpu_model selects on "
        f"(default {default('model_label')})",
    )
