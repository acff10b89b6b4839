"""One instance compiled into a CP-SAT model, and its staged search.

:class:`CpsatModel` builds the model of a snapshot (tables, variables, one function per
constraint family, the objective stages the options keep), hints it with a plan and searches
it stage by stage within a time budget. Turning the best solution into a plan, comparing it
with greedy and spending what is left of the budget are ``engine.py``'s part.

Each stage's solve runs through ``solving.Solvable.run``, so Ctrl-C stops the search within a
fraction of a second (the best solution so far is kept; a second Ctrl-C aborts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from models.instance import Instance

from ..budget import Budget
from ..options import SolveOptions
from ..plan import Plan
from ..progress import Progress
from ..result import Status
from .bounds import StageBounds
from .compile.data import Compiled, compile_instance
from .compile.fragmentation import typical_for
from .compile.view import View
from .model import affinity, constraints
from .model.evictions import eviction_allowed, eviction_caps
from .model.objective import Ranking, stage_expressions, stage_span
from .model.variables import Expr, Values, Variables, value_of
from .params import parameters
from .solution.hints import hint_values, within_model
from .solving import Solvable

FAMILIES = (
    constraints.node_capacity,
    constraints.pod_count,
    constraints.gpu_capacity,
    constraints.gpu_exclusive,
    constraints.gpu_distinct,
    constraints.gang,
    constraints.topology_hard,
    constraints.queue_capability,
    constraints.queue_leaf,
    constraints.queue_enqueue,
    eviction_allowed,
    affinity.pod_affinity,
    affinity.pod_anti_affinity,
    affinity.topology_spread,
)
STAGE_SHARE = {
    "work": 0.4,
    "fairness": 0.2,
    "topology": 0.2,
    "fragmentation": 0.3,
    "packing": 0.2,
    "weighted": 1.0,
}
INT64_HEADROOM = 2**62
MIN_STAGE = 0.1
"""A stage given less wall time than this is not started (loading the model alone takes that
long on a large cluster)."""
STATUS = {
    cp_model.OPTIMAL: Status.OPTIMAL,
    cp_model.FEASIBLE: Status.FEASIBLE,
    cp_model.INFEASIBLE: Status.INFEASIBLE,
    cp_model.MODEL_INVALID: Status.MODEL_INVALID,
    cp_model.UNKNOWN: Status.UNKNOWN,
}


class _Callback(cp_model.CpSolverSolutionCallback):
    """Forwards each improving solution to the progress display; kept tiny (B.7)."""

    def __init__(self, progress: Progress) -> None:
        super().__init__()
        self.progress = progress

    def on_solution_callback(self) -> None:
        self.progress.solution(self.objective_value, self.best_objective_bound)


@dataclass
class SearchResult:
    values: list[int] | None
    """The best solution of the last stage that found one (None: no solution at all)."""
    statuses: dict[str, Status] = field(default_factory=dict)
    bound: float | None = None
    objective: float | None = None
    """First stage's bound and objective (the gap is reported on it)."""
    interrupted: bool = False
    skipped: list[str] = field(default_factory=list)
    """Stages not run for lack of time (the stages before them are kept)."""
    proved: dict[str, float] = field(default_factory=dict)
    """Each objective's bound (its exact value where proved optimal)."""
    held: dict[str, int] = field(default_factory=dict)
    """The value each objective was held at, at least, for the ones after it."""


