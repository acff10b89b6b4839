"""``explain`` on jobs Volcano's enqueue refuses: the blocking resource is named, with the
plugin, and the change it suggests is checked by solving again with the same engine.

Amounts by hand (``models.admission``): a realCapability holds a resource no node offers only
as far as the queue's guarantee; overcommit's room is ``⌈total × factor − used + 0.1⌉ − 1``.
"""

from __future__ import annotations

import textwrap

import pytest

from models.instance import Instance
from models.load import loads
from optimizer.explain import explain
from optimizer.options import SolveOptions
from optimizer.reasons import rules as kinds

OPTIONS = SolveOptions.of(time_limit=10.0, workers=1, deterministic=True)
HEADER = """\
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: admission}
now: "2026-11-30T14:00:00Z"
"""
SHARE = (
    "{cpu: '1', memory: 1Gi, nvidia.com/gpu: 1, nvidia.com/gpumem: 10000, nvidia.com/gpucores: 30}"
)


def build(*parts: str) -> Instance:
    return loads(HEADER + "".join(textwrap.dedent(p).strip("\n") + "\n" for p in parts))


def tiers(*plugins: str) -> str:
    return (
        'scheduler:\n  actions: "enqueue, allocate"\n  tiers:\n'
        "  - plugins: [{name: priority}, {name: gang}]\n"
        f"  - plugins: [{', '.join(['{name: predicates}', *plugins])}]\n"
    )


def hami(*plugins: str) -> Instance:
    """share (minResources = its pod's HAMi request) in research, whose capability names only
    nvidia.com/gpu: its realCapability has no gpumem or gpucores, so proportion refuses it."""
    return build(
        tiers(*plugins, "{name: proportion}"),
        "nodes:\n- {name: n1, allocatable: {cpu: '16', memory: 64Gi}, "
        "gpus: {count: 2, type: NVIDIA-A100, memory: 40000}}\n",
        "queues:\n- {name: research, capability: {nvidia.com/gpu: 8}}\n",
        f"jobs:\n- name: share\n  queue: research\n  minResources: {SHARE}\n"
        f"  tasks: [{{name: w, replicas: 1, resources: {SHARE}}}]\n",
    )


def job(name: str, minimum: str, queue: str, extra: str = "") -> str:
    return (
        f"- name: {name}\n  queue: {queue}\n  minResources: {{cpu: '{minimum}'}}\n{extra}"
        "  tasks: [{name: w, replicas: 1, resources: {cpu: '1', memory: 1Gi}}]\n"
    )


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_the_share_resources_missing_from_realcapability_are_named(engine: str) -> None:
    """Volcano compares cpu, memory, then every scalar of the minimum and names each that
    passes (``LessEqualWithDimensionAndResourcesName`` does not stop at the first): both
    gpucores (30 > 0) and gpumem (10000 > 0). The guarantee that lifts it is exactly the
    minimum: realCapability = max₀(0 − g) + g = g."""
    found = explain(hami(), "default/share", engine, options=OPTIONS)
    assert found.status == "pending"
    assert [b.kind for b in found.blockers] == [kinds.ENQUEUE]
    assert found.dominant.startswith(
        "queue research has no nvidia.com/gpucores or nvidia.com/gpumem in its realCapability"
    )
    assert "Volcano's proportion refuses at enqueue" in found.dominant
    assert [c.text for c in found.changes] == [
        "queue research: add nvidia.com/gpucores 30, nvidia.com/gpumem 10000 to its guarantee "
        "and deserved (a realCapability holds a resource no node offers only as far as the "
        "queue's guarantee; its capability alone does not add it)"
    ]
    assert found.admitted_after is True


def test_overcommit_refusing_a_resource_no_node_offers_has_no_variant() -> None:
    """With overcommit beside proportion, idle has no gpumem or gpucores at any factor: two
    rules block, and the overcommit one cannot be written as a change."""
    instance = hami("{name: overcommit}")
    found = explain(instance, "default/share", "greedy", options=OPTIONS)
    texts = [b.text for b in found.blockers]
    assert sorted(t.split(",")[0] for t in texts) == [
        "no node offers nvidia.com/gpucores or nvidia.com/gpumem",
        "queue research has no nvidia.com/gpucores or nvidia.com/gpumem in its realCapability "
        "(which holds only what the nodes offer and the guarantees name",
    ]
    assert found.variant is None
    assert found.admitted_after is None


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_a_minimum_past_realcapability_gets_the_capability_it_needs(engine: str) -> None:
    """qa's capability cpu 8 binds realCapability (16 CPUs). run holds 2; the plan starts
    fits (minimum 6); big asks 7 more: 2 + 6 + 7 = 15 > 8, so +7 (8 → 15). Then Volcano
    enqueues big (2 + 7 = 9 ≤ 15) and fits (15 ≤ 15)."""
    instance = build(
        tiers("{name: capacity}"),
        "nodes:\n- {name: n1, allocatable: {cpu: '16', memory: 64Gi}}\n",
        "queues:\n- {name: qa, capability: {cpu: '8'}}\n",
        "jobs:\n",
        "- name: run\n  queue: qa\n  minResources: {cpu: '2'}\n  running: [{index: 0, node: n1}]\n"
        "  tasks: [{name: w, replicas: 1, resources: {cpu: '2', memory: 1Gi}}]\n",
        job("big", "7", "qa"),
        job("fits", "6", "qa"),
    )
    found = explain(instance, "default/big", engine, options=OPTIONS)
    assert found.dominant == (
        "queue qa: minResources + allocated + inqueue − elastic come to cpu 15 > realCapability "
        "8, so Volcano's capacity does not enqueue it"
    )
    assert [c.text for c in found.changes] == ["queue qa: cpu capability +7 (8 → 15)"]
    assert found.admitted_after is True
    assert found.costs == []


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_overcommit_names_the_factor_that_lets_the_job_in(engine: str) -> None:
    """One 10-CPU node; held is Inqueue with minimum 8, late asks 5: 13 > 12 (10 × 1.2). The
    smallest factor in hundredths: 1.3 (room ⌈13000.1⌉ − 1 = 13000 milli-CPU ≥ 13000)."""
    instance = build(
        tiers("{name: overcommit}"),
        "nodes:\n- {name: n1, allocatable: {cpu: '10', memory: 64Gi}}\n",
        "jobs:\n",
        job("held", "8", "default", "  phase: Inqueue\n"),
        job("late", "5", "default"),
    )
    found = explain(instance, "default/late", engine, options=OPTIONS)
    assert found.dominant == (
        "the cluster's allocatable × overcommit-factor, less what is used, leaves room for cpu "
        "12 of Inqueue minResources; with this job's they come to cpu 13: Volcano's overcommit "
        "does not enqueue it"
    )
    assert [c.text for c in found.changes] == [
        "overcommit-factor 1.2 → 1.3 (the Inqueue minResources come to cpu 13)"
    ]
    assert found.admitted_after is True
