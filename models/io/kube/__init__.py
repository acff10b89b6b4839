"""Reading a ``kubectl get -o yaml`` dump as an instance (DESIGN §3, the second input form).

A snapshot of a live cluster is a stream of Kubernetes objects. They are not built into domain
objects here: they are translated into the compact ``kind: Instance`` document and handed to
the same loader, so that the two forms cannot disagree on defaults or validation. This package
only knows how Kubernetes, Volcano and HAMi spell things in live objects: which fields are
bookkeeping, how operators name and label pods, where a bound pod's GPU devices are written.

What the API server and Volcano's webhooks check on an object as written (names, labels,
annotations, each container's requests against its limits, a vcjob's schema and webhook) is
checked here, before the translation can sum or drop it; the loader's later problems are
named back on the objects and fields of the dump through the translation's provenance
(``provenance.py``).

Conventions for what kubectl objects cannot say by themselves:

- ``now``, ``timezone`` and ``schedulerNames`` (Volcano's ``--scheduler-name`` flags,
  comma-separated, default ``volcano``) are read from the data of a ConfigMap named
  ``vcopt-snapshot``; without ``now`` the loader reads TDM windows at the current time.
- A pod whose ``schedulerName`` is not one of Volcano's is node usage only (``workload.py``);
  a pod without one, which only a hand-written dump has, is read as Volcano's.
- A PodGroup's pods become its tasks by what makes them alike, whatever their names
  (``members.py``); every pod keeps its cluster name in plans.
- A pod without a PodGroup (or whose PodGroup is not in the dump) becomes a one-pod job
  named after the pod, with the single task ``main``.
- A vcjob becomes the PodGroup and pods its controller makes (``vcjob.py``), after the job
  webhook's admission (``admission.py``).
- A PodGroup without pods in the dump stays as a job without tasks: enqueue decides on it
  (minMember, minResources), but vcopt cannot place pods it cannot see.
- Finished pods, terminating pods and pending pods of other schedulers are summed up in one
  warning each, however many there are.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import Diagnostics, Problem
from ...vocabulary import API_VERSION, DEFAULT_NAMESPACE
from .cluster import ClusterReader
from .objects import KubeObject, ObjectReader
from .provenance import Provenance
from .vcjob import is_vcjob
from .workload import WorkloadReader

__all__ = ["Translation", "compact_from_objects", "translate"]

POD_CONTROLLERS = frozenset(
    {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "SparkApplication"}
)
"""Kinds whose meaning for the scheduler is only the pods they create."""


@dataclass(frozen=True)
class Translation:
    """A dump in the compact form: the document, the problems found in the objects as
    written, and where each compact path came from (for the loader's later problems)."""

    compact: dict[str, Any]
    errors: list[Problem]
    warnings: list[Problem]
    provenance: Provenance


def translate(docs: Sequence[object], file: str) -> Translation:
    """The compact instance for a dump of Kubernetes objects, named after the file's stem.

    Problems name objects the way kubectl does (``Pod "default/x"``) and fields by their path
    in that object.
    """
    diag = Diagnostics()
    origins = Provenance()
    compact = _translate(docs, Path(file).stem, diag, origins)
    return Translation(compact, diag.errors, diag.warnings, origins)


def compact_from_objects(
    docs: Sequence[object], file: str
) -> tuple[dict[str, Any], list[Problem], list[Problem]]:
    """:func:`translate` without the provenance: the compact document, errors and warnings."""
    translation = translate(docs, file)
    return translation.compact, translation.errors, translation.warnings


def _pods_of_controllers(
    controllers: Sequence[KubeObject], owners: Collection[tuple[str, str, str]], diag: Diagnostics
) -> None:
    """Say of each pod controller whether its pods are in the input (they are what Volcano
    schedules; the controller itself is not read). A Deployment owns its pods through a
    ReplicaSet ``<deployment>-<hash>``."""
    for o in controllers:
        own = any(
            ns == (o.namespace or DEFAULT_NAMESPACE)
            and (
                (kind == o.kind and name == o.name)
                or (
                    o.kind == "Deployment"
                    and kind == "ReplicaSet"
                    and name.startswith(f"{o.name}-")
                )
            )
            for ns, kind, name in owners
        )
        if own:
            diag.warn(o.obj, "", f"a {o.kind} only makes pods: its pods are read, not it")
        else:
            diag.warn(
                o.obj,
                "",
                f"a {o.kind} only makes pods, and its pods are not in the input; ignored "
                "(dump the pods with kubectl get pods -A -o yaml)",
            )


def _translate(
    docs: Sequence[object], name: str, diag: Diagnostics, origins: Provenance
) -> dict[str, Any]:
    """One pass over the stream collects every object; jobs are assembled afterwards."""
    cluster = ClusterReader(diag, origins)
    workload = WorkloadReader(diag, cluster.priority_classes, origins)
    handlers = {
        "Node": cluster.node,
        "HyperNode": cluster.hypernode,
        "Queue": cluster.queue,
        "PriorityClass": cluster.priority_class,
        "ConfigMap": cluster.configmap,
        "Namespace": cluster.namespace,
    }
    controllers: list[KubeObject] = []
    for position, o in enumerate(ObjectReader(diag).objects(docs)):
        read = o.kind in (*handlers, "PodGroup", "Pod") or is_vcjob(o)
        if read and not o.name:
            diag.error(o.obj, "metadata.name", "required field is missing")
            continue
        if read:
            cluster.check_metadata(o)
        if o.kind in handlers:
            handlers[o.kind](o)
        elif o.kind == "PodGroup":
            workload.add_podgroup(o, position)
        elif o.kind == "Pod":
            workload.add_pod(o, position)
        elif is_vcjob(o):
            workload.add_vcjob(o, position)
        elif o.kind in POD_CONTROLLERS:
            controllers.append(o)
        else:
            diag.warn(o.obj, "", "not a snapshot object; ignored")
    _pods_of_controllers(controllers, workload.owners, diag)
    out: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "Instance",
        "metadata": {"name": name},
        **cluster.snapshot,
    }
    if cluster.scheduler is not None:
        out["scheduler"] = cluster.scheduler
    sections = {
        "priorityClasses": cluster.priority_classes,
        "namespaces": cluster.namespaces,
        "nodes": cluster.nodes,
        "hypernodes": cluster.hypernodes,
        "queues": cluster.queues,
        "jobs": workload.jobs(cluster.queues, cluster.scheduler_names),
    }
    out.update({key: items for key, items in sections.items() if items})
    return out
