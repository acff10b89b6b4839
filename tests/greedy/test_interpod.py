"""Inter-pod affinity, topology spread and preferred node affinity in the greedy engine.

Every expected value is worked by hand from spec/k8s-affinity-spread.md (§ numbers in each
docstring), most of them the spec's own worked examples; none were copied from a run.
"""

from __future__ import annotations

from models.instance import Instance
from models.load import loads
from optimizer.greedy import engine
from optimizer.greedy.api import TaskInfo
from optimizer.greedy.plugins import interpod
from optimizer.greedy.plugins.interpod import (
    AFFINITY_FAILED,
    ANTI_AFFINITY_FAILED,
    EXISTING_ANTI_FAILED,
)
from optimizer.greedy.plugins.nodeorder import NodeOrderPlugin
from optimizer.greedy.plugins.predicates import PredicatesPlugin
from optimizer.greedy.plugins.spread import MISSING_LABEL, SKEW
from optimizer.greedy.session import UNRESOLVABLE, UNSCHEDULABLE, Plugin, Session
from optimizer.plan import ADMITTED, Placement, Plan
from optimizer.verify import verify

REGISTRY: dict[str, type[Plugin]] = {c.name: c for c in (PredicatesPlugin, NodeOrderPlugin)}
SCORES_ONLY = (
    "{name: nodeorder, arguments: {leastrequested.weight: 0, balancedresource.weight: 0,"
    " tainttoleration.weight: 0}}"
)
HOST = "kubernetes.io/hostname"


def make(nodes: str, jobs: str, plugins: str = "{name: predicates}") -> Instance:
    return loads(
        f"""
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {{name: t}}
now: "2026-11-30T14:00:00Z"
scheduler:
  actions: "allocate"
  tiers:
  - plugins: [{plugins}]
nodes:
{nodes}
jobs:
{jobs}
"""
    )


def open_session(instance: Instance, seed: int = 0) -> Session:
    ssn = Session(instance, seed)
    ssn.open(REGISTRY)
    return ssn


def task(ssn: Session, pod: str, namespace: str = "ns") -> TaskInfo:
    job = pod.rsplit("-", 2)[0]
    return ssn.jobs[f"{namespace}/{job}"].tasks[f"{namespace}/{pod}"]


def failures(ssn: Session, t: TaskInfo) -> dict[str, tuple[str, str] | None]:
    ssn.pre_predicate(t)
    out: dict[str, tuple[str, str] | None] = {}
    for node in ssn.node_list:
        f = ssn.predicate(t, node)
        out[node.name] = None if f is None else (f.code, f.reason)
    return out


def running(name: str, labels: str, node: str, extra: str = "") -> str:
    """a one-pod job in namespace ns already running on ``node``."""
    return f"""
- name: {name}
  namespace: ns
  tasks: [{{name: t, labels: {labels}, resources: {{cpu: "1"}}{extra}}}]
  running: [{{index: 0, node: {node}}}]
"""


ZONES = """
- {name: a, labels: {zone: z1}, allocatable: {cpu: "8"}}
- {name: b, labels: {zone: z1}, allocatable: {cpu: "8"}}
- {name: c, labels: {zone: z2}, allocatable: {cpu: "8"}}
"""


# -- filters (§2) -----------------------------------------------------------------------------


def test_spec_2_4_affinity_and_existing_anti_affinity_leave_no_node() -> None:
    """§2.4, P1: aff = {(zone,z1):1} from E1 (db on a), so c fails P1's affinity
    (unresolvable); E2 on b rejects app=batch in its zone, so a and b fail the existing pods'
    anti-affinity (Unschedulable: still preemption candidates)."""
    anti = (
        ", affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
        "[{topologyKey: zone, labelSelector: {matchExpressions: "
        "[{key: app, operator: In, values: [batch]}]}}]}}"
    )
    jobs = (
        running("e1", "{app: db}", "a")
        + running("e2", "{app: web}", "b", anti)
        + """
- name: p1
  namespace: ns
  tasks:
  - name: t
    labels: {app: batch}
    resources: {cpu: "1"}
    affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: zone, labelSelector: {matchLabels: {app: db}}}]}}
"""
    )
    ssn = open_session(make(ZONES, jobs))
    assert failures(ssn, task(ssn, "p1-t-0")) == {
        "a": (UNSCHEDULABLE, EXISTING_ANTI_FAILED),
        "b": (UNSCHEDULABLE, EXISTING_ANTI_FAILED),
        "c": (UNRESOLVABLE, AFFINITY_FAILED),
    }


