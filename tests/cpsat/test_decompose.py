"""Decomposition: parts that never split a node class, rounds of adaptive size in seeded
passes aimed by the linear relaxation, rounds whose every intermediate plan is complete and
verified, and a hybrid run never worse than one model."""

from __future__ import annotations

import numpy as np
import pytest
from cpsat_kit import checked, greedy, instance, options, stages

from models.instance import Instance
from optimizer.budget import Budget
from optimizer.cpsat import decompose, round_runner
from optimizer.cpsat.compile.data import compile_instance
from optimizer.cpsat.engine import solve
from optimizer.cpsat.model.objective import evaluate
from optimizer.cpsat.relaxation import Relaxation
from optimizer.plan import Plan
from optimizer.progress import Progress
from optimizer.result import Status
from optimizer.verify import format_violations, verify


def racks(count: int, nodes: int = 2) -> str:
    """``count`` racks of ``nodes`` 16-CPU nodes under one spine, the first node of each rack
    half busy, and jobs that compete for them: a hard one-rack gang per rack and small jobs."""
    groups, hyper, jobs = [], [], []
    for r in range(count):
        groups.append(
            f"- {{namePrefix: r{r}-, count: {nodes}, labels: {{rack: r{r}}}, "
            f'allocatable: {{cpu: "16", memory: 64Gi}}}}'
        )
        hyper.append(
            f"- {{name: rack-{r}, tier: 1, members: [{{type: Node, selector: "
            f"{{labelMatch: {{matchLabels: {{rack: r{r}}}}}}}}}]}}"
        )
        jobs.append(
            f"- name: busy{r}\n"
            f'  tasks: [{{name: w, replicas: 1, resources: {{cpu: "{4 + 2 * (r % 3)}", '
            f"memory: 1Gi}}}}]\n"
            f"  running: [{{index: 0, node: r{r}-000}}]"
        )
        jobs.append(
            f"- name: gang{r}\n  minAvailable: 2\n"
            f"  networkTopology: {{mode: hard, highestTierAllowed: 1}}\n"
            f'  tasks: [{{name: w, replicas: 2, resources: {{cpu: "{6 + 2 * (r % 2)}", '
            f"memory: 1Gi}}}}]"
        )
        jobs.append(
            f"- {{name: small{r}, tasks: [{{name: w, replicas: 3, "
            f'resources: {{cpu: "{3 + r % 3}", memory: 1Gi}}}}]}}'
        )
    spine = (
        "- {name: spine, tier: 2, members: ["
        + ", ".join(
            f"{{type: HyperNode, selector: {{exactMatch: {{name: rack-{r}}}}}}}"
            for r in range(count)
        )
        + "]}"
    )
    return (
        "scheduler:\n"
        '  actions: "enqueue, allocate"\n'
        "  tiers:\n"
        "  - plugins: [{name: priority}, {name: gang}]\n"
        "  - plugins: [{name: predicates}, {name: binpack}, {name: network-topology-aware}]\n"
        "nodeGroups:\n" + "\n".join(groups) + "\n"
        "hypernodes:\n" + "\n".join([*hyper, spine]) + "\n"
        "jobs:\n" + "\n".join(jobs) + "\n"
    )


def test_parts_never_split_a_class_and_cover_every_class_once() -> None:
    data = compile_instance(instance(racks(4)))
    parts = decompose.parts_of(data)
    flat = sorted(c for part in parts for c in part)
    assert flat == sorted(c.index for c in data.classes)
    for part in parts:
        assert len({data.classes[c].path[0] for c in part}) == 1, "a part spans two racks"