class CpsatModel(Solvable):
    """One instance compiled into a CP-SAT model with the objective stages the options keep."""

    def __init__(
        self,
        instance: Instance,
        options: SolveOptions,
        split: frozenset[int] = frozenset(),
        check: Callable[[], None] = lambda: None,
        view: View | None = None,
        data: Compiled | None = None,
    ) -> None:
        """``check`` is called between building steps; it raises to abandon the build when the
        time budget is gone (a half-built model is of no use)."""
        self.instance = instance
        self.options = options
        self.data: Compiled = data or compile_instance(
            instance,
            tdm_lookahead=options.objective.tdm_lookahead,
            aggregate=options.search.aggregate,
            split=split,
            view=view,
            typical=typical_for(instance, options),
        )
        check()
        super().__init__()
        self.vars = Variables(self.model, self.data)
        for family in FAMILIES:
            check()
            family(self.model, self.vars, self.data)
        eviction_caps(self.model, self.vars, self.data, options)
        check()
        self.active = options.objective.active_stages
        self.stages = stage_expressions(self.model, self.vars, self.data, self.active)
        self.scales, self.dropped = weighted_scales(self.data, options, self.active)
        self.score = Ranking(
            tuple(self.active), self.scales if options.objective.kind == "weighted" else None
        ).score

    @property
    def step_terms(self) -> bool:
        """Whether the fragmentation stage's per-device terms are in the model."""
        return "fragmentation" in self.active and bool(self.data.typical)

    @property
    def num_variables(self) -> int:
        return len(self.model.proto.variables)

    @property
    def num_constraints(self) -> int:
        return len(self.model.proto.constraints)

    # -- hints -------------------------------------------------------------------------------

    def hint_plan(self, plan: Plan) -> list[int]:
        """Hint every variable from ``plan`` (complete hints, cpsat-practice B.6); returns the
        hinted values by variable index."""
        values = hint_values(self.vars, plan)
        self._hint(values)
        return values

    def within_model(self, plan: Plan) -> bool:
        return within_model(self.data, plan)

    def _hint(self, values: Values) -> None:
        self.model.clear_hints()
        hint = self.model.proto.solution_hint
        count = self.num_variables
        hint.vars.extend(range(count))
        hint.values.extend(values[:count])
        if len(values) < count:  # constants the model made after the values were taken
            hint.values.extend([0] * (count - len(values)))

    # -- objective ---------------------------------------------------------------------------

    def objectives(self) -> list[tuple[str, Expr]]:
        """What each sequential solve maximises."""
        if self.options.objective.kind == "weighted":
            return [("weighted", sum(self.scales[s] * self.stages[s] for s in self.scales))]
        return [(s, self.stages[s]) for s in self.active]

    def bounds(self, search: SearchResult) -> StageBounds | None:
        """What ``search`` proved about each stage (None without a bound)."""
        if not search.proved:
            return None
        order = tuple(self.active)
        if self.options.objective.kind == "weighted":
            return StageBounds(order, weighted=search.proved["weighted"], scales=self.scales)
        return StageBounds(order, proved=dict(search.proved), held=dict(search.held))

    # -- search ------------------------------------------------------------------------------

    def search(
        self,
        start: list[int],
        seconds: float,
        progress: Progress,
        baselines: Mapping[str, float] | None = None,
        overhead: float = 0.0,
    ) -> SearchResult:
        """Staged solve from the complete hint ``start`` within ``seconds`` of wall time.

        Each stage is hinted with the best solution so far and then held at that solution's
        value for the stages after it (also when the stage found nothing in its budget, so
        later stages cannot trade the hinted value away). ``overhead`` is the wall time the
        work between two stages takes (re-deriving and re-hinting); it is kept in hand for
        every stage still to come, and the stages that no longer get ``MIN_STAGE`` seconds
        are not run.

        From the first stage's progress line on, a Ctrl-C is the search's to take, whether it
        lands in CP-SAT or between two stages: the search stops with the best solution so far.
        """
        options = self.options
        objectives = self.objectives()
        shares = [STAGE_SHARE.get(name, 1.0) for name, _ in objectives]
        budget = Budget(seconds)
        result = SearchResult(None)
        current = start
        self._hint(current)
        solver = cp_model.CpSolver()
        for position, (name, expr) in enumerate(objectives):
            if isinstance(expr, int):
                result.statuses[name] = Status.OPTIMAL  # nothing this stage can change
                continue
            later = len(objectives) - position - 1
            available = budget.remaining() - overhead * later
            if options.search.deterministic:
                stage_seconds = min(seconds * shares[position] / sum(shares), available)
            else:
                stage_seconds = budget.share(available, shares, position)
            if stage_seconds < MIN_STAGE:
                result.skipped = [n for n, _ in objectives[position:]]
                break
            try:
                progress.phase(
                    f"stage {name}",
                    f"({position + 1}/{len(objectives)})",
                    (baselines or {}).get(name),
                )
                self.model.maximize(expr)
                parameters(solver, options, stage_seconds, self.num_variables, self.step_terms)
            except KeyboardInterrupt:
                result.interrupted = True
                break
            status, interrupted = self.run(solver, _Callback(progress))
            result.statuses[name] = STATUS.get(status, Status.UNKNOWN)
            if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                optimal = status == cp_model.OPTIMAL
                current = self._record(result, solver, name, expr, position == 0, optimal)
            if interrupted:
                result.interrupted = True
                break
            if position + 1 < len(objectives):
                try:
                    result.held[name] = value_of(expr, current)
                    self.model.add(expr >= result.held[name])
                    self._hint(current)
                except KeyboardInterrupt:
                    result.interrupted = True
                    break
        return result

    def _record(
        self,
        result: SearchResult,
        solver: cp_model.CpSolver,
        name: str,
        expr: Expr,
        first: bool,
        optimal: bool,
    ) -> Values:
        """Keeps a stage's solution and what it proved; returns the solution read back through
        the derivations (auxiliaries the objective only bounds, frag_stage's CPU risks, may sit
        above their value in the raw one)."""
        best = list(solver.response_proto.solution)
        current = self.vars.complete({v.index: best[v.index] for v in self.vars.core()})
        result.values = current
        if self.options.search.bound:
            proved = value_of(expr, best) if optimal else solver.best_objective_bound
            result.proved[name] = proved
            if first:
                result.bound = float(proved)
        if first:
            result.objective = float(value_of(expr, current))
        return current


def weighted_scales(
    data: Compiled, options: SolveOptions, active: list[str]
) -> tuple[dict[str, int], list[str]]:
    """Per-stage multipliers of the weighted objective: each stage's scale exceeds the whole
    span of the stages after it, so the sum is lexicographic (times the user's weights). Stages
    are dropped from the end while the sum would not fit in int64."""
    if options.objective.kind != "weighted":
        return {}, []
    kept = list(active)
    while kept:
        scales: dict[str, int] = {}
        scale = 1
        for stage in reversed(kept):
            scales[stage] = scale * options.objective.weight(stage)
            scale *= stage_span(data, stage) * options.objective.weight(stage) + 1
        if scale < INT64_HEADROOM:
            return {s: scales[s] for s in kept}, [s for s in active if s not in kept]
        kept.pop()
    return {}, list(active)
