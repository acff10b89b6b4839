"""``capacity``: the fewest nodes of one shape that let the pending jobs of a queue start,
the jobs no number of nodes admits set aside with their reason.

nodes_case: four 8-GPU nodes, each held by a non-preemptable pod; ``want`` needs two pods of
8 GPUs. By hand: two more nodes like gpu-a-001 admit it, one more does not (one pod per
node). The test solves both variants itself rather than trusting capacity's own check.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from explain_cases import CAPACITY, QUEUES, TWO_NODES, build, nodes_case, queue_case, running, want

from models.errors import InputError
from models.load import load
from optimizer import whatif
from optimizer.explain import capacity
from optimizer.explain.capacity import all_admitted
from optimizer.options import SolveOptions
from optimizer.plan import ADMITTED, PENDING
from optimizer.solve import solve
from optimizer.verify import verify

ROOT = Path(__file__).resolve().parents[2]
capacity_module = importlib.import_module("optimizer.explain.capacity")
"""The module, which the package's ``capacity`` function hides."""

OPTIONS = SolveOptions.of(time_limit=10.0, workers=1, deterministic=True)


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


def test_a_queue_limit_no_node_can_lift_sets_the_job_aside():
    """queue_case: research may hold 8 GPUs (its own capability: no node raises it) and
    already holds 4; want asks 8. Set aside with that reason; nothing else is pending, so
    nothing is to add."""
    found = capacity(queue_case(), queue="research", engine="greedy", options=OPTIONS)
    assert list(found.unadmittable) == ["default/want"]
    assert (
        "queue research already holds 4 of its 8 nvidia.com/gpu"
        in (found.unadmittable["default/want"])
    )
    assert found.admissible == []
    assert found.possible and found.count == 0 and found.added == {}
    text = found.to_text()
    assert "Fewest nodes to add: 0" in text
    assert "Set aside (no number of such nodes admits them):\n  - default/want — queue" in text


def _mixed() -> object:
    """Both nodes held whole by a and b (queue default). want (default, one pod of 8 GPUs)
    needs one more node: default sets no capability, so its realCapability is the cluster's
    16 GPUs (a and b hold them all) and rises by 8 with each node: a limit nodes lift, not a
    reason to set want aside. big (research, 2 pods of 8, minAvailable 2) asks 16 of
    research's capability of 8: no number of nodes lifts that."""
    big = want(8, 2, queue="research").replace("name: want", "name: big")
    return build(
        CAPACITY,
        TWO_NODES,
        QUEUES,
        "jobs:\n",
        running("a", "gpu-a-001", 8),
        running("b", "gpu-a-002", 8),
        want(8),
        big,
    )


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_a_blocked_job_is_set_aside_and_the_rest_counted(engine):
    instance = _mixed()
    found = capacity(instance, like="gpu-a-001", engine=engine, options=OPTIONS)
    assert sorted(found.jobs) == ["default/big", "default/want"]
    assert list(found.unadmittable) == ["default/big"]
    assert found.unadmittable["default/big"] == (
        "queue research already holds 0 of its 8 nvidia.com/gpu (realCapability), and the "
        "job asks for 16 more"
    )
    assert found.admissible == ["default/want"]
    assert found.possible and found.count == 1
    assert found.added == {("gpu-a-001", None): 1}
    assert found.admits is True and found.one_fewer_admits is False
    assert found.to_text().splitlines()[1:4] == [
        "Fewest nodes like gpu-a-001 to add: 1 (checked: 1 admits default/want, 0 do not)",
        "  - 1 like gpu-a-001",
        "Set aside (no number of such nodes admits them):",
    ]
    enough = found.variant()(instance)
    plan = solve(enough, engine, OPTIONS)
    assert all_admitted(plan, ["default/want"])
    assert not all_admitted(plan, ["default/big"])
    doc = found.to_dict()
    assert doc["possible"] is True and doc["nodes"] == 1
    assert doc["unadmittable"] == found.unadmittable


def test_a_job_the_jobs_ahead_leave_no_quota_for_is_set_aside_behind_them():
    """Both nodes held whole (queue default); first and second (research, one pod of 8 GPUs
    each, first listed first, so tried first) each fit research's capability of 8 alone, not
    together: second is set aside behind first, and first needs one node."""
    second = want(8, queue="research").replace("name: want", "name: second")
    instance = build(
        CAPACITY,
        TWO_NODES,
        QUEUES,
        "jobs:\n",
        running("a", "gpu-a-001", 8),
        running("b", "gpu-a-002", 8),
        want(8, queue="research").replace("name: want", "name: first"),
        second,
    )
    found = capacity(instance, like="gpu-a-001", engine="greedy", options=OPTIONS)
    assert found.jobs == ["default/first", "default/second"]
    assert list(found.unadmittable) == ["default/second"]
    assert found.unadmittable["default/second"].startswith(
        "behind default/first, which Volcano tries first: queue research already holds 0 of "
        "its 8 nvidia.com/gpu"
    )
    assert found.count == 1 and found.admits is True and found.one_fewer_admits is False


def _engine_admitting_from(instance, added: int):
    """A stand-in for the engine's plan: want is admitted once ``added`` nodes joined
    ``instance``, as an engine that gives new room to other jobs first would."""
    base = len(instance.nodes)

    def plan_of(grown, engine, options):
        status = ADMITTED if len(grown.nodes) >= base + added else PENDING
        return SimpleNamespace(jobs=[SimpleNamespace(job="default/want", status=status)])

    return plan_of


