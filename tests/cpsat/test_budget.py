"""The phase arithmetic of the time budget, on a fake clock (wall times of real runs belong to
the benchmarks). ``--time-limit`` is the user's wall clock: every phase asks one Budget what is
left, the search keeps the estimated tail (expand + verify) in hand, and when nothing is left
before CP-SAT starts the engine says so and returns the greedy plan at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cpsat_kit import checked, greedy, instance, options

from optimizer.budget import MAX_START_UP, MIN_SEARCH, TAIL_FLOOR, Budget, TimeUp
from optimizer.cpsat.engine import solve
from optimizer.result import Status

ROOT = Path(__file__).resolve().parents[2]
EASY = """
    scheduler:
      actions: "enqueue, allocate"
      tiers:
      - plugins: [{name: priority}, {name: gang}, {name: predicates}]
    nodes:
    - {name: n1, allocatable: {cpu: "8", memory: 16Gi}}
    - {name: n2, allocatable: {cpu: "8", memory: 16Gi}}
    jobs:
    - {name: j, tasks: [{name: w, replicas: 3, resources: {cpu: "4", memory: 1Gi}}]}
    """


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_remaining_counts_from_creation_and_never_goes_negative() -> None:
    clock = FakeClock()
    budget = Budget(10, clock)
    clock.now += 4
    assert budget.elapsed() == 4
    assert budget.remaining() == 6
    clock.now += 20
    assert budget.remaining() == 0


def test_started_backdates_the_budget() -> None:
    """A budget opened after the greedy run counts the greedy seconds already spent."""
    clock = FakeClock(50)
    budget = Budget(10, clock, started=47)
    assert budget.remaining() == 7


@pytest.mark.parametrize(("spent", "keep", "raises"), [(5, 4, False), (7, 4, True), (6, 4, False)])
def test_check_raises_only_below_what_must_be_kept(spent: float, keep: float, raises: bool) -> None:
    clock = FakeClock()
    budget = Budget(10, clock)
    clock.now += spent
    if raises:
        with pytest.raises(TimeUp):
            budget.check(keep)
    else:
        budget.check(keep)


def test_search_keeps_the_tail_in_hand() -> None:
    """60 s limit, 10 s spent, tail 5 s: the search may use 45 s."""
    clock = FakeClock()
    budget = Budget(60, clock)
    clock.now += 10
    assert budget.search_seconds(5) == pytest.approx(45)


def test_search_keeps_at_least_a_share_of_the_limit() -> None:
    """A tail estimate below 5 % of the limit is raised to it: 100 s, nothing spent, tail 1 s
    leaves 100 − 5 = 95 s."""
    budget = Budget(100, FakeClock())
    assert budget.search_seconds(1) == pytest.approx(100 * (1 - TAIL_FLOOR))


def test_no_search_when_too_little_is_left() -> None:
    clock = FakeClock()
    budget = Budget(10, clock)
    clock.now += 10 - 1 - MIN_SEARCH / 2
    assert budget.search_seconds(1) == 0.0


def test_share_splits_by_weight_and_passes_on_what_earlier_phases_left() -> None:
    """Weights 2, 1, 1 over 40 s: the first phase gets 20 s; if it used only 10 s, the 30 s
    left go to the two remaining phases, 15 s each."""
    budget = Budget(100, FakeClock())
    assert budget.share(40, [2, 1, 1], 0) == pytest.approx(20)
    assert budget.share(30, [2, 1, 1], 1) == pytest.approx(15)
    assert budget.share(15, [2, 1, 1], 2) == pytest.approx(15)
    assert budget.share(10, [0, 0], 0) == 0


def test_spent_budget_returns_the_greedy_plan_at_once() -> None:
    """The greedy baseline used the whole limit: CP-SAT never starts, the plan is greedy's,
    verified, and the report says the limit was spent before CP-SAT could start."""
    inst = instance(EASY)
    floor = checked(inst, greedy(inst))
    clock = FakeClock()
    budget = Budget(5, clock, started=clock.now - 5)
    plan = solve(inst, options(time_limit=5), floor, budget=budget)
    assert plan.solver is not None
    assert plan.solver.status == Status.TIME_UP
    assert "spent before CP-SAT could start" in (plan.solver.fallback or "")
    assert plan.placements == floor.placements
    checked(inst, plan)


def test_the_command_clock_starts_with_its_process() -> None:
    """A fresh interpreter that sleeps a second before asking: its clock started before the
    sleep (a second ago or more), not when asked."""
    script = (
        "import time; time.sleep(1.0); from optimizer.budget import process_started; "
        "print(time.perf_counter() - process_started())"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert 1.0 <= float(done.stdout) < MAX_START_UP
