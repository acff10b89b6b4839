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

Edit = Callable[[Doc], None]

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


def _only_shuffle(doc: Doc) -> None:
    doc["scheduler"]["actions"] = "enqueue, allocate, backfill, shuffle"


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
            "pod default/batch-w-0: no preempt or reclaim action is configured",
        ),
        (
            _only_shuffle,
            "default",
            "pod default/batch-w-0: no preempt or reclaim action is configured (TDM's shuffle "
            "evicts from closed zones only, with reason tdm)",
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


# -- TDM's evictions (shuffle) ------------------------------------------------------------------


def _shuffle_on(*nodes: str, actions: str = "enqueue, allocate, backfill, shuffle") -> Edit:
    """batch's three pods on ``nodes`` (one each, in order), z2 a node of a second zone rz2
    (same window as rz1), the given actions, and 22:00, when both zones are closed."""

    def edit(doc: Doc) -> None:
        doc["scheduler"]["actions"] = actions
        doc["nodes"].append(
            {
                "name": "z2",
                "labels": {"rack": "r2", "volcano.sh/revocable-zone": "rz2"},
                "allocatable": {"cpu": "8", "memory": "32Gi"},
            }
        )
        _tdm(doc)["arguments"]["tdm.revocable-zone.rz2"] = "08:00-21:00"
        find(doc, "jobs", "batch")["running"] = [
            {"index": i, "node": node} for i, node in enumerate(nodes)
        ]
        after_window(doc)

    return edit


def _tdm(doc: Doc) -> Doc:
    return find({"plugins": doc["scheduler"]["tiers"][1]["plugins"]}, "plugins", "tdm")


def _also(*edits: Edit) -> Edit:
    def edit(doc: Doc) -> None:
        for one in edits:
            one(doc)

    return edit


def _at_14(doc: Doc) -> None:
    doc["now"] = "2026-11-30T14:00:00Z"


def _victim_switch_off(doc: Doc) -> None:
    _tdm(doc)["enableVictim"] = False


def _evicted_at_21_59_30(doc: Doc) -> None:
    _tdm(doc)["arguments"]["vcopt.lastEvictAt"] = "2026-11-30T21:59:30Z"


ON_Z1 = ("z1", "z1", "z1")


def test_tdm_eviction_from_a_closed_zone_needs_no_preempt_or_reclaim() -> None:
    """batch runs its 3 pods on z1; actions enqueue, allocate, backfill, shuffle. At 22:00 rz1
    (08:00-21:00) is closed: shuffle's round takes the default budget, 1 pod, so one TDM
    eviction is exactly what Volcano does."""
    plan = Plan(evictions=(evict("batch-w-0", "z1", "tdm"),))
    assert verify(build(_shuffle_on(*ON_Z1)), plan) == []


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (_at_14, "revocable zone rz1 (08:00-21:00) is open at 2026-11-30T14:00:00+00:00"),
        (_no_evicting_action, "TDM evicts only from the shuffle action, which is not configured"),
        (_victim_switch_off, "the tdm plugin's Victim hook is off (enableVictim: false)"),
        (
            _evicted_at_21_59_30,
            "the last TDM round (vcopt.lastEvictAt 2026-11-30T21:59:30+00:00) is less than "
            "tdm.evict.period (60s) before 2026-11-30T22:00:00+00:00",
        ),
    ],
)
def test_tdm_eviction_needs_a_shuffle_round_and_a_closed_zone(edit: Edit, why: str) -> None:
    """The same eviction when the zone is open (14:00), without shuffle in the actions, with
    the tdm plugin's ``enableVictim: false``, or when the last round (21:59:30) is less than
    the default period (1m) before now: shuffle makes no round there or takes nothing from
    rz1, so the eviction is not one Volcano makes — and none is missing either."""
    plan = Plan(evictions=(evict("batch-w-0", "z1", "tdm"),))
    found = verify(build(_also(_shuffle_on(*ON_Z1), edit)), plan)
    assert [(v.rule, v.message) for v in found] == [
        ("eviction-allowed", f"pod default/batch-w-0: not a TDM eviction: {why}")
    ]


