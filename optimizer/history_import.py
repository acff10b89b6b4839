"""A history of jobs of one's own read into vcopt: ``vcopt import history``.

The cluster comes from an instance file (either form: its nodes, HyperNodes, queues, priority
classes and scheduler configuration); the jobs come from a CSV of what was submitted when, one
row a job (the columns: :data:`REQUIRED`, :data:`OPTIONAL`; docs/INSTANCE.md). The instance
starts at the first submit time, so ``vcopt simulate`` replays the history on that cluster.
Every row is checked against the cluster before anything is built: a queue, priority class or
GPU model the cluster does not have is named on its row and column.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from models.errors import shown
from models.gpu import HAMI_COUNT
from models.instance import Instance
from models.io import from_documents
from models.io.kube import translate
from models.names import JOB_NAME_MAX, subdomain_problem
from models.queues import DEFAULT_QUEUE
from models.resources import CPU, MEMORY
from models.vocabulary import API_VERSION
from models.yamlio import load_documents, read_text

from .csv_rows import Row, read_table, utc_text
from .gang_jobs import MAX_WORKERS, gang_job, seconds
from .generate.params import PRODUCT_LABEL

REQUIRED = ("job", "submit_time", "duration", "gpus")
OPTIONAL = ("queue", "cpu", "memory", "workers", "priority_class", "preemptable", "gpu_model")
MODEL_LABEL = PRODUCT_LABEL
"""Default node label that ``gpu_model`` selects on (``--model-label``): GPU feature
discovery's, which ``vcopt generate`` writes too."""
CLUSTER_FIELDS = (
    "timezone",
    "scheduler",
    "schedulerNames",
    "priorityClasses",
    "namespaces",
    "nodes",
    "nodeGroups",
    "hypernodes",
    "queues",
)
"""What the instance keeps of the cluster file: everything but its clock and its jobs."""
MAX_GPUS = 1024
"""GPUs per worker: far above any node's."""
_SHOWN_NAMES = 10


@dataclass(frozen=True)
class Cluster:
    """The cluster file's compact fields (:data:`CLUSTER_FIELDS`) and what rows are checked
    against: its queues, priority classes and the GPU models its nodes are labelled with."""

    fields: dict[str, Any]
    instance: Instance
    models: frozenset[str]
    model_label: str


def read_cluster(path: str | Path, model_label: str = MODEL_LABEL) -> Cluster:
    """The cluster of an instance file, validated as every command validates it."""
    file = str(path)
    docs = load_documents(read_text(path), file)
    instance = from_documents(docs, file)
    first = docs[0]
    is_compact = isinstance(first, Mapping) and first.get("kind") == "Instance"
    compact = first if is_compact else translate(docs, file).compact
    fields = {key: compact[key] for key in CLUSTER_FIELDS if key in compact}
    models = frozenset(n.labels[model_label] for n in instance.nodes if model_label in n.labels)
    return Cluster(fields, instance, models, model_label)


@dataclass(frozen=True)
class HistoryJob:
    """One row; ``cpu``, ``memory`` and ``gpus`` are per worker, ``cpu`` and ``memory`` as
    written (Kubernetes quantities); ``preemptable`` None when the row does not say."""

    name: str
    queue: str
    submit: datetime
    duration: timedelta
    gpus: int
    workers: int
    cpu: str | None = None
    memory: str | None = None
    priority_class: str | None = None
    preemptable: bool | None = None
    model: str | None = None


def read_jobs(path: str | Path, cluster: Cluster) -> list[HistoryJob]:
    """The rows of a history CSV, in file order, each checked against ``cluster``."""
    seen: dict[str, int] = {}
    table = read_table(path, REQUIRED, "job", OPTIONAL)
    return table.built(lambda row: _job(row, cluster, seen), "job")


