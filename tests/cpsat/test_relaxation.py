"""The work bound of a decomposed solve (``relaxation.py``): worked out by hand on small
clusters, never below what an exact solve reaches, and reported by the engine."""

from __future__ import annotations

from cpsat_kit import checked, greedy, instance, options, stages

from optimizer.cpsat.compile.data import Compiled, compile_instance
from optimizer.cpsat.engine import solve
from optimizer.cpsat.relaxation import relax
from optimizer.result import Status

ONE_NODE = """\
nodes:
- {name: n0, allocatable: {cpu: "10", memory: 64Gi, pods: "110"}}
"""
"""No GPU in the cluster: a CPU-only pod is worth 1000 × its cores (DESIGN §5), at least 1."""


def work_bound(data: Compiled, seconds: float) -> float | None:
    found = relax(data, seconds)
    return None if found is None else found.bound


def test_the_bound_splits_pods_where_plans_cannot() -> None:
    """Three 4-core pods (gang of one) on a 10-core node: 2.5 of them fit the relaxation
    (2.5 × 4000), two fit any plan (8000)."""
    inst = instance(
        ONE_NODE,
        """
        jobs:
        - {name: a, minAvailable: 1,
           tasks: [{name: w, replicas: 3, resources: {cpu: "4", memory: 1Gi}}]}
        """,
    )
    data = compile_instance(inst)
    found = relax(data, seconds=10)
    assert found is not None
    assert found.bound == 10_000
    assert found.group_pods.tolist() == [2.5]
    assert found.class_worth.tolist() == [10_000]
    assert stages(inst, greedy(inst)).work == 8_000


def test_running_pods_count_as_kept_and_take_their_room() -> None:
    """A running 6-core pod (worth 6000) leaves 4 cores: one 4-core pod more (4000)."""
    inst = instance(
        ONE_NODE,
        """
        jobs:
        - name: busy
          tasks: [{name: w, replicas: 1, resources: {cpu: "6", memory: 1Gi}}]
          running: [{index: 0, node: n0}]
        - {name: a, tasks: [{name: w, replicas: 3, resources: {cpu: "4", memory: 1Gi}}]}
        """,
    )
    assert work_bound(compile_instance(inst), seconds=10) == 10_000


def test_priority_weights_the_pods_the_room_goes_to() -> None:
    """Priorities 10 and 1000 rank 0 and 1: weights 1 and 2. The relaxation fills the node
    with the high-priority 4-core pods (2.5 × 4000 × 2 = 20000), not the 2-core ones."""
    inst = instance(
        ONE_NODE,
        """
        priorityClasses: [{name: hi, value: 1000}, {name: lo, value: 10}]
        jobs:
        - {name: high, priorityClassName: hi,
           tasks: [{name: w, replicas: 3, resources: {cpu: "4", memory: 1Gi}}]}
        - {name: low, priorityClassName: lo,
           tasks: [{name: w, replicas: 5, resources: {cpu: "2", memory: 1Gi}}]}
        """,
    )
    assert work_bound(compile_instance(inst), seconds=10) == 20_000


def test_a_queue_quota_caps_its_pods() -> None:
    """Queue q1 may hold 4 cores in all: one 4-core pod of its job, whatever the nodes have."""
    inst = instance(
        """
        scheduler:
          actions: "enqueue, allocate"
          tiers:
          - plugins: [{name: priority}, {name: gang}]
          - plugins: [{name: predicates}, {name: capacity}]
        nodes:
        - {name: n0, allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
        queues:
        - {name: q1, capability: {cpu: "4"}}
        jobs:
        - {name: a, queue: q1, tasks: [{name: w, replicas: 3, resources: {cpu: "4", memory: 1Gi}}]}
        """,
    )
    data = compile_instance(inst)
    assert data.queue_limits.get("q1", {}).get("cpu") == 4000, "the fixture's quota changed"
    assert work_bound(data, seconds=10) == 4_000


def test_no_time_no_bound() -> None:
    inst = instance(
        ONE_NODE,
        """
        jobs:
        - {name: a, tasks: [{name: w, replicas: 1, resources: {cpu: "4", memory: 1Gi}}]}
        """,
    )
    assert work_bound(compile_instance(inst), seconds=0) is None


def test_a_decomposed_solve_reports_the_bound_and_it_holds_for_the_exact_optimum() -> None:
    """Racks of mixed jobs: the rounds' plan, the exact optimum (one model, no aggregation) and
    greedy's all lie at or below the reported work bound."""
    from test_decompose import racks

    inst = instance(racks(3))
    floor = checked(inst, greedy(inst))
    rounds = checked(
        inst, solve(inst, options(strategy="decompose", deterministic=True, time_limit=8), floor)
    )
    exact = checked(
        inst,
        solve(inst, options(strategy="monolithic", aggregate=False, time_limit=20), floor),
    )
    assert exact.solver is not None and exact.solver.status == Status.OPTIMAL
    info = rounds.solver
    assert info is not None
    bound = info.stage_bounds.get("work")
    assert bound is not None, info.message
    for plan in (floor, rounds, exact):
        assert stages(inst, plan).work <= bound
