"""Facts the engines, the verifier and the metrics all read, worked out by hand: which taints
keep a pod off a node, which nodes spread counts, which jobs conformance protects, and a
job's status once a plan is applied."""

from __future__ import annotations

from models.affinity import HONOR, IGNORE, SpreadConstraint
from models.cluster import CORDON, Node, Taint
from models.load import loads
from models.selectors import LabelRequirement, LabelSelector
from models.workload import Job, Task, Toleration
from optimizer.plan import ADMITTED, PENDING, RUNNING, Eviction, Placement, Plan

TAINTED = Node(
    "n",
    labels={"zone": "a"},
    taints=(
        Taint("gpu", "yes", "NoSchedule"),
        Taint("soft", "", "PreferNoSchedule"),
        Taint("drain", "", "NoExecute"),
    ),
)


def test_only_noschedule_and_noexecute_taints_and_a_cordon_block_a_pod() -> None:
    assert [t.key for t in TAINTED.hard_taints] == ["gpu", "drain"]
    assert TAINTED.scheduling_taints == TAINTED.hard_taints
    cordoned = Node("c", taints=(Taint("soft", "", "PreferNoSchedule"),), unschedulable=True)
    assert cordoned.hard_taints == ()
    assert cordoned.scheduling_taints == (CORDON,)
    assert Taint("node.kubernetes.io/unschedulable", "", "NoSchedule") == CORDON


def test_a_pod_tolerates_all_or_not() -> None:
    both = Task("t", 1, tolerations=(Toleration("gpu", "Equal", "yes", ""), Toleration("drain")))
    one = Task("t", 1, tolerations=(Toleration("gpu", "Equal", "yes", ""),))
    assert both.tolerates_all(TAINTED.hard_taints)
    assert not one.tolerates_all(TAINTED.hard_taints)
    assert Task("t", 1).tolerates_all(())


def test_node_affinity_needs_the_selector_and_one_term_and_an_empty_term_matches_nothing() -> None:
    in_a = LabelSelector((), (LabelRequirement("zone", "In", ("a",)),))
    in_b = LabelSelector((), (LabelRequirement("zone", "In", ("b",)),))
    labels = {"zone": "a", "disk": "ssd"}
    both = Task("t", 1, node_selector={"disk": "ssd"}, required_affinity=(in_b, in_a))
    assert both.node_affinity_matches(labels)
    assert not Task("t", 1, node_selector={"disk": "hdd"}).node_affinity_matches(labels)
    assert not Task("t", 1, required_affinity=(in_b,)).node_affinity_matches(labels)
    assert not Task("t", 1, required_affinity=(LabelSelector(),)).node_affinity_matches(labels)


def test_spread_counts_a_node_by_its_inclusion_policies() -> None:
    """Affinity Honor (default): the selector decides; taints Ignore (default): taints do not;
    taints Honor: the untolerated NoSchedule taint excludes the node."""
    picky = Task("t", 1, node_selector={"zone": "b"})
    plain = Task("t", 1)

    def spread(affinity: str, taints: str) -> SpreadConstraint:
        return SpreadConstraint(1, "zone", "DoNotSchedule", None, None, affinity, taints)

    assert not spread(HONOR, IGNORE).includes(picky, TAINTED)
    assert spread(IGNORE, IGNORE).includes(picky, TAINTED)
    assert spread(HONOR, IGNORE).includes(plain, TAINTED)
    assert not spread(HONOR, HONOR).includes(plain, TAINTED)


def test_conformance_protects_kube_system_and_system_critical_classes() -> None:
    assert Job("j", namespace="kube-system").conformance_protection == (
        "pods of namespace kube-system"
    )
    critical = Job("j", priority_class="system-node-critical")
    assert critical.conformance_protection == "priority class system-node-critical"
    assert Job("j", priority_class="high").conformance_protection is None


GANGS = """\
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: t}
now: "2026-11-30T14:00:00Z"
nodes:
- {name: n0, allocatable: {cpu: "16", memory: 64Gi}}
jobs:
- name: kept
  minAvailable: 2
  tasks: [{name: w, replicas: 2, resources: {cpu: "1", memory: 1Gi}}]
  running: [{index: 0, node: n0}, {index: 1, node: n0}]
- name: broken
  minAvailable: 2
  tasks: [{name: w, replicas: 2, resources: {cpu: "1", memory: 1Gi}}]
  running: [{index: 0, node: n0}, {index: 1, node: n0}]
- name: grown
  minAvailable: 1
  tasks: [{name: w, replicas: 2, resources: {cpu: "1", memory: 1Gi}}]
  running: [{index: 0, node: n0}]
- name: new
  tasks: [{name: w, replicas: 1, resources: {cpu: "1", memory: 1Gi}}]
- name: waiting
  tasks: [{name: w, replicas: 1, resources: {cpu: "1", memory: 1Gi}}]
"""


def test_a_jobs_status_after_a_plan_follows_its_gang() -> None:
    """kept: both pods stay → running; broken: one of two evicted, below minAvailable 2 →
    pending; grown: a new pod beside its running one → admitted; new: placed → admitted;
    waiting: nothing → pending."""
    inst = loads(GANGS)
    plan = Plan(
        instance="t",
        placements=(
            Placement("default/grown-w-1", "n0", None),
            Placement("default/new-w-0", "n0", None),
        ),
        evictions=(Eviction("default/broken-w-0", "n0", "preempt"),),
    )
    assert plan.job_statuses(inst) == {
        "default/kept": RUNNING,
        "default/broken": PENDING,
        "default/grown": ADMITTED,
        "default/new": ADMITTED,
        "default/waiting": PENDING,
    }