@pytest.mark.parametrize(
    ("from_", "count", "tried"),
    [
        # The model counts 2; 2 fail, then doubling steps 3 (fails), 5 (admits), halving back
        # to 4 (fails): 5, and 4 does not.
        (5, 5, {2, 3, 4, 5}),
        # 2 admit, and so does 1; 0 is the plan itself, where want is pending: 1.
        (1, 1, {1, 2}),
    ],
)
def test_the_count_is_what_the_engine_confirms(monkeypatch, from_, count, tried):
    instance = nodes_case()
    plan = solve(instance, "greedy", OPTIONS)
    fake = _engine_admitting_from(instance, from_)
    seen: list[int] = []

    def counted(grown, engine, options):
        seen.append(len(grown.nodes) - len(instance.nodes))
        return fake(grown, engine, options)

    monkeypatch.setattr(capacity_module, "plan_of", counted)
    found = capacity(instance, like="gpu-a-001", engine="greedy", plan=plan, options=OPTIONS)
    assert found.count == count
    assert found.added == {("gpu-a-001", "rack-1"): count}
    assert found.admits is True and found.one_fewer_admits is False
    assert set(seen) == tried
    fewer = "does" if count - 1 == 1 else "do"
    assert f"to add: {count} (checked: {count} " in found.to_text()
    assert f", {count - 1} {fewer} not)" in found.to_text()


def test_no_count_when_the_engine_never_admits_them(monkeypatch):
    """The model counts 2 and the engine leaves want pending however many nodes come: the
    count grows by doubling steps, 3, 5, 9, 17, 33, up to 2 + 32 (at least 32, or one node
    per pod still to place): no count, never one that its own check contradicts, and the
    reason names the job left pending with the most nodes tried."""
    instance = nodes_case()
    plan = solve(instance, "greedy", OPTIONS)
    monkeypatch.setattr(capacity_module, "plan_of", _engine_admitting_from(instance, 10**6))
    found = capacity(instance, like="gpu-a-001", engine="greedy", plan=plan, options=OPTIONS)
    assert not found.possible and found.count is None and found.added == {}
    assert found.to_dict()["nodes"] is None
    assert found.reason.startswith(
        "solving again with 33 such nodes added, the greedy plan still leaves default/want pending"
    )
    assert found.to_text().splitlines()[1] == (
        "No number of nodes like gpu-a-001 admits all 1 admissible job(s):"
    )


def test_the_readme_example_holds():
    """README: capacity instances/demo.yaml --queue team-a --node-like node-001. By hand from
    the cpsat plan: llm-pretrain (2 × 8 GPUs, hard tier ≤ 1) finds one free node per rack
    (node-002 beside node-001's 4 free GPUs in rack-1): one more node in rack-1 admits it.
    big-train's 32 GPUs would take research past its capability of 56 once llm-pretrain holds
    16 beside the 24 team-b's jobs hold: set aside behind llm-pretrain."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(
        r"```\n\$ vcopt capacity instances/demo.yaml --queue team-a --node-like node-001\n"
        r"(.*?)```",
        readme,
        re.S,
    )
    assert block is not None
    demo = load(ROOT / "instances" / "demo.yaml")
    found = capacity(demo, queue="team-a", like="node-001", engine="cpsat", options=OPTIONS)
    printed = block.group(1).splitlines()
    assert found.to_text().splitlines()[:4] == printed[:4]
    assert printed[4].startswith("  - default/big-train — behind default/llm-pretrain")
    assert found.unadmittable["default/big-train"].startswith(
        "behind default/llm-pretrain, which Volcano tries first: queue research"
    )
    one_more = whatif.with_nodes_like(demo, "node-001", 1, "rack-1")
    assert all_admitted(solve(one_more, "cpsat", OPTIONS), ["default/llm-pretrain"])
    assert not all_admitted(solve(demo, "cpsat", OPTIONS), ["default/llm-pretrain"])


def test_the_count_grows_and_shrinks_on_its_largest_group():
    """rack-1 holds 2, rack-2 1. To 5: rack-1 takes both (+2). To 1: rack-1 gives one (2 →
    1), then the tie goes by name, rack-1 again: only rack-2's remains."""
    added = {("n", "rack-1"): 2, ("n", "rack-2"): 1}
    assert capacity_module._resized(added, 5, None) == {("n", "rack-1"): 4, ("n", "rack-2"): 1}
    assert capacity_module._resized(added, 1, None) == {("n", "rack-2"): 1}
    assert capacity_module._resized({}, 2, ("n", "rack-3")) == {("n", "rack-3"): 2}


def test_a_queue_without_pending_jobs_needs_nothing():
    instance = build(
        CAPACITY, TWO_NODES, QUEUES, "jobs:\n", running("a", "gpu-a-001", 4, queue="research")
    )
    found = capacity(instance, queue="research", engine="greedy", options=OPTIONS)
    assert found.jobs == [] and found.count == 0
    assert found.to_text() == "No pending jobs in queue research: no nodes to add.\n"


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


def test_a_stopped_search_of_the_count_ends_the_question(monkeypatch):
    """The count is read off a search: one the user stopped has proven nothing, so Ctrl-C
    ends the command instead of turning into a count or a job set aside."""
    instance = nodes_case()
    plan = solve(instance, "greedy", OPTIONS)
    monkeypatch.setattr(
        capacity_module.ExplainModel, "run", lambda self, solver, callback=None: (0, True)
    )
    with pytest.raises(KeyboardInterrupt):
        capacity(instance, like="gpu-a-001", engine="greedy", plan=plan, options=OPTIONS)
