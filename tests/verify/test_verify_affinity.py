"""The verifier's rules for the terms pods carry about other pods: each plan here breaks only
the rule its test names (spec/k8s-affinity-spread.md §2.2, §4.3, replayed in plan order)."""

from __future__ import annotations

from models.instance import Instance
from models.load import loads
from optimizer.plan import Eviction, Placement, Plan
from optimizer.verify import verify

NODES = """
- {name: a, labels: {kubernetes.io/hostname: a, zone: z1}, allocatable: {cpu: "8"}}
- {name: b, labels: {kubernetes.io/hostname: b, zone: z1}, allocatable: {cpu: "8"}}
- {name: c, labels: {kubernetes.io/hostname: c, zone: z2}, allocatable: {cpu: "8"}}
- {name: n, labels: {kubernetes.io/hostname: n}, allocatable: {cpu: "8"}}
"""


def make(jobs: str) -> Instance:
    return loads(
        f"""
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {{name: v}}
now: "2026-11-30T14:00:00Z"
nodes:
{NODES}
jobs:
{jobs}
"""
    )


def plan(*placed: tuple[str, str], evict: tuple[tuple[str, str], ...] = ()) -> Plan:
    return Plan(
        placements=tuple(Placement(f"ns/{p}", n) for p, n in placed),
        evictions=tuple(Eviction(f"ns/{p}", n) for p, n in evict),
    )


ANTI = """
- name: web
  namespace: ns
  minAvailable: 1
  tasks:
  - name: t
    replicas: 2
    labels: {app: web}
    resources: {cpu: "1"}
    affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}]}}
"""


def test_anti_affine_pair_on_one_node_breaks_pod_anti_affinity_only() -> None:
    """Two replicas that reject app=web on their hostname, both on a: the second placement
    meets the first in domain kubernetes.io/hostname=a, by its own term and by the first's."""
    found = verify(make(ANTI), plan(("web-t-0", "a"), ("web-t-1", "a")))
    assert {v.rule for v in found} == {"pod-anti-affinity"}
    assert found[0].message == (
        "pod ns/web-t-1 on node a: required anti-affinity term 0 (topologyKey "
        "kubernetes.io/hostname, labelSelector {app=web}) matches pod ns/web-t-0 in domain "
        "kubernetes.io/hostname=a"
    )
    assert verify(make(ANTI), plan(("web-t-0", "a"), ("web-t-1", "b"))) == []


def test_existing_pods_anti_affinity_is_symmetric_and_evictions_lift_it() -> None:
    """a running pod on a rejects app=x in its zone (z1): a new app=x pod without terms on b
    breaks it; once the running pod is evicted in the same plan, nothing is broken."""
    jobs = """
- name: guard
  namespace: ns
  tasks:
  - name: t
    labels: {app: guard}
    resources: {cpu: "1"}
    affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: zone, labelSelector: {matchLabels: {app: x}}}]}}
  running: [{index: 0, node: a}]
  annotations: {volcano.sh/preemptable: "true"}
- name: x
  namespace: ns
  tasks: [{name: t, labels: {app: x}, resources: {cpu: "1"}}]
"""
    found = verify(make(jobs), plan(("x-t-0", "b")))
    assert [v.rule for v in found] == ["pod-anti-affinity"]
    assert "pod ns/guard-t-0's required anti-affinity term 0" in found[0].message
    assert "domain zone=z1" in found[0].message
    after = verify(make(jobs), plan(("x-t-0", "b"), evict=(("guard-t-0", "a"),)))
    assert [v.rule for v in after if v.rule.startswith("pod-")] == []


AFFINE = """
- name: c
  namespace: ns
  minAvailable: 1
  tasks:
  - name: t
    replicas: 2
    labels: {app: cache}
    resources: {cpu: "1"}
    affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: zone, labelSelector: {matchLabels: {app: cache}}}]}}
"""


def test_self_affine_group_split_over_zones_breaks_pod_affinity_only() -> None:
    """The first pod may go anywhere with a zone (no match yet, it matches itself); the second,
    on c (z2), finds its only match in z1."""
    assert verify(make(AFFINE), plan(("c-t-0", "a"), ("c-t-1", "b"))) == []
    found = verify(make(AFFINE), plan(("c-t-0", "a"), ("c-t-1", "c")))
    assert [v.rule for v in found] == ["pod-affinity"]
    assert found[0].message == (
        "pod ns/c-t-1 on node c: required pod affinity term 0 (topologyKey zone, labelSelector "
        "{app=cache}) has no matching pod in domain zone=z2"
    )


def test_affinity_on_a_node_without_the_key_is_broken_even_for_the_first_pod() -> None:
    found = verify(
        make(AFFINE),
        plan(
            ("c-t-0", "n"),
        ),
    )
    assert [v.rule for v in found] == ["pod-affinity"]
    assert "has no label zone" in found[0].message


SPREAD = """
- name: s
  namespace: ns
  minAvailable: 1
  tasks:
  - name: t
    replicas: 3
    labels: {app: s}
    resources: {cpu: "1"}
    topologySpreadConstraints:
    - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule,
       labelSelector: {matchLabels: {app: s}}}
"""


def test_spread_skew_breaks_topology_spread_only() -> None:
    """Eligible domains z1 (a, b) and z2 (c); n lacks the key. s-0 and s-1 both in z1: at the
    second placement z1 holds 1 + 1 against z2's 0, skew 2 > 1."""
    assert verify(make(SPREAD), plan(("s-t-0", "a"), ("s-t-1", "c"), ("s-t-2", "b"))) == []
    found = verify(make(SPREAD), plan(("s-t-0", "a"), ("s-t-1", "b")))
    assert [v.rule for v in found] == ["topology-spread"]
    assert found[0].message == (
        "pod ns/s-t-1 on node b: DoNotSchedule constraint 0 on zone: domain zone=z1 would hold "
        "2 matching pods against a minimum of 0, skew 2 > maxSkew 1"
    )
    missing = verify(
        make(SPREAD),
        plan(
            ("s-t-0", "n"),
        ),
    )
    assert [v.rule for v in missing] == ["topology-spread"]


def test_metrics_count_the_soft_terms_a_plan_satisfies() -> None:
    """p prefers node a (node affinity on its hostname), no app=db in its zone (anti-affinity)
    and a ScheduleAnyway zone spread of its own pods; db runs on a (z1). On a: the node term
    holds, the anti term does not (db shares z1), the spread holds (z1 1 − z2 0 ≤ 1): 2 of 3.
    On c (z2): the node term fails, the anti term and the spread hold: 2 of 3."""
    from optimizer.metrics import measure

    jobs = """
- name: db
  namespace: ns
  tasks: [{name: t, labels: {app: db}, resources: {cpu: "1"}}]
  running: [{index: 0, node: a}]
- name: p
  namespace: ns
  tasks:
  - name: t
    labels: {app: p}
    resources: {cpu: "1"}
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 10, preference: {matchExpressions: [{key: kubernetes.io/hostname,
           operator: In, values: [a]}]}}
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 5, podAffinityTerm: {topologyKey: zone, labelSelector: {matchLabels: {app: db}}}}
    topologySpreadConstraints:
    - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway,
       labelSelector: {matchLabels: {app: p}}}
"""
    inst = make(jobs)
    on_a = measure(inst, plan(("p-t-0", "a")))
    on_c = measure(inst, plan(("p-t-0", "c")))
    assert (on_a.soft_terms, on_a.soft_terms_satisfied) == (3, 2)
    assert (on_c.soft_terms, on_c.soft_terms_satisfied) == (3, 2)
