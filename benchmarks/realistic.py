"""Realistic benchmark instances: real GPU node lists with a topology, queues per organisation
and a cluster that is already busy.

The generated shapes (``vcopt generate``) are racks of identical nodes; production clusters are
not. These instances take the node lists of two published Alibaba traces and give them what
the traces leave out, by fixed rules and one seed:

- ``alibaba-1213``: the 1,213 GPU nodes of the GPU-sharing trace v2023 (seven GPU models,
  1–8 GPUs, 8–128 CPUs), with the trace's own tasks (``vcopt import alibaba``'s arrival
  sequence of one seed, at 1.3 × the GPUs), a share of its whole-GPU tasks turned into gangs,
  some of them network-topology jobs, and each task's QoS class as its priority.
- ``spot-4278``: the 4,278 nodes of the spot-GPU trace v2026 (six GPU models, 1–8 GPUs), whose
  job table is not available, with jobs drawn in its GPU-model mix: high-priority (HP) and
  preemptable spot jobs, single workers and gangs, some network-topology jobs.

Both get racks of at most :data:`RACK_SIZE` nodes of one GPU model, and spines of at most
:data:`RACKS_PER_SPINE` racks of one model; organisations are queues with a deserved share of
the GPUs and a capability above it. The running load is what the greedy engine (Volcano's
cycle) makes of the first :data:`RUNNING_SHARE` of the jobs in arrival order: the pods it binds
become running pods; everything else is pending. So the snapshot is one Volcano would
plausibly be looking at, and the same seed names the same instance on every machine.

A smaller instance of the same kind (``nodes``) takes every k-th node of the list, so that its
GPU-model mix stays the full list's; the work is sized to its GPUs in the same way.

    python benchmarks/realistic.py alibaba-1213 [--seed 1] [--nodes 200] -o ali.yaml
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.gpu import HAMI_CORES, HAMI_COUNT, HAMI_MEMORY_PERCENTAGE
from models.instance import Instance
from models.load import from_dict
from models.vocabulary import API_VERSION
from optimizer import spot_import, trace_import
from optimizer.gang_jobs import gang_job
from optimizer.generate import Stats, write_instance
from optimizer.greedy.engine import solve as greedy_solve
from optimizer.spot_import import Machine

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
"""Where the trace files are (``alibaba-gpu-v2023/``, ``alibaba-spot-gpu-v2026/``)."""
ALIBABA = "alibaba-1213"
SPOT = "spot-4278"
RACK_SIZE = spot_import.RACK_SIZE
RACKS_PER_SPINE = spot_import.RACKS_PER_SPINE
RUNNING_SHARE = 0.6
"""Share of the jobs (in arrival order) offered to the greedy cycle that lays out the running
load; what it binds is running, the rest stays pending."""
LOAD = 1.3
"""Running plus pending GPU demand over the GPUs, as the generated shapes' default."""
MODEL_LABEL = spot_import.MODEL_LABEL
NOW = trace_import.TRACE_RELEASED
PRIORITY_CLASSES = (spot_import.HIGH, {"name": "normal", "value": 100}, spot_import.LOW)
QOS_PRIORITY = {"LS": "high", "Guaranteed": "normal", "Burstable": "normal", "BE": "low"}
"""The v2023 trace's QoS classes: latency-sensitive first, best-effort last."""
ORGANISATIONS = 8
GANG_SHARE = 0.2
"""Share of whole-GPU tasks (v2023) that become gangs of copies of themselves."""
MAX_GANG_GPUS = 64
"""A gang asks for at most this many GPUs, half of a rack of 8-GPU nodes at most."""
SPOT_HP_SHARE = 0.6
SPOT_GANG_SHARE = 0.3
"""Share of spot-trace jobs with more than one worker."""
SPOT_TOPOLOGY_SHARE = 0.4
"""Share of multi-worker jobs on 8-GPU models that ask for a network topology."""


def names() -> tuple[str, ...]:
    return (ALIBABA, SPOT)


TRACE_FILES = {
    ALIBABA: (
        "alibaba-gpu-v2023/openb_node_list_gpu_node.csv",
        "alibaba-gpu-v2023/openb_pod_list_default.csv",
    ),
    SPOT: ("alibaba-spot-gpu-v2026/node_info_df.csv",),
}
"""The trace files each instance is built from, under the data directory."""