def test_rounds_take_parts_in_topology_order_then_in_seeded_passes() -> None:
    """One part a round at first: the first pass in topology order, each later pass a
    permutation of all parts; the same seed repeats the rounds."""
    inst = instance(racks(2))
    data = compile_instance(inst)
    parts = [[0], [1, 2], [3], [4], [5, 6]]

    def rounds(seed: int) -> list[list[int]]:
        state = decompose._Rounds(data, greedy(inst), parts, seed)
        return [state.classes() for _ in range(4 * len(parts))]

    first = rounds(seed=3)
    assert first == rounds(seed=3)
    assert first[: len(parts)] == parts
    passes = [first[i : i + len(parts)] for i in range(0, len(first), len(parts))]
    for one in passes:
        assert sorted(one) == sorted(parts)
    assert any(one != parts for one in passes[1:]), "every pass in topology order"


def test_round_size_grows_on_exhausted_neighbourhoods_and_shrinks_on_timeouts() -> None:
    """A round whose search proved there is nothing better doubles the parts of the next; one
    that ran out of time without a gain halves them; a gain keeps them (between 1 and all)."""
    inst = instance(racks(2))
    state = decompose._Rounds(compile_instance(inst), greedy(inst), [[0], [1], [2], [3], [4]], 1)
    sizes = []
    for improved, exhausted in [
        (False, True),
        (False, True),
        (True, True),
        (False, True),
        (False, True),
        (False, False),
        (False, False),
        (False, False),
        (False, False),
    ]:
        state.adapt(improved, exhausted)
        sizes.append(state.size)
        assert len(state.classes()) == state.size  # one class per part here
    assert sizes == [2, 4, 4, 5, 5, 2, 1, 1, 1]