def test_first_pod_of_a_self_affine_group_can_schedule_on_nodes_with_the_key() -> None:
    """§2.4 P2 and §7.10: no pod app=cache exists and P2 matches its own term, so every node
    with a zone label passes; d has no zone label and fails even under the exception."""
    nodes = ZONES + '- {name: d, labels: {rack: r}, allocatable: {cpu: "8"}}\n'
    jobs = """
- name: p2
  namespace: ns
  minAvailable: 1
  tasks:
  - name: t
    replicas: 3
    labels: {app: cache}
    resources: {cpu: "1"}
    affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: zone, labelSelector: {matchLabels: {app: cache}}}]}}
"""
    ssn = open_session(make(nodes, jobs))
    assert failures(ssn, task(ssn, "p2-t-0")) == {
        "a": None,
        "b": None,
        "c": None,
        "d": (UNRESOLVABLE, AFFINITY_FAILED),
    }
    # Once the first pod sits on c (z2), the exception is off: only z2 holds a match.
    ssn.allocate(task(ssn, "p2-t-0"), ssn.nodes["c"], None)
    after = failures(ssn, task(ssn, "p2-t-1"))
    assert after["c"] is None
    assert after["a"] == after["b"] == (UNRESOLVABLE, AFFINITY_FAILED)


def test_self_affine_group_ends_in_one_zone_whole_engine() -> None:
    """§6.9: with one key and no earlier match, every member ends in one domain."""
    jobs = """
- name: p2
  namespace: ns
  tasks:
  - name: t
    replicas: 3
    labels: {app: cache}
    resources: {cpu: "1"}
    affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: zone, labelSelector: {matchLabels: {app: cache}}}]}}
"""
    inst = make(ZONES, jobs)
    for seed in range(4):
        plan = engine.solve(inst, seed)
        zones = {inst.node_by_name[p.node].labels["zone"] for p in plan.placements}
        assert len(plan.placements) == 3 and len(zones) == 1
        assert verify(inst, plan) == []


def test_anti_affine_pair_never_shares_a_node() -> None:
    """§2.2 check 2: P's anti-affinity on the hostname key (the node name here) rejects a node
    that holds a match. Two replicas, one node: the second cannot go (no gang plugin is
    configured, so the first stays placed). Two nodes: one replica each."""
    jobs = """
- name: web
  namespace: ns
  tasks:
  - name: t
    replicas: 2
    labels: {app: web}
    resources: {cpu: "1"}
    affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}]}}
"""
    one = '- {name: a, labels: {kubernetes.io/hostname: a}, allocatable: {cpu: "8"}}\n'
    two = one + '- {name: b, labels: {kubernetes.io/hostname: b}, allocatable: {cpu: "8"}}\n'
    ssn = open_session(make(one, jobs))
    ssn.allocate(task(ssn, "web-t-0"), ssn.nodes["a"], None)
    assert failures(ssn, task(ssn, "web-t-1"))["a"] == (UNSCHEDULABLE, ANTI_AFFINITY_FAILED)
    assert [p.pod for p in engine.solve(make(one, jobs)).placements] == ["ns/web-t-0"]
    plan = engine.solve(make(two, jobs))
    assert sorted(p.node for p in plan.placements) == ["a", "b"]


def test_evicted_pods_stop_counting_and_placed_pods_count() -> None:
    """§6.2: a pod evicted in the session vanishes from the counts at once; a pod placed
    earlier in the session counts for the next task."""
    jobs = (
        running("db", "{app: db}", "a")
        + """
- name: p
  namespace: ns
  tasks:
  - name: t
    labels: {app: x}
    resources: {cpu: "1"}
    affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: zone, labelSelector: {matchLabels: {app: db}}}]}}
"""
    )
    ssn = open_session(make(ZONES, jobs))
    p = task(ssn, "p-t-0")
    before = failures(ssn, p)
    assert before["a"] == before["b"] == (UNSCHEDULABLE, ANTI_AFFINITY_FAILED)
    assert before["c"] is None
    ssn.evict(task(ssn, "db-t-0"), "preempt")
    assert set(failures(ssn, p).values()) == {None}


