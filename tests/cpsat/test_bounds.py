"""Each stage's bound in the solver report: what a staged or a weighted search proves about a
plan's stages, worked out by hand on small numbers, then on solves whose optimum is known."""

from __future__ import annotations

import pytest
from cpsat_kit import QUEUES, cpsat_over_greedy, greedy, instance, options

from optimizer.cpsat.bounds import StageBounds
from optimizer.cpsat.engine import solve
from optimizer.cpsat.model.objective import StageValues
from optimizer.plan import SolverInfo


def values(work: int, fairness: int, topology: int = 0, packing: int = 0) -> StageValues:
    return StageValues(work=work, fairness=fairness, topology=topology, packing=packing)


STAGED = StageBounds(
    ("work", "fairness", "packing"),
    proved={"work": 10.0, "fairness": 7.0, "packing": 5.0},
    held={"work": 10, "fairness": 6},
)
"""Work proved ≤ 10 and held at 10; fairness ≤ 7 with work ≥ 10, held at 6; packing ≤ 5 with
work ≥ 10 and fairness ≥ 6."""


def test_a_staged_bound_holds_for_a_plan_as_good_on_the_stages_before() -> None:
    assert STAGED.for_plan(values(10, 6, packing=3)) == {"work": 10, "fairness": 7, "packing": 5}
    assert STAGED.for_plan(values(10, 9, packing=3)) == {"work": 10, "fairness": 7, "packing": 5}


def test_a_staged_bound_stops_at_the_first_stage_the_plan_falls_short_on() -> None:
    """Work 9 < 10: the fairness bound was proved only among plans with work ≥ 10."""
    assert STAGED.for_plan(values(9, 6)) == {"work": 10}
    assert STAGED.for_plan(values(10, 5)) == {"work": 10, "fairness": 7}


def test_a_stage_the_search_did_not_run_has_no_bound() -> None:
    bounds = StageBounds(("work", "fairness"), proved={"work": 4.0}, held={"work": 4})
    assert bounds.for_plan(values(4, 0)) == {"work": 4}


def test_the_weighted_slack_caps_each_stage_in_its_own_units() -> None:
    """Scales 100, 10, 1 (each above the span after it); the sum is proved ≤ 1234 and the plan
    scores 12·100 + 2·10 + 5 = 1225: 9 left. Work can gain ⌈9/100⌉ = 1, fairness ⌈9/10⌉ = 1,
    packing 9."""
    bounds = StageBounds(
        ("work", "fairness", "packing"),
        weighted=1234.0,
        scales={"work": 100, "fairness": 10, "packing": 1},
    )
    assert bounds.for_plan(values(12, 2, packing=5)) == {"work": 13, "fairness": 3, "packing": 14}


def test_a_proved_weighted_optimum_leaves_no_stage_open() -> None:
    bounds = StageBounds(("work", "packing"), weighted=1205, scales={"work": 100, "packing": 1})
    assert bounds.for_plan(values(12, 0, packing=5)) == {"work": 12, "packing": 5}


def test_a_weighted_bound_above_two_to_the_53_is_rounded_up_not_down() -> None:
    """Past 2^53 a double skips integers: the bound read back may sit below the one proved,
    so the stage bound allows one ulp more (and never less than the plan)."""
    score = 2**60 + 1
    bounds = StageBounds(
        ("work", "packing"), weighted=float(score), scales={"work": 2**40, "packing": 1}
    )
    got = bounds.for_plan(values(2**20, 0, packing=1))
    assert got["work"] == 2**20 + 1
    assert 1 < got["packing"] <= 1 + 2**8 + 1


def test_stage_gaps_are_relative_to_each_stage() -> None:
    info = SolverInfo(
        status="FEASIBLE",
        stages={"work": 100.0, "fragmentation": 4.0, "packing": -8.0},
        stage_bounds={"work": 100.0, "fragmentation": 5.0, "packing": -6.0},
    )
    assert info.stage_gaps == {"work": 0.0, "fragmentation": 0.25, "packing": 0.25}


@pytest.mark.parametrize("objective", ["lexicographic", "weighted"])
def test_an_optimal_solve_bounds_every_stage_at_its_value(objective: str) -> None:
    """QUEUES: two 8-CPU nodes take two of the three 8-CPU jobs, nothing better exists; a
    search that proves each stage optimal bounds each at the plan's own value."""
    inst = instance(QUEUES)
    _, plan = cpsat_over_greedy(inst, objective=objective)
    info = plan.solver
    assert info is not None and info.status == "OPTIMAL"
    assert info.stage_bounds["work"] == 16000
    assert set(info.stage_bounds) <= set(info.stages)
    assert info.stage_gaps and set(info.stage_gaps.values()) == {0.0}


def test_the_kept_greedy_plan_carries_the_stage_bounds_it_meets() -> None:
    """One 8-CPU pod, one 8-CPU node: greedy's plan is optimal and kept; every stage the search
    proved applies to it, with no gap."""
    inst = instance(
        """
        nodes: [{name: n1, allocatable: {cpu: "8", memory: 16Gi}}]
        jobs: [{name: j, tasks: [{name: w, replicas: 1, resources: {cpu: "8", memory: 1Gi}}]}]
        """
    )
    plan = solve(inst, options(), greedy(inst))
    info = plan.solver
    assert info is not None and info.greedy_kept
    assert info.stage_bounds["work"] == info.stages["work"] == 8000
    assert set(info.stage_gaps.values()) == {0.0}


def test_no_bound_means_no_stage_bounds() -> None:
    inst = instance(QUEUES)
    _, plan = cpsat_over_greedy(inst, bound=False)
    assert plan.solver is not None and plan.solver.stage_bounds == {}
