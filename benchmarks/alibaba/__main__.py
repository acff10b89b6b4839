"""The Alibaba GPU-sharing trace benchmark (FGD, ATC '23): allocation ratio per policy and seed.

    python -m benchmarks.alibaba --policy bestfit,fgd --seeds 42-51 --arrival 1.3 --json

Policies: the FGD simulator's ``random``, ``dotprod``, ``bestfit`` and ``fgd`` (online, one task
at a time); ``volcano`` (Volcano's Helm-default scores, one pod per cycle); ``cpsat-batch``
(vcopt's CP-SAT engine on batches of ``--batch`` arrivals, earlier placements fixed: a little
lookahead, track A′); ``cpsat-offline`` (all arrivals known at once, solved by the same engine:
its plan and its proven bound, an upper limit that no online policy is comparable to). With
``--json`` every policy × seed prints one JSON object per line; otherwise a table of means.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from models.fragmentation import COVERAGE
from optimizer import trace_import as ti

from .offline import offline
from .replay import ONLINE_POLICIES, BatchOptions, run_policy

DATA = Path(
    os.environ.get(
        "VCOPT_ALIBABA_DATA",
        Path(__file__).resolve().parents[3] / "shared" / "data" / "alibaba-gpu-v2023",
    )
)
POLICIES = (*ONLINE_POLICIES, "cpsat-batch", "cpsat-offline")
REPORTED = (90, 95, 100, 110, 120, 130)


def coverage(text: str) -> float:
    """A share in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not in (0, 1]")
    return value