def test_existing_anti_affinity_in_its_own_namespace_does_not_block_others() -> None:
    """§2.2: an existing pod's term with the default namespace (its own, ns) never blocks a
    pod of another namespace."""
    anti = (
        ", affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
        "[{topologyKey: zone, labelSelector: {}}]}}"
    )
    jobs = (
        running("e", "{app: e}", "a", anti)
        + """
- name: p
  namespace: other
  tasks: [{name: t, labels: {app: p}, resources: {cpu: "1"}}]
- name: q
  namespace: ns
  tasks: [{name: t, labels: {app: q}, resources: {cpu: "1"}}]
"""
    )
    ssn = open_session(make(ZONES, jobs))
    assert set(failures(ssn, task(ssn, "p-t-0", "other")).values()) == {None}
    q = failures(ssn, task(ssn, "q-t-0"))
    assert q["a"] == q["b"] == (UNSCHEDULABLE, EXISTING_ANTI_FAILED) and q["c"] is None


SPREAD_NODES = """
- {name: a, labels: {zone: z1}, allocatable: {cpu: "8"}}
- {name: b, labels: {zone: z1}, allocatable: {cpu: "8"}}
- {name: c, labels: {zone: z2}, allocatable: {cpu: "8"}}
- {name: n, labels: {rack: r}, allocatable: {cpu: "8"}}
"""


def spread_jobs(extra: str = "") -> str:
    """§4.3's example: matching pods a:2, b:0, c:1; P has app=web and one hard constraint."""
    return (
        running("w1", "{app: web}", "a")
        + running("w2", "{app: web}", "a")
        + running("w3", "{app: web}", "c")
        + f"""
- name: p
  namespace: ns
  tasks:
  - name: t
    labels: {{app: web}}
    resources: {{cpu: "1"}}
    topologySpreadConstraints:
    - {{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule,
       labelSelector: {{matchLabels: {{app: web}}}}{extra}}}
"""
    )


def test_spread_skew_counts_against_the_global_minimum() -> None:
    """§4.3: M = {z1: 2, z2: 1}, globalMin 1. a, b: 2+1−1 = 2 > 1; c: 1+1−1 = 1 passes. n has
    no zone label: unresolvable (and, lacking the key, it is no eligible domain)."""
    ssn = open_session(make(SPREAD_NODES, spread_jobs()))
    assert failures(ssn, task(ssn, "p-t-0")) == {
        "a": (UNSCHEDULABLE, SKEW),
        "b": (UNSCHEDULABLE, SKEW),
        "c": None,
        "n": (UNRESOLVABLE, MISSING_LABEL),
    }


def test_spread_min_domains_above_the_domain_count_makes_the_minimum_zero() -> None:
    """§4.3: minDomains 3 > 2 domains, so globalMin = 0 and c gives 1+1−0 = 2 > 1."""
    ssn = open_session(make(SPREAD_NODES, spread_jobs(", minDomains: 3")))
    result = failures(ssn, task(ssn, "p-t-0"))
    assert result["c"] == (UNSCHEDULABLE, SKEW)
    assert result["a"] == result["b"] == (UNSCHEDULABLE, SKEW)


def test_an_empty_eligible_domain_counts_as_zero() -> None:
    """§4.2: an eligible node creates its domain even with no pods. Add d in z3: M = {z1: 2,
    z2: 1, z3: 0}, globalMin 0, so c now fails (1+1−0 = 2) and only d passes."""
    nodes = SPREAD_NODES + '- {name: d, labels: {zone: z3}, allocatable: {cpu: "8"}}\n'
    ssn = open_session(make(nodes, spread_jobs()))
    result = failures(ssn, task(ssn, "p-t-0"))
    assert result["d"] is None
    assert result["c"] == (UNSCHEDULABLE, SKEW)


# -- scores (§3–§6.6) ---------------------------------------------------------------------------