def test_every_round_plan_is_complete_and_verified(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each merge of a round's answer into the plan so far gives a plan the verifier accepts
    (anytime: the rounds can be stopped after any of them)."""
    inst = instance(racks(4))
    merged: list[Plan] = []
    original = decompose.merge

    def spy(*args: object) -> Plan:
        plan = original(*args)  # type: ignore[arg-type]
        merged.append(plan)
        return plan

    monkeypatch.setattr(decompose, "merge", spy)
    floor = checked(inst, greedy(inst))
    plan = solve(inst, options(strategy="decompose", time_limit=8, deterministic=True), floor)
    assert merged, "no round ran"
    for step in merged:
        violations = verify(inst, step)
        assert not violations, format_violations(violations)
    checked(inst, plan)
    assert stages(inst, plan).as_tuple() >= stages(inst, floor).as_tuple()


def test_hybrid_is_never_worse_than_one_model() -> None:
    """Where the single model proves its optimum, the auto strategy (one model, then rounds)
    reaches the same stage tuple."""
    inst = instance(racks(3))
    floor = checked(inst, greedy(inst))
    one = solve(inst, options(strategy="monolithic", deterministic=True, time_limit=20), floor)
    both = solve(inst, options(strategy="auto", deterministic=True, time_limit=20), floor)
    assert one.solver is not None and one.solver.status == Status.OPTIMAL
    checked(inst, one)
    checked(inst, both)
    assert stages(inst, both).as_tuple() >= stages(inst, one).as_tuple()


def test_a_relaxation_puts_the_parts_with_the_most_to_gain_first() -> None:
    """The first pass follows the linear optimum's pending work per part less what the plan
    places there; parts that gain the same keep their topology order."""
    inst = instance(racks(2))
    data = compile_instance(inst)
    parts = [[c] for c in range(len(data.classes))]
    assert len(parts) >= 3
    empty = Plan(instance=inst.name, engine="empty")
    worth = np.zeros(len(data.classes))
    worth[2], worth[1] = 500.0, 100.0
    relaxation = Relaxation(0.0, worth, np.zeros(len(data.groups)))
    state = decompose._Rounds(data, empty, parts, 1, relaxation)
    order = [state.classes()[0] for _ in parts]
    assert order[:2] == [2, 1]
    assert order[2:] == [c for c in range(len(parts)) if c not in (1, 2)]


def test_hybrid_turns_to_rounds_when_the_one_model_finds_no_plan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When the one model's share ends without a CP-SAT solution (a short limit on a large
    snapshot), the rest of the budget goes to rounds from the floor, not to the floor alone."""
    from optimizer.cpsat import engine

    def nothing(self: object, share: float = 1.0) -> None:
        raise engine._NoPlan(Status.UNKNOWN, "no CP-SAT solution")

    monkeypatch.setattr(engine._Solve, "monolithic", nothing)
    inst = instance(racks(4))
    floor = checked(inst, greedy(inst))
    plan = checked(
        inst, solve(inst, options(strategy="auto", deterministic=True, time_limit=8), floor)
    )
    assert plan.solver is not None
    assert "one model: no CP-SAT solution" in plan.solver.message
    assert "decomposed into" in plan.solver.message
    assert stages(inst, plan).as_tuple() >= stages(inst, floor).as_tuple()


@pytest.mark.parametrize("status", [Status.INTERRUPTED, Status.TIME_UP])
def test_hybrid_runs_no_rounds_after_a_stop_or_when_the_time_is_gone(
    monkeypatch: pytest.MonkeyPatch, status: Status
) -> None:
    """A Ctrl-C before the one model found a plan, or a budget already spent, ends the solve
    with the floor: the rounds must not take the rest of the limit."""
    from optimizer.cpsat import engine

    def stopped(self: object, share: float = 1.0) -> None:
        raise engine._NoPlan(status, "stopped")

    def no_rounds(*args: object, **kwargs: object) -> None:
        raise AssertionError("rounds ran")

    monkeypatch.setattr(engine._Solve, "monolithic", stopped)
    monkeypatch.setattr(engine, "improve", no_rounds)
    inst = instance(racks(2))
    floor = checked(inst, greedy(inst))
    plan = solve(inst, options(strategy="auto", time_limit=8), floor)
    assert plan.solver is not None
    assert plan.solver.status == status
    assert plan.placements == floor.placements


def _rounds_plan(inst: Instance, runner: decompose.Runner) -> decompose.Outcome:
    """Six batches of rounds from greedy's plan, deterministic search, the given runner."""
    full = compile_instance(inst)
    start = checked(inst, greedy(inst))
    opts = options(strategy="decompose", deterministic=True, workers=1)
    baseline = evaluate(full, start)
    return decompose.improve(
        inst,
        opts,
        start,
        full,
        lambda v: v.as_tuple(),
        Budget(120.0),
        0.0,
        Progress(),
        baseline,
        runner=runner,
        max_batches=6,
    )


def test_rounds_on_dask_give_the_in_process_plan() -> None:
    """Two rounds side by side on a two-worker Dask cluster give the plan the in-process runner
    gives with batches of two: the same rounds, the same answers, merged in the same order; and
    every batch merged after its first answer still verifies."""
    from distributed import LocalCluster

    inst = instance(racks(4))
    here = _rounds_plan(inst, round_runner.InProcess(inst, width=2))
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as cluster:
        remote = round_runner.OnDask(inst, cluster.scheduler_address)
        try:
            assert remote.width == 2
            there = _rounds_plan(inst, remote)
        finally:
            remote.close()
    assert here.rounds == there.rounds >= 2
    assert set(here.plan.placements) == set(there.plan.placements)
    assert here.values == there.values
    checked(inst, there.plan)


def test_a_batch_frees_each_job_once_on_disjoint_parts() -> None:
    """The views of one batch open disjoint nodes and share no free job; a batch wider than
    the parts stops before it would open a part twice."""
    inst = instance(racks(4))
    data = compile_instance(inst)
    parts = decompose.parts_of(data)
    state = decompose._Rounds(data, greedy(inst), parts, 0)
    views = state.batch(len(parts) + 3)
    assert 1 <= len(views) <= len(parts)
    for i, a in enumerate(views):
        for b in views[i + 1 :]:
            assert not a.open_nodes & b.open_nodes
            assert not a.free_jobs & b.free_jobs