def seeds(text: str) -> list[int]:
    """``42,43`` or ``42-51``."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def number(value: float) -> float | None:
    """Rounded, and None where a small run has no log point (JSON has no NaN)."""
    return None if math.isnan(value) else round(value, 3)


def run(args: argparse.Namespace, policy: str, seed: int) -> dict[str, Any]:
    nodes = ti.read_nodes(args.data / "openb_node_list_gpu_node.csv")
    if args.nodes_per_shape:
        nodes = ti.shape_sample(nodes, args.nodes_per_shape)
    tasks = ti.read_tasks(args.data / f"openb_pod_list_{args.trace}.csv")
    capacity = ti.capacity_milli(nodes)
    row: dict[str, Any] = {
        "policy": policy,
        "trace": args.trace,
        "seed": seed,
        "arrival": args.arrival,
        "nodes": len(nodes),
        "gpus": capacity // ti.MILLI,
    }
    if policy == "cpsat-offline":
        drawn = ti.draw(tasks, len(nodes), seed, args.arrival, capacity)
        result = offline(nodes, drawn.tasks, args.time_limit, seed)
        row.update(
            tasks=len(drawn.tasks),
            allocation_ratio=round(100 * result.feasible_milli / capacity, 3),
            upper_bound_ratio=(
                None
                if result.bound_milli is None
                else round(100 * result.bound_milli / capacity, 3)
            ),
            status=result.status,
            note="offline: all arrivals known; an upper limit, not comparable to online",
            wall_seconds=round(result.wall_seconds, 2),
        )
        return row
    batch = BatchOptions(
        size=args.batch,
        time_limit=args.time_limit,
        workers=args.workers,
        seed=seed,
        per_shape=args.per_shape,
        copies=args.copies,
        pin=not args.no_pin,
        bound=not args.no_bound,
        mix_coverage=args.mix_coverage,
    )
    report = None
    if args.progress:

        def report(stats: dict[str, Any]) -> None:
            share = 100 * stats["allocated"] / capacity
            line = f"seed {seed} batch at {stats['first']}: {stats['status']}"
            line += f", {stats['nodes']} nodes, {stats['seconds']:.1f} s, allocated {share:.2f} %"
            print(line, file=sys.stderr, flush=True)

    result = run_policy(policy, nodes, tasks, seed, args.arrival, batch, report)
    row.update(
        tasks=len(result.placed),
        allocation_ratio=round(result.allocation_ratio, 3),
        alloc_at={str(x): number(result.at(x)) for x in REPORTED},
        frag_rate_at={str(x): number(result.frag_rate_at(x)) for x in (0, 20, 50, 80, 95)},
        failed=result.extra["failures"],
        wall_seconds=round(result.wall_seconds, 2),
    )
    if policy == "cpsat-batch":
        stats = result.extra["batches"]
        row["batch"] = args.batch
        row["time_limit"] = args.time_limit
        row["per_shape"] = args.per_shape
        row["copies"] = args.copies
        row["pinned"] = not args.no_pin
        row["workers"] = args.workers
        row["bound"] = not args.no_bound
        row["mix_coverage"] = args.mix_coverage
        row["solver"] = {
            status: sum(1 for s in stats if s["status"] == status)
            for status in sorted({s["status"] for s in stats})
        }
        row["greedy_batches"] = sum(1 for s in stats if s["greedy"])
        row["batch_seconds_max"] = max((s["seconds"] for s in stats), default=0.0)
    return row


def mean_at(rows: list[dict[str, Any]], pct: str) -> float:
    values = [r.get("alloc_at", {}).get(pct) for r in rows]
    return statistics.mean(values) if None not in values else float("nan")  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--policy", default="bestfit,fgd", help=f"comma list of {', '.join(POLICIES)}")
    p.add_argument("--seeds", type=seeds, default=seeds("42-51"))
    p.add_argument("--arrival", type=float, default=1.3)
    p.add_argument("--trace", default="default", help="openb_pod_list_<trace>.csv")
    p.add_argument("--batch", type=int, default=64, help="cpsat-batch: arrivals per batch")
    p.add_argument(
        "--time-limit", type=float, default=6.0, help="seconds per vcopt solve (whole solve)"
    )
    p.add_argument(
        "--per-shape",
        type=int,
        default=8,
        help="cpsat-batch: node states per task shape in a batch's instance (0: every feasible "
        "node)",
    )
    p.add_argument("--copies", type=int, default=2, help="cpsat-batch: nodes of each such state")
    p.add_argument(
        "--no-pin",
        action="store_true",
        help="cpsat-batch: every task may use every node of its batch's instance, not only its "
        "own shape's",
    )
    p.add_argument("--workers", type=int, default=2, help="cpsat-batch: CP-SAT workers")
    p.add_argument(
        "--no-bound",
        action="store_true",
        help="cpsat-batch: no worker proves a bound; every worker improves the batch's start "
        "plan (vcopt solve --no-bound)",
    )
    p.add_argument(
        "--mix-coverage",
        type=coverage,
        default=COVERAGE,
        help="cpsat-batch: share of the original task list the typical mix covers (FGD's 0.95)",
    )
    p.add_argument("--data", type=Path, default=DATA, help="folder of the trace CSVs")
    p.add_argument(
        "--nodes-per-shape", type=int, default=0, help="a smaller cluster (arrivals tuned to it)"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per policy and seed")
    p.add_argument("--progress", action="store_true", help="cpsat-batch: one line per batch")
    args = p.parse_args(argv)
    policies = args.policy.split(",")
    unknown = [x for x in policies if x not in POLICIES]
    if unknown:
        p.error(f"unknown policy {', '.join(unknown)}; choose from {', '.join(POLICIES)}")
    rows = []
    for policy in policies:
        for seed in args.seeds:
            row = run(args, policy, seed)
            rows.append(row)
            if args.json:
                print(json.dumps(row), flush=True)
    if not args.json:
        print(f"{'policy':14} {'seeds':>5} {'alloc@100':>10} {'alloc@130':>10} {'final':>8}")
        for policy in policies:
            mine = [r for r in rows if r["policy"] == policy]
            a100, a130 = (mean_at(mine, x) for x in ("100", "130"))
            final = statistics.mean(r["allocation_ratio"] for r in mine)
            print(f"{policy:14} {len(mine):5d} {a100:10.3f} {a130:10.3f} {final:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
