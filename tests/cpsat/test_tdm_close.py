"""TDM's window close in the CP-SAT engine: the pods ``shuffle`` evicts, and nothing more.

Volcano evicts what ``VictimTasks`` names whatever else its cycle does (volcano-scheduler.md
§6; ``actions/shuffle/shuffle.go``, ``plugins/tdm/tdm.go``), so a CP-SAT plan must evict, per
closed zone and job, exactly as many pods as shuffle's round does; only *which* of the zone's
candidates go is free, as Volcano picks them in Go map order. The counts are reasoned by hand
from the rules (the same as ``tests/greedy/test_shuffle.py``):

- a zone is active iff start ≤ now ≤ end in whole seconds, start being *today* at HH1:MM1 and
  end today at HH2:MM2, or tomorrow when HH1:MM1 ≥ HH2:MM2;
- per configured zone that is inactive, the Running pods on its nodes whose
  ``volcano.sh/preemptable`` is not false, cut per job to ``getMaxPodEvictNum``:
  maxUnavailable m → m − (N − finished − running), never below 0; otherwise 1;
- nothing when the previous round was less than ``tdm.evict.period`` ago, nothing without
  ``shuffle`` in the actions.

Plans come from the model alone (``cpsat_kit.cpsat`` floors with an empty plan, which keeps the
pods shuffle evicts and so is outside the model); each is compared with the greedy engine's
and both pass the verifier. The cluster: ``normal-0`` (cpu 1), the rz1 nodes ``rev-0`` and
``rev-1`` and the rz2 node ``rev-2`` (cpu 8 each); both zones open 08:00-21:00 UTC, period 1m.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from cpsat_kit import checked, cpsat, cpsat_over_greedy, greedy

from models.instance import Instance
from models.load import from_dict
from models.tdm import node_zone
from optimizer.plan import Plan
from tests.tdm_kit import CLOSED, MAX_UNAVAILABLE, job

SHUFFLE = "enqueue, allocate, backfill, shuffle"


def cluster(
    jobs: list[dict[str, Any]],
    now: str = CLOSED,
    window: str = "08:00-21:00",
    actions: str = SHUFFLE,
    **arguments: str,
) -> Instance:
    tdm = {
        "tdm.revocable-zone.rz1": window,
        "tdm.revocable-zone.rz2": window,
        "tdm.evict.period": "1m",
        **arguments,
    }
    doc = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "metadata": {"name": "close"},
        "now": now,
        "timezone": "UTC",
        "scheduler": {
            "actions": actions,
            "tiers": [
                {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
                {
                    "plugins": [
                        {"name": "predicates"},
                        {"name": "proportion"},
                        {"name": "nodeorder"},
                        {"name": "tdm", "arguments": tdm},
                    ]
                },
            ],
        },
        "nodes": [
            {"name": "normal-0", "allocatable": {"cpu": "1", "memory": "16Gi"}},
            *(
                {
                    "name": f"rev-{i}",
                    "labels": {"volcano.sh/revocable-zone": zone},
                    "allocatable": {"cpu": "8", "memory": "16Gi"},
                }
                for i, zone in enumerate(("rz1", "rz1", "rz2"))
            ),
        ],
        "queues": [{"name": "default"}],
        "jobs": jobs,
    }
    return from_dict(doc, "close.yaml")


def both(instance: Instance, **changes: object) -> tuple[Plan, Plan]:
    """(greedy's plan, the CP-SAT model's own plan), both verified."""
    return checked(instance, greedy(instance)), cpsat(instance, **changes)


def evicted(plan: Plan) -> dict[str, tuple[str, str]]:
    """Evicted pod (without ``default/``) → (node, reason)."""
    return {e.pod.removeprefix("default/"): (e.node, e.reason) for e in plan.evictions}


def per_zone(instance: Instance, plan: Plan) -> Counter[tuple[str, str, str]]:
    """Evictions per (zone, job, reason): what Volcano fixes, whichever pods its map order
    picks."""
    return Counter(
        (
            node_zone(instance.node_by_name[e.node].labels),
            instance.pod_by_key[e.pod].job,
            e.reason,
        )
        for e in plan.evictions
    )


def test_closed_zone_evicts_its_one_revocable_pod() -> None:
    """At 21:05 rz1 (08:00-21:00) is closed since 21:00:01. ``batch``'s one pod on rev-0 is a
    candidate; default budget 1 → evicted, reason tdm. ``steady`` runs on normal-0, in no
    zone → kept. Nothing is pending, so this eviction is all either plan does."""
    instance = cluster([job("batch", ["rev-0"]), job("steady", ["normal-0"], cpu="1")])
    floor, plan = both(instance)
    assert evicted(plan) == evicted(floor) == {"batch-w-0": ("rev-0", "tdm")}
    assert plan.placements == ()


def test_three_pods_with_max_unavailable_one() -> None:
    """``batch`` runs 3 pods on rev-0, rev-1, rev-0 (all rz1) with jdb-max-unavailable "1":
    N = 3, running 3, unavailable 0 < 1 → 1 − 0 = 1 victim from rz1. Which of the three is
    Volcano's map order: greedy takes the first in node order, CP-SAT any one of them."""
    budget = {MAX_UNAVAILABLE: "1"}
    instance = cluster([job("batch", ["rev-0", "rev-1", "rev-0"], budget=budget)])
    floor, plan = both(instance)
    expected = Counter({("rz1", "default/batch", "tdm"): 1})
    assert per_zone(instance, plan) == per_zone(instance, floor) == expected
    assert evicted(floor) == {"batch-w-0": ("rev-0", "tdm")}


