"""``capacity``: the fewest nodes of one shape that let every pending job of a queue start.

nodes_case: four 8-GPU nodes, each held by a non-preemptable pod; ``want`` needs two pods of
8 GPUs. By hand: two more nodes like gpu-a-001 admit it, one more does not (one pod per
node). The test solves both variants itself rather than trusting capacity's own check.
"""

from __future__ import annotations

import pytest
from explain_cases import CAPACITY, QUEUES, TWO_NODES, build, nodes_case, queue_case, running, want

from models.errors import InputError
from optimizer.explain import capacity
from optimizer.explain.capacity import all_admitted
from optimizer.options import SolveOptions
from optimizer.solve import solve
from optimizer.verify import verify

OPTIONS = SolveOptions(time_limit=10.0, workers=1, quiet=True, deterministic=True)


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_capacity_admits_with_its_count_and_not_with_one_fewer(engine):
    instance = nodes_case()
    found = capacity(instance, like="gpu-a-001", engine=engine, options=OPTIONS)
    assert found.jobs == ["default/want"]
    assert found.count == 2
    assert found.added == {("gpu-a-001", "rack-1"): 2}
    enough = found.variant()(instance)
    plan = solve(enough, engine, OPTIONS)
    assert verify(enough, plan) == []
    assert all_admitted(plan, found.jobs)
    short = found.variant(1)(instance)
    assert not all_admitted(solve(short, engine, OPTIONS), found.jobs)
    assert found.admits is True
    assert found.one_fewer_admits is False


def test_two_pending_jobs_of_one_queue_need_the_sum_of_their_nodes():
    """A second job of 3 × 8 GPUs in the same queue: 2 + 3 = 5 nodes, one pod per node."""
    instance = build(
        CAPACITY,
        TWO_NODES,
        "jobs:\n",
        running("a", "gpu-a-001", 8),
        running("b", "gpu-a-002", 8),
        want(8, 2),
        want(8, 3).replace("name: want", "name: other"),
    )
    found = capacity(instance, engine="greedy", options=OPTIONS, check=False)
    assert sorted(found.jobs) == ["default/other", "default/want"]
    assert found.count == 5


def test_a_queue_limit_no_node_can_lift_is_named():
    """queue_case: research may hold 8 GPUs and already holds 4; want asks 8. More nodes do
    not raise the limit."""
    found = capacity(queue_case(), queue="research", engine="greedy", options=OPTIONS)
    assert not found.possible
    assert "queue research" in found.reason


def test_a_queue_without_pending_jobs_needs_nothing():
    instance = build(
        CAPACITY, TWO_NODES, QUEUES, "jobs:\n", running("a", "gpu-a-001", 4, queue="research")
    )
    found = capacity(instance, queue="research", engine="greedy", options=OPTIONS)
    assert found.jobs == [] and found.count == 0


def test_unknown_queue_or_node_is_bad_input():
    with pytest.raises(InputError, match="no such queue"):
        capacity(nodes_case(), queue="nope", engine="greedy", options=OPTIONS)
    with pytest.raises(InputError, match="no such node"):
        capacity(nodes_case(), like="nope", engine="greedy", options=OPTIONS)


def test_many_small_jobs_count_one_node_each_when_one_pod_fills_a_node():
    """Six pending one-pod jobs of 8 GPUs on a full cluster: six nodes, one per job."""
    jobs = "".join(want(8).replace("name: want", f"name: want-{i}") for i in range(6))
    instance = build(
        CAPACITY,
        TWO_NODES,
        "jobs:\n",
        running("a", "gpu-a-001", 8),
        running("b", "gpu-a-002", 8),
        jobs,
    )
    found = capacity(instance, engine="greedy", options=OPTIONS, check=False)
    assert len(found.jobs) == 6
    assert found.count == 6
