"""Ctrl-C and the time allowance in the answers built from proofs.

``explain`` and ``capacity`` read verdicts off searches ("does not fit", a minimal core, the
cheapest change): a search the user stopped has reached none of them, so Ctrl-C must end the
command rather than turn into an answer. A solve's pending reasons come after the search, so a
search the user stopped gets none. ``selector_case``: ``want`` asks for ``pool=b`` and no node
carries it; by hand that selector is the one reason, and the CP-SAT plan names it.
"""

from __future__ import annotations

import dataclasses

import pytest
from explain_cases import selector_case

from optimizer import solve as solving
from optimizer.budget import Budget
from optimizer.explain import explain, plans
from optimizer.options import SolveOptions
from optimizer.reasons import search
from optimizer.reasons.model import ExplainModel
from optimizer.result import Status

OPTIONS = SolveOptions.of(time_limit=10.0, workers=1, deterministic=True)
REASON = "task w's nodeSelector pool=b matches none of the nodes with room"


def test_a_stopped_search_of_the_explain_model_ends_the_question(monkeypatch):
    instance = selector_case()
    plan = solving.solve(instance, "greedy", OPTIONS)
    em = ExplainModel(instance, plan, [instance.job_by_key["default/want"]])
    assert search.where_it_fits(em) is None  # every rule held: the selector keeps it out
    monkeypatch.setattr(ExplainModel, "run", lambda self, solver, callback=None: (0, True))
    with pytest.raises(KeyboardInterrupt):
        search.where_it_fits(em)
    with pytest.raises(KeyboardInterrupt):
        search.blocking_core(em)
    with pytest.raises(KeyboardInterrupt):
        search.correction(em)


def _stopped(real):
    def solve(*args, **kwargs):
        plan = real(*args, **kwargs)
        return plan.replace(solver=dataclasses.replace(plan.solver, status=Status.INTERRUPTED))

    return solve


def test_explain_ends_when_its_plan_search_was_stopped(monkeypatch):
    monkeypatch.setattr(plans, "solve", _stopped(solving.solve))
    with pytest.raises(KeyboardInterrupt):
        explain(selector_case(), "want", "cpsat", options=OPTIONS)


def test_a_stopped_search_gets_no_pending_reasons():
    instance = selector_case()
    plan = solving.solve(instance, "cpsat", OPTIONS)
    assert plan.job("default/want").reason == REASON
    bare = plan.replace(jobs=tuple(dataclasses.replace(d, reason="") for d in plan.jobs))
    named = solving.annotated(instance, bare, Budget(10.0))
    assert named.job("default/want").reason == REASON
    stopped = bare.replace(solver=dataclasses.replace(bare.solver, status=Status.INTERRUPTED))
    assert solving.annotated(instance, stopped, Budget(10.0)).job("default/want").reason == ""


def test_no_pending_reasons_when_the_limit_leaves_only_the_reports_share():
    """What is left of the limit is the report's share (``REPORT_PER_OBJECT`` per node and
    pod): the reasons get none of it."""
    instance = selector_case()
    plan = solving.solve(instance, "cpsat", OPTIONS)
    bare = plan.replace(jobs=tuple(dataclasses.replace(d, reason="") for d in plan.jobs))
    share = solving.REPORT_PER_OBJECT * (len(instance.nodes) + len(instance.pods))
    left = Budget(10.0, clock=lambda: 10.0 - share, started=0.0)
    assert solving.annotated(instance, bare, left).job("default/want").reason == ""
    assert solving.annotated(instance, bare, Budget(10.0)).job("default/want").reason == REASON


def test_reasons_not_wanted_leave_none_and_their_time_goes_to_the_search(monkeypatch):
    """At a 10 s limit with ``want`` pending in greedy's plan the reasons' reserve is a tenth of
    the limit (1 s, under ``REASON_SECONDS``): the engine gets 10 s less the report's share and
    that second, or, when the reasons are not wanted, all but the report's share (and the job
    keeps the engine's short reason, not the dominant one)."""
    instance = selector_case()
    share = solving.REPORT_PER_OBJECT * (len(instance.nodes) + len(instance.pods))
    limits: list[float] = []
    real = solving.solve_cpsat

    def engine(*args, budget, **kwargs):
        limits.append(budget.limit)
        return real(*args, budget=budget, **kwargs)

    monkeypatch.setattr(solving, "solve_cpsat", engine)
    named = solving.solve(instance, "cpsat", OPTIONS)
    bare = solving.solve(instance, "cpsat", OPTIONS, reasons=False)
    assert named.job("default/want").reason == REASON
    assert bare.job("default/want").status == "pending"
    assert bare.job("default/want").reason != REASON
    assert limits == pytest.approx([10.0 - share - 1.0, 10.0 - share])
