"""``vcopt compare``'s per-job differences and its CSV and JSON sections, on the two
hand-written demo plans of ``tests/demo_plans.py`` (expected values are derived there)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from demo_plans import demo_and_plans

from optimizer import compare
from optimizer.plan import Plan, SolverInfo
from optimizer.result import Status


@pytest.fixture(scope="module")
def case():
    return demo_and_plans()


@pytest.fixture(scope="module")
def demo(case):
    return case[0]


@pytest.fixture(scope="module")
def plans(case) -> tuple[Plan, Plan]:
    return case[1], case[2]


def test_job_differences_name_each_changed_aspect(demo, plans) -> None:
    diffs = compare.job_differences(demo, *plans)
    assert [d.job for d in diffs] == ["default/rl-tuning", "default/notebooks"]
    rl, notebooks = ({r.metric: (r.greedy, r.cpsat, r.winner) for r in d.changes()} for d in diffs)
    assert rl == {
        "pods": (2, 1, ""),
        "nodes": (2, 1, ""),
        "lca_tier": (2, None, ""),
        "evictions": (0, 1, "greedy"),
    }
    assert notebooks == {"nodes": (2, 1, ""), "lca_tier": (2, 0, "cpsat")}


def test_identical_plans_have_no_job_differences(demo, plans) -> None:
    greedy, _ = plans
    assert compare.job_differences(demo, greedy, greedy.replace(engine="cpsat")) == []
    text = compare.table(demo, greedy, greedy.replace(engine="cpsat"))
    assert "Every job has the same outcome under both engines." in text


def test_table_lists_the_jobs_that_differ(demo, plans) -> None:
    text = compare.table(demo, *plans)
    assert "Jobs whose outcome differs (greedy → cpsat)" in text
    rl = next(line for line in text.splitlines() if "default/rl-tuning" in line)
    cells = [c.strip() for c in rl.strip("│ ").split("│")]
    # The cpsat plan evicts one of rl-tuning's two pods: one left, below its minAvailable of
    # 2, so its gang no longer holds and it is pending again (Plan.job_statuses).
    assert cells == [
        "default/rl-tuning",
        "team-b",
        "running → pending",
        "2 → 1",
        "2 → 1",
        "2 → -",
        "0 → 1",
    ]


def test_csv_holds_numbers_and_a_job_section(demo, plans) -> None:
    rows = list(csv.reader(io.StringIO(compare.to_csv(demo, *plans))))
    assert rows[0] == ["section", "metric", "job", "greedy", "cpsat", "better"]
    metrics = {r[1]: r for r in rows[1:] if r[0] == "metric"}
    assert metrics["gpu_allocated"][3:] == ["11.5", "7.5", "greedy"]
    assert metrics["evictions"][3:] == ["0", "1", "greedy"]
    assert metrics["gap"][3] == ""
    for row in metrics.values():
        for cell in row[3:5]:
            assert cell == "" or float(cell) == float(cell)
    jobs = [r for r in rows[1:] if r[0] == "job"]
    assert jobs == [
        ["job", "pods", "default/rl-tuning", "2", "1", ""],
        ["job", "nodes", "default/rl-tuning", "2", "1", ""],
        ["job", "lca_tier", "default/rl-tuning", "2", "", ""],
        ["job", "evictions", "default/rl-tuning", "0", "1", "greedy"],
        ["job", "nodes", "default/notebooks", "2", "1", ""],
        ["job", "lca_tier", "default/notebooks", "2", "0", "cpsat"],
    ]


def test_json_has_a_jobs_section_with_both_outcomes(demo, plans) -> None:
    data = json.loads(compare.to_json(demo, *plans))
    assert [j["job"] for j in data["jobs"]] == ["default/rl-tuning", "default/notebooks"]
    notebooks = data["jobs"][1]
    assert notebooks["greedy"] == {
        "status": "admitted",
        "pods": 6,
        "nodes": 2,
        "lca_tier": 2,
        "evictions": 0,
    }
    assert notebooks["cpsat"]["nodes"] == 1 and notebooks["cpsat"]["lca_tier"] == 0
    assert [c["metric"] for c in notebooks["changes"]] == ["nodes", "lca_tier"]
    rows = {r["metric"]: r for r in data["rows"]}
    assert rows["jobs_admitted"]["greedy"] == 1 and isinstance(rows["jobs_admitted"]["greedy"], int)


def test_the_table_says_what_the_objective_ranks(demo, plans) -> None:
    """With stages work, fairness and topology active, each score row names the stage that
    aims at it; jobs admitted (the objective counts work, not jobs) and fragmentation (its
    stage is off) are information only; context rows name none."""
    greedy, cpsat = plans
    cpsat = cpsat.replace(
        solver=SolverInfo(Status.OPTIMAL, stages={"work": 1.0, "fairness": 0.0, "topology": 2.0})
    )
    text = compare.table(demo, greedy, cpsat)
    assert text.startswith("cpsat ranks plans by work > fairness > topology, in that order.\n")
    objective = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 5:
            objective[cells[0]] = cells[4]
    assert objective["jobs_admitted"] == "info"
    assert objective["gpu_allocated"] == "work"
    assert objective["deserved_satisfaction"] == "fairness"
    assert objective["mean_lca_tier"] == "topology"
    assert objective["fragmentation"] == "info"
    assert objective["gpus_partially_used"] == "info"
    assert objective["wall_seconds"] == ""


def test_a_plan_without_solver_stages_has_no_objective_column(demo, plans) -> None:
    text = compare.table(demo, *plans)
    assert "objective" not in text and "ranks plans" not in text
