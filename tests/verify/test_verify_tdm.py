"""TDM rules: tdm-window and tdm-revocable-only."""

from __future__ import annotations

from verify_kit import (
    Doc,
    after_window,
    build,
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
