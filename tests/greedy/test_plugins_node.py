"""The node-level plugins of the greedy engine: predicates, nodeorder, binpack and tdm.

Expected values are worked by hand from spec/volcano-scheduler.md (§ numbers in each docstring)
and the kube-scheduler formulas it quotes; none were copied from a run.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from models.instance import Instance
from models.load import loads
from optimizer.greedy.api import NodeInfo, TaskInfo
from optimizer.greedy.nodes import best_node
from optimizer.greedy.plugins.binpack import BinpackPlugin
from optimizer.greedy.plugins.nodeorder import NodeOrderPlugin, NodeOrderWeights
from optimizer.greedy.plugins.predicates import (
    AFFINITY_MISMATCH,
    NODE_UNSCHEDULABLE,
    TOO_MANY_PODS,
    PredicatesPlugin,
)
from optimizer.greedy.plugins.tdm import TdmPlugin
from optimizer.greedy.session import (
    PERMIT,
    REJECT,
    UNRESOLVABLE,
    UNSCHEDULABLE,
    Plugin,
    ScoreSkip,
    Session,
)

REGISTRY: dict[str, type[Plugin]] = {
    cls.name: cls for cls in (PredicatesPlugin, NodeOrderPlugin, BinpackPlugin, TdmPlugin)
}
LEAST_ONLY = "{name: nodeorder, arguments: {balancedresource.weight: 0, tainttoleration.weight: 0}}"
BALANCED_ONLY = (
    "{name: nodeorder, arguments: {leastrequested.weight: 0, tainttoleration.weight: 0}}"
)
TAINT_ONLY = "{name: nodeorder, arguments: {leastrequested.weight: 0, balancedresource.weight: 0}}"
GI = 1 << 30


def make(
    nodes: str,
    jobs: str,
    plugins: str = "{name: predicates}",
    now: str = "2026-11-30T14:00:00Z",
) -> Instance:
    """An instance whose scheduler has one tier with ``plugins`` (a YAML flow list body)."""
    return loads(
        f"""
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {{name: t}}
now: "{now}"
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


def task(ssn: Session, pod: str, namespace: str = "default") -> TaskInfo:
    job = pod.rsplit("-", 2)[0]
    return ssn.jobs[f"{namespace}/{job}"].tasks[f"{namespace}/{pod}"]


