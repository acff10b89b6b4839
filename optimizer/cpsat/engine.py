"""The CP-SAT engine end to end: compile, hint with greedy, search, expand, verify — within
the user's wall clock — and never return anything worse than the greedy plan.

The greedy plan is both the complete hint of the first search and the floor of the result: if
CP-SAT finds nothing better on the objective in time (or stops in presolve with nothing,
cpsat-practice B.6), the greedy plan is returned with the solver's status and the reason, so
``vcopt solve`` never answers worse than Volcano would.

When the expansion cannot pack a class's counts into its nodes, those nodes get classes of
their own and the search runs again from the best plan so far, while the budget allows; the
jobs that did not pack are left pending in the meantime, so every plan on the way is complete
and feasible.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from models.instance import Instance

from ..budget import Budget, TimeUp
from ..options import SolveOptions
from ..plan import Plan, SolverInfo
from ..progress import Progress
from ..result import Status
from ..verify import verify
from .expand import Expansion, expand
from .extract import plan_from
from .model import CpsatModel, SearchResult
from .objective import StageValues, evaluate

TAIL_SECONDS = 0.3
TAIL_PER_OBJECT = 2e-4
"""Estimated seconds to expand, verify and measure a plan, per node and pod of the instance,
before anything was measured on this machine."""
TAIL_PER_COMPILE = 0.5
"""The same phases measured against compiling the model (all are Python passes over the
nodes and pods; on generated L clusters they took 0.35 × the compile time): once the compile
has been timed on this machine, under its current load, the estimate follows it."""
REFINE_SHARE = 0.25
"""Another search after a failed expansion is tried only while this share of the limit is
left (a search needs time to improve on what it has)."""


def tail_seconds(instance: Instance) -> float:
    return TAIL_SECONDS + TAIL_PER_OBJECT * (len(instance.nodes) + len(instance.pods))


@dataclass
class _Best:
    plan: Plan
    values: StageValues
    model: CpsatModel
    search: SearchResult
    expansion: Expansion


def solve(
    instance: Instance,
    options: SolveOptions,
    greedy: Plan,
    *,
    budget: Budget | None = None,
    progress: Progress | None = None,
) -> Plan:
    """The CP-SAT plan for ``instance``; never worse than ``greedy`` on the objective."""
    budget = budget or Budget(options.time_limit)
    progress = progress or Progress(options.time_limit)
    tail = tail_seconds(instance)
    split: frozenset[int] = frozenset()
    # Volcano evicts only to pipeline the beneficiaries (nothing binds on the released room in
    # the same cycle), so greedy's placements stand without its evictions: that plan is a
    # hint every eviction rule of the model accepts.
    floor = greedy.replace(evictions=())
    best: _Best | None = None
    rounds = 0
    while True:
        progress.phase("compile")
        compiling = budget.elapsed()
        try:
            model = CpsatModel(instance, options, split, partial(budget.check, tail))
        except TimeUp:
            if best is not None:
                break
            return _time_up_plan(greedy, options, budget)
        tail = max(tail, TAIL_PER_COMPILE * (budget.elapsed() - compiling))
        greedy_values = evaluate(model.data, greedy)
        hinting = budget.elapsed()
        start = model.hint_plan(floor)
        overhead = budget.elapsed() - hinting
        seconds = budget.search_seconds(tail)
        if seconds <= 0:
            if best is not None:
                break
            return _fallback(model, greedy, greedy_values, Status.TIME_UP, _time_up(budget), budget)
        baselines = dict(
            zip(model.active, map(float, greedy_values.as_tuple(model.active)), strict=True)
        )
        result = model.search(start, seconds, progress, baselines, overhead)
        rounds += 1
        if result.values is None:
            if best is not None:
                break
            status = (
                result.statuses.get(model.objectives()[0][0], Status.UNKNOWN)
                if model.objectives()
                else Status.UNKNOWN
            )
            if result.interrupted:
                status = Status.INTERRUPTED
            reason = "no CP-SAT solution" if model.objectives() else "every objective stage is off"
            return _fallback(model, greedy, greedy_values, status, reason, budget)
        progress.phase("expand")
        expansion = expand(model.vars, result.values)
        plan = plan_from(model.vars, result.values, expansion, instance, options.seed)
        values = evaluate(model.data, plan)
        if best is None or model.score(values) > model.score(best.values):
            best = _Best(plan, values, model, result, expansion)
        if not expansion.failed_classes or result.interrupted:
            break
        if budget.remaining() < REFINE_SHARE * budget.limit + tail:
            break
        cls = model.data.classes
        split = split | {n for c in expansion.failed_classes for n in cls[c].nodes}
        floor = best.plan
    return _finish(best, greedy, budget, progress, rounds)


def _time_up_plan(greedy: Plan, options: SolveOptions, budget: Budget) -> Plan:
    """The greedy plan, when the budget ran out while the model was being built."""
    info = SolverInfo(
        status=Status.TIME_UP,
        wall_seconds=round(budget.elapsed(), 3),
        workers=options.workers,
        fallback=_time_up(budget),
        message=_time_up(budget),
    )
    return greedy.replace(engine="cpsat", solver=info)


def _time_up(budget: Budget) -> str:
    return (
        f"the time limit ({budget.limit:g}s) was spent before CP-SAT could start "
        f"({budget.elapsed():.1f}s elapsed)"
    )


def _finish(best: _Best, greedy: Plan, budget: Budget, progress: Progress, rounds: int) -> Plan:
    model, result = best.model, best.search
    instance = model.instance
    progress.phase("verify")
    violations = verify(instance, best.plan)
    greedy_values = evaluate(model.data, greedy)
    if violations:
        first = violations[0]
        reason = (
            f"CP-SAT plan breaks {first.rule} ({len(violations)} violation(s)): {first.message}"
        )
        return _fallback(model, greedy, greedy_values, Status.FEASIBLE, reason, budget)
    if model.within_model(greedy) and model.score(best.values) <= model.score(greedy_values):
        status = Status.INTERRUPTED if result.interrupted else _status(model, result, best)
        return _fallback(
            model, greedy, greedy_values, status, "CP-SAT plan not better than greedy", budget
        )
    gap = None
    if result.bound is not None and result.objective is not None:
        gap = round(abs(result.bound - result.objective) / max(1.0, abs(result.objective)), 6)
    info = SolverInfo(
        status=Status.INTERRUPTED if result.interrupted else _status(model, result, best),
        wall_seconds=round(budget.elapsed(), 3),
        objective=result.objective,
        bound=result.bound,
        gap=gap,
        workers=model.options.workers,
        stages={s: float(x) for s, x in best.values.as_dict().items() if s in model.active},
        variables=model.num_variables,
        constraints=model.num_constraints,
        classes=len(model.data.classes),
        message=_message(model, result, best.expansion, rounds),
    )
    return best.plan.replace(solver=info)


def _status(model: CpsatModel, result: SearchResult, best: _Best) -> Status:
    objectives = model.objectives()
    optimal = len(result.statuses) == len(objectives) and all(
        s == Status.OPTIMAL for s in result.statuses.values()
    )
    return Status.OPTIMAL if optimal and not best.expansion.failed_classes else Status.FEASIBLE


def _message(
    model: CpsatModel, result: SearchResult, expansion: Expansion | None, rounds: int = 1
) -> str:
    parts = [f"{k} {s}" for k, s in result.statuses.items()]
    if model.dropped:
        parts.append(f"stages {', '.join(model.dropped)} left out of the weighted sum (int64)")
    data = model.data
    parts.append(f"{len(data.classes)} node classes for {len(data.nodes)} nodes")
    if result.skipped:
        parts.append(f"stages {', '.join(result.skipped)} not run (time limit)")
    if rounds > 1:
        parts.append(f"{rounds} searches (classes split where the plan did not pack)")
    if expansion is not None and expansion.failed_units:
        parts.append(f"{len(expansion.failed_units)} job(s) left pending: did not pack")
    if result.interrupted:
        parts.append("interrupted: best plan so far")
    return ", ".join(parts)


def _fallback(
    model: CpsatModel,
    greedy: Plan,
    values: StageValues,
    status: Status,
    reason: str,
    budget: Budget,
) -> Plan:
    score = model.score(values)
    info = SolverInfo(
        status=status,
        wall_seconds=round(budget.elapsed(), 3),
        objective=float(score[0]) if score else None,
        workers=model.options.workers,
        stages={k: float(x) for k, x in values.as_dict().items()},
        variables=model.num_variables,
        constraints=model.num_constraints,
        classes=len(model.data.classes),
        fallback=reason,
        message=reason,
    )
    return greedy.replace(engine="cpsat", solver=info)
