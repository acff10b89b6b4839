"""How the pods of a PodGroup become its tasks, whatever their operator named them.

Operators name a PodGroup's pods in their own ways (Spark ``spark-pi-driver`` and
``spark-pi-3f2a-exec-1``, KubeRay ``raycluster-head-x7k2p``, Kubeflow ``mnist-worker-0``, a
Deployment ``web-7d4b9c-x2kq``), so the pods are grouped by what makes them alike, not by
their names:

1. the ``volcano.sh/task-spec`` annotation (a vcjob's pods) names the task;
2. else a role label the operator writes (:data:`ROLE_LABELS`);
3. else a name ``<podgroup>-<task>-<index>``, the vcjob convention;
4. else pods alike in everything vcopt reads (:func:`~.tasks.likeness`) form one task,
   ``main``.

Pods of one task-spec or role that differ in what vcopt reads split into ``<role>``,
``<role>-2``, … rather than failing; pods named by the vcjob convention come from one
template, so a difference between them stays an error (:meth:`~.tasks.TaskReader.task`).
A task's name is a DNS label derived from its role. Within a task, pods are ordered by the
index their name ends with, else by name, and every pod keeps its cluster name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ...names import LABEL_MAX
from ...vocabulary import TASK_SPEC
from .objects import PodView
from .tasks import INDEX, likeness

LONE_TASK = "main"
"""The task of a pod without a role: a lone pod's, a Deployment's."""
SPARK_ROLE = "spark-role"
RAY_NODE_TYPE = "ray.io/node-type"
RAY_GROUP = "ray.io/group"
ROLE_LABELS = (
    SPARK_ROLE,
    RAY_NODE_TYPE,
    RAY_GROUP,
    "training.kubeflow.org/replica-type",
    "replica-type",
    "tf-replica-type",
    "pytorch-replica-type",
    "app.kubernetes.io/component",
)
"""Pod labels that say which part of a job a pod is, first match wins: Spark's (driver,
executor), KubeRay's (head, worker; ``ray.io/group`` names the worker group), the Kubeflow
training operator's (master, worker, ps…; ``replica-type``, ``tf-replica-type`` and
``pytorch-replica-type`` are its older spellings) and the recommended component label.
Kubeflow's ``job-role`` is not one: it marks the master alone, which ``replica-type`` also
names."""
_NOT_IN_LABEL = re.compile(r"[^a-z0-9-]+")


@dataclass
class MemberTask:
    """The pods of one task of a PodGroup, in their stable order."""

    name: str
    views: list[PodView] = field(default_factory=list)
    strict: bool = False
    """Named ``<podgroup>-<task>-<index>``: the pods come from one template and must agree."""


def member_tasks(podgroup: str, views: Sequence[PodView]) -> list[MemberTask]:
    """The tasks of a PodGroup's pods, in the order their first pod appeared."""
    groups: dict[tuple[str, str, str], MemberTask] = {}
    taken: set[str] = set()
    for view in views:
        key, name, strict = _grouping(podgroup, view)
        if key not in groups:
            groups[key] = MemberTask(_unique(name, taken), strict=strict)
        groups[key].views.append(view)
    tasks = list(groups.values())
    for task in tasks:
        task.views.sort(key=lambda v: pod_order(v.o.name))
    return tasks


def pod_order(name: str) -> tuple[str, int]:
    """Pods of a task in order: by the index their name ends with, else by name."""
    stem, _, last = name.rpartition("-")
    if stem and INDEX.fullmatch(last):
        return stem, int(last)
    return name, -1


def _grouping(podgroup: str, view: PodView) -> tuple[tuple[str, str, str], str, bool]:
    """The pod's group key, the name its task would take, and whether the group is strict."""
    spec = view.annotations.get(TASK_SPEC)
    if spec:
        return ("spec", spec, likeness(view)), task_name(spec), False
    role = _role(view.labels)
    if role:
        return ("role", role, likeness(view)), task_name(role), False
    stem, _, last = view.o.name.rpartition("-")
    prefix = f"{podgroup}-"
    if stem.startswith(prefix) and len(stem) > len(prefix) and INDEX.fullmatch(last):
        task = stem[len(prefix) :]
        return ("name", task, ""), task, True
    return ("alike", "", likeness(view)), LONE_TASK, False


def _role(labels: Mapping[str, str]) -> str:
    """The role the operator's labels give the pod ('' when none)."""
    label = next((key for key in ROLE_LABELS if labels.get(key)), None)
    if label is None:
        return ""
    if label == RAY_NODE_TYPE and labels[label] != "head" and labels.get(RAY_GROUP):
        return f"{labels[label]}-{labels[RAY_GROUP]}"
    return labels[label]


def task_name(role: str) -> str:
    """A DNS label for the task of ``role``: lowercase, other characters as ``-``, short
    enough to take a ``-<n>`` suffix."""
    name = _NOT_IN_LABEL.sub("-", role.lower()).strip("-")[: LABEL_MAX - 4].strip("-")
    return name or LONE_TASK


def _unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name-2``, ``name-3``… when a task of the job already has it."""
    unique, n = name, 1
    while unique in taken:
        n += 1
        unique = f"{name}-{n}"
    taken.add(unique)
    return unique
