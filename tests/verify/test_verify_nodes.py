"""Node rules: node-capacity, pod-count, selector, taint."""

from __future__ import annotations

from verify_kit import (
    Doc,
    build,
    evict,
    find,
    place,
    rules,
    task,
    violations,
)

# -- node-capacity, pod-count -------------------------------------------------------------------


def test_node_capacity() -> None:
    """solo asks for 9 cpu; n1 has 8. Memory 1Gi ≤ 32Gi, 1 pod ≤ 4; the queue has no cpu limit."""

    def edit(doc: Doc) -> None:
        task(doc, "solo")["resources"]["cpu"] = "9"

    found = violations(build(edit), place("solo-main-0", "n1"))
    assert [v.rule for v in found] == ["node-capacity"]
    assert found[0].message == "node n1: cpu 9 > allocatable 8"
    assert found[0].objects == ("n1",)


def test_node_capacity_counts_a_missing_resource_as_zero() -> None:
    """A pod asking for example.com/fpga on z1, which has none: 1 > 0. No quota plugin is
    configured (capacity removed), because realCapability would refuse it too."""

    def edit(doc: Doc) -> None:
        task(doc, "solo")["resources"]["example.com/fpga"] = 1
        tier = doc["scheduler"]["tiers"][1]["plugins"]
        tier[:] = [p for p in tier if p["name"] != "capacity"]

    found = violations(build(edit), place("solo-main-0", "n3"))
    assert [v.message for v in found] == ["node n3: example.com/fpga 1 > allocatable 0"]


def test_node_capacity_counts_running_pods_but_not_evicted_ones() -> None:
    """batch runs three 1-cpu pods on n2. solo with 6 cpu → 9 > 8; evicting batch-w-0 → 8 ≤ 8."""

    def edit(doc: Doc) -> None:
        task(doc, "solo")["resources"]["cpu"] = "6"

    instance = build(edit)
    assert rules(instance, place("solo-main-0", "n2")) == ["node-capacity"]
    assert rules(instance, place("solo-main-0", "n2"), evictions=(evict("batch-w-0", "n2"),)) == []


def test_node_over_committed_before_the_plan_is_not_reported_without_placements() -> None:
    """batch's running pods ask for 3 × 5 cpu on n2 (15 > 8). A plan that places solo on n1
    does not touch n2, so n2 is not judged; placing solo on n2 is judged and reported."""

    def edit(doc: Doc) -> None:
        task(doc, "batch")["resources"]["cpu"] = "5"

    instance = build(edit)
    assert rules(instance, place("solo-main-0", "n1")) == []
    assert rules(instance, place("solo-main-0", "n2")) == ["node-capacity"]


def test_pod_count() -> None:
    """solo gets 5 replicas (minAvailable defaults to 5, all placed); n1 takes 4 pods. cpu 5 ≤ 8."""

    def edit(doc: Doc) -> None:
        task(doc, "solo")["replicas"] = 5

    instance = build(edit)
    found = violations(instance, *(place(f"solo-main-{i}", "n1") for i in range(5)))
    assert [v.message for v in found] == ["node n1: 5 pods > pod capacity 4"]
    assert (
        rules(instance, *(place(f"solo-main-{i}", "n1" if i < 4 else "n2") for i in range(5))) == []
    )


# -- selector, taint ----------------------------------------------------------------------------


def test_selector_node_selector() -> None:
    """solo wants rack=r2 and is placed on n1 (rack=r1); on n3 it is fine."""

    def edit(doc: Doc) -> None:
        task(doc, "solo")["nodeSelector"] = {"rack": "r2"}

    instance = build(edit)
    found = violations(instance, place("solo-main-0", "n1"))
    assert [v.message for v in found] == [
        "pod default/solo-main-0 on node n1: nodeSelector rack=r2 does not match"
    ]
    assert rules(instance, place("solo-main-0", "n3")) == []


def test_selector_required_affinity_terms_are_ored() -> None:
    """Terms [rack In (r9)] OR [rack NotIn (r1)]: n1 (r1) matches neither, n3 (r2) the second."""

    def edit(doc: Doc) -> None:
        terms = [
            {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r9"]}]},
            {"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["r1"]}]},
        ]
        task(doc, "solo")["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
        }

    instance = build(edit)
    assert rules(instance, place("solo-main-0", "n1")) == ["selector"]
    assert rules(instance, place("solo-main-0", "n3")) == []


def test_taint() -> None:
    """n1 carries dedicated=gpu:NoSchedule; solo has no toleration."""

    def edit(doc: Doc) -> None:
        find(doc, "nodes", "n1")["taints"] = [
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
        ]

    found = violations(build(edit), place("solo-main-0", "n1"))
    assert [v.message for v in found] == [
        "pod default/solo-main-0 on node n1: untolerated taint dedicated=gpu:NoSchedule"
    ]


def test_taint_tolerated_or_only_preferred() -> None:
    """A matching toleration, or a PreferNoSchedule taint, lets solo onto n1."""

    def tolerated(doc: Doc) -> None:
        find(doc, "nodes", "n1")["taints"] = [
            {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}
        ]
        task(doc, "solo")["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]

    def preferred(doc: Doc) -> None:
        find(doc, "nodes", "n1")["taints"] = [{"key": "x", "effect": "PreferNoSchedule"}]

    assert rules(build(tolerated), place("solo-main-0", "n1")) == []
    assert rules(build(preferred), place("solo-main-0", "n1")) == []


def test_taint_unschedulable_node() -> None:
    """A cordoned (unschedulable) n1 takes no new pod, unless the pod tolerates
    node.kubernetes.io/unschedulable:NoSchedule."""

    def cordoned(doc: Doc) -> None:
        find(doc, "nodes", "n1")["unschedulable"] = True

    def tolerating(doc: Doc) -> None:
        cordoned(doc)
        task(doc, "solo")["tolerations"] = [
            {
                "key": "node.kubernetes.io/unschedulable",
                "operator": "Exists",
                "effect": "NoSchedule",
            }
        ]

    assert rules(build(cordoned), place("solo-main-0", "n1")) == ["taint"]
    assert rules(build(tolerating), place("solo-main-0", "n1")) == []
