"""TDM's victims (volcano-scheduler.md §6, §9 item 12): which revocable pods are evicted when a
zone's window is closed, how many per job, and how often.

Volcano calls ``VictimTasks`` only from its ``shuffle`` action (§6). The hook is tested directly
on a session, and end to end through vcopt's ``shuffle`` action (``actions/shuffle.py``), which
evicts what the hook names with the reason "tdm".

Every instance: zone rz1 open 08:00–21:00 UTC; revocable nodes r1 and r2 (cpu 64 each) and an
ordinary node n1; job ``j`` runs its pods on r1 and r2, alternating, all marked revocable.
"""

from __future__ import annotations

from typing import Any

from models.instance import Instance
from models.load import from_dict
from optimizer.greedy.actions import shuffle
from optimizer.greedy.engine import open_session, to_plan
from optimizer.greedy.plugins.tdm import TdmPlugin
from optimizer.greedy.session import Session
from optimizer.verify import verify

OPEN, CLOSED = "2026-11-30T14:00:00Z", "2026-11-30T22:00:00Z"
REVOCABLE = {"volcano.sh/revocable-zone": "*"}
MAX_UNAVAILABLE, MIN_AVAILABLE = "volcano.sh/jdb-max-unavailable", "volcano.sh/jdb-min-available"


def zone_job(
    replicas: int, running: int, budget: dict[str, str] | None = None, name: str = "j"
) -> dict[str, Any]:
    """``replicas`` revocable pods of cpu 1, the first ``running`` on r1, r2, r1, …"""
    return {
        "name": name,
        "queue": "q1",
        "minAvailable": 1,
        "annotations": budget or {},
        "tasks": [
            {
                "name": "t",
                "replicas": replicas,
                "resources": {"cpu": "1"},
                "annotations": REVOCABLE,
            }
        ],
        "running": [{"index": i, "node": f"r{i % 2 + 1}"} for i in range(running)],
    }


def cluster(jobs: list[dict[str, Any]], now: str = CLOSED, **arguments: str) -> Instance:
    zone = {"volcano.sh/revocable-zone": "rz1"}
    doc = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "now": now,
        "scheduler": {
            "actions": "enqueue, allocate, shuffle",
            "tiers": [
                {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
                {
                    "plugins": [
                        {"name": "predicates"},
                        {
                            "name": "tdm",
                            "arguments": {"tdm.revocable-zone.rz1": "08:00-21:00", **arguments},
                        },
                    ]
                },
            ],
        },
        "nodes": [
            {"name": "n1", "allocatable": {"cpu": "64", "memory": "64Gi"}},
            {"name": "r1", "labels": zone, "allocatable": {"cpu": "64", "memory": "64Gi"}},
            {"name": "r2", "labels": zone, "allocatable": {"cpu": "64", "memory": "64Gi"}},
        ],
        "queues": [{"name": "q1"}],
        "jobs": jobs,
    }
    return from_dict(doc, "test")


def victims(instance: Instance) -> list[str]:
    ssn = open_session(instance)
    return sorted(t.uid.removeprefix("default/") for t in ssn.victim_tasks())


def count(instance: Instance) -> int:
    return len(victims(instance))


def test_open_window_has_no_victims() -> None:
    """At 14:00 rz1 is active (08:00 ≤ 14:00 ≤ 21:00) → no zone is inactive → nothing."""
    assert victims(cluster([zone_job(4, 4)], now=OPEN)) == []


def test_closed_window_without_budget_evicts_one_pod_per_job() -> None:
    """At 22:00 rz1 is inactive. Candidates: Running preemptable pods on rz1's nodes. Neither
    budget is set → getMaxPodEvictNum's default 1 per job: one of j's four pods. ``k`` runs
    one pod on the ordinary n1 (never a candidate) and one on r1 (its victim); ``m``'s only
    pod, on r2, is not preemptable → none. 2 victims."""
    ordinary = {
        "name": "k",
        "queue": "q1",
        "tasks": [
            {"name": "t", "replicas": 2, "resources": {"cpu": "1"}, "annotations": REVOCABLE}
        ],
        "running": [{"index": 0, "node": "n1"}, {"index": 1, "node": "r1"}],
    }
    protected = {
        "name": "m",
        "queue": "q1",
        "tasks": [
            {
                "name": "t",
                "replicas": 1,
                "resources": {"cpu": "1"},
                "annotations": {**REVOCABLE, "volcano.sh/preemptable": "false"},
            }
        ],
        "running": [{"index": 0, "node": "r2"}],
    }
    got = victims(cluster([zone_job(4, 4), ordinary, protected]))
    assert len(got) == 2
    assert "k-t-1" in got
    assert sum(1 for uid in got if uid.startswith("j-t-")) == 1


def test_max_unavailable_integer_and_percent() -> None:
    """maxUnavailable m with N = 10 tasks, all 10 Running: unavailable = 10 − 0 − 10 = 0 < m →
    m − 0 victims. "3" → 3. "30%" → ⌈3.0⌉ = 3. "25%" → ⌈2.5⌉ = 3 (rounded up). With 2 of the 10
    pending, unavailable = 2 and "3" leaves 1; "2" leaves 0."""
    for value, expected in (("3", 3), ("30%", 3), ("25%", 3)):
        assert count(cluster([zone_job(10, 10, {MAX_UNAVAILABLE: value})])) == expected
    assert count(cluster([zone_job(10, 8, {MAX_UNAVAILABLE: "3"})])) == 1
    assert count(cluster([zone_job(10, 8, {MAX_UNAVAILABLE: "2"})])) == 0


