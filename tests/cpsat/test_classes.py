"""The node-class reduction is exact: counting pods per class of interchangeable nodes reaches
the same optimum as counting them per node (issue: exact aggregation by node class).

Two nodes fall in one class only when no constraint or objective term can tell them apart, so
any per-node plan maps to a class-count plan of the same stage values and back (the expansion
deals the counts out to the class's nodes). Both models are solved to proven optimality on small
instances and their stage tuples compared; a difference means the class key misses a fact that
some rule reads, or the expansion cannot realise a count the model allowed.
"""

from __future__ import annotations

from typing import Any

import pytest
from cpsat_kit import checked, instance, options, stages
from hypothesis import HealthCheck, given, note, settings
from strategies import instances, to_yaml

from models.instance import Instance
from models.load import from_dict
from optimizer.cpsat.engine import solve
from optimizer.cpsat.search import CpsatModel
from optimizer.plan import Plan
from optimizer.result import Status

RACKS = """
    scheduler:
      actions: "enqueue, allocate"
      tiers:
      - plugins: [{name: priority}, {name: gang}]
      - plugins: [{name: predicates}, {name: binpack}, {name: network-topology-aware}]
    nodeGroups:
    - {namePrefix: a-, count: 3, labels: {rack: r1}, allocatable: {cpu: "16", memory: 64Gi}}
    - {namePrefix: b-, count: 3, labels: {rack: r2}, allocatable: {cpu: "16", memory: 64Gi}}
    hypernodes:
    - name: rack-1
      tier: 1
      members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: r1}}}}]
    - name: rack-2
      tier: 1
      members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: r2}}}}]
    jobs:
    - name: busy
      tasks: [{name: w, replicas: 1, resources: {cpu: "10", memory: 1Gi}}]
      running: [{index: 0, node: a-000}]
    - name: gang
      minAvailable: 3
      networkTopology: {mode: hard, highestTierAllowed: 1}
      tasks: [{name: w, replicas: 3, resources: {cpu: "8", memory: 1Gi}}]
    - {name: small, tasks: [{name: w, replicas: 4, resources: {cpu: "6", memory: 1Gi}}]}
    """
"""Six identical nodes in two racks, one of them half busy: three classes (rack 1 idle, rack 1
busy, rack 2 idle). The hard gang fits in one rack only if it takes rack 2 or leaves the busy
node out; the small job fills what is left."""

GPUS = """
    scheduler:
      actions: "enqueue, allocate"
      tiers:
      - plugins: [{name: priority}, {name: gang}]
      - plugins:
        - {name: predicates}
        - {name: deviceshare, arguments: {deviceshare.VGPUEnable: true}}
    nodeGroups:
    - {namePrefix: g-, count: 4, allocatable: {cpu: "32", memory: 256Gi},
       gpus: {count: 2, type: NVIDIA-A100-SXM4-80GB, memory: 81920}}
    jobs:
    - name: shared
      tasks: [{name: w, replicas: 5, resources: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1,
                                                  nvidia.com/gpumem: 40000}}]
    - name: whole
      minAvailable: 2
      tasks: [{name: w, replicas: 2, resources: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 2}}]
    - name: half
      tasks: [{name: w, replicas: 3, resources: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1,
                                                  nvidia.com/gpumem: 60000}}]
    """
"""Four identical 2-GPU nodes, one class: shares of 40 GB and 60 GB compete with whole-node
gangs for devices, so the counts must respect what each device can still take."""

SLOW = [HealthCheck.too_slow]


def _optimum(inst: Instance, aggregate: bool) -> tuple[tuple[int, ...], Status]:
    empty = Plan(instance=inst.name, engine="empty")
    plan = solve(
        inst,
        options(aggregate=aggregate, strategy="monolithic", deterministic=True, time_limit=30),
        empty,
    )
    checked(inst, plan)
    assert plan.solver is not None
    return stages(inst, plan).as_tuple(), plan.solver.status


@pytest.mark.parametrize("text", [RACKS, GPUS], ids=["racks", "gpus"])
def test_aggregated_and_per_node_models_reach_the_same_optimum(text: str) -> None:
    inst = instance(text)
    by_class, status_a = _optimum(inst, aggregate=True)
    by_node, status_b = _optimum(inst, aggregate=False)
    assert status_a == status_b == Status.OPTIMAL
    assert by_class == by_node


def test_classes_follow_rack_and_free_vector() -> None:
    """Idle nodes of one rack collapse into one class; the busy node has a free vector of its
    own: RACKS has exactly three classes for six nodes."""
    model = CpsatModel(instance(RACKS), options())
    members = sorted(sorted(model.data.nodes[n].name for n in c.nodes) for c in model.data.classes)
    assert members == [["a-000"], ["a-001", "a-002"], ["b-000", "b-001", "b-002"]]


@settings(max_examples=25, deadline=None, suppress_health_check=SLOW)
@given(instances())
def test_same_optimum_on_random_instances(doc: dict[str, Any]) -> None:
    """On random small instances (every feature of tests/strategies.py), whenever both models
    prove optimality their stage tuples agree."""
    note(to_yaml(doc))
    inst = from_dict(doc, "<generated>")
    by_class, status_a = _optimum(inst, aggregate=True)
    by_node, status_b = _optimum(inst, aggregate=False)
    if status_a == status_b == Status.OPTIMAL:
        assert by_class == by_node


HELD_APART = """
    scheduler:
      actions: "enqueue, allocate, reclaim"
      tiers:
      - plugins: [{name: priority}, {name: gang}]
      - plugins: [{name: predicates}, {name: proportion}, {name: binpack}]
    nodes:
    - {name: n0, allocatable: {cpu: "2", memory: 8Gi, pods: 3},
       gpus: {count: 3, type: NVIDIA-A100-SXM4-80GB, memory: 40960, split: 1}}
    - {name: n4, allocatable: {cpu: "2", memory: 8Gi, pods: 3},
       gpus: [{id: GPU-n4-x0, index: 0, type: NVIDIA-A100-SXM4-80GB, memory: 16384, count: 1}]}
    jobs:
    - name: j0
      tasks:
      - name: w
        replicas: 3
        resources: {cpu: 250m, memory: 512Mi, nvidia.com/gpu: 1, nvidia.com/gpumem: 2048,
                    nvidia.com/gpucores: 10}
      running:
      - {index: 1, node: n0, gpus: [{id: GPU-n0-0, memory: 2048, cores: 10}]}
      - {index: 2, node: n0, gpus: [{id: GPU-n0-1, memory: 2048, cores: 10}]}
    """
"""(A shrunk counterexample of the random test.) Two alike running pods hold one slot each of
two single-slot devices of n0. Per node, each device is a device class of its own, so the pods
free different devices and are two eviction groups; grouped as one they over-booked the first
device and n0 looked full, so the third pod went to n4 (one node more, a higher LCA)."""


def test_alike_pods_on_different_device_classes_are_different_eviction_groups() -> None:
    inst = instance(HELD_APART)
    by_class, _ = _optimum(inst, aggregate=True)
    by_node, _ = _optimum(inst, aggregate=False)
    assert by_class == by_node
    per_node = CpsatModel(inst, options(aggregate=False))
    assert len(per_node.data.evict_groups) == 2
