"""Inter-pod affinity, anti-affinity and topology spread in the CP-SAT model, each on both sides
of its rule (spec/k8s-affinity-spread.md §2, §4, §6.9). Plans come from the model alone (the
empty floor of ``cpsat_kit``) and all pass the verifier, which replays them in plan order."""

from __future__ import annotations

import pytest
from cpsat_kit import BASE, cpsat, instance, pods_of

from optimizer.cpsat.compile.data import compile_instance
from optimizer.plan import Plan


def nodes_of_plan(plan: Plan, job: str) -> list[str]:
    return sorted(p.node for p in plan.placements if p.pod.startswith(f"default/{job}-"))


ANTI_HOST = """
jobs:
- name: web
  minAvailable: 3
  tasks:
  - name: t
    replicas: 3
    labels: {app: web}
    resources: {cpu: "1"}
    affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}]}}
"""


@pytest.mark.parametrize(("count", "placed"), [(2, 0), (3, 3)])
def test_anti_affinity_on_hostname_one_replica_per_node(count: int, placed: int) -> None:
    """Three replicas that reject each other per node, a gang of 3: on 2 nodes (room for 8
    pods each) they cannot all start; on 3 nodes each gets one. The identical idle nodes stay
    one class (the hostname is a per-node key), so it is the expansion that spreads them."""
    nodes = "nodes:\n" + "".join(
        f'- {{name: n{i}, allocatable: {{cpu: "8"}}}}\n' for i in range(count)
    )
    inst = instance(BASE, nodes, ANTI_HOST)
    assert len(compile_instance(inst).classes) == 1
    plan = cpsat(inst)
    assert len(pods_of(plan, "web")) == placed
    assert len(set(nodes_of_plan(plan, "web"))) == placed


TWO_ZONES = """
nodes:
- {name: a1, labels: {zone: z1}, allocatable: {cpu: "8"}}
- {name: b1, labels: {zone: z2}, allocatable: {cpu: "8"}}
"""
ONE_ZONE = """
nodes:
- {name: a1, labels: {zone: z1}, allocatable: {cpu: "8"}}
- {name: a2, labels: {zone: z1}, allocatable: {cpu: "8"}}
"""
PAIR = """
jobs:
- name: a
  tasks:
  - name: t
    labels: {app: a}
    resources: {cpu: "1"}
    affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: zone, labelSelector: {matchLabels: {app: b}}}]}}
- name: b
  tasks: [{name: t, labels: {app: b}, resources: {cpu: "1"}}]
"""


def test_anti_affine_jobs_take_different_zones() -> None:
    """a rejects b in its zone: with two zones both start, one per zone; in one zone only one
    of them can start (b has no term, the rule binds through a's)."""
    plan = cpsat(instance(BASE, TWO_ZONES, PAIR))
    assert len(plan.placements) == 2
    assert {p.node for p in plan.placements} == {"a1", "b1"}
    assert len(cpsat(instance(BASE, ONE_ZONE, PAIR)).placements) == 1


def test_running_pod_anti_affinity_keeps_new_pods_out_of_its_zone() -> None:
    """A running pod on a1 rejects app=x in zone z1: the new app=x pod goes to z2."""
    running = """
- name: guard
  tasks:
  - name: t
    labels: {app: guard}
    resources: {cpu: "1"}
    affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: zone, labelSelector: {matchLabels: {app: x}}}]}}
  running: [{index: 0, node: a1}]
- name: x
  tasks: [{name: t, labels: {app: x}, resources: {cpu: "1"}}]
"""
    nodes = TWO_ZONES + '- {name: a2, labels: {zone: z1}, allocatable: {cpu: "8"}}\n'
    plan = cpsat(instance(BASE, nodes, "jobs:\n" + running.lstrip("\n")))
    assert nodes_of_plan(plan, "x") == ["b1"]


SELF_AFFINE = """
jobs:
- name: c
  minAvailable: 4
  tasks:
  - name: t
    replicas: 4
    labels: {app: cache}
    resources: {cpu: "1"}
    affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: zone, labelSelector: {matchLabels: {app: cache}}}]}}
"""


def test_self_affine_gang_lands_in_one_zone() -> None:
    """z1 has room for 2 pods, z2 for 4 (two nodes of 2 CPUs): the gang of 4 must share one
    zone, so all go to z2."""
    nodes = """
nodes:
- {name: a1, labels: {zone: z1}, allocatable: {cpu: "2"}}
- {name: b1, labels: {zone: z2}, allocatable: {cpu: "2"}}
- {name: b2, labels: {zone: z2}, allocatable: {cpu: "2"}}
"""
    plan = cpsat(instance(BASE, nodes, SELF_AFFINE))
    assert nodes_of_plan(plan, "c") == ["b1", "b1", "b2", "b2"]