def test_max_unavailable_used_up_keeps_the_pods_and_the_pending_one_waits() -> None:
    """3 pods, 2 running on rev-0 and rev-1, the third pending. jdb-max-unavailable "1":
    unavailable 3 − 0 − 2 = 1 ≥ 1 → 0 victims, so both keep running. The pending pod (cpu 2)
    finds no node: normal-0 has cpu 1 and the closed zone takes nothing new."""
    budget = {MAX_UNAVAILABLE: "1"}
    instance = cluster([job("b", ["rev-0", "rev-1"], replicas=3, budget=budget)])
    floor, plan = both(instance)
    assert plan.evictions == floor.evictions == ()
    assert plan.placements == floor.placements == ()


def test_a_job_loses_its_budget_in_each_closed_zone() -> None:
    """``batch`` runs one pod in rz1 (rev-0) and one in rz2 (rev-2), both closed, no budget:
    Volcano groups candidates per zone, then per job, and cuts each group to the default 1,
    so one pod goes from each zone: both."""
    instance = cluster([job("batch", ["rev-0", "rev-2"])])
    floor, plan = both(instance)
    expected = {"batch-w-0": ("rev-0", "tdm"), "batch-w-1": ("rev-2", "tdm")}
    assert evicted(plan) == evicted(floor) == expected


@pytest.mark.parametrize(
    ("now", "evictions"),
    [
        ("2026-11-30T14:00:00Z", 0),  # mid-window
        ("2026-11-30T21:00:00Z", 0),  # end is inclusive
        ("2026-11-30T21:00:01Z", 1),  # one second after the end
        ("2026-11-30T07:59:59Z", 1),  # before today's start
        ("2026-11-30T08:00:00Z", 0),  # start is inclusive
    ],
)
def test_window_still_open_evicts_nothing(now: str, evictions: int) -> None:
    """08:00-21:00: active from 08:00:00 to 21:00:00 inclusive; the pod on rev-0 is evicted
    exactly when the zone is inactive, by both engines."""
    instance = cluster([job("batch", ["rev-0"])], now=now)
    floor, plan = both(instance)
    assert len(plan.evictions) == len(floor.evictions) == evictions


@pytest.mark.parametrize(
    ("now", "evictions"),
    [
        ("2026-11-30T23:30:00Z", 0),  # start today 22:00 ≤ now ≤ end tomorrow 06:00
        ("2026-12-01T03:00:00Z", 1),  # start moved to Dec 1 22:00 > now: inactive
        ("2026-11-30T21:30:00Z", 1),  # before today's 22:00
    ],
)
def test_cross_midnight_window_start_is_always_today(now: str, evictions: int) -> None:
    """Volcano quirk (§6, §9.12): ``22:00-06:00`` starts *today* at 22:00, so at 03:00 the
    zone counts as closed although it is meant to run until 06:00: the pod is evicted."""
    instance = cluster([job("batch", ["rev-0"])], now=now, window="22:00-06:00")
    floor, plan = both(instance)
    assert len(plan.evictions) == len(floor.evictions) == evictions


