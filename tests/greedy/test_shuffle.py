"""TDM's window close through the ``shuffle`` action, end to end (instance → engine → plan).

Volcano evicts revocable pods only from its ``shuffle`` action, the one caller of
``VictimTasks`` (volcano-scheduler.md §6; ``actions/shuffle/shuffle.go``,
``plugins/tdm/tdm.go``). Every expected eviction below is reasoned from those rules:

- a zone is active iff start ≤ now ≤ end in whole seconds, start being *today* at HH1:MM1 and
  end today at HH2:MM2, or tomorrow when HH1:MM1 ≥ HH2:MM2;
- for each configured zone that is inactive, the Running pods on its nodes whose
  ``volcano.sh/preemptable`` is not false (the pod default is true), cut per job to
  ``getMaxPodEvictNum``: maxUnavailable m → m − (N − finished − running), never below 0;
  minAvailable m → running − m if running ≥ m; otherwise 1;
- nothing at all if the previous round was less than ``tdm.evict.period`` ago; every round,
  even an empty one, counts.

The cluster: ``normal-0`` (cpu 1) and the rz1 nodes ``rev-0`` and ``rev-1`` (cpu 8 each), window
``08:00-21:00`` in UTC, period 1m, actions ``enqueue, allocate, backfill, shuffle`` (the issue's
set-up). Every plan must also pass the verifier.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from models.instance import Instance
from models.load import from_dict
from optimizer.cli import main
from optimizer.greedy.actions import shuffle
from optimizer.greedy.engine import open_session, solve
from optimizer.plan import Plan
from optimizer.verify import verify
from tests.tdm_kit import CLOSED, MAX_UNAVAILABLE, job

ZONE = {"volcano.sh/revocable-zone": "rz1"}


def cluster(
    jobs: list[dict[str, Any]],
    now: str = CLOSED,
    window: str = "08:00-21:00",
    actions: str = "enqueue, allocate, backfill, shuffle",
    timezone: str = "UTC",
    **arguments: str,
) -> Instance:
    tdm = {"tdm.revocable-zone.rz1": window, "tdm.evict.period": "1m", **arguments}
    doc = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "metadata": {"name": "shuffle"},
        "now": now,
        "timezone": timezone,
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
            {"name": "rev-0", "labels": ZONE, "allocatable": {"cpu": "8", "memory": "16Gi"}},
            {"name": "rev-1", "labels": ZONE, "allocatable": {"cpu": "8", "memory": "16Gi"}},
        ],
        "queues": [{"name": "default"}],
        "jobs": jobs,
    }
    return from_dict(doc, "shuffle.yaml")


def checked(instance: Instance) -> Plan:
    plan = solve(instance, seed=0)
    assert verify(instance, plan) == []
    return plan


def evicted(plan: Plan) -> dict[str, tuple[str, str]]:
    """Evicted pod (without ``default/``) → (node, reason)."""
    return {e.pod.removeprefix("default/"): (e.node, e.reason) for e in plan.evictions}


def test_closed_zone_evicts_its_one_revocable_pod() -> None:
    """The issue's case: at 21:05 rz1 (08:00-21:00) is closed since 21:00:01. ``batch`` runs
    its one pod on rev-0 → a candidate; default budget 1 → evicted, reason tdm. ``steady``
    runs on normal-0, which is in no zone → kept."""
    plan = checked(cluster([job("batch", ["rev-0"]), job("steady", ["normal-0"], cpu="1")]))
    assert evicted(plan) == {"batch-w-0": ("rev-0", "tdm")}


ISSUE = """
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: issue}
now: "2026-11-30T21:05:00Z"
scheduler:
  actions: "enqueue, allocate, backfill, shuffle"
  tiers:
  - plugins: [{name: priority}, {name: gang}, {name: conformance}]
  - plugins:
    - {name: predicates}
    - {name: tdm, arguments: {tdm.revocable-zone.rz1: "08:00-21:00", tdm.evict.period: 1m}}
