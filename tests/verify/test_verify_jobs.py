"""Job rules: gang and topology-hard."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from verify_kit import (
    Doc,
    build,
    evict,
    find,
    place,
    rules,
    violations,
)

from optimizer.plan import Pipelined

# -- gang, topology -----------------------------------------------------------------------------


def test_gang() -> None:
    """Only one of pair's two pods is placed: 1 ready < minAvailable 2."""
    found = violations(build(), place("pair-w-0", "n1"))
    assert [v.message for v in found] == ["job default/pair: 1 pods ready < minAvailable 2"]


def test_no_gang_rule_without_the_gang_plugin() -> None:
    """Without ``gang`` no plugin registers JobReady, whose default is true
    (``framework/session_plugins.go:JobReady``), so Volcano commits part of a gang: one pod of
    pair is no violation."""

    def without_gang(doc: Doc) -> None:
        for tier in doc["scheduler"]["tiers"]:
            tier["plugins"] = [p for p in tier["plugins"] if p["name"] != "gang"]

    assert rules(build(without_gang), place("pair-w-0", "n1")) == []


def test_gang_counts_pipelined_pods() -> None:
    """pair has one pod placed and the other pipelined: Volcano commits once the job is
    pipelined (gang.go:jobPipelinedFn, waiting + ready ≥ minAvailable), so no violation."""
    piped = (Pipelined("default/pair-w-1", "n1"),)
    assert rules(build(), place("pair-w-0", "n1"), pipelined=piped) == []


def _growing_batch(preemptable: bool) -> Callable[[Doc], None]:
    """batch asks for a fourth pod and minAvailable 4; gang's Preemptable hook on or off."""

    def edit(doc: Doc) -> None:
        batch = find(doc, "jobs", "batch")
        batch["minAvailable"] = 4
        batch["tasks"][0]["replicas"] = 4
        doc["scheduler"]["actions"] = "enqueue, allocate, preempt"
        for tier in doc["scheduler"]["tiers"]:
            for plugin in tier["plugins"]:
                if plugin["name"] == "gang":
                    plugin["enablePreemptable"] = preemptable

    return edit


@pytest.mark.parametrize(("preemptable", "broken"), [(True, True), (False, False)])
def test_gang_victims_count_as_kept_only_when_gang_does_not_guard_them(
    preemptable: bool, broken: bool
) -> None:
    """batch places its fourth pod and loses one running pod to preemption: 3 ready < 4. With
    gang's Preemptable hook on that breaks the gang; with it off nothing guards the victim's
    gang (in Volcano either), so the gang rule counts the victim as kept."""
    found = rules(
        build(_growing_batch(preemptable)),
        place("batch-w-3", "n1"),
        evictions=(evict("batch-w-0", "n2", "preempt"),),
    )
    assert ("gang" in found) is broken


def _growing_batch_reclaimed(capacity_tier: int) -> Callable[[Doc], None]:
    """batch as in ``_growing_batch`` with reclaim; capacity (a Reclaimable plugin) in tier
    ``capacity_tier`` (0: gang's own tier)."""

    def edit(doc: Doc) -> None:
        _growing_batch(True)(doc)
        doc["scheduler"]["actions"] = "enqueue, allocate, reclaim"
        tiers = doc["scheduler"]["tiers"]
        capacity = next(p for t in tiers for p in t["plugins"] if p["name"] == "capacity")
        for tier in tiers:
            tier["plugins"] = [p for p in tier["plugins"] if p["name"] != "capacity"]
        tiers[capacity_tier]["plugins"].append(capacity)

    return edit


@pytest.mark.parametrize(("capacity_tier", "broken"), [(0, True), (1, False)])
def test_gang_victims_count_as_kept_when_a_later_tier_can_reclaim_them(
    capacity_tier: int, broken: bool
) -> None:
    """batch places its fourth pod and loses a running pod to reclaim: 3 ready < 4. With
    capacity in gang's tier, gang's empty answer empties the tier and nothing reclaims the
    pod, so the plan breaks the gang. With capacity in the next tier, Volcano's tier walk hands
    the choice on when gang's tier leaves no victim (spec §8.2, §9.4) and capacity alone may
    take the pod: Volcano breaks the gang itself, and the rule counts the victim as kept."""
    found = rules(
        build(_growing_batch_reclaimed(capacity_tier)),
        place("batch-w-3", "n1"),
        evictions=(evict("batch-w-0", "n2"),),
    )
    assert ("gang" in found) is broken


