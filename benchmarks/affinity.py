"""Inter-pod affinity, anti-affinity and topology spread at scale: both engines on a zoned
cluster whose jobs carry the rules real workloads do, every plan verified.

The cluster has ``--zones`` zones of ``--per-zone`` GPU nodes (pool ``a`` in odd zones, ``b``
in even ones). Jobs cycle through four kinds: serving replicas with required anti-affinity on
``kubernetes.io/hostname``; a training gang with required affinity to itself on the zone; a
``DoNotSchedule`` zone spread of two replicas per zone; and pods with only soft terms
(preferred node affinity to pool ``a``, preferred anti-affinity to themselves per node, a
``ScheduleAnyway`` zone spread). The table reports, per engine, pods placed, verifier
violations (must be 0), soft terms satisfied (``soft_terms_satisfied`` of ``soft_terms``),
and CPU and wall seconds (a shared machine inflates wall time; greedy is single-threaded).

    python benchmarks/affinity.py [--zones 8 --per-zone 50 --jobs 80] [--time-limit 30]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from models.instance import Instance
from models.load import from_dict
from optimizer.cpsat.engine import solve as cpsat
from optimizer.greedy.engine import solve as greedy
from optimizer.metrics import measure
from optimizer.options import SolveOptions
from optimizer.plan import Plan
from optimizer.verify import verify

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def _selects(app: str) -> dict[str, Any]:
    return {"matchLabels": {"app": app}}


def _job(j: int, zones: int) -> dict[str, Any]:
    app = f"app{j}"
    task: dict[str, Any] = {"name": "t", "labels": {"app": app}}
    kind = j % 4
    if kind == 0:
        term = {"topologyKey": HOSTNAME, "labelSelector": _selects(app)}
        task.update(
            replicas=6,
            resources={"cpu": "2", "memory": "4Gi"},
            affinity={
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            },
        )
        return {"name": f"serve{j}", "minAvailable": 1, "tasks": [task]}
    if kind == 1:
        term = {"topologyKey": ZONE, "labelSelector": _selects(app)}
        task.update(
            replicas=8,
            resources={"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": 2},
            affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        )
        return {"name": f"train{j}", "tasks": [task]}
    spread = {"maxSkew": 1, "topologyKey": ZONE, "labelSelector": _selects(app)}
    if kind == 2:
        task.update(
            replicas=2 * zones,
            resources={"cpu": "1", "memory": "2Gi"},
            topologySpreadConstraints=[{**spread, "whenUnsatisfiable": "DoNotSchedule"}],
        )
        return {"name": f"spread{j}", "minAvailable": 1, "tasks": [task]}
    pool = {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}
    alone = {"topologyKey": HOSTNAME, "labelSelector": _selects(app)}
    task.update(
        replicas=4,
        resources={"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": 1},
        affinity={
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 30, "preference": pool}
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 50, "podAffinityTerm": alone}
                ]
            },
        },
        topologySpreadConstraints=[{**spread, "whenUnsatisfiable": "ScheduleAnyway"}],
    )
    return {"name": f"soft{j}", "minAvailable": 1, "tasks": [task]}


def scenario(zones: int, per_zone: int, jobs: int) -> Instance:
    groups = [
        {
            "namePrefix": f"z{z}-",
            "count": per_zone,
            "labels": {ZONE: f"z{z}", "pool": "a" if z % 2 else "b"},
            "allocatable": {"cpu": "32", "memory": "128Gi"},
            "gpus": {"count": 4, "type": "NVIDIA-A100", "memory": 81920},
        }
        for z in range(zones)
    ]
    doc = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "metadata": {"name": f"affinity-{zones}x{per_zone}"},
        "now": "2026-11-30T14:00:00Z",
        "nodeGroups": groups,
        "queues": [{"name": "root"}, {"name": "default", "parent": "root"}],
        "jobs": [_job(j, zones) for j in range(jobs)],
    }
    return from_dict(doc, "affinity-benchmark")


def _row(engine: str, instance: Instance, plan: Plan, cpu: float, wall: float) -> str:
    metrics = measure(instance, plan)
    cells = [
        engine,
        f"{len(instance.nodes):,}",
        f"{len(instance.pods):,}",
        f"{len(plan.placements):,}",
        str(len(verify(instance, plan))),
        f"{metrics.soft_terms_satisfied}/{metrics.soft_terms}",
        f"{cpu:.2f}",
        f"{wall:.2f}",
    ]
    return "| " + " | ".join(cells) + " |"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zones", type=int, default=8)
    parser.add_argument("--per-zone", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=80)
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    instance = scenario(args.zones, args.per_zone, args.jobs)
    print("| engine | nodes | pods | placed | violations | soft terms held | cpu s | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    started, started_cpu = time.perf_counter(), time.process_time()
    floor = greedy(instance, 0)
    cpu, wall = time.process_time() - started_cpu, time.perf_counter() - started
    print(_row("greedy", instance, floor, cpu, wall))
    options = SolveOptions.of(time_limit=args.time_limit, workers=args.workers)
    started, started_cpu = time.perf_counter(), time.process_time()
    plan = cpsat(instance, options, floor)
    cpu, wall = time.process_time() - started_cpu, time.perf_counter() - started
    print(_row("cpsat", instance, plan, cpu, wall))
    return 0


if __name__ == "__main__":
    sys.exit(main())
