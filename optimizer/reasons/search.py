"""Questions asked of the dedicated model: does the job fit, which rules block it, and what
is the cheapest set of rules to give up (with how much of each).

*Blocking rules* are a minimal unsatisfiable core over the rule literals: CP-SAT returns a
sufficient set of assumptions that cannot all hold, and deletion makes it minimal (each rule
left in the set is needed to keep the job out). A core proves *why*; it does not say what to
change, because another core may block the job too. The *smallest change* is a correction
set: every literal becomes soft, each given-up rule costs by its kind (``rules.KIND_COST``),
and its amount (how far a limit is passed, how many nodes or pods) breaks ties.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from ortools.sat.python import cp_model

from .model import ExplainModel
from .rules import KIND_COST, Rule

RULE_WEIGHT = 10**7
"""One given-up rule outweighs any amount: fewer and cheaper rules first, then less of them."""
SECONDS = 10.0
"""Per solve of the model."""
CORE_SECONDS = 5.0
"""For making a core minimal (one solve per rule in it)."""


@dataclass
class Relaxed:
    """A rule the correction gives up, with the amount the solution uses of it."""

    rule: Rule
    amount: int


@dataclass
class Correction:
    relaxed: list[Relaxed]
    solver: cp_model.CpSolver
    """The solver holding the solution, for the remedies to read where pods went."""


def _solver(seconds: float = SECONDS) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    return solver


def _solve(em: ExplainModel, solver: cp_model.CpSolver) -> int:
    """One solve; Ctrl-C ends the command, since a search cut short proves nothing (a
    "does not fit" or a core read from it would be an answer the model never gave)."""
    status, interrupted = em.run(solver)
    if interrupted:
        raise KeyboardInterrupt
    return status


def _status(
    em: ExplainModel, assume: Iterable[cp_model.IntVar], seconds: float = SECONDS
) -> tuple[int, cp_model.CpSolver]:
    model = em.model
    model.clear_objective()
    model.clear_assumptions()
    model.add_assumptions(list(assume))
    solver = _solver(seconds)
    status = _solve(em, solver)
    model.clear_assumptions()
    return status, solver


def fits(em: ExplainModel) -> bool:
    """Whether the jobs fit with every rule as it is."""
    return where_it_fits(em) is not None


def where_it_fits(em: ExplainModel, seconds: float = SECONDS) -> list[str] | None:
    """The nodes a placement of the jobs uses with every rule as it is; None if none fits
    (or none was found within ``seconds``)."""
    status, solver = _status(em, [r.keep for r in em.rules.values()], seconds)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    used = {em.places[p].name for t in em.targets for (_, p), x in t.x.items() if solver.value(x)}
    return sorted(used)


@dataclass
class Core:
    rules: list[Rule]
    minimal: bool
    """Proven minimal: every rule was tried out of the set (False when time ran out first,
    or a trial ended without a verdict; the set is then sufficient, not minimal)."""


def blocking_core(
    em: ExplainModel,
    lifted: Collection[str] = (),
    seconds: float = CORE_SECONDS,
    first: float = SECONDS,
) -> Core:
    """A set of rules that together keep the jobs out, the rules in ``lifted`` given up
    (empty when they fit, when nothing the model can lift is to blame, or when the first
    solve finds no proof within ``first`` seconds); made minimal by deletion within
    ``seconds``, no trial solve running past them."""
    by_index = {r.keep.index: r for r in em.rules.values()}
    held = [r.keep for r in em.rules.values() if r.key not in lifted]
    status, solver = _status(em, held, first)
    deadline = time.perf_counter() + seconds

    def left() -> float:
        return min(SECONDS, max(deadline - time.perf_counter(), 0.001))

    if status != cp_model.INFEASIBLE:
        return Core([], status in (cp_model.OPTIMAL, cp_model.FEASIBLE))
    core = [by_index[i] for i in solver.sufficient_assumptions_for_infeasibility()]
    minimal = True
    i = 0
    while i < len(core):
        if time.perf_counter() > deadline:
            minimal = False
            break
        trial = core[:i] + core[i + 1 :]
        status, _ = _status(em, [r.keep for r in trial], left())
        if status == cp_model.INFEASIBLE:
            core = trial
        else:
            minimal = minimal and status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
            i += 1
    return Core(sorted(core, key=lambda r: (r.rank, r.key)), minimal)


def correction(
    em: ExplainModel,
    *,
    keep: Collection[str] = (),
    lift: Collection[str] = (),
    seconds: float = SECONDS,
) -> Correction | None:
    """The cheapest set of rules to give up so that the jobs fit, rules in ``keep`` held and
    rules in ``lift`` given up; None when no such set exists."""
    model = em.model
    model.clear_assumptions()
    rules = list(em.rules.values())
    terms = []
    for rule in rules:
        terms.append(RULE_WEIGHT * KIND_COST[rule.kind] * (1 - rule.keep))
        if rule.amount is not None:
            terms.append(max(rule.unit_cost, 1) * rule.amount)
    terms.extend(em.tiebreak)
    model.minimize(sum(terms))
    model.add_assumptions([em.rules[k].keep for k in keep])
    model.add_assumptions([em.rules[k].keep.Not() for k in lift])
    solver = _solver(seconds)
    status = _solve(em, solver)
    model.clear_assumptions()
    model.clear_objective()
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    relaxed = [
        Relaxed(r, int(solver.value(r.amount)) if r.amount is not None else 0)
        for r in rules
        if not solver.boolean_value(r.keep)
    ]
    relaxed.sort(key=lambda x: (x.rule.rank, x.rule.key))
    return Correction(relaxed, solver=solver)