def _roles(min_available: int) -> Callable[[Doc], None]:
    def edit(doc: Doc) -> None:
        doc["jobs"].append(
            {
                "name": "ps-job",
                "queue": "team-a",
                "minAvailable": min_available,
                "minTaskMember": {"ps": 1, "worker": 1},
                "tasks": [
                    {"name": "ps", "replicas": 1, "resources": {"cpu": "1"}},
                    {"name": "worker", "replicas": 2, "resources": {"cpu": "1"}},
                ],
            }
        )

    return edit


def test_gang_per_role_minimum() -> None:
    """minAvailable 2 = Σ minTaskMember (ps 1 + worker 1): two workers make 2 ready pods, but
    role ps has 0 < 1."""
    found = violations(
        build(_roles(2)), place("ps-job-worker-0", "n1"), place("ps-job-worker-1", "n1")
    )
    assert [v.message for v in found] == [
        "job default/ps-job: role ps has 0 pods ready < minTaskMember 1"
    ]


def test_gang_per_role_skipped_when_min_available_is_below_the_role_sum() -> None:
    """minAvailable 1 < Σ minTaskMember 2: Volcano skips the role check, one worker is enough."""
    assert rules(build(_roles(1)), place("ps-job-worker-0", "n1")) == []


def test_gang_counts_pending_best_effort_pods_as_ready() -> None:
    """A job of a 1-cpu main pod and an empty-request sidecar, minAvailable 2: placing main is
    enough, since gang counts the pending BestEffort sidecar as ready (spec §3, §9 item 17)."""

    def edit(doc: Doc) -> None:
        doc["jobs"].append(
            {
                "name": "be",
                "queue": "team-a",
                "minAvailable": 2,
                "tasks": [
                    {"name": "main", "replicas": 1, "resources": {"cpu": "1"}},
                    {"name": "sidecar", "replicas": 1},
                ],
            }
        )

    assert rules(build(edit), place("be-main-0", "n1")) == []


def test_gang_counts_running_pods_and_ignores_jobs_without_placements() -> None:
    """batch (minAvailable 1) runs 3 pods: evicting all of them places nothing of batch, so gang
    is not judged (with reason preempt: no budget, no guarantee check)."""
    evictions = tuple(evict(f"batch-w-{i}", "n2", "preempt") for i in range(3))
    assert rules(build(), evictions=evictions) == []


def test_topology_hard() -> None:
    """ring (hard, tier 1) on n1 (rack-1) and n3 (rack-2): lowest common HyperNode spine, tier 2."""
    found = violations(build(), place("ring-w-0", "n1"), place("ring-w-1", "n3"))
    assert [v.message for v in found] == [
        "job default/ring: pods span n1, n3 (lowest common HyperNode spine, tier 2) > "
        "highestTierAllowed 1"
    ]


def test_topology_inside_one_rack_or_one_node() -> None:
    """n1 + n2 are both in rack-1 (tier 1); two pods on one node are tier 0."""
    assert rules(build(), place("ring-w-0", "n1"), place("ring-w-1", "n2")) == []
    assert rules(build(), place("ring-w-0", "n3"), place("ring-w-1", "n3")) == []


def test_topology_soft_or_without_the_plugin_is_not_enforced() -> None:
    """Soft mode never constrains; hard mode needs the network-topology-aware plugin (§9 item 6)."""

    def soft(doc: Doc) -> None:
        find(doc, "jobs", "ring")["networkTopology"]["mode"] = "soft"

    def no_plugin(doc: Doc) -> None:
        tier = doc["scheduler"]["tiers"][1]["plugins"]
        tier[:] = [p for p in tier if p["name"] != "network-topology-aware"]

    for edit in (soft, no_plugin):
        assert rules(build(edit), place("ring-w-0", "n1"), place("ring-w-1", "n3")) == []
