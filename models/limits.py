"""Work limits: snapshots larger than the engines can finish are refused or warned about at
validation, with the number that matters, rather than left to run without end.

The greedy engine, like Volcano's allocate action, scans the nodes for each pod, so its work
grows with pods × nodes: 15 CPU s for shape L (2,522 pods × 1,280 nodes, 3.2 M pairs;
docs/BENCHMARKS.md), about 5 µs a pair, and 367 s of wall time for XL (45 M pairs). CP-SAT's
model grows faster still, but it stops at its time limit and falls back to the greedy plan,
so greedy's scan is what bounds a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import Diagnostics, obj_name

if TYPE_CHECKING:
    from .instance import Instance

MAX_PODS = 200_000
"""Four times the 50,000 pods of the largest snapshot the loader is tuned for."""
MAX_NODES = 25_000
"""Five times the largest generated cluster (XL, 5,000 nodes)."""
WARN_PAIRS = 20_000_000
"""Greedy needs minutes from here on: XL (8,930 pods × 5,000 nodes, 45 M pairs) took 367 s of
wall time under ``nice`` on the shared 2-core machine (``vcopt solve --engine greedy``)."""
MAX_PAIRS = 1_000_000_000
"""At about 5 µs a pair, more than an hour of greedy scanning: no run would finish."""
SECONDS_PER_PAIR = 5e-6


def check_limits(instance: Instance, diag: Diagnostics) -> None:
    obj = obj_name("Instance", instance.name)
    pods = sum(t.replicas for j in instance.jobs for t in j.tasks)
    nodes = len(instance.nodes)
    pairs = pods * nodes
    if pods > MAX_PODS:
        diag.error(obj, "jobs", f"{pods:,} pods is more than the {MAX_PODS:,} the engines handle")
    if nodes > MAX_NODES:
        diag.error(
            obj, "nodes", f"{nodes:,} nodes is more than the {MAX_NODES:,} the engines handle"
        )
    if pods > MAX_PODS or nodes > MAX_NODES:
        return
    estimate = f"about {pairs * SECONDS_PER_PAIR / 60:,.0f} minutes of greedy scanning"
    if pairs > MAX_PAIRS:
        diag.error(
            obj,
            "jobs",
            f"{pods:,} pods × {nodes:,} nodes = {pairs:,} pairs, more than {MAX_PAIRS:,}: "
            f"{estimate}",
        )
    elif pairs > WARN_PAIRS:
        diag.warn(obj, "jobs", f"{pods:,} pods × {nodes:,} nodes = {pairs:,} pairs: {estimate}")