def test_min_available_and_its_fall_through() -> None:
    """minAvailable "3" with 5 Running (N = 5) → 5 − 3 = 2. Volcano quirk (§9.12): with 2
    Running (N = 5) the job is already below 3, the branch falls through to the default, and
    it still loses 1."""
    assert count(cluster([zone_job(5, 5, {MIN_AVAILABLE: "3"})])) == 2
    assert count(cluster([zone_job(5, 2, {MIN_AVAILABLE: "3"})])) == 1


def test_both_budgets_min_available_wins() -> None:
    """§6: ``JobInfo.extractBudget`` keeps jdb-min-available and drops jdb-max-unavailable when
    a PodGroup carries both. N = 10 all Running, minAvailable "8", maxUnavailable "5" →
    10 − 8 = 2 (maxUnavailable alone would allow 5). (The brief expected maxUnavailable to win,
    following seed 002 Q3; the spec, read in Volcano's code, says the opposite.)"""
    budget = {MIN_AVAILABLE: "8", MAX_UNAVAILABLE: "5"}
    assert count(cluster([zone_job(10, 10, budget)])) == 2
    assert count(cluster([zone_job(10, 10, {MAX_UNAVAILABLE: "5"})])) == 5


def test_evict_period_not_elapsed() -> None:
    """``lastEvictAt + tdm.evict.period > now`` → nothing (§6). Period 1m (default), now 22:00:
    last eviction at 21:59:30 → 22:00:30 > 22:00 → nothing; at 21:59:00 → 22:00 is not after
    22:00 → victims. A 5m period with the 21:59:00 round → nothing."""
    job = [zone_job(4, 4)]
    assert victims(cluster(job, **{"vcopt.lastEvictAt": "2026-11-30T21:59:30Z"})) == []
    assert count(cluster(job, **{"vcopt.lastEvictAt": "2026-11-30T21:59:00Z"})) == 1
    late = cluster(job, **{"vcopt.lastEvictAt": "2026-11-30T21:59:00Z", "tdm.evict.period": "5m"})
    assert victims(late) == []


def test_every_call_is_a_round() -> None:
    """§6 / §9.12: VictimTasks sets lastEvictAt = now even when it finds nothing, so a second
    call at the same instant is inside the period and returns nothing."""
    ssn: Session = open_session(cluster([zone_job(4, 4)]))
    assert len(ssn.victim_tasks()) == 1
    assert ssn.victim_tasks() == []
    plugin = ssn.plugins["tdm"]
    assert isinstance(plugin, TdmPlugin)
    assert plugin.last_evict_at == ssn.now


def test_tdm_preemptable_applies_the_budget() -> None:
    """§6 Preemptable: a non-preemptable, non-revocable preemptor may take Running preemptable
    pods on ordinary nodes only, per job within the budget (default 1). j runs 2 pods on r1
    and r2 (revocable nodes → never), v runs 3 pods on n1 → only the first of v's."""
    v = {
        "name": "v",
        "queue": "q1",
        "tasks": [{"name": "t", "replicas": 3, "resources": {"cpu": "1"}}],
        "running": [{"index": i, "node": "n1"} for i in range(3)],
    }
    hi = {
        "name": "hi",
        "queue": "q1",
        "tasks": [
            {
                "name": "t",
                "replicas": 1,
                "resources": {"cpu": "1"},
                "annotations": {"volcano.sh/preemptable": "false"},
            }
        ],
    }
    ssn = open_session(cluster([zone_job(2, 2), v, hi], now=OPEN))
    plugin = ssn.plugins["tdm"]
    assert isinstance(plugin, TdmPlugin)
    preemptor = next(t for t in ssn.tasks() if t.uid == "default/hi-t-0")
    candidates = [t for t in ssn.tasks() if t.node]
    chosen, _ = plugin.preemptable(preemptor, candidates)
    assert [t.uid for t in chosen] == ["default/v-t-0"]


def test_shuffle_evicts_the_victims_with_reason_tdm() -> None:
    """The shuffle action evicts what VictimTasks names: at 22:00 with maxUnavailable "2" and
    4 Running pods, 2 pods of j, reason "tdm"; the plan passes the verifier (a TDM eviction
    from a closed zone, within the budget)."""
    instance = cluster([zone_job(4, 4, {MAX_UNAVAILABLE: "2"})])
    ssn = open_session(instance)
    shuffle.execute(ssn)
    plan = to_plan(ssn)
    assert len(plan.evictions) == 2
    assert {e.reason for e in plan.evictions} == {"tdm"}
    assert {e.node for e in plan.evictions} <= {"r1", "r2"}
    assert verify(instance, plan) == []


def test_shuffle_in_an_open_window_evicts_nothing() -> None:
    """At 14:00 the zone is active → no victims → an empty plan, which the verifier accepts."""
    instance = cluster([zone_job(4, 4)], now=OPEN)
    ssn = open_session(instance)
    shuffle.execute(ssn)
    plan = to_plan(ssn)
    assert plan.evictions == ()
    assert verify(instance, plan) == []