def test_affinity_to_a_running_pod_joins_its_zone() -> None:
    """A running app=db pod in z1 (it cannot be evicted: no evicting action): a pod with
    required affinity to app=db on zone goes to z1, although z2 has more room."""
    jobs = """
jobs:
- name: db
  tasks: [{name: t, labels: {app: db}, resources: {cpu: "1"}}]
  running: [{index: 0, node: a1}]
- name: p
  tasks:
  - name: t
    labels: {app: p}
    resources: {cpu: "1"}
    affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: zone, labelSelector: {matchLabels: {app: db}}}]}}
"""
    nodes = """
nodes:
- {name: a1, labels: {zone: z1}, allocatable: {cpu: "2"}}
- {name: b1, labels: {zone: z2}, allocatable: {cpu: "8"}}
"""
    plan = cpsat(instance(BASE, nodes, jobs))
    assert nodes_of_plan(plan, "p") == ["a1"]


SPREAD_NODES = """
nodes:
- {name: a1, labels: {zone: z1}, allocatable: {cpu: "8"}}
- {name: b1, labels: {zone: z2}, allocatable: {cpu: "8"}}
- {name: c1, labels: {zone: z3}, allocatable: {cpu: "8"}}
"""


def spread_jobs(extra: str = "") -> str:
    return f"""
jobs:
- name: old
  tasks: [{{name: t, labels: {{app: s}}, resources: {{cpu: "1"}}}}]
  running: [{{index: 0, node: a1}}]
- name: s
  minAvailable: 3
  tasks:
  - name: t
    replicas: 3
    labels: {{app: s}}
    resources: {{cpu: "1"}}
    topologySpreadConstraints:
    - {{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule,
       labelSelector: {{matchLabels: {{app: s}}}}{extra}}}
"""


def test_hard_spread_keeps_every_receiving_zone_within_max_skew() -> None:
    """One matching pod already runs in z1; three more must leave each zone that receives
    one at most 1 above the least filled zone: final counts are (2,1,1) or (1,2,1) or
    (1,1,2) — never 3 in one zone — and the verifier's replay agrees."""
    plan = cpsat(instance(BASE, SPREAD_NODES, spread_jobs()))
    placed = nodes_of_plan(plan, "s")
    assert len(placed) == 3
    final = {"a1": 1, "b1": 0, "c1": 0}
    for node in placed:
        final[node] += 1
    assert max(final.values()) - min(final.values()) <= 1


def test_min_domains_above_the_zone_count_caps_each_zone() -> None:
    """minDomains 4 > 3 zones: the minimum counts as 0, so a receiving zone may hold at most
    1 matching pod. z1 already holds one, so only z2 and z3 can take a pod: 2 < the gang of 3."""
    assert pods_of(cpsat(instance(BASE, SPREAD_NODES, spread_jobs(", minDomains: 4"))), "s") == []


def test_preferred_node_affinity_picks_the_preferred_node() -> None:
    """Two otherwise equal nodes; weight 50 for pool=fast: the soft score in the topology
    stage puts the pod on the fast node."""
    nodes = """
nodes:
- {name: slow, labels: {pool: slow}, allocatable: {cpu: "8"}}
- {name: fast, labels: {pool: fast}, allocatable: {cpu: "8"}}
"""
    jobs = """
jobs:
- name: p
  tasks:
  - name: t
    resources: {cpu: "1"}
    affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [
      {weight: 50, preference: {matchExpressions: [{key: pool, operator: In, values: [fast]}]}}]}}
"""
    assert nodes_of_plan(cpsat(instance(BASE, nodes, jobs)), "p") == ["fast"]


def test_nodes_without_the_key() -> None:
    """§7.2: a node without the zone label fails a DoNotSchedule zone constraint and required
    affinity on zone, but never conflicts for anti-affinity. One such node: the spread pod and
    the affine pod stay pending; two pods rejecting each other on zone both start there."""
    nodes = """
nodes:
- {name: bare, allocatable: {cpu: "8"}}
"""
    jobs = """
jobs:
- name: s
  tasks:
  - name: t
    labels: {app: s}
    resources: {cpu: "1"}
    topologySpreadConstraints:
    - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule,
       labelSelector: {matchLabels: {app: s}}}
- name: c
  tasks:
  - name: t
    labels: {app: c}
    resources: {cpu: "1"}
    affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: zone, labelSelector: {matchLabels: {app: c}}}]}}
- name: w
  tasks:
  - name: t
    replicas: 2
    labels: {app: w}
    resources: {cpu: "1"}
    affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: zone, labelSelector: {matchLabels: {app: w}}}]}}
"""
    plan = cpsat(instance(BASE, nodes, jobs))
    assert pods_of(plan, "s") == [] and pods_of(plan, "c") == []
    assert nodes_of_plan(plan, "w") == ["bare", "bare"]


def test_schedule_anyway_spread_outranks_keeping_a_job_on_one_node() -> None:
    """Three replicas with a ScheduleAnyway zone constraint on three zones: the soft score
    (− 100 × skew) ranks above the LCA part of the topology stage, so one pod per zone (skew 0)
    beats all three on one node (skew 3, LCA tier 0)."""
    jobs = """
jobs:
- name: s
  minAvailable: 3
  tasks:
  - name: t
    replicas: 3
    labels: {app: s}
    resources: {cpu: "1"}
    topologySpreadConstraints:
    - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway,
       labelSelector: {matchLabels: {app: s}}}
"""
    plan = cpsat(instance(BASE, SPREAD_NODES, jobs))
    assert nodes_of_plan(plan, "s") == ["a1", "b1", "c1"]