E2E_NODES = f"""
- {{name: a, labels: {{{HOST}: a, zone: z1, disk: ssd}}, allocatable: {{cpu: "8"}}}}
- {{name: b, labels: {{{HOST}: b, zone: z1}}, allocatable: {{cpu: "8"}}}}
- {{name: c, labels: {{{HOST}: c, zone: z2, disk: ssd}}, allocatable: {{cpu: "8"}}}}
"""
E2E_POD = """
- name: p
  namespace: ns
  minAvailable: 1
  tasks:
  - name: t
    replicas: 2
    labels: {app: web}
    resources: {cpu: "1"}
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 80, preference: {matchExpressions: [{key: zone, operator: In, values: [z1]}]}}
        - {weight: 20, preference: {matchExpressions: [{key: disk, operator: In, values: [ssd]}]}}
      podAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 50, podAffinityTerm: {topologyKey: zone,
           labelSelector: {matchLabels: {app: db}}}}
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 20, podAffinityTerm: {topologyKey: kubernetes.io/hostname,
           labelSelector: {matchLabels: {app: web}}}}
    topologySpreadConstraints:
    - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway,
       labelSelector: {matchLabels: {app: web}}}
"""


def test_spec_6_6_end_to_end_scores_and_the_second_replica() -> None:
    """§6.6 step 1: totals a 600, b 502, c 240 (NodeAffinity 100/80/20, InterPodAffinity
    100/71/0, spread 100 everywhere, each × 2). P goes to a. Step 2, with P on a: a 386,
    b 426, c 240, so P′ goes to b."""
    jobs = (
        running("e1", "{app: db}", "a")
        + running("e2", "{app: web}", "b")
        + running("e3", "{app: web}", "c")
        + E2E_POD
    )
    ssn = open_session(make(E2E_NODES, jobs, f"{{name: predicates}}, {SCORES_ONLY}"))
    first, second = task(ssn, "p-t-0"), task(ssn, "p-t-1")
    assert ssn.batch_node_order(first, ssn.node_list) == {"a": 600.0, "b": 502.0, "c": 240.0}
    ssn.allocate(first, ssn.nodes["a"], None)
    assert ssn.batch_node_order(second, ssn.node_list) == {"a": 386.0, "b": 426.0, "c": 240.0}


def test_preferred_weights_change_the_greedy_choice() -> None:
    """Without the scores every node ties (the seeded draw picks); with §6.6's terms the
    engine puts the first replica on a and the second on b, whatever the seed."""
    jobs = (
        running("e1", "{app: db}", "a")
        + running("e2", "{app: web}", "b")
        + running("e3", "{app: web}", "c")
        + E2E_POD
    )
    inst = make(E2E_NODES, jobs, f"{{name: predicates}}, {SCORES_ONLY}")
    for seed in range(3):
        plan = engine.solve(inst, seed)
        placed = {p.pod: p.node for p in plan.placements}
        assert placed == {"ns/p-t-0": "a", "ns/p-t-1": "b"}
        assert all(d.status == ADMITTED for d in plan.jobs if d.job == "ns/p")


def test_spec_3_3_interpod_normalisation_depends_on_the_candidates() -> None:
    """§3.3: T = {zone: {z1: +50}, hostname: {b: −20}}; raw a 50, b 30, c 0. Over {a, b, c}:
    100, 60, 0; over {b, c}: 100, 0."""
    jobs = (
        running("e1", "{app: db}", "a")
        + running("e2", "{app: web}", "b")
        + """
- name: p
  namespace: ns
  tasks:
  - name: t
    labels: {app: x}
    resources: {cpu: "1"}
    affinity:
      podAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 50, podAffinityTerm: {topologyKey: zone,
           labelSelector: {matchLabels: {app: db}}}}
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 20, podAffinityTerm: {topologyKey: kubernetes.io/hostname,
           labelSelector: {matchLabels: {app: web}}}}
"""
    )
    ssn = open_session(make(E2E_NODES, jobs, f"{{name: predicates}}, {SCORES_ONLY}"))
    scores = ssn.plugins["nodeorder"].pod_scores  # type: ignore[attr-defined]
    p = task(ssn, "p-t-0")
    table = interpod.score_table(p, ssn.node_list, scores.pods, scores.book)
    assert table is not None
    assert interpod.normalised_scores(table, ssn.node_list) == {"a": 100, "b": 60, "c": 0}
    bc = [ssn.nodes["b"], ssn.nodes["c"]]
    assert interpod.normalised_scores(table, bc) == {"b": 100, "c": 0}


