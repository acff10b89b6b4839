"""A plan as the API calls a scheduler would make: one Kubernetes ``Binding`` per placed pod,
carrying the device annotations HAMi's scheduler writes (``spec/hami-gpu.md`` §6.1), and one
``Eviction`` per evicted pod.

The output is a ``kind: List`` a user can read, or apply to bind the pods by hand; ``vcopt
verify`` reads it back, so a plan that went through a cluster's hands can still be checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from models.errors import InputError, Problem, shown_value
from models.golang import parse_int64
from models.gpu import hami_allocation_annotation
from models.instance import Instance
from models.vocabulary import HAMI_ALLOCATED, HAMI_NODE, HAMI_TO_ALLOCATE
from models.yamlio import dump_yaml

if TYPE_CHECKING:
    from .records import Plan

BIND_PHASE = "hami.io/bind-phase"
EVICTION_REASON = "vcopt/eviction-reason"
"""Annotation on an Eviction carrying why the plan evicts the pod (not a Kubernetes field)."""


def plan_bindings(plan: Plan) -> str:
    """The Binding and Eviction objects of ``plan``, as one YAML ``List``."""
    items: list[dict[str, Any]] = []
    for p in plan.placements:
        namespace, _, name = p.pod.partition("/")
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if p.gpus:
            value = hami_allocation_annotation([[(d.id, d.memory, d.cores) for d in p.gpus]])
            metadata["annotations"] = {
                HAMI_TO_ALLOCATE: value,
                HAMI_ALLOCATED: value,
                HAMI_NODE: p.node,
                BIND_PHASE: "allocating",
            }
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": metadata,
                "target": {"apiVersion": "v1", "kind": "Node", "name": p.node},
            }
        )
    for e in plan.evictions:
        namespace, _, name = e.pod.partition("/")
        eviction: dict[str, Any] = {"name": name, "namespace": namespace}
        if e.reason:
            eviction["annotations"] = {EVICTION_REASON: e.reason}
        items.append({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": eviction})
    doc = {"apiVersion": "v1", "kind": "List", "items": items}
    return dump_yaml(doc, sort_keys=False, width=200)


def is_bindings(doc: Mapping[str, Any]) -> bool:
    return doc.get("kind") == "List" or doc.get("kind") in ("Binding", "Eviction")


def plan_dict_from_bindings(
    docs: Sequence[object], instance: Instance, file: str
) -> dict[str, Any]:
    """The plan document the Binding and Eviction objects stand for; an eviction's node is
    where the instance says the pod runs."""
    problems: list[Problem] = []
    placements: list[dict[str, Any]] = []
    evictions: list[dict[str, Any]] = []
    for where, item in _items(docs):
        kind = item.get("kind")
        metadata = item.get("metadata") if isinstance(item.get("metadata"), Mapping) else {}
        pod = f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"
        annotations = metadata.get("annotations") or {}
        if kind == "Binding":
            target = item.get("target") if isinstance(item.get("target"), Mapping) else {}
            entry: dict[str, Any] = {"pod": pod, "node": target.get("name", "")}
            devices = annotations.get(HAMI_ALLOCATED) if isinstance(annotations, Mapping) else None
            if devices:
                try:
                    entry["gpus"] = _devices(str(devices))
                except ValueError as err:
                    problems.append(
                        Problem(str(err), where, f"metadata.annotations.{HAMI_ALLOCATED}", file)
                    )
            placements.append(entry)
        elif kind == "Eviction":
            running = instance.pod_by_key.get(pod)
            node = running.node if running is not None and running.node else ""
            reason = (
                annotations.get(EVICTION_REASON, "") if isinstance(annotations, Mapping) else ""
            )
            evictions.append({"pod": pod, "node": node, "reason": reason})
        else:
            problems.append(
                Problem(f"expected Binding or Eviction, got {kind!r}", where, "kind", file)
            )
    if problems:
        raise InputError(problems)
    return {"kind": "Plan", "placements": placements, "evictions": evictions}


def _items(docs: Sequence[object]) -> list[tuple[str, Mapping[str, Any]]]:
    out: list[tuple[str, Mapping[str, Any]]] = []
    for n, doc in enumerate(docs, 1):
        if not isinstance(doc, Mapping):
            continue
        if doc.get("kind") == "List":
            items = doc.get("items") if isinstance(doc.get("items"), list) else []
            out += [
                (f"document {n} items[{i}]", item)
                for i, item in enumerate(items)
                if isinstance(item, Mapping)
            ]
        else:
            out.append((f"document {n}", doc))
    return out


def _devices(text: str) -> list[dict[str, Any]]:
    """``UUID,NVIDIA,<MiB>,<cores>:`` entries, containers ended by ``;`` (§6.1)."""
    devices = []
    for entry in (e.strip() for part in text.split(";") for e in part.split(":")):
        if not entry:
            continue
        fields = [f.strip() for f in entry.split(",")]
        amounts = [parse_int64(f) for f in fields[2:]] if len(fields) == 4 else []
        if len(amounts) != 2 or any(a is None or a < 0 for a in amounts):
            raise ValueError(
                f"device {shown_value(entry)}: expected UUID,NVIDIA,<memory MiB>,<cores>"
            )
        devices.append({"id": fields[0], "memory": amounts[0], "cores": amounts[1]})
    return devices
