"""Queue positions: the order Volcano's allocate pops each queue's pending jobs (priority
plugin first, then creation order), in plans of both engines and in ``vcopt show``."""

from __future__ import annotations

import pytest
from explain_cases import CAPACITY, TWO_NODES, build, running

from optimizer.explain import queue_positions
from optimizer.options import SolveOptions
from optimizer.plan import read_plan
from optimizer.show import render
from optimizer.solve import solve

BODY = """\
queues:
- {name: root}
- {name: q1, parent: root}
- {name: q2, parent: root}
jobs:
- {name: low, queue: q1, priority: 1, tasks: [{name: w, replicas: 1, resources: {cpu: "200"}}]}
- {name: high, queue: q1, priority: 10, tasks: [{name: w, replicas: 1, resources: {cpu: "200"}}]}
- {name: mid, queue: q1, priority: 5, tasks: [{name: w, replicas: 1, resources: {cpu: "200"}}]}
- {name: first, queue: q1, priority: 5, tasks: [{name: w, replicas: 1, resources: {cpu: "200"}}]}
- {name: alone, queue: q2, tasks: [{name: w, replicas: 1, resources: {cpu: "200"}}]}
"""


def _instance():
    return build(CAPACITY, TWO_NODES, BODY, running("a", "gpu-a-001", 1, queue="q2"))


def test_positions_follow_priority_then_creation_order_per_queue():
    """high (10) first; mid and first tie on priority 5 and mid was created first."""
    positions = queue_positions(_instance())
    assert positions == {
        "default/high": 1,
        "default/mid": 2,
        "default/first": 3,
        "default/low": 4,
        "default/alone": 1,
    }


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_plans_carry_positions_and_keep_them_through_a_file(engine, tmp_path):
    instance = _instance()
    plan = solve(instance, engine, SolveOptions.of(time_limit=5, workers=1))
    assert plan.job("default/mid").position == 2
    assert plan.job("default/a").position is None
    path = tmp_path / "plan.yaml"
    path.write_text(plan.to_yaml())
    assert read_plan(str(path), instance).job("default/mid").position == 2
    assert "queuePosition: 2" in plan.to_yaml()


def test_show_prints_each_pending_jobs_position():
    import re

    lines = render(_instance()).splitlines()
    header = next(row for row in lines if row.startswith("JOB "))
    cells = {}
    for row in lines[lines.index(header) + 1 :]:
        parts = re.split(r"\s{3,}", row)
        cells[parts[0]] = dict(zip(re.split(r"\s{3,}", header), parts, strict=False))
    assert cells["default/mid"]["POSITION"] == "2"
    assert cells["default/high"]["POSITION"] == "1"
    assert cells["default/a"]["POSITION"] == "-"