def score(ssn: Session, t: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
    """The node score of §2.5: Σ NodeOrderFn + Σ BatchNodeOrderFn."""
    batch = ssn.batch_node_order(t, nodes)
    return {n.name: ssn.node_order(t, n) + batch.get(n.name, 0.0) for n in nodes}


# -- predicates (§2.2) ------------------------------------------------------------------------


def test_node_selector_must_be_a_subset_of_node_labels() -> None:
    """§2.2 NodeAffinity: every nodeSelector pair must be a node label; a mismatch is
    UnschedulableAndUnresolvable with kube-scheduler's affinity/selector reason."""
    ssn = open_session(
        make(
            """
- {name: a, allocatable: {cpu: "4"}, labels: {pool: a, zone: z1}}
- {name: b, allocatable: {cpu: "4"}, labels: {pool: b, zone: z1}}
- {name: c, allocatable: {cpu: "4"}, labels: {zone: z1}}
""",
            """
- name: j
  tasks: [{name: t, resources: {cpu: "1"}, nodeSelector: {pool: a, zone: z1}}]
""",
        )
    )
    t = task(ssn, "j-t-0")
    assert ssn.predicate(t, ssn.nodes["a"]) is None
    for name in ("b", "c"):
        failure = ssn.predicate(t, ssn.nodes[name])
        assert failure is not None
        assert (failure.code, failure.reason) == (UNRESOLVABLE, AFFINITY_MISMATCH)


def test_required_affinity_terms_are_ored_and_expressions_anded() -> None:
    """§2.2 NodeAffinity: nodeSelectorTerms are ORed, each term's expressions ANDed.
    Terms: (zone In [z1]) OR (gpu Exists AND zone NotIn [z3]). a (z1) matches term 1; b (z2,
    gpu) matches term 2; c (z3, gpu) fails term 2's NotIn and term 1; d (z2) matches neither."""
    affinity = (
        "{nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: ["
        "{matchExpressions: [{key: zone, operator: In, values: [z1]}]},"
        "{matchExpressions: [{key: gpu, operator: Exists},"
        " {key: zone, operator: NotIn, values: [z3]}]}]}}}"
    )
    ssn = open_session(
        make(
            """
- {name: a, allocatable: {cpu: "4"}, labels: {zone: z1}}
- {name: b, allocatable: {cpu: "4"}, labels: {zone: z2, gpu: "yes"}}
- {name: c, allocatable: {cpu: "4"}, labels: {zone: z3, gpu: "yes"}}
- {name: d, allocatable: {cpu: "4"}, labels: {zone: z2}}
""",
            f"""
- name: j
  tasks: [{{name: t, resources: {{cpu: "1"}}, affinity: {affinity}}}]
""",
        )
    )
    t = task(ssn, "j-t-0")
    passed = {n.name for n in ssn.node_list if ssn.predicate(t, n) is None}
    assert passed == {"a", "b"}


def test_empty_affinity_term_matches_no_node() -> None:
    """§2.2 NodeAffinity with Kubernetes semantics: a nodeSelectorTerm without expressions
    selects nothing (unlike an empty label selector, which selects everything)."""
    ssn = open_session(
        make(
            """
- {name: a, allocatable: {cpu: "4"}, labels: {zone: z1}}
""",
            """
- name: j
  tasks:
  - name: t
    resources: {cpu: "1"}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms: [{matchExpressions: []}]
""",
        )
    )
    failure = ssn.predicate(task(ssn, "j-t-0"), ssn.nodes["a"])
    assert failure is not None and failure.reason == AFFINITY_MISMATCH


TAINTED_NODES = """
- {name: hard, allocatable: {cpu: "4"}, taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}
- name: soft
  allocatable: {cpu: "4"}
  taints: [{key: dedicated, value: gpu, effect: PreferNoSchedule}]
- {name: exec, allocatable: {cpu: "4"}, taints: [{key: broken, value: disk, effect: NoExecute}]}
"""


def test_taints_noschedule_and_noexecute_block_prefernoschedule_does_not() -> None:
    """§2.2 TaintToleration filters NoSchedule and NoExecute taints only; the reason names the
    first untolerated taint as ``{key: value}`` (UnschedulableAndUnresolvable). A toleration
    for dedicated=gpu:NoSchedule opens ``hard`` but not ``exec``; ``Exists`` without a key
    tolerates every taint."""
    ssn = open_session(
        make(
            TAINTED_NODES,
            """
- name: plain
  tasks: [{name: t, resources: {cpu: "1"}}]
- name: tol
  tasks:
  - name: t
    resources: {cpu: "1"}
    tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}]
- name: all
  tasks: [{name: t, resources: {cpu: "1"}, tolerations: [{operator: Exists}]}]
""",
        )
    )
    plain = task(ssn, "plain-t-0")
    hard = ssn.predicate(plain, ssn.nodes["hard"])
    assert hard is not None
    assert (hard.code, hard.reason) == (
        UNRESOLVABLE,
        "node(s) had untolerated taint {dedicated: gpu}",
    )
    assert ssn.predicate(plain, ssn.nodes["soft"]) is None
    exec_failure = ssn.predicate(plain, ssn.nodes["exec"])
    assert exec_failure is not None
    assert exec_failure.reason == "node(s) had untolerated taint {broken: disk}"

    tol = task(ssn, "tol-t-0")
    assert ssn.predicate(tol, ssn.nodes["hard"]) is None
    assert ssn.predicate(tol, ssn.nodes["exec"]) is not None

    everything = task(ssn, "all-t-0")
    assert all(ssn.predicate(everything, n) is None for n in ssn.node_list)


def test_unschedulable_node_needs_the_unschedulable_toleration() -> None:
    """§2.2 NodeUnschedulable: a cordoned node is UnschedulableAndUnresolvable unless the pod
    tolerates the ``node.kubernetes.io/unschedulable:NoSchedule`` taint."""
    ssn = open_session(
        make(
            """
- {name: cordoned, allocatable: {cpu: "4"}, unschedulable: true}
""",
            """
- name: plain
  tasks: [{name: t, resources: {cpu: "1"}}]
- name: ds
  tasks:
  - name: t
    resources: {cpu: "1"}
    tolerations: [{key: node.kubernetes.io/unschedulable, operator: Exists, effect: NoSchedule}]
""",
        )
    )
    failure = ssn.predicate(task(ssn, "plain-t-0"), ssn.nodes["cordoned"])
    assert failure is not None
    assert (failure.code, failure.reason) == (UNRESOLVABLE, NODE_UNSCHEDULABLE)
    assert ssn.predicate(task(ssn, "ds-t-0"), ssn.nodes["cordoned"]) is None


def test_pod_count_includes_pods_placed_and_pipelined_this_session() -> None:
    """§2.2 step 1: Unschedulable when pods allocatable ≤ pods on the node, counting pods
    placed in this session. ``small`` holds 2 pods and runs 1: the first pending pod fits;
    once it is allocated, 2 ≤ 2 and the next one gets "pod number exceeded". On ``tiny`` (1
    pod) a *pipelined* pod fills the node too, because pipeline fires the same event that
    adds the pod to kube-scheduler's NodeInfo (§9 item 20). Undoing the allocation frees the
    slot again."""
    ssn = open_session(
        make(
            """
- {name: small, allocatable: {cpu: "8", pods: 2}}
- {name: tiny, allocatable: {cpu: "8", pods: 1}}
""",
            """
- name: run
  tasks: [{name: t, resources: {cpu: "1"}}]
  running: [{index: 0, node: small}]
- name: j
  tasks: [{name: t, replicas: 3, resources: {cpu: "1"}}]
""",
        )
    )
    small, tiny = ssn.nodes["small"], ssn.nodes["tiny"]
    t0, t1, t2 = (task(ssn, f"j-t-{i}") for i in range(3))
    assert ssn.predicate(t0, small) is None
    op = ssn.allocate(t0, small, None)
    failure = ssn.predicate(t1, small)
    assert failure is not None
    assert (failure.code, failure.reason) == (UNSCHEDULABLE, TOO_MANY_PODS)

    assert ssn.predicate(t2, tiny) is None
    ssn.pipeline(t2, tiny, None)
    assert ssn.predicate(t1, tiny) is not None

    ssn.undo(op)
    assert ssn.predicate(t1, small) is None


def test_evicted_pod_frees_its_pod_slot() -> None:
    """§2.2 and §2.6: an evicted pod stays in Volcano's node as Releasing, but the deallocate
    event removes it from the NodeInfo the predicates plugin counts, so preempt can make room
    on a full node (the preemptor's fit check runs PredicateFn again, §8.1)."""
    ssn = open_session(
        make(
            """
- {name: full, allocatable: {cpu: "8", pods: 1}}
""",
            """
- name: run
  tasks: [{name: t, resources: {cpu: "1"}}]
  running: [{index: 0, node: full}]
- name: j
  tasks: [{name: t, resources: {cpu: "1"}}]
""",
        )
    )
    full = ssn.nodes["full"]
    pending = task(ssn, "j-t-0")
    assert ssn.predicate(pending, full) is not None
    ssn.evict(task(ssn, "run-t-0"), "preempted")
    assert ssn.predicate(pending, full) is None


def test_enable_arguments_switch_filters_off_but_not_the_pod_count() -> None:
    """§2.2: ``predicate.<Name>Enable: false`` turns a filter off; the pod count has no switch.
    Only a YAML boolean counts (Volcano's ``GetBool``): ``"false"`` as a string leaves
    NodeUnschedulable on."""
    plugins = (
        "{name: predicates, arguments: {predicate.NodeAffinityEnable: false,"
        " predicate.TaintTolerationEnable: false, predicate.NodeUnschedulableEnable: 'false'}}"
    )
    ssn = open_session(
        make(
            """
- {name: odd, allocatable: {cpu: "4"}, labels: {pool: b}, taints: [{key: k, effect: NoSchedule}]}
- {name: cordoned, allocatable: {cpu: "4"}, labels: {pool: a}, unschedulable: true}
- {name: full, allocatable: {cpu: "4", pods: 0}, labels: {pool: a}}
""",
            """
- name: j
  tasks: [{name: t, resources: {cpu: "1"}, nodeSelector: {pool: a}}]
""",
            plugins,
        )
    )
    t = task(ssn, "j-t-0")
    assert ssn.predicate(t, ssn.nodes["odd"]) is None
    cordoned = ssn.predicate(t, ssn.nodes["cordoned"])
    assert cordoned is not None and cordoned.reason == NODE_UNSCHEDULABLE
    full = ssn.predicate(t, ssn.nodes["full"])
    assert full is not None and full.reason == TOO_MANY_PODS


# -- nodeorder (§2.5) -------------------------------------------------------------------------


def test_least_allocated_floors_each_resource_then_the_average() -> None:
    """§2.5 LeastAllocated on an empty node (3 CPU, 3 GiB) for a pod of 1 CPU, 2 GiB:
    cpu ⌊(3000 − 1000)·100/3000⌋ = 66, memory ⌊1 GiB·100/3 GiB⌋ = 33,
    score ⌊(66·50 + 33·50)/100⌋ = ⌊49.5⌋ = 49 (× weight 1)."""
    ssn = open_session(
        make(
            """
- {name: n, allocatable: {cpu: "3", memory: 3Gi}}
""",
            """
- name: j
  tasks: [{name: t, resources: {cpu: "1", memory: 2Gi}}]
""",
            LEAST_ONLY,
        )
    )
    assert score(ssn, task(ssn, "j-t-0"), ssn.node_list) == {"n": 49.0}


def test_least_allocated_counts_unset_requests_as_100m_and_200mi() -> None:
    """§2.5 non-zero requests. Pod: memory 512 Mi, no CPU → counts 100m CPU. Nodes: 1 CPU,
    1 GiB. ``empty``: cpu ⌊900·100/1000⌋ = 90, memory ⌊512·100/1024⌋ = 50 → ⌊140/2⌋ = 70.
    ``busy`` also runs a pod with no requests at all, which counts 100m / 200 Mi: cpu R = 200
    → 80, memory R = 712 Mi → ⌊312·100/1024⌋ = 30 → ⌊110/2⌋ = 55."""
    ssn = open_session(
        make(
            """
- {name: empty, allocatable: {cpu: "1", memory: 1Gi}}
- {name: busy, allocatable: {cpu: "1", memory: 1Gi}}
""",
            """
- name: be
  tasks: [{name: t, resources: {}}]
  running: [{index: 0, node: busy}]
- name: j
  tasks: [{name: t, resources: {memory: 512Mi}}]
""",
            LEAST_ONLY,
        )
    )
    assert score(ssn, task(ssn, "j-t-0"), ssn.node_list) == {"empty": 70.0, "busy": 55.0}


def test_nodeorder_counts_pods_pipelined_this_session() -> None:
    """§9 item 20: kube-scheduler's NodeInfo (read by nodeorder) includes pipelined pods.
    Node 4 CPU / 8 GiB, pods of 1 CPU / 2 GiB. Before: R = 1 CPU, 2 GiB → 75 and 75 → 75.
    After pipelining one pod there: R = 2 CPU, 4 GiB → 50."""
    ssn = open_session(
        make(
            """
- {name: n, allocatable: {cpu: "4", memory: 8Gi}}
""",
            """
- name: j
  tasks: [{name: t, replicas: 2, resources: {cpu: "1", memory: 2Gi}}]
""",
            LEAST_ONLY,
        )
    )
    n = ssn.nodes["n"]
    t0, t1 = task(ssn, "j-t-0"), task(ssn, "j-t-1")
    assert score(ssn, t1, [n]) == {"n": 75.0}
    ssn.pipeline(t0, n, None)
    assert score(ssn, t1, [n]) == {"n": 50.0}


def test_balanced_allocation_worked_numbers() -> None:
    """§2.5 BalancedAllocation, actual requests, node 4 CPU / 8 GiB / 4 GPUs (``g``) or
    4 CPU / 8 GiB (``c``):
    - gpu pod 2 CPU, 2 GiB, 1 GPU on g: fractions .5, .25, .25; mean 1/3; variance
      ((1/6)² + 2·(1/12)²)/3 = 1/72; std ≈ 0.1179 → int(88.21) = 88;
    - cpu pod 2 CPU, 2 GiB on g: the unrequested GPU is left out → |.5 − .25|/2 = .125 →
      int(87.5) = 87 (with the GPU at fraction 0 it would be 79);
    - mem pod 1 CPU, 6 GiB on c: |.25 − .75|/2 = .25 → 75;
    - a BestEffort pod skips the plugin → 0."""
    ssn = open_session(
        make(
            """
- {name: g, allocatable: {cpu: "4", memory: 8Gi, nvidia.com/gpu: 4}}
- {name: c, allocatable: {cpu: "4", memory: 8Gi}}
""",
            """
- name: gpu
  tasks: [{name: t, resources: {cpu: "2", memory: 2Gi, nvidia.com/gpu: 1}}]
- name: cpu
  tasks: [{name: t, resources: {cpu: "2", memory: 2Gi}}]
- name: mem
  tasks: [{name: t, resources: {cpu: "1", memory: 6Gi}}]
- name: be
  tasks: [{name: t, resources: {}}]
""",
            BALANCED_ONLY,
        )
    )
    g, c = ssn.nodes["g"], ssn.nodes["c"]
    assert score(ssn, task(ssn, "gpu-t-0"), [g]) == {"g": 88.0}
    assert score(ssn, task(ssn, "cpu-t-0"), [g]) == {"g": 87.0}
    assert score(ssn, task(ssn, "mem-t-0"), [c]) == {"c": 75.0}
    assert score(ssn, task(ssn, "be-t-0"), [g, c]) == {"g": 0.0, "c": 0.0}


def test_taint_toleration_is_reverse_normalised_over_the_candidates() -> None:
    """§2.5 TaintToleration: count intolerable PreferNoSchedule taints (0, 1, 3), normalise in
    reverse with integer division: 100 − ⌊100·c/3⌋ → 100, 67, 0; × weight 3 → 300, 201, 0.
    A toleration without an effect (k2) counts; one for NoSchedule (k1) does not, so counts
    become 0, 1, 2 → 100, 50, 0 → 300, 150, 0. Nodes without such taints all get 300."""
    nodes = """
- {name: n0, allocatable: {cpu: "4"}}
- {name: n1, allocatable: {cpu: "4"}, taints: [{key: k1, value: v, effect: PreferNoSchedule}]}
- name: n3
  allocatable: {cpu: "4"}
  taints:
  - {key: k1, value: v, effect: PreferNoSchedule}
  - {key: k2, value: v, effect: PreferNoSchedule}
  - {key: k3, value: v, effect: PreferNoSchedule}
"""
    ssn = open_session(
        make(
            nodes,
            """
- name: plain
  tasks: [{name: t, resources: {cpu: "1"}}]
- name: tol
  tasks:
  - name: t
    resources: {cpu: "1"}
    tolerations: [{key: k2, operator: Exists}, {key: k1, operator: Exists, effect: NoSchedule}]
""",
            TAINT_ONLY,
        )
    )
    everyone = ssn.node_list
    assert score(ssn, task(ssn, "plain-t-0"), everyone) == {"n0": 300.0, "n1": 201.0, "n3": 0.0}
    assert score(ssn, task(ssn, "tol-t-0"), everyone) == {"n0": 300.0, "n1": 150.0, "n3": 0.0}
    assert score(ssn, task(ssn, "plain-t-0"), [ssn.nodes["n0"]]) == {"n0": 300.0}


def test_nodeorder_weights_take_integers_only() -> None:
    """§2.5 weights come from ``<score>.weight``; like Volcano's ``GetInt``, a string is
    ignored and the default stays."""
    weights = NodeOrderWeights.from_arguments(
        {"leastrequested.weight": 4, "mostrequested.weight": "2", "tainttoleration.weight": 0}
    )
    assert (weights.least_requested, weights.most_requested, weights.taint_toleration) == (4, 0, 0)
    assert weights.balanced_resource == 1


def test_most_allocated_caps_requests_at_capacity() -> None:
    """§2.5 MostAllocated (cpu 1, memory 1): node 1 CPU / 1 GiB running a pod of 1 CPU and an
    explicit memory 0 (which stays 0: only an unset request gets the default); pending pod
    with 512 Mi and no CPU → cpu R = 1000 + 100 > 1000, capped → 100; memory R = 512 Mi →
    ⌊512·100/1024⌋ = 50 → ⌊150/2⌋ = 75, × weight 2 = 150."""
    ssn = open_session(
        make(
            """
- {name: n, allocatable: {cpu: "1", memory: 1Gi}}
""",
            """
- name: run
  tasks: [{name: t, resources: {cpu: "1", memory: 0}}]
  running: [{index: 0, node: n}]
- name: j
  tasks: [{name: t, resources: {memory: 512Mi}}]
""",
            "{name: nodeorder, arguments: {leastrequested.weight: 0, balancedresource.weight: 0,"
            " tainttoleration.weight: 0, mostrequested.weight: 2}}",
        )
    )
    assert score(ssn, task(ssn, "j-t-0"), ssn.node_list) == {"n": 150.0}


# -- binpack (§2.5) ---------------------------------------------------------------------------


def test_binpack_worked_numbers() -> None:
    """§2.5 binpack: node 4 CPU / 8 GiB using 1 CPU / 2 GiB, pod 1 CPU / 2 GiB:
    (2/4·1 + 4/8·1)/2 · 100 = 50.0. With binpack.cpu 3 on the empty node for 1 CPU / 4 GiB:
    (1/4·3 + 4/8·1)/4 · 100 = 31.25. A pod of 1 CPU / 7 GiB overflows memory on the used node
    (2 + 7 > 8) and scores 0 although its CPU term is positive."""
    nodes = """
- {name: used, allocatable: {cpu: "4", memory: 8Gi}}
- {name: empty, allocatable: {cpu: "4", memory: 8Gi}}
"""
    jobs = """
- name: run
  tasks: [{name: t, resources: {cpu: "1", memory: 2Gi}}]
  running: [{index: 0, node: used}]
- name: a
  tasks: [{name: t, resources: {cpu: "1", memory: 2Gi}}]
- name: b
  tasks: [{name: t, resources: {cpu: "1", memory: 4Gi}}]
- name: big
  tasks: [{name: t, resources: {cpu: "1", memory: 7Gi}}]
"""
    ssn = open_session(make(nodes, jobs, "{name: binpack}"))
    used = ssn.nodes["used"]
    assert ssn.node_order(task(ssn, "a-t-0"), used) == 50.0
    assert ssn.node_order(task(ssn, "big-t-0"), used) == 0.0
    weighted = open_session(make(nodes, jobs, "{name: binpack, arguments: {binpack.cpu: 3}}"))
    assert weighted.node_order(task(weighted, "b-t-0"), weighted.nodes["empty"]) == 31.25


def test_binpack_resource_the_node_lacks_still_counts_its_weight() -> None:
    """§2.5 binpack: extra resources via ``binpack.resources`` + ``binpack.resources.<name>``.
    Pod 2 CPU / 4 GiB / 1 GPU, GPU weight 2. On a node without GPUs the GPU term is 0 but
    its weight counts: (.5 + .5 + 0)/4 · 100 = 25.0. With 4 GPUs: (.5 + .5 + 1/4·2)/4 · 100
    = 37.5."""
    ssn = open_session(
        make(
            """
- {name: cpu, allocatable: {cpu: "4", memory: 8Gi}}
- {name: gpu, allocatable: {cpu: "4", memory: 8Gi, nvidia.com/gpu: 4}}
""",
            """
- name: j
  tasks: [{name: t, resources: {cpu: "2", memory: 4Gi, nvidia.com/gpu: 1}}]
""",
            "{name: binpack, arguments: {binpack.resources: nvidia.com/gpu,"
            " binpack.resources.nvidia.com/gpu: 2}}",
        )
    )
    t = task(ssn, "j-t-0")
    assert ssn.node_order(t, ssn.nodes["cpu"]) == 25.0
    assert ssn.node_order(t, ssn.nodes["gpu"]) == 37.5


def test_binpack_weight_scales_and_zero_unregisters() -> None:
    """§2.5: the score is multiplied by ``binpack.weight`` (2 → 2 × 25.0 for 1 CPU / 2 GiB
    on an empty 4 CPU / 8 GiB node) and the plugin registers no NodeOrderFn when it is 0."""
    nodes = "- {name: n, allocatable: {cpu: '4', memory: 8Gi}}"
    jobs = "- {name: j, tasks: [{name: t, resources: {cpu: '1', memory: 2Gi}}]}"
    double = open_session(make(nodes, jobs, "{name: binpack, arguments: {binpack.weight: 2}}"))
    assert double.node_order(task(double, "j-t-0"), double.nodes["n"]) == 50.0
    off = open_session(make(nodes, jobs, "{name: binpack, arguments: {binpack.weight: 0}}"))
    assert not off.has_hook("node_order")


def test_binpack_ignores_pipelined_pods() -> None:
    """§9 item 20: binpack reads Volcano's ``node.Used``, which excludes pipelined tasks.
    Node 4 CPU / 8 GiB, pods 1 CPU / 2 GiB: 25.0 before; still 25.0 with one pod pipelined;
    50.0 once that pod is allocated instead."""
    ssn = open_session(
        make(
            "- {name: n, allocatable: {cpu: '4', memory: 8Gi}}",
            "- {name: j, tasks: [{name: t, replicas: 2, resources: {cpu: '1', memory: 2Gi}}]}",
            "{name: binpack}",
        )
    )
    n = ssn.nodes["n"]
    t0, t1 = task(ssn, "j-t-0"), task(ssn, "j-t-1")
    assert ssn.node_order(t1, n) == 25.0
    op = ssn.pipeline(t0, n, None)
    assert ssn.node_order(t1, n) == 25.0
    ssn.undo(op)
    ssn.allocate(t0, n, None)
    assert ssn.node_order(t1, n) == 50.0


CHOICE_NODES = """
- {name: full, allocatable: {cpu: "4", memory: 8Gi}}
- {name: empty, allocatable: {cpu: "4", memory: 8Gi}}
"""
CHOICE_JOBS = """
- name: run
  tasks: [{name: t, resources: {cpu: "3", memory: 6Gi}}]
  running: [{index: 0, node: full}]
- name: j
  tasks: [{name: t, resources: {cpu: 500m, memory: 1Gi}}]
"""


def test_binpack_prefers_the_fuller_node_leastrequested_the_emptier() -> None:
    """§2.5, pod 0.5 CPU / 1 GiB; ``full`` runs 3 CPU / 6 GiB of 4 / 8.
    binpack: full (3.5/4 + 7/8)/2·100 = 87.5, empty (0.5/4 + 1/8)/2·100 = 12.5 → full.
    leastrequested: full ⌊500·100/4000⌋ = 12 for both → 12, empty ⌊3500·100/4000⌋ = 87 → 87
    → empty."""
    packing = open_session(make(CHOICE_NODES, CHOICE_JOBS, "{name: predicates}, {name: binpack}"))
    t = task(packing, "j-t-0")
    assert score(packing, t, packing.node_list) == {"full": 87.5, "empty": 12.5}
    assert best_node(packing, t, packing.node_list).name == "full"

    spreading = open_session(make(CHOICE_NODES, CHOICE_JOBS, f"{{name: predicates}}, {LEAST_ONLY}"))
    t = task(spreading, "j-t-0")
    assert score(spreading, t, spreading.node_list) == {"full": 12.0, "empty": 87.0}
    assert best_node(spreading, t, spreading.node_list).name == "empty"


def test_binpack_and_leastrequested_choices_end_to_end() -> None:
    """The same two configurations through the engine (allocate only, one task): the pod is
    bound to ``full`` with binpack alone and to ``empty`` with leastrequested alone."""
    from optimizer.greedy.engine import solve

    packing = solve(make(CHOICE_NODES, CHOICE_JOBS, "{name: predicates}, {name: binpack}"))
    assert [(p.pod, p.node) for p in packing.placements] == [("default/j-t-0", "full")]
    spreading = solve(make(CHOICE_NODES, CHOICE_JOBS, f"{{name: predicates}}, {LEAST_ONLY}"))
    assert [(p.pod, p.node) for p in spreading.placements] == [("default/j-t-0", "empty")]


def test_helm_default_nodeorder_and_binpack_cancel_out() -> None:
    """§9 item 15. Pod 1 CPU / 2 GiB; ``a`` runs 1 CPU / 2 GiB of 4 / 8, ``b`` is empty.
    a: least 50, balanced (.5, .5) 100, taint 300, binpack 50.0 → 500.
    b: least 75, balanced (.25, .25) 100, taint 300, binpack 25.0 → 500.
    An exact tie, so the seeded random tie-break decides (§2.4): over 20 seeds both nodes
    win. Without binpack (Volcano's built-in fallback) a 450 < b 475: it spreads."""
    nodes = """
- {name: a, allocatable: {cpu: "4", memory: 8Gi}}
- {name: b, allocatable: {cpu: "4", memory: 8Gi}}
"""
    jobs = """
- name: run
  tasks: [{name: t, resources: {cpu: "1", memory: 2Gi}}]
  running: [{index: 0, node: a}]
- name: j
  tasks: [{name: t, resources: {cpu: "1", memory: 2Gi}}]
"""
    helm = make(nodes, jobs, "{name: predicates}, {name: nodeorder}, {name: binpack}")
    ssn = open_session(helm)
    assert score(ssn, task(ssn, "j-t-0"), ssn.node_list) == {"a": 500.0, "b": 500.0}
    winners = set()
    for seed in range(20):
        seeded = open_session(helm, seed)
        winners.add(best_node(seeded, task(seeded, "j-t-0"), seeded.node_list).name)
    assert winners == {"a", "b"}

    fallback = open_session(make(nodes, jobs, "{name: predicates}, {name: nodeorder}"))
    t = task(fallback, "j-t-0")
    assert score(fallback, t, fallback.node_list) == {"a": 450.0, "b": 475.0}


# -- tdm (§6) ---------------------------------------------------------------------------------

TDM_NODES = """
- {name: rz-1, allocatable: {cpu: "8", memory: 16Gi}, labels: {volcano.sh/revocable-zone: rz1}}
- {name: n-1, allocatable: {cpu: "8", memory: 16Gi}}
"""
TDM_JOBS = """
- name: rev
  tasks: [{name: t, resources: {cpu: "1"}, annotations: {volcano.sh/revocable-zone: "*"}}]
- name: plain
  tasks: [{name: t, resources: {cpu: "1"}}]
"""


def tdm_plugins() -> str:
    return '{name: tdm, arguments: {tdm.revocable-zone.rz1: "10:00-21:00"}}'


def at(clock: str) -> str:
    return f"2026-11-30T{clock}Z"


@pytest.mark.parametrize("clock", ["14:00:00", "21:00:00"])
def test_tdm_predicate_inside_the_window(clock: str) -> None:
    """§6 predicate, window 10:00-21:00 (inclusive, whole seconds): the zone is open, so a
    revocable pod may use rz-1 and a non-revocable pod may not (UnschedulableAndUnresolvable);
    the ordinary node takes both."""
    ssn = open_session(make(TDM_NODES, TDM_JOBS, tdm_plugins(), now=at(clock)))
    rev, plain = task(ssn, "rev-t-0"), task(ssn, "plain-t-0")
    assert ssn.predicate(rev, ssn.nodes["rz-1"]) is None
    failure = ssn.predicate(plain, ssn.nodes["rz-1"])
    assert failure is not None and failure.code == UNRESOLVABLE
    assert ssn.predicate(rev, ssn.nodes["n-1"]) is None
    assert ssn.predicate(plain, ssn.nodes["n-1"]) is None


@pytest.mark.parametrize("clock", ["22:00:00", "21:00:01", "09:59:59"])
def test_tdm_predicate_outside_the_window(clock: str) -> None:
    """§6 predicate: outside 10:00-21:00 the zone is inactive and even a revocable pod is
    UnschedulableAndUnresolvable there; the ordinary node is unaffected."""
    ssn = open_session(make(TDM_NODES, TDM_JOBS, tdm_plugins(), now=at(clock)))
    rev = task(ssn, "rev-t-0")
    failure = ssn.predicate(rev, ssn.nodes["rz-1"])
    assert failure is not None and failure.code == UNRESOLVABLE
    assert "rz1" in failure.reason
    assert ssn.predicate(rev, ssn.nodes["n-1"]) is None


def test_tdm_node_score() -> None:
    """§6 NodeOrderFn at 14:00: a revocable pod scores 100 on the open zone's node, a
    non-revocable pod 0; an ordinary node scores 0 for both. At 22:00 the zone is closed: the
    hook errors (ScoreSkip) and the node loses its whole NodeOrder part, binpack's 12.5 for a
    1 CPU pod on an empty 8 CPU node included ((1/8)/1 · 100)."""
    ssn = open_session(make(TDM_NODES, TDM_JOBS, tdm_plugins()))
    rev, plain = task(ssn, "rev-t-0"), task(ssn, "plain-t-0")
    assert ssn.node_order(rev, ssn.nodes["rz-1"]) == 100.0
    assert ssn.node_order(plain, ssn.nodes["rz-1"]) == 0.0
    assert ssn.node_order(rev, ssn.nodes["n-1"]) == 0.0

    night = open_session(
        make(TDM_NODES, TDM_JOBS, f"{{name: binpack}}, {tdm_plugins()}", at("22:00:00"))
    )
    rev = task(night, "rev-t-0")
    with pytest.raises(ScoreSkip):
        night.plugins["tdm"].node_order(rev, night.nodes["rz-1"])  # type: ignore[attr-defined]
    assert night.node_order(rev, night.nodes["rz-1"]) == 0.0
    assert night.node_order(rev, night.nodes["n-1"]) == 12.5


def test_tdm_revocable_pod_follows_the_window_end_to_end() -> None:
    """§6 through the engine: at 14:00 the revocable pod gets 100 more on rz-1 and lands
    there; at 22:00 rz-1 fails the predicate and the pod goes to n-1."""
    from optimizer.greedy.engine import solve

    jobs = """
- name: rev
  tasks: [{name: t, resources: {cpu: "1"}, annotations: {volcano.sh/revocable-zone: "*"}}]
"""
    plugins = f"{{name: predicates}}, {{name: nodeorder}}, {tdm_plugins()}"
    day = solve(make(TDM_NODES, jobs, plugins, at("14:00:00")))
    assert [p.node for p in day.placements] == ["rz-1"]
    night = solve(make(TDM_NODES, jobs, plugins, at("22:00:00")))
    assert [p.node for p in night.placements] == ["n-1"]


ORDER_JOBS = """
- name: scav
  annotations: {volcano.sh/preemptable: "true"}
  tasks: [{name: t, replicas: 2, resources: {cpu: "1"}}]
- name: prod
  minAvailable: 2
  tasks: [{name: t, replicas: 2, resources: {cpu: "1"}}]
- name: done
  tasks: [{name: t, resources: {cpu: "1"}}]
  running: [{index: 0, node: n-1}]
"""


def test_tdm_job_order_puts_non_preemptable_jobs_first() -> None:
    """§6 JobOrderFn: non-preemptable before preemptable (PodGroups default to not
    preemptable). ``scav`` is listed first, so only tdm puts ``prod`` before it."""
    ssn = open_session(make(TDM_NODES, ORDER_JOBS, tdm_plugins()))
    scav, prod, done = (ssn.jobs[f"default/{n}"] for n in ("scav", "prod", "done"))
    plugin = ssn.plugins["tdm"]
    assert plugin.job_order(prod, scav) == -1  # type: ignore[attr-defined]
    assert plugin.job_order(scav, prod) == 1  # type: ignore[attr-defined]
    assert plugin.job_order(prod, done) == 0  # type: ignore[attr-defined]
    assert ssn.job_order(prod, scav)
    assert not ssn.job_order(scav, prod)


def test_tdm_job_starving_and_pipelined() -> None:
    """§6 JobStarvingFn: a preemptable job never starves; a non-preemptable one starves while
    it has Pending tasks (``done`` has none). JobPipelinedFn: Reject until waiting + ready
    reaches minAvailable (2 for ``prod``), Permit once both pods are pipelined."""
    ssn = open_session(make(TDM_NODES, ORDER_JOBS, tdm_plugins()))
    scav, prod, done = (ssn.jobs[f"default/{n}"] for n in ("scav", "prod", "done"))
    assert (ssn.job_starving(scav), ssn.job_starving(prod), ssn.job_starving(done)) == (
        False,
        True,
        False,
    )
    plugin = ssn.plugins["tdm"]
    assert plugin.job_pipelined(prod) == REJECT  # type: ignore[attr-defined]
    for t in prod.tasks.values():
        ssn.pipeline(t, ssn.nodes["n-1"], None)
    assert plugin.job_pipelined(prod) == PERMIT  # type: ignore[attr-defined]


def preempt_instance(
    budget: str = "", preemptor: str = '{volcano.sh/preemptable: "false"}'
) -> Instance:
    """Victim job ``v``: 4 running pods on ordinary nodes n-1/n-2, one more (index 4) on the
    revocable node, one (index 5) pending. Job ``keep`` runs a non-preemptable pod on n-1."""
    return make(
        TDM_NODES + "- {name: n-2, allocatable: {cpu: '8', memory: 16Gi}}\n",
        f"""
- name: v
  annotations: {{{budget}}}
  tasks: [{{name: t, replicas: 6, resources: {{cpu: "1"}}}}]
  running:
  - {{index: 0, node: n-1}}
  - {{index: 1, node: n-2}}
  - {{index: 2, node: n-1}}
  - {{index: 3, node: n-2}}
  - {{index: 4, node: rz-1}}
- name: keep
  tasks: [{{name: t, resources: {{cpu: "1"}}, annotations: {{volcano.sh/preemptable: "false"}}}}]
  running: [{{index: 0, node: n-1}}]
- name: urgent
  tasks: [{{name: t, resources: {{cpu: "1"}}, annotations: {preemptor}}}]
""",
        tdm_plugins(),
    )


def candidates(ssn: Session) -> list[TaskInfo]:
    return [task(ssn, f"v-t-{i}") for i in range(6)] + [task(ssn, "keep-t-0")]


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        ("", 1),
        ("volcano.sh/jdb-max-unavailable: '50%'", 2),
        ("volcano.sh/jdb-max-unavailable: '2'", 1),
        ("volcano.sh/jdb-min-available: '3'", 2),
        ("volcano.sh/jdb-min-available: '5'", 0),
        ("volcano.sh/jdb-min-available: '6'", 1),
    ],
)
def test_tdm_preemptable_budget(budget: str, expected: int) -> None:
    """§6 Preemptable: only Running, preemptable pods on ordinary nodes qualify, so of
    ``v``'s pods indices 0-3 (4 on the revocable node, 5 pending) and never ``keep``'s
    non-preemptable pod; per job the first maxVictims in the order received. Job ``v`` has 6
    pods, 5 Running, none finished:
    - no budget → 1;
    - maxUnavailable 50% of 6 = 3, unavailable 6 − 0 − 5 = 1 → 2;
    - maxUnavailable 2, unavailable 1 → 1;
    - minAvailable 3, running 5 ≥ 3 → 2;  minAvailable 5 → 0;
    - minAvailable 6 > running 5 falls through to 1 (# Volcano quirk §9.12)."""
    ssn = open_session(preempt_instance(budget))
    victims, vote = ssn.plugins["tdm"].preemptable(task(ssn, "urgent-t-0"), candidates(ssn))  # type: ignore[attr-defined]
    assert vote == PERMIT
    assert [v.uid for v in victims] == [f"default/v-t-{i}" for i in range(expected)]


