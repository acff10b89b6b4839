"""Pods of other schedulers: node usage only, in the loader, both engines, the verifier, the
metrics and ``show``.

The cluster: node ``n1`` has 8 cores, 16Gi, 10 pod slots and two whole 40960 MiB GPUs;
``n2`` has 8 cores and no GPU. A DaemonSet-like pod of ``default-scheduler`` runs on ``n1``
holding 6 cores and GPU-n1-0 whole. Volcano's queue ``q1`` has room for everything.
"""

from __future__ import annotations

from typing import Any

import pytest

from models.errors import InputError
from models.instance import Instance
from models.load import from_dict
from models.workload import DeviceShare
from optimizer.options import SolveOptions
from optimizer.plan import Eviction, Placement, Plan
from optimizer.show import render
from optimizer.solve import solve, with_metrics
from optimizer.verify import verify

OTHER = {
    "name": "ds-1",
    "namespace": "kube-system",
    "schedulerName": "default-scheduler",
    "tasks": [
        {
            "name": "main",
            "replicas": 1,
            "resources": {"cpu": "6", "memory": "1Gi", "nvidia.com/gpu": 1},
            "labels": {"app": "exporter"},
            "podNames": ["ds-1-abcde"],
        }
    ],
    "running": [
        {"index": 0, "node": "n1", "gpus": [{"id": "GPU-n1-0", "memory": 40960, "cores": 100}]}
    ],
}


def _job(name: str, cpu: str, gpus: int = 0, **extra: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {"cpu": cpu, "memory": "1Gi"}
    if gpus:
        resources["nvidia.com/gpu"] = gpus
    return {
        "name": name,
        "queue": "q1",
        "tasks": [{"name": "w", "replicas": 1, "resources": resources, **extra}],
    }


def _doc(*jobs: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "now": "2026-11-30T14:00:00Z",
        "nodes": [
            {
                "name": "n1",
                "allocatable": {"cpu": "8", "memory": "16Gi", "pods": 10},
                "gpus": {"count": 2, "type": "NVIDIA-A100", "memory": 40960},
            },
            {"name": "n2", "allocatable": {"cpu": "8", "memory": "16Gi", "pods": 10}},
        ],
        "queues": [{"name": "q1"}],
        "jobs": [OTHER, *jobs],
        **top,
    }


def _load(*jobs: dict[str, Any], **top: Any) -> Instance:
    return from_dict(_doc(*jobs, **top), "foreign.yaml")


def test_another_schedulers_pod_is_no_job_and_no_queue_member() -> None:
    instance = _load(_job("train", "1"))
    assert [j.key for j in instance.jobs] == ["default/train"]
    assert [j.key for j in instance.foreign_jobs] == ["kube-system/ds-1"]
    # ds-1 names no queue: Volcano's ``default`` queue would only exist for a job of its own.
    assert [q.name for q in instance.queues] == ["q1"]
    assert "kube-system/ds-1-abcde" not in instance.pod_by_key


def test_a_name_volcano_answers_to_makes_the_pod_volcanos() -> None:
    instance = _load(schedulerNames=["volcano", "default-scheduler"])
    assert [j.key for j in instance.jobs] == ["kube-system/ds-1"]
    assert instance.foreign_jobs == ()


def test_pending_pods_of_other_schedulers_are_one_warning() -> None:
    pending = [
        {
            **OTHER,
            "name": f"web-{i}",
            "namespace": "web",
            "running": [],
            "tasks": [{**OTHER["tasks"][0], "podNames": [f"web-{i}"]}],
        }
        for i in range(3)
    ]
    instance = _load(*pending)
    texts = [w.message for w in instance.warnings if "other schedulers" in w.message]
    assert len(texts) == 1
    assert "3 pending pod(s)" in texts[0] and "default-scheduler: 3" in texts[0]


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_engines_leave_the_room_other_schedulers_hold(engine: str) -> None:
    """n1 has 8 − 6 = 2 cores and only GPU-n1-1 free. ``big`` (4 cores, 1 GPU) fits nowhere:
    n2 has no GPU; ``small`` (1 core, 1 GPU) fits n1 on GPU-n1-1 only."""
    instance = _load(_job("big", "4", 1), _job("small", "1", 1))
    plan = solve(instance, engine, SolveOptions.of(time_limit=10, workers=1, seed=1))
    assert {p.pod: (p.node, [g.id for g in p.gpus or ()]) for p in plan.placements} == {
        "default/small-w-0": ("n1", ["GPU-n1-1"])
    }
    assert plan.job("default/big").status == "pending"
    assert [j.job for j in plan.jobs] == ["default/big", "default/small"]
    assert verify(instance, plan) == []


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_other_schedulers_pods_count_for_inter_pod_anti_affinity(engine: str) -> None:
    """``shy`` refuses to share a node with app=exporter, which only ds-1 on n1 carries: it
    goes to n2."""
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "exporter"}},
                    "topologyKey": "kubernetes.io/hostname",
                    "namespaces": ["kube-system"],
                }
            ]
        }
    }
    instance = _load(_job("shy", "1", affinity=anti))
    plan = solve(instance, engine, SolveOptions.of(time_limit=10, workers=1, seed=1))
    assert [(p.pod, p.node) for p in plan.placements] == [("default/shy-w-0", "n2")]
    wrong = Plan(placements=(Placement("default/shy-w-0", "n1", ()),))
    assert [v.rule for v in verify(instance, wrong)] == ["pod-anti-affinity"]


