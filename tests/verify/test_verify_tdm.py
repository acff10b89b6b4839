"""TDM rules: tdm-window (no new pod in a closed zone, and none of the pods shuffle evicts
kept) and tdm-revocable-only."""

from __future__ import annotations

from collections.abc import Callable

from verify_kit import (
    Doc,
    after_window,
    build,
    evict,
    find,
    place,
    rules,
    task,
    violations,
)

# -- TDM ----------------------------------------------------------------------------------------


def test_tdm_window() -> None:
    """At 22:00 UTC the window 08:00-21:00 is closed; scavenger is revocable."""
    found = violations(build(after_window), place("scavenger-w-0", "z1"))
    assert [v.message for v in found] == [
        "pod default/scavenger-w-0 on node z1: revocable zone rz1 (08:00-21:00) is not active at "
        "2026-11-30T22:00:00+00:00"
    ]


def test_tdm_window_bounds_are_inclusive() -> None:
    """Volcano compares whole seconds inclusively: 21:00:00 is still inside 08:00-21:00."""

    def edit(doc: Doc) -> None:
        doc["now"] = "2026-11-30T21:00:00Z"

    assert rules(build(edit), place("scavenger-w-0", "z1")) == []


def test_tdm_revocable_only() -> None:
    """solo is not revocable (no zone annotation, volcano.sh/preemptable unset); window open."""
    found = violations(build(), place("solo-main-0", "z1"))
    assert [v.message for v in found] == [
        "pod default/solo-main-0 on node z1 (revocable zone rz1) is not revocable"
    ]


def test_tdm_preemptable_annotation_makes_a_pod_revocable() -> None:
    def edit(doc: Doc) -> None:
        task(doc, "solo")["annotations"] = {"volcano.sh/preemptable": "true"}

    assert rules(build(edit), place("solo-main-0", "z1")) == []


def test_tdm_rules_need_the_plugin() -> None:
    """Without the tdm plugin the zone label means nothing: any pod, any time."""

    def edit(doc: Doc) -> None:
        after_window(doc)
        tier = doc["scheduler"]["tiers"][1]["plugins"]
        tier[:] = [p for p in tier if p["name"] != "tdm"]

    assert rules(build(edit), place("solo-main-0", "z1")) == []


# -- shuffle's evictions at the close (tdm-window) ----------------------------------------------

SHUFFLE = "enqueue, allocate, backfill, shuffle"


def _batch_on_z1(actions: str = SHUFFLE, running: int = 3, **tdm: str) -> Callable[[Doc], None]:
    """batch's first ``running`` pods on z1, the given actions and tdm arguments, at 22:00
    (rz1, 08:00-21:00, closed)."""

    def edit(doc: Doc) -> None:
        doc["scheduler"]["actions"] = actions
        plugins = doc["scheduler"]["tiers"][1]["plugins"]
        next(p for p in plugins if p["name"] == "tdm")["arguments"].update(tdm)
        find(doc, "jobs", "batch")["running"] = [{"index": i, "node": "z1"} for i in range(running)]
        after_window(doc)

    return edit


def test_a_plan_that_keeps_what_shuffle_evicts() -> None:
    """At 22:00 rz1 is closed and shuffle runs: its round takes the default budget, 1 of
    batch's 3 pods on z1, whatever else the cycle does. A plan that evicts none is not a cycle
    Volcano runs; which pod goes is Volcano's map order, so any one of the three will do."""
    found = violations(build(_batch_on_z1()))
    assert [(v.rule, v.message) for v in found] == [
        (
            "tdm-window",
            "job default/batch: shuffle evicts 1 of its pods from revocable zone rz1 "
            "(08:00-21:00, closed at 2026-11-30T22:00:00+00:00); the plan evicts 0 with reason "
            "tdm",
        )
    ]
    for i in range(3):
        assert (
            violations(build(_batch_on_z1()), evictions=(evict(f"batch-w-{i}", "z1", "tdm"),)) == []
        )


def test_nothing_to_evict_without_shuffle_or_candidates() -> None:
    """Keeping batch on z1 is right when shuffle is not configured, when batch's pods are not
    preemptable, and when its budget is used up: jdb-max-unavailable "1" with 2 of 3 pods
    running → unavailable 1 ≥ 1 → 0. There, one TDM eviction is one too many."""
    assert violations(build(_batch_on_z1("enqueue, allocate, backfill"))) == []

    def not_preemptable(doc: Doc) -> None:
        _batch_on_z1()(doc)
        task(doc, "batch")["annotations"] = {"volcano.sh/preemptable": "false"}

    assert violations(build(not_preemptable)) == []

    def used_up(doc: Doc) -> None:
        _batch_on_z1(running=2)(doc)
        find(doc, "jobs", "batch")["annotations"] = {"volcano.sh/jdb-max-unavailable": "1"}

    assert violations(build(used_up)) == []
    one = (evict("batch-w-0", "z1", "tdm"),)
    assert [v.rule for v in violations(build(used_up), evictions=one)] == ["eviction-allowed"]


def test_each_shuffle_is_a_round_when_the_period_is_zero() -> None:
    """With ``tdm.evict.period: 0s`` and ``shuffle`` twice, the second round is not within the
    period of the first (now + 0 is not after now): rounds of 1 pod each (default budget,
    recomputed on 2 Running pods the second time) → 2 pods. With the default 1m period the
    second round finds the first one 0 s ago → 1 pod."""
    twice = "enqueue, allocate, shuffle, shuffle"
    zero = build(_batch_on_z1(twice, **{"tdm.evict.period": "0s"}))
    one = (evict("batch-w-0", "z1", "tdm"),)
    two = (*one, evict("batch-w-1", "z1", "tdm"))
    assert violations(zero, evictions=two) == []
    assert [v.rule for v in violations(zero, evictions=one)] == ["tdm-window"]
    paced = build(_batch_on_z1(twice))
    assert violations(paced, evictions=one) == []
    assert [v.rule for v in violations(paced, evictions=two)] == ["eviction-allowed"]