def test_tdm_preemptable_preemptor_may_not_preempt() -> None:
    """§6 and §9 item 4: a preemptable preemptor (pods are preemptable by default) or a
    revocable one gets an empty list with Reject, which only passes the decision on."""
    for preemptor_annotations in (
        "{}",
        '{volcano.sh/preemptable: "false", volcano.sh/revocable-zone: "*"}',
    ):
        ssn = open_session(preempt_instance(preemptor=preemptor_annotations))
        preemptor = task(ssn, "urgent-t-0")
        assert ssn.plugins["tdm"].preemptable(preemptor, candidates(ssn)) == ([], REJECT)  # type: ignore[attr-defined]
        assert ssn.preemptable(preemptor, candidates(ssn)) == []


def test_tdm_preemptable_skips_tasks_allocated_this_session() -> None:
    """§6: only Running tasks qualify. A pod allocated in this session is Allocated, not
    Running, so even with a 100 % budget it is not a victim."""
    ssn = open_session(preempt_instance("volcano.sh/jdb-max-unavailable: '100%'"))
    fresh = task(ssn, "v-t-5")
    ssn.allocate(fresh, ssn.nodes["n-1"], None)
    victims, _ = ssn.plugins["tdm"].preemptable(task(ssn, "urgent-t-0"), [fresh])  # type: ignore[attr-defined]
    assert victims == []


