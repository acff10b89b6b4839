"""The Alibaba spot-GPU trace v2026 (GFS, ASPLOS '26) read into vcopt: ``vcopt import spot``.

The trace's node table (``node_info_df.csv``) becomes the cluster, cut into racks of one GPU
model and spines of racks, sizes the user states, since the trace has no network topology. Its
job table (``job_info_df.csv``) becomes a timeline for ``vcopt simulate``: organisations are
queues, a job's workers are a gang, high-priority (HP) jobs outrank spot jobs, which are
preemptable. What the trace leaves out (node memory, device memory, the clock) is filled by
the documented defaults below. The realistic benchmark instances build their clusters with
the same node reading and the same racks (``benchmarks/realistic.py``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from models.errors import shown
from models.gpu import HAMI_COUNT
from models.names import JOB_NAME_MAX, label_value_problem, subdomain_problem
from models.vocabulary import API_VERSION, helm_default_scheduler

from .csv_rows import Row, read_table, utc_text
from .gang_jobs import MAX_WORKERS, gang_job, seconds
from .generate.params import RACK_LABEL
from .trace_import import GPU_MODEL_LABEL, POD_CAPACITY

MODEL_LABEL = GPU_MODEL_LABEL
"""The node label naming a node's GPU model; a job's ``gpu_model`` selects on it."""
RACK_SIZE = 15
"""Default nodes per rack (``--rack-size``)."""
RACKS_PER_SPINE = 8
"""Default racks per spine (``--racks-per-spine``)."""
MEMORY_MIB = {
    "A10": 24576,
    "A100-SXM4-80GB": 81920,
    "A800-SXM4-80GB": 81920,
    "H800": 81920,
    "GPU-series-1": 32768,
    "GPU-series-2": 98304,
}
"""Device memory per model; the v2026 table gives none, and its GPU-series models are
anonymised (their figures are placeholders: the trace's jobs ask for whole GPUs only). A node
of another model gets its GPUs as a plain ``nvidia.com/gpu`` count, without devices."""
MEMORY_GI_PER_CPU = 8
"""Node memory, which the table does not give: 8 GiB per vCPU."""
HIGH = {"name": "high", "value": 1000}
LOW = {"name": "low", "value": 10}
ACTIONS = "enqueue, allocate, preempt, backfill"
"""``preempt``: an HP job evicts spot pods (lower priority, preemptable) in its queue."""
TRACE_START = "2026-01-01T00:00:00Z"
"""The instant of submit time 0. The trace gives seconds after its first job only; a fixed
instant makes the same files the same instance everywhere."""
NODE_COLUMNS = ("gpu_model", "gpu_capacity_num", "cpu_num", "node_name")
JOB_COLUMNS = (
    "job_name",
    "organization",
    "gpu_model",
    "cpu_request",
    "gpu_request",
    "worker_num",
    "submit_time",
    "duration",
    "job_type",
)
MAX_NODE_GPUS = 64
MAX_NODE_CPUS = 100_000
MAX_NODE_NUMBER = 10**9
MAX_WORKER_CPUS = Decimal(MAX_NODE_CPUS)
JOB_TYPES = {"hp": True, "spot": False}
"""``job_type`` (any case) → whether the job is high-priority."""


@dataclass(frozen=True)
class Machine:
    """One node of a trace's list, as the instance needs it: its document, and its GPU model
    and count, by which racks are cut."""

    name: str
    model: str
    gpus: int
    doc: dict[str, Any]


# -- the cluster --------------------------------------------------------------------------------


def read_nodes(path: str | Path) -> list[Machine]:
    """The nodes of a ``node_info_df.csv``, by node number (the table's ``node_name``), named
    ``spot-node-<number>``. Raises InputError naming the file, line and column of every bad
    cell."""
    table = read_table(path, NODE_COLUMNS, "node_name")
    seen: dict[int, int] = {}
    found = []
    for row in table.rows:
        number = row.integer("node_name", 0, MAX_NODE_NUMBER)
        model = _model(row)
        gpus = row.integer("gpu_capacity_num", 0, MAX_NODE_GPUS)
        cpus = row.integer("cpu_num", 1, MAX_NODE_CPUS)
        if number is not None and number in seen:
            row.fail("node_name", f"node {number} is also on line {seen[number]}")
        elif number is not None:
            seen[number] = row.line
        if number is not None and model is not None and gpus is not None and cpus is not None:
            found.append((number, model, gpus, cpus))
    if not table.rows:
        table.fail("no node rows: nothing to place jobs on")
    table.check()
    return [_machine(*node) for node in sorted(found)]


def _model(row: Row) -> str | None:
    model = row.text("gpu_model")
    problem = label_value_problem(model) if model else "required: the GPU model"
    if problem:
        row.fail("gpu_model", problem)
        return None
    return model


def _machine(number: int, model: str, gpus: int, cpus: int) -> Machine:
    name = f"spot-node-{number:04d}"
    allocatable: dict[str, Any] = {
        "cpu": str(cpus),
        "memory": f"{cpus * MEMORY_GI_PER_CPU}Gi",
        "pods": POD_CAPACITY,
    }
    doc: dict[str, Any] = {"name": name, "labels": {MODEL_LABEL: model}, "allocatable": allocatable}
    if model not in MEMORY_MIB:
        allocatable[HAMI_COUNT] = gpus
    elif gpus:
        doc["gpus"] = {"count": gpus, "type": f"NVIDIA-{model}", "memory": MEMORY_MIB[model]}
    return Machine(name, model, gpus, doc)


def topology(
    machines: Sequence[Machine], rack_size: int, racks_per_spine: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The node documents, each labelled with its rack, and the HyperNodes: racks (tier 1) of
    at most ``rack_size`` nodes of one model (a model's nodes, by name, split into racks of
    near-equal size), spines (tier 2) of at most ``racks_per_spine`` racks of one model."""
    by_model: dict[str, list[Machine]] = {}
    for m in sorted(machines, key=lambda m: (m.model, m.name)):
        by_model.setdefault(m.model, []).append(m)
    rack_of: dict[str, str] = {}
    racks: list[dict[str, Any]] = []
    spines: list[dict[str, Any]] = []
    for members in by_model.values():
        count = math.ceil(len(members) / rack_size)
        names_here = []
        for r in range(count):
            rack = f"rack-{len(racks) + 1:03d}"
            names_here.append(rack)
            for m in members[r * len(members) // count : (r + 1) * len(members) // count]:
                rack_of[m.name] = rack
            selector = {"labelMatch": {"matchLabels": {RACK_LABEL: rack}}}
            racks.append(
                {
                    "name": rack,
                    "tier": 1,
                    "tierName": "rack",
                    "members": [{"type": "Node", "selector": selector}],
                }
            )
        per_spine = math.ceil(count / math.ceil(count / racks_per_spine))
        for s in range(0, count, per_spine):
            members_here = [
                {"type": "HyperNode", "selector": {"exactMatch": {"name": rack}}}
                for rack in names_here[s : s + per_spine]
            ]
            spine = f"spine-{len(spines) + 1:02d}"
            spines.append({"name": spine, "tier": 2, "tierName": "spine", "members": members_here})
    nodes = []
    for m in machines:
        doc = dict(m.doc)
        doc["labels"] = {**doc["labels"], RACK_LABEL: rack_of[m.name]}
        nodes.append(doc)
    return nodes, racks + spines


def scheduler(actions: str) -> dict[str, Any]:
    """Volcano's Helm-chart tiers with ``capacity`` for the organisations' deserved shares,
    HAMi GPU sharing (binpack device order) and network topology."""
    helm = helm_default_scheduler()
    second = [
        {"name": "overcommit"},
        {"name": "drf", "enablePreemptable": False},
        {"name": "predicates"},
        {"name": "capacity"},
        {"name": "nodeorder"},
        {"name": "binpack"},
        {
            "name": "deviceshare",
            "arguments": {"deviceshare.VGPUEnable": True, "deviceshare.SchedulePolicy": "binpack"},
        },
        {"name": "network-topology-aware"},
    ]
    return {"actions": actions, "tiers": [helm["tiers"][0], {"plugins": second}]}


# -- the jobs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpotJob:
    """One row of the job table; ``cpu`` and ``gpus`` are per worker."""

    name: str
    organization: str
    model: str
    cpu: Decimal
    gpus: int
    workers: int
    submit: Decimal
    duration: Decimal
    high_priority: bool

    @property
    def queue(self) -> str:
        return f"org-{object_name(self.organization)}"

    @property
    def demand(self) -> int:
        return self.gpus * self.workers


def read_jobs(path: str | Path, models: Collection[str]) -> list[SpotJob]:
    """The rows of a job table, in file order; ``models`` are the node list's GPU models."""
    seen: dict[str, int] = {}
    table = read_table(path, JOB_COLUMNS, "job_name")
    return table.built(lambda row: _job(row, models, seen), "job")


def object_name(text: str) -> str:
    """``text`` as a Kubernetes object name: the trace writes names and organisations as it
    likes (capitals, underscores), a cluster does not; lower case, and every run of other
    characters a single ``-``, trimmed."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")


def _job(row: Row, models: Collection[str], seen: dict[str, int]) -> SpotJob | None:
    """The job of one row, or None when a cell is bad (each said on the row). Names and
    organisations become object names (:func:`object_name`); two rows whose names become
    the same are refused."""
    count = len(row.problems)
    written = row.text("job_name")
    name = object_name(written)
    problem = subdomain_problem(name, JOB_NAME_MAX) if written else "required: the job's name"
    if problem:
        row.fail("job_name", f"makes the job name {shown(name)}, which is {problem}")
    elif name in seen:
        row.fail("job_name", f"job {name} is also on line {seen[name]}")
    else:
        seen[name] = row.line
    organization = row.text("organization")
    queue = f"org-{object_name(organization)}"
    problem = subdomain_problem(queue) if organization else "required: the organisation"
    if problem:
        row.fail("organization", f"makes the queue name {shown(queue)}, which is {problem}")
    model = row.text("gpu_model")
    if model and model not in models:
        row.fail(
            "gpu_model", f"no node has this GPU model (the nodes': {', '.join(sorted(models))})"
        )
    cpu = row.number("cpu_request", MAX_WORKER_CPUS)
    gpus = row.integer("gpu_request", 0, MAX_NODE_GPUS)
    workers = row.integer("worker_num", 1, MAX_WORKERS)
    submit = row.seconds("submit_time")
    duration = row.seconds("duration")
    kind = JOB_TYPES.get(row.text("job_type").lower())
    if kind is None:
        row.fail("job_type", f'expected HP or Spot, got "{shown(row.text("job_type"))}"')
    if len(row.problems) > count:
        return None
    assert cpu is not None and gpus is not None and workers is not None and kind is not None
    assert submit is not None and duration is not None
    return SpotJob(name, organization, model, cpu, gpus, workers, submit, duration, kind)


def queues(jobs: Sequence[SpotJob], gpus: int) -> list[dict[str, Any]]:
    """One queue per organisation, by name, deserving the cluster's GPUs in proportion to
    the GPUs its jobs request (workers × GPUs per worker), rounded down."""
    demand: Counter[str] = Counter()
    for job in jobs:
        demand[job.queue] += job.demand
    total = sum(demand.values())
    out = []
    for name in sorted({job.queue for job in jobs}):
        queue: dict[str, Any] = {"name": name}
        if total:
            queue["deserved"] = {HAMI_COUNT: gpus * demand[name] // total}
        out.append(queue)
    return out


def _span(value: Decimal) -> timedelta:
    return timedelta(seconds=float(value))


def job_doc(job: SpotJob, first: Decimal) -> dict[str, Any]:
    """The job's gang: ``worker_num`` workers of ``cpu_request`` CPUs and ``gpu_request``
    whole GPUs each, on nodes of its model; it arrives ``submit_time − first`` seconds after
    ``now`` and runs ``duration`` seconds. A spot job is preemptable; an HP job says it is
    not (Volcano reads a pod without the annotation as preemptable), as its SLO is strict."""
    resources: dict[str, Any] = {"cpu": format(job.cpu.normalize(), "f")}
    if job.gpus:
        resources[HAMI_COUNT] = job.gpus
    timeline: dict[str, Any] = {"duration": seconds(_span(job.duration))}
    if job.submit > first:
        timeline["arrival"] = f"{seconds(_span(job.submit - first))}s"
    return gang_job(
        job.name,
        job.queue,
        job.workers,
        resources,
        priority=(HIGH if job.high_priority else LOW)["name"],
        selector={MODEL_LABEL: job.model} if job.model else None,
        preemptable=not job.high_priority,
        timeline=timeline,
    )


def import_spot(
    nodes_csv: str | Path,
    jobs_csv: str | Path | None = None,
    rack_size: int = RACK_SIZE,
    racks_per_spine: int = RACKS_PER_SPINE,
) -> dict[str, Any]:
    """A compact instance: the node table's cluster with its racks and spines and, given a
    job table, its jobs in submit order (file order among equal times), ``now`` being the
    first submit time."""
    machines = read_nodes(nodes_csv)
    jobs = read_jobs(jobs_csv, {m.model for m in machines}) if jobs_csv is not None else []
    jobs.sort(key=lambda j: j.submit)
    nodes, hypernodes = topology(machines, rack_size, racks_per_spine)
    first = min((j.submit for j in jobs), default=Decimal(0))
    start = datetime.fromisoformat(TRACE_START.replace("Z", "+00:00"))
    stem = Path(jobs_csv if jobs_csv is not None else nodes_csv).stem
    doc: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "Instance",
        "metadata": {"name": f"spot-{stem}"},
        "now": utc_text(start + _span(first)),
        "timezone": "UTC",
        "scheduler": scheduler(ACTIONS),
        "priorityClasses": [dict(HIGH), dict(LOW)],
        "nodes": nodes,
        "hypernodes": hypernodes,
    }
    if jobs:
        doc["queues"] = queues(jobs, sum(m.gpus for m in machines))
        doc["jobs"] = [job_doc(j, first) for j in jobs]
    return doc