def test_node_affinity_normalises_over_the_candidates() -> None:
    """§5: terms {80: zone=z1}, {20: disk=ssd}; over {a, b, c} 100, 80, 20 (× weight 2);
    over {b, c}: b 100, c 100·20 // 80 = 25."""
    jobs = """
- name: p
  namespace: ns
  tasks:
  - name: t
    resources: {cpu: "1"}
    affinity:
      nodeAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 80, preference: {matchExpressions: [{key: zone, operator: In, values: [z1]}]}}
        - {weight: 20, preference: {matchExpressions: [{key: disk, operator: In, values: [ssd]}]}}
"""
    ssn = open_session(make(E2E_NODES, jobs, f"{{name: predicates}}, {SCORES_ONLY}"))
    p = task(ssn, "p-t-0")
    assert ssn.batch_node_order(p, ssn.node_list) == {"a": 200.0, "b": 160.0, "c": 40.0}
    bc = [ssn.nodes["b"], ssn.nodes["c"]]
    assert ssn.batch_node_order(p, bc) == {"b": 200.0, "c": 50.0}


def test_spread_score_of_section_4_4() -> None:
    """§4.4: soft zone constraint, pods a:2, b:0, c:1: W = ln 4; raw a = b = round(2.77) = 3,
    c = round(1.39) = 1; normalised 33, 33, 100 (× weight 2: 66, 66, 200)."""
    jobs = (
        running("w1", "{app: web}", "a")
        + running("w2", "{app: web}", "a")
        + running("w3", "{app: web}", "c")
        + """
- name: p
  namespace: ns
  tasks:
  - name: t
    labels: {app: web}
    resources: {cpu: "1"}
    topologySpreadConstraints:
    - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway,
       labelSelector: {matchLabels: {app: web}}}
"""
    )
    ssn = open_session(make(E2E_NODES, jobs, f"{{name: predicates}}, {SCORES_ONLY}"))
    p = task(ssn, "p-t-0")
    assert ssn.batch_node_order(p, ssn.node_list) == {"a": 66.0, "b": 66.0, "c": 200.0}


def test_depends_on_placed_pods_hook() -> None:
    """The hook caches must read: a pod with terms, or one another pod's required
    anti-affinity selects, depends on where pods are; a plain pod nobody selects does not."""
    anti = (
        ", affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
        "[{topologyKey: zone, labelSelector: {matchLabels: {app: batch}}}]}}"
    )
    jobs = (
        running("e", "{app: e}", "a", anti)
        + """
- name: b
  namespace: ns
  tasks: [{name: t, labels: {app: batch}, resources: {cpu: "1"}}]
- name: c
  namespace: ns
  tasks: [{name: t, labels: {app: calm}, resources: {cpu: "1"}}]
"""
    )
    ssn = open_session(make(ZONES, jobs))
    plugin = ssn.plugins["predicates"]
    assert plugin.depends_on_placed_pods(task(ssn, "b-t-0"))  # type: ignore[attr-defined]
    assert not plugin.depends_on_placed_pods(task(ssn, "c-t-0"))  # type: ignore[attr-defined]


REJECTS_Y = """
- name: x
  namespace: ns
  tasks:
  - name: t
    labels: {app: x}
    resources: {cpu: "1"}
    affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: zone, labelSelector: {matchLabels: {app: y}}}]}}
- name: y
  namespace: ns
  tasks: [{name: t, labels: {app: y}, resources: {cpu: "1"}}]
"""


def test_volcano_quirk_anti_affinity_lists_are_frozen_at_session_open() -> None:
    """§6.2 point 1: x (rejecting app=y in its zone) is placed on a this session; a held no
    pod with required anti-affinity at session open, so y's PreFilter does not see x's term
    and b (same zone z1) passes, as in Volcano."""
    ssn = open_session(make(ZONES, REJECTS_Y))
    ssn.allocate(task(ssn, "x-t-0"), ssn.nodes["a"], None)
    assert set(failures(ssn, task(ssn, "y-t-0")).values()) == {None}