def _job(row: Row, cluster: Cluster, seen: dict[str, int]) -> HistoryJob | None:
    """The job of one row, or None when a cell is bad (each said on the row)."""
    count = len(row.problems)
    name = _name(row, seen)
    queue = _queue(row, cluster.instance)
    submit = row.time("submit_time")
    duration = row.duration("duration")
    gpus = row.integer("gpus", 0, MAX_GPUS)
    workers = row.optional_integer("workers", 1, MAX_WORKERS) or 1
    cpu, memory = row.quantity("cpu", CPU), row.quantity("memory", MEMORY)
    priority_class = row.text("priority_class") or None
    if priority_class is not None and priority_class not in cluster.instance.priority_classes:
        known = _listed(cluster.instance.priority_classes)
        row.fail(
            "priority_class", f"no PriorityClass of this name in the cluster (it has: {known})"
        )
    preemptable = row.boolean("preemptable")
    model = _model(row, cluster)
    if len(row.problems) > count:
        return None
    assert submit is not None and duration is not None and gpus is not None
    return HistoryJob(
        name,
        queue,
        submit,
        duration,
        gpus,
        workers,
        cpu,
        memory,
        priority_class,
        preemptable,
        model,
    )


def _name(row: Row, seen: dict[str, int]) -> str:
    name = row.text("job")
    problem = subdomain_problem(name, JOB_NAME_MAX) if name else "required: the job's name"
    if problem:
        row.fail("job", problem)
    elif name in seen:
        row.fail("job", f"job {name} is also on line {seen[name]}")
    else:
        seen[name] = row.line
    return name


def _queue(row: Row, instance: Instance) -> str:
    """A leaf queue of the cluster; ``default`` (the column's default) is made when the
    cluster does not declare it, as for any instance."""
    queue = row.text("queue") or DEFAULT_QUEUE
    tree = instance.queue_tree
    if queue in tree and not tree.is_leaf(queue):
        row.fail("queue", "has child queues: only a leaf queue holds jobs")
    elif queue not in tree and queue != DEFAULT_QUEUE:
        leaves = _listed([q.name for q in instance.queues if tree.is_leaf(q.name)])
        row.fail("queue", f"no queue of this name in the cluster (its leaf queues: {leaves})")
    return queue


def _model(row: Row, cluster: Cluster) -> str | None:
    model = row.text("gpu_model") or None
    if model is None or model in cluster.models:
        return model
    label = cluster.model_label
    if not cluster.models:
        row.fail("gpu_model", f"no node of the cluster has the label {label} (--model-label)")
    else:
        row.fail(
            "gpu_model",
            f"no node of the cluster has it as its {label} label "
            f"(the label's values: {_listed(cluster.models)})",
        )
    return None


def _listed(names: Collection[str]) -> str:
    """Names for a message: sorted, the first few, escaped."""
    ordered = sorted(names)
    listed = ", ".join(shown(n) for n in ordered[:_SHOWN_NAMES])
    more = f", … ({len(ordered)} in all)" if len(ordered) > _SHOWN_NAMES else ""
    return f"{listed}{more}" if listed else "none"


def job_doc(job: HistoryJob, model_label: str, now: datetime) -> dict[str, Any]:
    """The job's gang: ``workers`` pods of ``cpu``, ``memory`` and ``gpus`` whole GPUs each;
    it arrives at ``submit_time`` (no ``arrival`` when that is ``now``)."""
    resources: dict[str, Any] = {}
    if job.cpu is not None:
        resources[CPU] = job.cpu
    if job.memory is not None:
        resources[MEMORY] = job.memory
    if job.gpus:
        resources[HAMI_COUNT] = job.gpus
    timeline: dict[str, Any] = {"duration": seconds(job.duration)}
    if job.submit > now:
        timeline["arrival"] = utc_text(job.submit)
    return gang_job(
        job.name,
        job.queue,
        job.workers,
        resources,
        priority=job.priority_class,
        selector={model_label: job.model} if job.model else None,
        preemptable=job.preemptable,
        timeline=timeline,
    )


def import_history(
    jobs_csv: str | Path, cluster_file: str | Path, model_label: str = MODEL_LABEL
) -> dict[str, Any]:
    """A compact instance: the cluster file's cluster and the CSV's jobs in submit order (file
    order among equal times); ``now`` is the first submit time."""
    cluster = read_cluster(cluster_file, model_label)
    jobs = sorted(read_jobs(jobs_csv, cluster), key=lambda j: j.submit)
    now = jobs[0].submit
    return {
        "apiVersion": API_VERSION,
        "kind": "Instance",
        "metadata": {"name": f"history-{Path(jobs_csv).stem}"},
        "now": utc_text(now),
        **cluster.fields,
        "jobs": [job_doc(j, model_label, now) for j in jobs],
    }