nodes:
- {name: normal-0, allocatable: {cpu: "8", memory: 16Gi}}
- {name: rev-0, labels: {volcano.sh/revocable-zone: rz1}, allocatable: {cpu: "8", memory: 16Gi}}
queues: [{name: default}]
jobs:
- name: batch
  queue: default
  annotations: {volcano.sh/preemptable: "true"}
  tasks:
  - {name: w, replicas: 1, resources: {cpu: "2"}, annotations: {volcano.sh/revocable-zone: "*"}}
  running: [{index: 0, node: rev-0}]
"""


def test_closed_zone_eviction_through_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's instance through ``vcopt solve --engine greedy``: the plan lists the one
    eviction (the issue reported none)."""
    path = tmp_path / "issue.yaml"
    path.write_text(ISSUE)
    assert main(["solve", "--engine", "greedy", "--format", "json", "-q", str(path)]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out)["evictions"] == [
        {"pod": "default/batch-w-0", "node": "rev-0", "reason": "tdm"}
    ]


def test_without_shuffle_nothing_is_evicted() -> None:
    """Only ``shuffle`` calls VictimTasks: the same closed zone with ``enqueue, allocate,
    backfill`` keeps the pod."""
    plan = checked(cluster([job("batch", ["rev-0"])], actions="enqueue, allocate, backfill"))
    assert plan.evictions == ()


def test_three_pods_with_max_unavailable_one() -> None:
    """``batch`` runs 3 pods on rev-0, rev-1, rev-0 with jdb-max-unavailable "1": N = 3,
    running 3, unavailable 3 − 0 − 3 = 0 < 1 → 1 − 0 = 1 victim, the first of the job's
    candidates in node order (rev-0's pods, lowest index first): batch-w-0."""
    budget = {MAX_UNAVAILABLE: "1"}
    plan = checked(cluster([job("batch", ["rev-0", "rev-1", "rev-0"], budget=budget)]))
    assert evicted(plan) == {"batch-w-0": ("rev-0", "tdm")}


def test_max_unavailable_already_used_up_evicts_nothing() -> None:
    """3 pods, 2 running on rev-0 and rev-1, the third pending (it needs cpu 2: normal-0 has 1
    and the closed zone refuses it). jdb-max-unavailable "1": unavailable 3 − 0 − 2 = 1 ≥ 1 →
    0 victims. With "34%" the budget is ⌈3 × 0.34⌉ = 2, minus 1 unavailable → 1 victim."""
    two_of_three = ["rev-0", "rev-1"]
    plan = checked(cluster([job("b", two_of_three, replicas=3, budget={MAX_UNAVAILABLE: "1"})]))
    assert plan.evictions == ()
    plan = checked(cluster([job("b", two_of_three, replicas=3, budget={MAX_UNAVAILABLE: "34%"})]))
    assert evicted(plan) == {"b-w-0": ("rev-0", "tdm")}