@pytest.mark.parametrize("actions", ["enqueue, allocate, backfill", "enqueue, allocate, preempt"])
def test_without_shuffle_nothing_is_evicted(actions: str) -> None:
    """Only ``shuffle`` calls VictimTasks: with the zone closed but no shuffle, the pod stays.
    With preempt configured it could be a victim, but nothing is pending to gain from it."""
    instance = cluster([job("batch", ["rev-0"])], actions=actions)
    floor, plan = both(instance)
    assert plan.evictions == floor.evictions == ()


@pytest.mark.parametrize(("last", "evictions"), [("21:04:30", 0), ("21:04:00", 1)])
def test_evict_period_paces_the_rounds(last: str, evictions: int) -> None:
    """``vcopt.lastEvictAt`` 21:04:30 + 1m = 21:05:30 > 21:05 → no round this cycle; 21:04:00
    + 1m = 21:05:00 is not after 21:05 → a round, one pod."""
    arguments = {"vcopt.lastEvictAt": f"2026-11-30T{last}Z"}
    instance = cluster([job("batch", ["rev-0"])], **arguments)
    floor, plan = both(instance)
    assert len(plan.evictions) == len(floor.evictions) == evictions


@pytest.mark.parametrize(("period", "evictions"), [("1m", 1), ("0s", 2)])
def test_a_second_shuffle_is_a_round_only_with_a_zero_period(period: str, evictions: int) -> None:
    """``shuffle, shuffle`` and batch's 3 pods on rz1, no budget. Each round sets lastEvictAt
    to now; with 1m the second is inside the period → 1 pod in all. With 0s now + 0 is not
    after now → a second round on the 2 pods still Running → 1 more: 2 pods."""
    arguments = {"tdm.evict.period": period}
    actions = "enqueue, allocate, shuffle, shuffle"
    instance = cluster([job("batch", ["rev-0", "rev-1", "rev-0"])], actions=actions, **arguments)
    floor, plan = both(instance)
    expected = Counter({("rz1", "default/batch", "tdm"): evictions})
    assert per_zone(instance, plan) == per_zone(instance, floor) == expected


def test_conformance_does_not_protect_shuffle_victims() -> None:
    """shuffle asks VictimTasks only, and conformance registers no such hook: a preemptable pod
    of kube-system on the closed zone goes like any other (preempt or reclaim could not take
    it)."""
    instance = cluster([job("agent", ["rev-0"], namespace="kube-system")])
    floor, plan = both(instance)
    assert [(e.pod, e.reason) for e in plan.evictions] == [("kube-system/agent-w-0", "tdm")]
    assert plan.evictions == floor.evictions


def test_a_pending_job_is_never_placed_on_a_closed_zone() -> None:
    """``new`` (1 revocable pod, cpu 2) fits only a revocable node (normal-0 has cpu 1): at
    14:00 the zones are open and CP-SAT places it on one of them; at 21:05 both are closed, it
    stays pending, and only shuffle's eviction is made."""
    jobs = [job("batch", ["rev-0"]), job("new", [], replicas=1)]
    _, open_plan = both(cluster(jobs, now="2026-11-30T14:00:00Z"))
    assert [p.node.startswith("rev-") for p in open_plan.placements] == [True]
    floor, plan = both(cluster(jobs))
    assert plan.placements == floor.placements == ()
    assert evicted(plan) == {"batch-w-0": ("rev-0", "tdm")}


def test_disruption_caps_leave_shuffle_alone() -> None:
    """``--max-evictions 0`` bounds the evictions a plan chooses; shuffle's happen whatever the
    plan is, so the plan still evicts batch-w-0."""
    plan = cpsat(cluster([job("batch", ["rev-0"])]), max_evictions=0)
    assert evicted(plan) == {"batch-w-0": ("rev-0", "tdm")}


def test_rounds_of_the_neighbourhood_search_keep_shuffle_evictions() -> None:
    """With ``--strategy decompose`` the rounds fix every eviction of the plan they start from
    (greedy's, which has shuffle's) and only re-place pending pods: ``new`` (cpu 1) still
    starts on normal-0 and batch-w-0 is still evicted."""
    instance = cluster([job("batch", ["rev-0"]), job("new", [], replicas=1, cpu="1")])
    _, plan = cpsat_over_greedy(instance, strategy="decompose")
    assert evicted(plan) == {"batch-w-0": ("rev-0", "tdm")}
    assert [(p.pod, p.node) for p in plan.placements] == [("default/new-w-0", "normal-0")]
