"""CP-SAT follows the same Volcano rules as the greedy engine where it evicts and places
(issue 16): ancestorReclaimLevel, disruption caps, soft topology, HAMi's mutex policy.

Each test names the Volcano or HAMi function whose rule it checks.
"""

from __future__ import annotations

from pathlib import Path

from cpsat_kit import cpsat, cpsat_over_greedy, evicted, instance, nodes_of, options, stages

from models.load import loads
from optimizer.disruption import breaches

RECLAIM_DATA = Path(__file__).parent.parent / "data" / "reclaim"


def _case4(level: int) -> str:
    text = (RECLAIM_DATA / "case4.yaml").read_text()
    old = "ancestorReclaimLevel: 1}"
    assert old in text
    return text.replace(old, f"ancestorReclaimLevel: {level}}}")


def test_ancestor_reclaim_level_limits_cpsat_reclaim() -> None:
    """``plugins/capacity/capacity.go`` Reclaimable with ``ancestorReclaimLevel`` (seed 004
    case4): p1 runs in case4-child1 (no deserved: an immediate victim) under case4-parent1
    (deserved a100 2, holding p1 + p3 = 2, not above it); p2 waits in case4-child2 under
    case4-parent2. At level 1 the victim's parent differs from the reclaimer's and is not
    above its deserved, so p1 may not be reclaimed and p2 (n1 is full) stays pending. At
    level 0 only the leaf is checked: p1 is evicted and p2 placed."""
    blocked = cpsat(loads(_case4(1), "case4.yaml"))
    assert evicted(blocked) == []
    assert not blocked.placements
    allowed = cpsat(loads(_case4(0), "case4.yaml"))
    assert evicted(allowed) == [("default/pg1-p1-0", "reclaim")]
    assert [p.pod for p in allowed.placements] == ["default/pg2-p2-0"]


PREEMPT = """
    scheduler:
      actions: "enqueue, allocate, preempt"
      tiers:
      - plugins: [{name: priority}, {name: gang, enablePreemptable: false}, {name: conformance}]
      - plugins: [{name: predicates}, {name: capacity}, {name: nodeorder}]
    nodes:
    - {name: n1, allocatable: {cpu: "4", memory: 64Gi}}
    queues: [{name: q1}]
    jobs:
    - {name: a, queue: q1, priority: 3, tasks: [{name: t, replicas: 1, resources: {cpu: "2"}}],
       running: [{index: 0, node: n1}]}
    - {name: b, queue: q1, priority: 1, tasks: [{name: t, replicas: 1, resources: {cpu: "1"}}],
       running: [{index: 0, node: n1}]}
    - {name: c, queue: q1, priority: 2, tasks: [{name: t, replicas: 1, resources: {cpu: "1"}}],
       running: [{index: 0, node: n1}]}
    - {name: hi, queue: q1, priority: 10, tasks: [{name: t, replicas: 1, resources: {cpu: "2"}}]}
    """
"""n1 (cpu 4) full with a (priority 3, cpu 2), b (1, cpu 1), c (2, cpu 1); hi (priority 10,
cpu 2) waits. Greedy (``preempt.go:preempt``, shortest prefix in victim order) evicts b and c
and pipelines hi."""


def test_max_evictions_caps_cpsat_and_greedy_breach_is_reported() -> None:
    """``--max-evictions``: Volcano has no such cap, so greedy still evicts b and c (2 > 1,
    reported by ``optimizer.disruption.breaches``); the CP-SAT plan evicts at most 1. Evicting
    a alone frees cpu 2 for hi, which outweighs a (priority 10 > 3), so CP-SAT takes that
    plan; with a cap of 0 it evicts nothing and places nothing."""
    inst = instance(PREEMPT)
    floor, plan = cpsat_over_greedy(inst, max_evictions=1)
    assert evicted(floor) == [("default/b-t-0", "preempt"), ("default/c-t-0", "preempt")]
    assert breaches(inst, floor, options(max_evictions=1)) == [
        "2 evictions, more than --max-evictions 1"
    ]
    assert evicted(plan) == [("default/a-t-0", "preempt")]
    assert [p.pod for p in plan.placements] == ["default/hi-t-0"]
    _, none = cpsat_over_greedy(inst, max_evictions=0)
    assert evicted(none) == []
    assert not none.placements


def test_queue_eviction_budget_caps_cpsat() -> None:
    """A per-queue budget counts the evictions of the pods its quota carries: q1's budget 0
    leaves every running pod in place, whatever the objective would gain."""
    inst = instance(PREEMPT)
    _, plan = cpsat_over_greedy(inst, queue_eviction_budgets={"q1": 0})
    assert evicted(plan) == []
    assert breaches(inst, plan, options(queue_eviction_budgets={"q1": 0})) == []


