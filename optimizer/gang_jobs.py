"""The compact job document of a gang of identical workers: what a trace's or a history's job
row becomes (``vcopt import spot``, ``vcopt import history``) and what the realistic benchmark
instances are made of."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from models.limits import MAX_PODS
from models.vocabulary import PREEMPTABLE

MAX_WORKERS = MAX_PODS
"""The most workers a job row may ask for: an instance holds no more pods."""


def seconds(span: timedelta) -> int | float:
    """A span as the instance file writes a number of seconds: whole ones as an integer."""
    micro = span // timedelta(microseconds=1)
    return micro // 10**6 if micro % 10**6 == 0 else micro / 10**6


def gang_job(
    name: str,
    queue: str,
    replicas: int,
    resources: Mapping[str, Any],
    *,
    namespace: str | None = None,
    priority: str | None = None,
    task: str = "worker",
    topology: tuple[str, int] | None = None,
    selector: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    preemptable: bool | None = None,
    timeline: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One task of ``replicas`` pods asking for ``resources`` each, all of which must start
    together (``minAvailable`` = replicas). ``topology`` is a network-topology (mode, highest
    tier); ``selector`` and ``annotations`` go on the task's pods; ``preemptable`` is the
    job's ``volcano.sh/preemptable`` (copied to its pods; None: no annotation, and Volcano
    reads a pod without it as preemptable); ``timeline`` holds its ``duration`` and
    ``arrival``."""
    spec: dict[str, Any] = {"name": task, "replicas": replicas, "resources": dict(resources)}
    if selector:
        spec["nodeSelector"] = dict(selector)
    if annotations:
        spec["annotations"] = dict(annotations)
    doc: dict[str, Any] = {"name": name}
    if namespace is not None:
        doc["namespace"] = namespace
    doc["queue"] = queue
    if priority is not None:
        doc["priorityClassName"] = priority
    doc["minAvailable"] = replicas
    if topology is not None:
        doc["networkTopology"] = {"mode": topology[0], "highestTierAllowed": topology[1]}
    if preemptable is not None:
        doc["annotations"] = {PREEMPTABLE: "true" if preemptable else "false"}
    doc.update(timeline or {})
    doc["tasks"] = [spec]
    return doc