VICTIM_NODES = """
- {name: rz-1, allocatable: {cpu: "8"}, labels: {volcano.sh/revocable-zone: rz1}}
- {name: rz-2, allocatable: {cpu: "8"}, labels: {volcano.sh/revocable-zone: rz1}}
- {name: other-1, allocatable: {cpu: "8"}, labels: {volcano.sh/revocable-zone: rz2}}
- {name: n-1, allocatable: {cpu: "8"}}
"""
VICTIM_JOBS = """
- name: scav
  annotations: {volcano.sh/jdb-max-unavailable: "2"}
  tasks:
  - {name: t, replicas: 5, resources: {cpu: "1"}, annotations: {volcano.sh/revocable-zone: "*"}}
  running:
  - {index: 0, node: rz-1}
  - {index: 1, node: rz-2}
  - {index: 2, node: rz-1}
  - {index: 3, node: n-1}
  - {index: 4, node: other-1}
- name: pinned
  tasks: [{name: t, resources: {cpu: "1"}, annotations: {volcano.sh/preemptable: "false"}}]
  running: [{index: 0, node: rz-1}]
"""


def victims_session(clock: str, last_evict: str = "") -> Session:
    extra = f', vcopt.lastEvictAt: "{last_evict}"' if last_evict else ""
    plugins = (
        '{name: tdm, arguments: {tdm.revocable-zone.rz1: "10:00-21:00",'
        f' tdm.revocable-zone.rz2: "08:00-23:00", tdm.evict.period: 1m{extra}}}}}'
    )
    return open_session(make(VICTIM_NODES, VICTIM_JOBS, plugins, at(clock)))