def test_verifier_counts_what_other_schedulers_hold() -> None:
    instance = _load(_job("big", "4", 1), _job("small", "1", 1))
    # 6 + 4 = 10 cores on an 8-core node.
    cpu = Plan(
        placements=(Placement("default/big-w-0", "n1", (DeviceShare("GPU-n1-1", 40960, 100),)),)
    )
    assert [v.rule for v in verify(instance, cpu)] == ["node-capacity"]
    # GPU-n1-0 is ds-1's whole card.
    card = Plan(
        placements=(Placement("default/small-w-0", "n1", (DeviceShare("GPU-n1-0", 40960, 100),)),)
    )
    assert "gpu-capacity" in {v.rule for v in verify(instance, card)}


def test_a_plan_cannot_evict_another_schedulers_pod() -> None:
    instance = _load()
    plan = Plan(evictions=(Eviction("kube-system/ds-1-abcde", "n1", "preempt"),))
    with pytest.raises(InputError, match="another scheduler \\(default-scheduler\\)"):
        verify(instance, plan)


def test_no_queue_counts_other_schedulers_pods() -> None:
    """q1 may hold 4 cores; ds-1's 6 cores are nobody's, so a 4-core job still fits it."""
    doc = _doc(_job("four", "4"))
    doc["queues"] = [{"name": "q1", "capability": {"cpu": "4"}}]
    doc["jobs"][0] = {**OTHER, "namespace": "default"}
    instance = from_dict(doc, "foreign.yaml")
    for engine in ("greedy", "cpsat"):
        plan = solve(instance, engine, SolveOptions.of(time_limit=10, workers=1, seed=1))
        assert [(p.pod, p.node) for p in plan.placements] == [("default/four-w-0", "n2")]
        assert verify(instance, plan) == []


def test_metrics_count_held_gpus_but_no_job() -> None:
    instance = _load(_job("small", "1", 1))
    plan = with_metrics(instance, solve(instance, "greedy"))
    # One card is ds-1's, the other small's: both are allocated; one job is admitted.
    assert plan.metrics["gpu_allocated"] == 2.0
    assert plan.metrics["jobs_admitted"] == 1


def test_show_summarises_other_schedulers_in_one_line() -> None:
    pods = [
        {
            **OTHER,
            "name": f"ds-{i}",
            "tasks": [{**OTHER["tasks"][0], "podNames": [f"ds-{i}-x"]}],
            "running": [{"index": 0, "node": "n2"}],
            "namespace": "kube-system",
        }
        for i in range(2, 5)
    ]
    for p in pods:
        p["tasks"][0]["resources"] = {"cpu": "100m", "memory": "64Mi"}
    text = render(_load(*pods))
    lines = [line for line in text.splitlines() if "default-scheduler" in line]
    # ds-1 on n1 (6 cores, 1Gi, 1 GPU) and three 100m / 64Mi pods on n2.
    assert lines == [
        "4 running pod(s) of default-scheduler (not Volcano's) on 2 node(s), holding "
        "cpu=6.3, memory=1.19Gi, nvidia.com/gpu=1: node usage only"
    ]
    assert "No jobs." in text