def test_tdm_eviction_from_a_node_in_no_zone() -> None:
    """TDM takes pods from revocable nodes only: batch-w-0 runs on n2, in no zone."""
    plan = Plan(evictions=(evict("batch-w-0", "n2", "tdm"),))
    found = verify(build(_shuffle_on("n2", "n2", "n2")), plan)
    assert [v.message for v in found] == [
        "pod default/batch-w-0: not a TDM eviction: node n2 is in no revocable zone"
    ]


def test_tdm_budget_is_per_zone() -> None:
    """batch runs on z1, z1 and z2, no budget (default 1). Volcano cuts the candidates per
    zone and job, so the round takes 1 from rz1 and 1 from rz2: two TDM evictions of one job
    are allowed when they come from the two zones. Two from z1 are one too many there, and
    rz2's one is then missing (tdm-window)."""
    instance = build(_shuffle_on("z1", "z1", "z2"))
    apart = (evict("batch-w-0", "z1", "tdm"), evict("batch-w-2", "z2", "tdm"))
    assert verify(instance, Plan(evictions=apart)) == []
    both_z1 = (evict("batch-w-0", "z1", "tdm"), evict("batch-w-1", "z1", "tdm"))
    found = verify(instance, Plan(evictions=both_z1))
    assert [(v.rule, v.message) for v in found] == [
        (
            "tdm-window",
            "job default/batch: shuffle evicts 1 of its pods from revocable zone rz2 "
            "(08:00-21:00, closed at 2026-11-30T22:00:00+00:00); the plan evicts 0 with reason "
            "tdm",
        ),
        (
            "eviction-allowed",
            "job default/batch: 2 pods evicted by TDM from revocable zone rz1 > 1, what shuffle "
            "takes there (the disruption budget, once per zone and round)",
        ),
    ]


def test_conformance_does_not_protect_tdm_victims() -> None:
    """shuffle asks VictimTasks alone; conformance answers only Preemptable and Reclaimable,
    so a kube-system pod on the closed zone is TDM's like any other."""
    instance = build(_also(_shuffle_on(*ON_Z1), _batch(namespace="kube-system")))
    plan = Plan(evictions=(evict("batch-w-0", "z1", "tdm", namespace="kube-system"),))
    assert verify(instance, plan) == []


@pytest.mark.parametrize(
    ("actions", "tdm_evictions"),
    [("enqueue, allocate, preempt, shuffle", 0), ("enqueue, allocate, shuffle, preempt", 1)],
)
def test_preempt_before_shuffle_changes_the_round(actions: str, tdm_evictions: int) -> None:
    """batch (jdb-max-unavailable "1") runs on z1, z1 and n2; the plan preempts batch-w-2 on
    n2 (1 ≤ budget 1). With preempt first, the round sees 2 Running of 3: unavailable 1 ≥ 1 →
    0, so the plan must not evict from rz1 too. With shuffle first, the round sees 3 Running:
    1 − 0 = 1 from rz1, which the plan must then make."""
    budget = _batch(annotations={"volcano.sh/jdb-max-unavailable": "1"})
    instance = build(_also(_shuffle_on("z1", "z1", "n2", actions=actions), budget))
    preempted = evict("batch-w-2", "n2", "preempt")
    shuffled = evict("batch-w-0", "z1", "tdm")
    right = (preempted, shuffled)[: 1 + tdm_evictions]
    wrong = (preempted, shuffled)[: 2 - tdm_evictions]
    assert verify(instance, Plan(evictions=right)) == []
    rules = [v.rule for v in verify(instance, Plan(evictions=wrong))]
    assert rules == (["tdm-window"] if tdm_evictions else ["eviction-allowed"])


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