def test_volcano_quirk_prefilter_skip_is_sticky_for_the_session() -> None:
    """§6.1: z runs on b with a required anti-affinity term (so b is on the open-time list);
    nothing rejects y, so y's first PreFilter skips. x, rejecting app=y in its zone, is then
    placed on b: a fresh pod y2 (app=y too) sees x's term and fails a and b, but y keeps
    skipping the filter for the rest of the session, as in Volcano."""
    jobs = (
        running(
            "z",
            "{app: z}",
            "b",
            ", affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
            "[{topologyKey: zone, labelSelector: {matchLabels: {app: nobody}}}]}}",
        )
        + REJECTS_Y
        + """
- name: y2
  namespace: ns
  tasks: [{name: t, labels: {app: y}, resources: {cpu: "1"}}]
"""
    )
    ssn = open_session(make(ZONES, jobs))
    y = task(ssn, "y-t-0")
    assert set(failures(ssn, y).values()) == {None}
    ssn.allocate(task(ssn, "x-t-0"), ssn.nodes["b"], None)
    fresh = failures(ssn, task(ssn, "y2-t-0"))
    assert fresh["a"] == fresh["b"] == (UNSCHEDULABLE, EXISTING_ANTI_FAILED)
    assert fresh["c"] is None
    assert set(failures(ssn, y).values()) == {None}


def test_predicate_switches_turn_the_filters_off() -> None:
    """§6.1: ``predicate.PodAffinityEnable: false`` drops InterPodAffinity and
    ``predicate.PodTopologySpreadEnable: false`` drops PodTopologySpread (scores stay)."""
    off = (
        "{name: predicates, arguments: {predicate.PodAffinityEnable: false,"
        " predicate.PodTopologySpreadEnable: false}}"
    )
    ssn = open_session(make(SPREAD_NODES, spread_jobs(), off))
    assert set(failures(ssn, task(ssn, "p-t-0")).values()) == {None}
    jobs = (
        running("db", "{app: db}", "a")
        + """
- name: p
  namespace: ns
  tasks:
  - name: t
    labels: {app: x}
    resources: {cpu: "1"}
    affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
      {topologyKey: zone, labelSelector: {matchLabels: {app: db}}}]}}
"""
    )
    ssn = open_session(make(ZONES, jobs, off))
    assert set(failures(ssn, task(ssn, "p-t-0")).values()) == {None}


def test_namespace_selector_reads_the_namespace_objects_labels() -> None:
    """§1.2–§1.3: p rejects app=db in its zone in every namespace labelled team=a. db runs on
    a in namespace x (team=a), and on c in namespace y (team=b): a and b (zone z1) fail, c
    does not; the verifier agrees on both placements."""
    anti = (
        "{podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: zone,"
        " labelSelector: {matchLabels: {app: db}}, namespaceSelector: {matchLabels: {team: a}}}]}}"
    )
    inst = loads(
        f"""
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {{name: t}}
now: "2026-11-30T14:00:00Z"
scheduler: {{actions: "allocate", tiers: [{{plugins: [{{name: predicates}}]}}]}}
namespaces:
- {{name: x, labels: {{team: a}}}}
- {{name: y, labels: {{team: b}}}}
nodes:
{ZONES}
jobs:
- {{name: db, namespace: x, tasks: [{{name: t, labels: {{app: db}}, resources: {{cpu: "1"}}}}],
   running: [{{index: 0, node: a}}]}}
- {{name: db, namespace: y, tasks: [{{name: t, labels: {{app: db}}, resources: {{cpu: "1"}}}}],
   running: [{{index: 0, node: c}}]}}
- name: p
  namespace: ns
  tasks: [{{name: t, labels: {{app: p}}, resources: {{cpu: "1"}}, affinity: {anti}}}]
"""
    )
    assert inst.namespaces == {"x": {"team": "a"}, "y": {"team": "b"}}
    ssn = open_session(inst)
    result = failures(ssn, task(ssn, "p-t-0"))
    assert result["a"] == result["b"] == (UNSCHEDULABLE, ANTI_AFFINITY_FAILED)
    assert result["c"] is None
    on_b = Plan(placements=(Placement("ns/p-t-0", "b"),))
    on_c = Plan(placements=(Placement("ns/p-t-0", "c"),))
    assert [v.rule for v in verify(inst, on_b)] == ["pod-anti-affinity"]
    assert verify(inst, on_c) == []