def test_tdm_victim_tasks_when_the_window_is_closed() -> None:
    """§6 VictimTasks at 22:00: rz1 (10:00-21:00) is closed, rz2 (08:00-23:00) open. From
    rz1's nodes: scav-0, scav-1, scav-2 are Running and preemptable; ``pinned`` is not
    preemptable. scav's budget: maxUnavailable 2, 5 pods all Running → 2, so the first two
    in node order (rz-1: scav-0, scav-2). Pods on n-1 and on open rz2 stay. The call counts
    as an eviction round: a second call within tdm.evict.period returns nothing."""
    ssn = victims_session("22:00:00")
    victims = ssn.victim_tasks()
    assert sorted(v.uid for v in victims) == ["default/scav-t-0", "default/scav-t-2"]
    assert ssn.victim_tasks() == []


def test_tdm_victim_tasks_when_the_window_is_open() -> None:
    """§6 VictimTasks at 14:00: both zones are open, so no revocable node must be emptied."""
    assert victims_session("14:00:00").victim_tasks() == []


def test_tdm_victim_tasks_respect_the_evict_period() -> None:
    """§6: nothing if lastEvictAt + tdm.evict.period (1m) > now. The vcopt extension
    argument ``vcopt.lastEvictAt`` sets the previous round: 30 s before 22:00 → nothing;
    2 min before → the two victims of the closed zone."""
    now = victims_session("22:00:00").now
    recent = (now - timedelta(seconds=30)).isoformat()
    assert victims_session("22:00:00", recent).victim_tasks() == []
    older = (now - timedelta(minutes=2)).isoformat()
    assert len(victims_session("22:00:00", older).victim_tasks()) == 2


def test_tdm_victim_budget_applies_per_zone() -> None:
    """§6 ``revocableNodePreemptableTask`` cuts each job to maxVictims per *zone*: at 23:30
    both zones are closed; scav (budget 2) loses scav-0 and scav-2 in rz1 and also scav-4 in
    rz2, 3 pods in one round."""
    victims = victims_session("23:30:00").victim_tasks()
    assert sorted(v.uid for v in victims) == [
        "default/scav-t-0",
        "default/scav-t-2",
        "default/scav-t-4",
    ]


def test_tdm_bad_last_evict_at_is_reported() -> None:
    """vcopt extension: ``vcopt.lastEvictAt`` must be RFC 3339 with an offset; a bad value is
    an input error naming the argument."""
    from models.errors import InputError

    with pytest.raises(InputError, match=r"arguments\.vcopt\.lastEvictAt"):
        victims_session("22:00:00", "yesterday")