def missing(name: str, data: Path = DATA) -> list[Path]:
    """The trace files ``name`` needs that are not in ``data``."""
    return [data / file for file in TRACE_FILES[name] if not (data / file).is_file()]


@dataclass
class Work:
    """One job before the running load is laid out: its document and its GPU demand."""

    doc: dict[str, Any]
    demand: float


# -- the cluster --------------------------------------------------------------------------------


def every_kth(items: Sequence[Any], count: int | None) -> list[Any]:
    """``count`` items spread evenly over ``items`` (all of them when None or ≥ the length)."""
    if count is None or count >= len(items):
        return list(items)
    if count < 1:
        raise ValueError(f"nodes must be ≥ 1, got {count}")
    step = len(items) / count
    return [items[math.floor(i * step)] for i in range(count)]


def organisations(gpus: int, rng: random.Random) -> tuple[list[dict[str, Any]], list[float]]:
    """:data:`ORGANISATIONS` queues whose deserved GPUs split the cluster's unevenly (weights
    falling like 1/rank) and whose capability is 1.2–2 × that; returns them and the share of
    the jobs each submits (its deserved share)."""
    weights = [rng.uniform(0.5, 1.5) / (rank + 1) for rank in range(ORGANISATIONS)]
    total = sum(weights)
    queues = []
    for i, weight in enumerate(weights):
        deserved = max(1, math.floor(gpus * weight / total))
        capability = min(gpus, max(deserved + 1, round(deserved * rng.uniform(1.2, 2.0))))
        queues.append(
            {
                "name": f"org-{i + 1:02d}",
                "deserved": {"nvidia.com/gpu": deserved},
                "capability": {"nvidia.com/gpu": capability},
            }
        )
    return queues, [w / total for w in weights]


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    """Small sizes are common and large ones rare, as in real gang-size mixes."""
    if high <= low:
        return low
    return min(high, max(low, round(2 ** rng.uniform(math.log2(low), math.log2(high)))))


# -- alibaba-1213 ---------------------------------------------------------------------------


def _alibaba_machines(data: Path, count: int | None) -> list[Machine]:
    nodes = trace_import.read_nodes(data / "alibaba-gpu-v2023" / "openb_node_list_gpu_node.csv")
    return [
        Machine(n.name, n.model, n.gpus, trace_import.node_doc(n)) for n in every_kth(nodes, count)
    ]


def _qos(path: Path) -> dict[str, str]:
    with open(path, newline="") as f:
        return {row["name"]: row["qos"] for row in csv.DictReader(f)}


