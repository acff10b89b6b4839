"""Small instances with a timeline, written out so that every expected time can be reasoned
by hand from the rules of ``docs/SIMULATE.md``."""

from __future__ import annotations

from typing import Any

from models.instance import Instance
from models.io import from_dict


def instance(doc: dict[str, Any]) -> Instance:
    return from_dict(doc, "timeline.yaml")


def document(
    nodes: list[dict[str, Any]],
    jobs: list[dict[str, Any]],
    *,
    now: str = "2026-11-30T14:00:00Z",
    scheduler: dict[str, Any] | None = None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "metadata": {"name": "timeline"},
        "now": now,
        "nodes": nodes,
        "queues": [{"name": "root"}, {"name": "default", "parent": "root"}],
        "jobs": jobs,
    }
    if scheduler is not None:
        doc["scheduler"] = scheduler
    return doc


def gpu_node(name: str, gpus: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "labels": labels or {},
        "allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": gpus, "pods": 110},
        "gpus": {"count": gpus, "type": "NVIDIA-A100", "memory": 81920},
    }


def gpu_job(name: str, replicas: int, gpus: int, **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "tasks": [
            {
                "name": "w",
                "replicas": replicas,
                "resources": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": gpus},
            }
        ],
        **fields,
    }


def two_queues() -> dict[str, object]:
    """One 2-GPU node, queues qa and qb of weight 1 under proportion (the default conf).
    "a1" (qa, 2 GPUs, 1 h) is there at 14:00 on the node; "b1" (qb, 1 GPU, 30 min) arrives at
    14:10 and starts at 15:00, when a1 ends; the run ends at 15:30."""
    doc = document(
        [gpu_node("n1", 2)],
        [
            gpu_job("a1", 1, 2, duration="1h", queue="qa"),
            gpu_job("b1", 1, 1, duration="30m", queue="qb", arrival="10m"),
        ],
    )
    doc["queues"] = [
        {"name": "root"},
        {"name": "qa", "parent": "root"},
        {"name": "qb", "parent": "root"},
    ]
    return doc


def tdm_scheduler(period: str) -> dict[str, Any]:
    """A scheduler whose ``shuffle`` action runs TDM's evictions: zone rz1 revocable between
    08:00 and 21:00, one round of evictions per ``period``."""
    return {
        "actions": "enqueue, allocate, backfill, shuffle",
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
            {
                "plugins": [
                    {"name": "drf"},
                    {"name": "predicates"},
                    {"name": "proportion"},
                    {"name": "nodeorder"},
                    {
                        "name": "tdm",
                        "arguments": {
                            "tdm.revocable-zone.rz1": "08:00-21:00",
                            "tdm.evict.period": period,
                        },
                    },
                ]
            },
        ],
    }