def test_non_preemptable_pod_stays_in_a_closed_zone() -> None:
    """A pod annotated ``volcano.sh/preemptable: "false"`` is never a VictimTasks candidate:
    ``keep`` stays on rev-0, ``go`` on rev-1 is evicted."""
    keep = job("keep", ["rev-0"], preemptable="false")
    plan = checked(cluster([keep, job("go", ["rev-1"])]))
    assert evicted(plan) == {"go-w-0": ("rev-1", "tdm")}


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
    exactly when the zone is inactive."""
    plan = checked(cluster([job("batch", ["rev-0"])], now=now))
    assert len(plan.evictions) == evictions


def test_window_is_read_in_the_instance_time_zone() -> None:
    """13:05Z is 21:05 in Asia/Shanghai (UTC+8): rz1 has closed there → evicted. 12:55Z is
    20:55 local → open → kept."""
    shanghai = {"timezone": "Asia/Shanghai"}
    plan = checked(cluster([job("batch", ["rev-0"])], now="2026-11-30T13:05:00Z", **shanghai))
    assert evicted(plan) == {"batch-w-0": ("rev-0", "tdm")}
    plan = checked(cluster([job("batch", ["rev-0"])], now="2026-11-30T12:55:00Z", **shanghai))
    assert plan.evictions == ()


@pytest.mark.parametrize(
    ("now", "evictions"),
    [
        ("2026-11-30T23:30:00Z", 0),  # start today 22:00 ≤ now ≤ end tomorrow 06:00
        ("2026-12-01T03:00:00Z", 1),  # start moved to Dec 1 22:00 > now: inactive
        ("2026-11-30T21:30:00Z", 1),  # before today's 22:00
    ],
)
def test_cross_midnight_window_start_is_always_today(now: str, evictions: int) -> None:
    """Volcano quirk (§6, §9.12): ``22:00-06:00`` starts *today* at 22:00, so after midnight
    the window counts as closed although it is meant to run until 06:00: the revocable pod is
    evicted at 03:00."""
    plan = checked(cluster([job("batch", ["rev-0"])], now=now, window="22:00-06:00"))
    assert len(plan.evictions) == evictions


def test_second_shuffle_in_the_same_cycle_evicts_nothing_more() -> None:
    """``shuffle, shuffle``: the first round at 21:05 evicts one pod of ``batch`` (3 pods, no
    budget → 1) and sets lastEvictAt = 21:05; the second is within the 1m period → nothing.
    One eviction in all."""
    jobs = [job("batch", ["rev-0", "rev-1", "rev-0"])]
    plan = checked(cluster(jobs, actions="enqueue, allocate, shuffle, shuffle"))
    assert evicted(plan) == {"batch-w-0": ("rev-0", "tdm")}


def test_next_cycle_within_the_evict_period_evicts_nothing() -> None:
    """Two cycles. At 21:05:00 the first evicts batch-w-0 (budget 1). The next snapshot, at
    21:05:30, has the two pods left running and ``vcopt.lastEvictAt`` 21:05:00 (the first
    round): 21:05 + 1m > 21:05:30 → nothing. At 21:06:00 the period has passed (21:06 is not
    after 21:06) → one more pod goes."""
    first = checked(cluster([job("batch", ["rev-0", "rev-1", "rev-0"])]))
    assert evicted(first) == {"batch-w-0": ("rev-0", "tdm")}
    left = job("batch", ["rev-0", "rev-1", "rev-0"])
    left["running"] = [{"index": 1, "node": "rev-1"}, {"index": 2, "node": "rev-0"}]
    last = {"vcopt.lastEvictAt": "2026-11-30T21:05:00Z"}
    second = checked(cluster([left], now="2026-11-30T21:05:30Z", **last))
    assert second.evictions == ()
    third = checked(cluster([left], now="2026-11-30T21:06:00Z", **last))
    assert len(third.evictions) == 1


def test_evicted_pods_are_not_placed_again_in_the_cycle() -> None:
    """``shuffle`` before ``allocate``: the evicted pod is Releasing, not Pending, so allocate
    does not place it, and the zone refuses the job's pending pod (cpu 2 does not fit normal-0
    either) → only the eviction."""
    jobs = [job("batch", ["rev-0"], replicas=2)]
    plan = checked(cluster(jobs, actions="enqueue, shuffle, allocate, backfill"))
    assert evicted(plan) == {"batch-w-0": ("rev-0", "tdm")}
    assert plan.placements == ()
    assert plan.pipelined == ()


def test_pods_whose_job_is_not_in_the_session_are_never_victims() -> None:
    """Volcano skips a victim whose job is not in ``ssn.Jobs`` (pods of other schedulers sit on
    nodes without a JobInfo). ``other``'s PodGroup is taken out of the session after it
    opens, leaving its pod on rev-1: only ``batch``'s pod on rev-0 is evicted."""
    ssn = open_session(cluster([job("batch", ["rev-0"]), job("other", ["rev-1"])]))
    del ssn.jobs["default/other"]
    shuffle.execute(ssn)
    assert [t.uid for t in ssn.records.evictions] == ["default/batch-w-0"]
