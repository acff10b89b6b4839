"""Running pods and evictions: running-kept and eviction-allowed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from verify_kit import (
    Doc,
    after_window,
    build,
    evict,
    find,
    place,
)

from optimizer.plan import Pipelined, Plan
from optimizer.verify import verify

# -- running-kept -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sections", "message"),
    [
        (
            {"placements": (place("batch-w-0", "n1"),)},
            "pod default/batch-w-0 runs on node n2; placing it on node n1 would move it",
        ),
        (
            {
                "placements": (place("batch-w-0", "n1"),),
                "evictions": (evict("batch-w-0", "n2"),),
            },
            "pod default/batch-w-0 runs on node n2; placing it on node n1 would move it",
        ),
        (
            {"placements": (place("batch-w-0", "n2"),)},
            "pod default/batch-w-0 already runs on node n2; only pending pods are placed",
        ),
        (
            {"evictions": (evict("solo-main-0", "n1"),)},
            "pod default/solo-main-0 is evicted but it is not running",
        ),
        (
            {"evictions": (evict("batch-w-0", "n1"),)},
            "pod default/batch-w-0 is evicted from node n1 but it runs on node n2",
        ),
        (
            {"pipelined": (Pipelined("default/batch-w-0", "n1"),)},
            "pod default/batch-w-0 is pipelined but it is already running",
        ),
        (
            {
                "placements": (place("solo-main-0", "n1"),),
                "pipelined": (Pipelined("default/solo-main-0", "n1"),),
            },
            "pod default/solo-main-0 is both placed and pipelined",
        ),
        (
            {"placements": (place("solo-main-0", "n1"), place("solo-main-0", "n1"))},
            "pod default/solo-main-0 is placed twice",
        ),
    ],
)
def test_running_kept(sections: dict[str, Any], message: str) -> None:
    """A running pod never moves (not even evicted and re-placed in one plan); evictions name a
    running pod and its node; pipelined pods are pending and not placed; a pod is placed once.
    Each plan is otherwise valid: batch pods are preemptable, reclaim is configured and team-a
    has no guarantee; n1 has room."""
    found = verify(build(), Plan(**sections))
    assert [(v.rule, v.message) for v in found] == [("running-kept", message)]


# -- eviction-allowed ---------------------------------------------------------------------------


def _batch(**changes: Any) -> Callable[[Doc], None]:
    def edit(doc: Doc) -> None:
        job = find(doc, "jobs", "batch")
        for key, value in changes.items():
            if key == "task_annotations":
                job["tasks"][0]["annotations"] = value
            else:
                job[key] = value

    return edit


def _with_critical_class(doc: Doc) -> None:
    doc["priorityClasses"] = [{"name": "system-cluster-critical", "value": 2000000000}]
    find(doc, "jobs", "batch")["priorityClassName"] = "system-cluster-critical"


def _no_evicting_action(doc: Doc) -> None:
    doc["scheduler"]["actions"] = "enqueue, allocate, backfill"


def _not_reclaimable(doc: Doc) -> None:
    find(doc, "queues", "team-a")["reclaimable"] = False


@pytest.mark.parametrize(
    ("edit", "namespace", "message"),
    [
        (
            _batch(task_annotations={"volcano.sh/preemptable": "false"}),
            "default",
            "pod default/batch-w-0: it is not preemptable (volcano.sh/preemptable)",
        ),
        (
            _batch(namespace="kube-system"),
            "kube-system",
            "pod kube-system/batch-w-0: conformance protects pods of namespace kube-system",
        ),
        (
            _with_critical_class,
            "default",
            "pod default/batch-w-0: conformance protects priority class system-cluster-critical",
        ),
        (
            _no_evicting_action,
            "default",
            "pod default/batch-w-0: no preempt or reclaim action is configured, and it is not a "
            "TDM eviction from a closed revocable zone",
        ),
        (
            _not_reclaimable,
            "default",
            "pod default/batch-w-0: reclaimed from queue team-a, which is not reclaimable",
        ),
    ],
)
def test_eviction_allowed_victim(edit: Callable[[Doc], None], namespace: str, message: str) -> None:
    """One batch pod reclaimed from n2, where the pod is not preemptable / in kube-system /
    system-cluster-critical / there is no evicting action / team-a is not reclaimable. No
    budget annotation, team-a has no guarantee."""
    found = verify(build(edit), Plan(evictions=(evict("batch-w-0", "n2", namespace=namespace),)))
    assert [(v.rule, v.message) for v in found] == [("eviction-allowed", message)]


def test_eviction_conformance_needs_the_plugin() -> None:
    """Without the conformance plugin Volcano does not protect kube-system pods."""

    def edit(doc: Doc) -> None:
        _batch(namespace="kube-system")(doc)
        doc["scheduler"]["tiers"][0]["plugins"] = [{"name": "priority"}, {"name": "gang"}]

    plan = Plan(evictions=(evict("batch-w-0", "n2", namespace="kube-system"),))
    assert verify(build(edit), plan) == []


def _batch_on_z1(doc: Doc) -> None:
    _no_evicting_action(doc)
    find(doc, "jobs", "batch")["running"] = [{"index": i, "node": "z1"} for i in range(3)]


def test_tdm_eviction_needs_no_action_when_the_zone_is_closed() -> None:
    """batch runs on z1; without preempt/reclaim only TDM may evict, and only once rz1's window
    (08:00-21:00) is closed: at 22:00 yes, at 14:00 no."""

    def late(doc: Doc) -> None:
        _batch_on_z1(doc)
        after_window(doc)

    plan = Plan(evictions=(evict("batch-w-0", "z1", "tdm"),))
    assert verify(build(late), plan) == []
    assert [v.rule for v in verify(build(_batch_on_z1), plan)] == ["eviction-allowed"]


def test_eviction_budget_annotation() -> None:
    """jdb-max-unavailable 1 with 3 of 3 pods running: 1 may go; evicting 2 breaks it."""
    instance = build(_batch(annotations={"volcano.sh/jdb-max-unavailable": "1"}))
    two = tuple(evict(f"batch-w-{i}", "n2") for i in range(2))
    found = verify(instance, Plan(evictions=two))
    assert [v.message for v in found] == ["job default/batch: 2 pods evicted > disruption budget 1"]
    assert verify(instance, Plan(evictions=two[:1])) == []


def test_eviction_budget_min_available() -> None:
    """jdb-min-available 1 with 3 running: 3 − 1 = 2 may go; 3 may not."""
    instance = build(_batch(annotations={"volcano.sh/jdb-min-available": "1"}))
    evictions = tuple(evict(f"batch-w-{i}", "n2") for i in range(3))
    assert verify(instance, Plan(evictions=evictions[:2])) == []
    assert [v.rule for v in verify(instance, Plan(evictions=evictions))] == ["eviction-allowed"]


def test_eviction_budget_applies_to_tdm_evictions_by_default() -> None:
    """Without a budget annotation reclaim may take two batch pods, but TDM evicts at most the
    default 1 per job."""
    reclaim = tuple(evict(f"batch-w-{i}", "n2") for i in range(2))
    tdm = tuple(evict(f"batch-w-{i}", "n2", "tdm") for i in range(2))
    assert verify(build(), Plan(evictions=reclaim)) == []
    assert [v.rule for v in verify(build(), Plan(evictions=tdm))] == ["eviction-allowed"]


def _capacity_reclaims(doc: Doc) -> None:
    """gang and conformance stop answering Reclaimable, so capacity's tier decides reclaim."""
    for option in doc["scheduler"]["tiers"][0]["plugins"]:
        if option["name"] in ("gang", "conformance"):
            option["enableReclaimable"] = False


def test_eviction_guarantee() -> None:
    """team-b's guarantee is cpu 2 and steady holds exactly 2 × 1 cpu: reclaiming one leaves 1.
    With capacity deciding reclaim that breaks the guarantee; preempt (inside the queue) does
    not consult the guarantee."""
    instance = build(_capacity_reclaims)
    found = verify(instance, Plan(evictions=(evict("steady-w-0", "n3"),)))
    assert [v.message for v in found] == ["queue team-b: cpu 1 left after evictions < guarantee 2"]
    assert verify(instance, Plan(evictions=(evict("steady-w-0", "n3", "preempt"),))) == []


def test_eviction_guarantee_not_protected_when_gang_tier_decides() -> None:
    """In the base conf gang and conformance answer Reclaimable in tier 1, before capacity: a
    non-empty tier-1 answer is final and capacity's guarantee check is never consulted (spec
    §8.2, §9.4), so Volcano itself may reclaim below a guarantee and the plan is allowed."""
    assert verify(build(), Plan(evictions=(evict("steady-w-0", "n3"),))) == []