def _alibaba_work(
    data: Path, machines: Sequence[Machine], seed: int, rng: random.Random, weights: list[float]
) -> list[Work]:
    """The trace's tasks in the arrival order of ``seed`` at :data:`LOAD` × the GPUs. A whole-GPU
    task becomes, with probability :data:`GANG_SHARE`, a gang of 2–16 copies of itself (at most
    :data:`MAX_GANG_GPUS` GPUs): half of them hard to a rack, a quarter soft within a spine,
    the rest plain gangs. Jobs are added until their demand reaches the target."""
    pods_csv = data / "alibaba-gpu-v2023" / "openb_pod_list_default.csv"
    qos = _qos(pods_csv)
    capacity = trace_import.MILLI * sum(m.gpus for m in machines)
    drawn = trace_import.draw(
        trace_import.read_tasks(pods_csv), len(machines), seed, LOAD, capacity
    ).tasks
    queues = [f"org-{i + 1:02d}" for i in range(len(weights))]
    target = LOAD * capacity / trace_import.MILLI
    work: list[Work] = []
    demand = 0.0
    for task in drawn:
        if demand >= target:
            break
        resources: dict[str, Any] = {
            "cpu": f"{task.cpu_milli}m",
            "memory": f"{task.memory_mib}Mi",
        }
        if task.num_gpu:
            resources[HAMI_COUNT] = task.num_gpu
        if task.fractional:
            resources[HAMI_MEMORY_PERCENTAGE] = task.gpu_milli // 10
            resources[HAMI_CORES] = task.gpu_milli // 10
        queue = rng.choices(queues, weights)[0]
        priority = QOS_PRIORITY.get(qos.get(task.name.split("-r")[0], ""), "normal")
        replicas, shape = 1, None
        whole = task.num_gpu > 0 and task.gpu_milli == trace_import.MILLI
        if whole and rng.random() < GANG_SHARE:
            replicas = _log_uniform(rng, 2, max(2, min(16, MAX_GANG_GPUS // task.num_gpu)))
            draw = rng.random()
            shape = ("hard", 1) if draw < 0.5 else ("soft", 2) if draw < 0.75 else None
        doc = gang_job(
            task.name,
            queue,
            replicas,
            resources,
            namespace=queue,
            priority=priority,
            task="task",
            topology=shape,
        )
        each = task.gpu_request / trace_import.MILLI
        work.append(Work(doc, replicas * each))
        demand += replicas * each
    return work


# -- spot-4278 ----------------------------------------------------------------------------------


def _spot_machines(data: Path, count: int | None) -> list[Machine]:
    return every_kth(
        spot_import.read_nodes(data / "alibaba-spot-gpu-v2026" / "node_info_df.csv"), count
    )


def _spot_work(machines: Sequence[Machine], rng: random.Random, weights: list[float]) -> list[Work]:
    """Jobs until their GPUs reach :data:`LOAD` × the cluster's. Each asks for one GPU model,
    drawn by that model's share of the GPUs, and whole GPUs of it: one on 1-GPU models, 1, 2,
    4 or 8 where nodes have 8. :data:`SPOT_HP_SHARE` of the jobs are HP (high priority), the
    rest spot (low priority, preemptable). :data:`SPOT_GANG_SHARE` have 2–64 workers (at most
    :data:`MAX_GANG_GPUS` GPUs on multi-GPU models); on 8-GPU models
    :data:`SPOT_TOPOLOGY_SHARE` of those are hard to a rack or, when larger than half a rack's
    GPUs, to a spine. CPU per GPU is drawn up to the node's CPU per GPU."""
    gpus_of: dict[str, int] = {}
    widest: dict[str, int] = {}
    cpu_per_gpu: dict[str, float] = {}
    for m in machines:
        gpus_of[m.model] = gpus_of.get(m.model, 0) + m.gpus
        if m.gpus >= widest.get(m.model, 0):
            widest[m.model] = m.gpus
            cpus = int(str(m.doc["allocatable"]["cpu"]))
            cpu_per_gpu[m.model] = cpus / m.gpus
    models = sorted(gpus_of)
    model_weights = [gpus_of[m] for m in models]
    queues = [f"org-{i + 1:02d}" for i in range(len(weights))]
    target = LOAD * sum(gpus_of.values())
    work: list[Work] = []
    demand = 0.0
    while demand < target:
        model = rng.choices(models, model_weights)[0]
        width = widest[model]
        per_pod = 1 if width == 1 else rng.choice([g for g in (1, 2, 4, 8) if g <= width])
        replicas, shape = 1, None
        if rng.random() < SPOT_GANG_SHARE:
            most = 64 if width == 1 else max(2, MAX_GANG_GPUS // per_pod)
            replicas = _log_uniform(rng, 2, most)
            if width == 8 and rng.random() < SPOT_TOPOLOGY_SHARE:
                rack = RACK_SIZE * width
                shape = ("hard", 1) if replicas * per_pod <= rack // 2 else ("hard", 2)
        hp = rng.random() < SPOT_HP_SHARE
        cpu = max(1, round(per_pod * rng.uniform(0.25, 0.9) * cpu_per_gpu[model]))
        resources = {"cpu": str(cpu), "memory": f"{cpu * 4}Gi", HAMI_COUNT: per_pod}
        queue = rng.choices(queues, weights)[0]
        doc = gang_job(
            f"{'hp' if hp else 'spot'}-{len(work) + 1:05d}",
            queue,
            replicas,
            resources,
            namespace=queue,
            priority="high" if hp else "low",
            topology=shape,
            selector={MODEL_LABEL: model},
            preemptable=None if hp else True,
        )
        work.append(Work(doc, replicas * per_pod))
        demand += replicas * per_pod
    return work


# -- the instance -----------------------------------------------------------------------------


def _instance(
    name: str,
    machines: Sequence[Machine],
    actions: str,
    queues: list[dict[str, Any]],
    jobs: list[dict[str, Any]],
) -> dict[str, Any]:
    nodes, hypernodes = spot_import.topology(machines, RACK_SIZE, RACKS_PER_SPINE)
    return {
        "apiVersion": API_VERSION,
        "kind": "Instance",
        "metadata": {"name": name},
        "now": NOW,
        "timezone": "UTC",
        "scheduler": spot_import.scheduler(actions),
        "priorityClasses": [dict(c) for c in PRIORITY_CLASSES],
        "nodes": nodes,
        "hypernodes": hypernodes,
        "queues": queues,
        "jobs": jobs,
    }


def lay_out_running(doc: dict[str, Any], work: Sequence[Work], seed: int) -> dict[str, Any]:
    """The instance with its running load: the greedy cycle (engine seed ``seed``) on the
    first :data:`RUNNING_SHARE` of the jobs binds some pods; those become running pods of
    their jobs, whose documents move to the front in the order they had."""
    first = math.floor(RUNNING_SHARE * len(work))
    warm = dict(doc, jobs=[w.doc for w in work[:first]])
    plan = greedy_solve(from_dict(warm, f"<{doc['metadata']['name']} warm-up>"), seed)
    bound = {p.pod: p for p in plan.placements}
    jobs = []
    for w in work:
        job = w.doc
        task = job["tasks"][0]
        running = []
        for index in range(task["replicas"]):
            placement = bound.get(f"{job['namespace']}/{job['name']}-{task['name']}-{index}")
            if placement is None:
                continue
            gpus = [
                {"id": g.id, "memory": g.memory, "cores": g.cores} for g in placement.gpus or ()
            ]
            entry: dict[str, Any] = {"index": index, "node": placement.node}
            if gpus:
                entry["gpus"] = gpus
            running.append(entry)
        jobs.append(dict(job, running=running) if running else job)
    return dict(doc, jobs=jobs)


def build(name: str, seed: int = 1, nodes: int | None = None, data: Path = DATA) -> dict[str, Any]:
    """The instance document ``name`` (:func:`names`) of ``seed``; ``nodes`` makes a smaller
    one of the same kind. Raises FileNotFoundError when the trace files are not in ``data``."""
    rng = random.Random(seed)
    makers: dict[str, tuple[Callable[[Path, int | None], list[Machine]], str]] = {
        ALIBABA: (_alibaba_machines, "enqueue, allocate, backfill"),
        SPOT: (_spot_machines, "enqueue, allocate, preempt, backfill"),
    }
    if name not in makers:
        raise ValueError(f"unknown realistic instance {name!r} (choose from {', '.join(names())})")
    read, actions = makers[name]
    machines = read(data, nodes)
    queues, weights = organisations(sum(m.gpus for m in machines), rng)
    if name == ALIBABA:
        work = _alibaba_work(data, machines, seed, rng, weights)
    else:
        work = _spot_work(machines, rng, weights)
    label = name if nodes is None else f"{name}-n{len(machines)}"
    doc = _instance(f"{label}-s{seed}", machines, actions, queues, [])
    return lay_out_running(doc, work, seed)


def load(name: str, seed: int = 1, nodes: int | None = None, data: Path = DATA) -> Instance:
    """The instance ``name`` of ``seed``, built and loaded."""
    return from_dict(build(name, seed, nodes, data), f"<realistic {name} seed {seed}>")


def describe(instance: Instance) -> Stats:
    """What an instance holds, in :func:`optimizer.generate.stats`' terms: GPU demand counts
    a share by its cores (a whole GPU is 1)."""
    gpus = sum(len(n.gpus) for n in instance.nodes)
    demand = 0.0
    running = 0
    jobs = instance.job_by_key
    for pod in instance.pods:
        running += pod.running
        for request in jobs[pod.job].task(pod.task).gpu:
            share = request.cores / 100 if 0 < request.cores < 100 else 1.0
            demand += request.nums * share
    return Stats(
        nodes=len(instance.nodes),
        gpus=gpus,
        jobs=len(instance.jobs),
        pods=len(instance.pods),
        running_pods=running,
        demand=demand,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", choices=names())
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--nodes", type=int, default=None, help="a smaller instance")
    parser.add_argument("-o", "--output", required=True, help="instance file to write")
    args = parser.parse_args(argv)
    absent = missing(args.name)
    if absent:
        parser.error(f"{args.name} needs the trace file {absent[0]}, which is not there")
    if args.nodes is not None and args.nodes < 1:
        parser.error(f"--nodes must be at least 1, got {args.nodes}")
    doc = build(args.name, args.seed, args.nodes)
    write_instance(doc, args.output)
    facts = describe(from_dict(doc, args.output))
    print(
        f"{args.output}: {facts.nodes:,} nodes, {facts.gpus:,} GPUs, {facts.jobs:,} jobs, "
        f"{facts.pods:,} pods ({facts.running_pods:,} running), load {facts.load:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