SOFT_GANG = """
    scheduler:
      actions: "enqueue, allocate"
      tiers:
      - plugins: [{name: priority}, {name: gang}]
      - plugins: [{name: predicates}, {name: nodeorder}]
    nodes:
    - {name: a1, labels: {rack: ra}, allocatable: {cpu: "4", memory: 64Gi}}
    - {name: a2, labels: {rack: ra}, allocatable: {cpu: "4", memory: 64Gi}}
    - {name: a3, labels: {rack: ra}, allocatable: {cpu: "4", memory: 64Gi}}
    - {name: b1, labels: {rack: rb}, allocatable: {cpu: "4", memory: 64Gi}}
    hypernodes:
    - name: ra
      tier: 1
      members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: ra}}}}]
    - name: rb
      tier: 1
      members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: rb}}}}]
    - name: top
      tier: 2
      members:
      - {type: HyperNode, selector: {exactMatch: {name: ra}}}
      - {type: HyperNode, selector: {exactMatch: {name: rb}}}
    queues: [{name: q1}]
    jobs:
    - name: g
      queue: q1
      minAvailable: 6
      networkTopology: {mode: soft}
      tasks: [{name: t, replicas: 6, resources: {cpu: "2"}}]
    """


def test_soft_gang_that_fits_one_rack_is_placed_in_one_rack() -> None:
    """``session.go:adjustNetworkTopologySpec`` makes soft topology hard at the top tier, and
    without ``network-topology-aware`` Volcano's only gradient is the cluster top, so greedy
    spreads the six cpu-2 pods by LeastAllocated over both racks. Nothing competes for ra
    (3 nodes of cpu 4 = exactly six pods), so CP-SAT's topology stage puts the gang in one
    rack: stage value −1 (tier-1 LCA) where greedy's is −2 (top), and the stage is not
    reported OPTIMAL for greedy's cross-rack plan."""
    inst = instance(SOFT_GANG)
    floor, plan = cpsat_over_greedy(inst)
    assert {n[0] for n in nodes_of(floor, "g")} == {"a", "b"}
    assert nodes_of(plan, "g") == ["a1", "a1", "a2", "a2", "a3", "a3"]
    assert stages(inst, floor).topology == -2
    assert stages(inst, plan).topology == -1
    assert plan.solver is not None and not plan.solver.fallback


MUTEX_PODS = """
    scheduler:
      actions: "enqueue, allocate"
      tiers:
      - plugins: [{name: priority}, {name: gang}, {name: predicates}]
    nodes:
    - name: n1
      allocatable: {cpu: "16", memory: 64Gi}
      gpus:
      - {id: GPU-0, index: 0, type: NVIDIA-A100, memory: 40000}
      - {id: GPU-1, index: 1, type: NVIDIA-A100, memory: 40000}
    jobs:
    - name: busy
      tasks:
      - name: w
        replicas: 1
        resources: {cpu: "1", nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, nvidia.com/gpucores: 10}
      running: [{index: 0, node: n1, gpus: [{id: GPU-0, memory: 1000, cores: 10}]}]
    - name: m
      minAvailable: 1
      tasks:
      - name: w
        replicas: 3
        resources: {cpu: "1", nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, nvidia.com/gpucores: 10}
        annotations: {hami.io/gpu-scheduler-policy: mutex}
    """
"""n1 has two 40000 MiB cards; GPU-0 carries a running share. Three small mutex pods (1000 MiB,
10 cores: capacity alone would fit all of them on either card) wait."""


def test_mutex_pods_get_unused_devices_in_cpsat() -> None:
    """HAMi's ``NvidiaGPUDevices.Fit`` step 7: a mutex pod gets no device with ``Used > 0``.
    GPU-0 is in use, so only GPU-1 can take a mutex pod, and only one: CP-SAT places exactly
    one of the three, on GPU-1 (the verifier's gpu-exclusive rule holds)."""
    plan = cpsat(instance(MUTEX_PODS))
    shares = [(p.pod, [s.id for s in p.gpus or ()]) for p in plan.placements]
    assert len(shares) == 1
    assert shares[0][1] == ["GPU-1"]


def test_reclaimer_queue_must_pass_preemptive() -> None:
    """``capacity.go`` Preemptive (spec §5.4), the gate reclaim asks before it looks for
    victims: case4 at level 0, where p1 may be reclaimed (test above), but case4-child2
    deserves nothing, so 0 + 1 ≤ 0 fails at the leaf and level 0 checks no ancestor → no
    reclaim, p2 stays pending. A Closed reclaimer queue never passes the gate either."""
    child = "- {name: case4-child2, parent: case4-parent2, deserved: {example.com/a100: 2}}"
    text = _case4(0)
    assert child in text
    no_deserved = text.replace(child, "- {name: case4-child2, parent: case4-parent2}")
    closed = text.replace(child, child[:-1] + ", state: Closed}")
    for variant in (no_deserved, closed):
        plan = cpsat(loads(variant, "case4.yaml"))
        assert evicted(plan) == []
        assert not plan.placements
