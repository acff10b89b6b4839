"""The CP-SAT engine end to end: compile, hint with greedy, search, expand, verify — within
the user's wall clock — and never return anything worse than the greedy plan.

The greedy plan is both the complete hint of the first search and the floor of the result: if
CP-SAT finds nothing better on the objective in time (or stops in presolve with nothing,
cpsat-practice B.6), the greedy plan is returned with the solver's status and the reason, so
``vcopt solve`` never answers worse than Volcano would.

Two strategies share everything else. ``monolithic`` builds one model of the snapshot; when the
expansion cannot pack a class's counts into its nodes, those nodes get classes of their own
and the search runs again from the best plan so far while the budget allows (the jobs that did
not pack are left pending meanwhile, so every plan on the way is complete and feasible).
``decompose`` improves the plan part by part (``decompose.py``). ``auto`` measures the
compiled snapshot — how many (pod group, node class) pairs a single model would count — and
takes one model while that stays small enough to build and search within seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from models.instance import Instance
from models.tdm import SHUFFLE_REASON

from ..budget import Budget, TimeUp
from ..disruption import breaches
from ..metrics import Metrics, measure
from ..options import ALL_STAGES, STAGES, SolveOptions
from ..plan import ADMITTED, Plan, SolverInfo
from ..progress import Progress
from ..result import Status
from ..verify import verify
from .bounds import StageBounds
from .compile.data import Compiled, compile_instance
from .compile.fragmentation import typical_for
from .decompose import improve
from .model.objective import Ranking, StageValues, evaluate
from .relaxation import relax as linear_relaxation
from .search import CpsatModel, SearchResult, weighted_scales
from .solution.expand import Expansion, expand
from .solution.extract import decisions, plan_from
from .solution.hints import within_model

TAIL_SECONDS = 0.3
TAIL_PER_OBJECT = 4e-4
"""Estimated seconds to expand, verify and measure a plan, per node and pod of the instance,
before anything was measured on this machine."""
TAIL_PER_TABLES = 1.5
"""The same phases measured against compiling the snapshot's tables (all are Python passes
over the nodes and pods; on generated L and XL clusters they took 1.5–3 × as long): once that
compile has been timed on this machine, under its current load, the estimate follows it."""
TAIL_PER_MODEL = 0.5
"""... and against building a whole model (0.35 × on generated L clusters)."""
REFINE_SHARE = 0.25
"""Another search after a failed expansion is tried only while this share of the limit is
left (a search needs time to improve on what it has)."""
HYBRID_SHARE = 0.5
"""Under ``auto``, the one model's searches take this share of the budget, the rounds the rest
(measured on the generated M cluster at 60 s: one model alone reached +2.3 % work over
greedy, rounds alone +5.8 % but no bound)."""
MIN_ROUNDS_SECONDS = 3.0
RELAXATION_SHARE = 0.1
"""A decomposed solve gives the linear relaxation of the work stage (``relaxation.py``) at
most this share of its search time, for the bound it reports."""
MIN_TRADE_EDGE = 0.01
"""A plan that admits fewer jobs *and* allocates less GPU than the floor must buy at least
this much priority-weighted work over it; below, the floor is the answer (a user reads jobs
and GPUs first, and a sub-percent work edge does not pay for both)."""
MONOLITHIC_PAIRS = 50_000
"""``auto`` builds one model up to this many (group, class) pairs: measured on 2 cores, the
generated L cluster (35 k pairs, 57 k variables) compiles in about 7 s and improves on greedy
within a minute; XL (230 k pairs) would take longer to build than the whole budget."""


def tail_seconds(instance: Instance) -> float:
    return TAIL_SECONDS + TAIL_PER_OBJECT * (len(instance.nodes) + len(instance.pods))


def pairs(data: Compiled) -> int:
    """(group, class) pairs one model of ``data`` counts pods for."""
    return sum(len(g.classes) for g in data.groups)


def strategy_for(options: SolveOptions, data: Compiled) -> str:
    """``auto`` becomes ``hybrid`` (one model, then rounds) while one model stays small
    enough, ``decompose`` beyond."""
    if options.search.strategy != "auto":
        return options.search.strategy
    return "hybrid" if pairs(data) <= MONOLITHIC_PAIRS else "decompose"


class _NoPlan(Exception):
    """The search ended without a plan of its own: the greedy plan is the answer."""

    def __init__(self, status: Status, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass
class _Result:
    """The best plan a strategy found, with what the report says about it."""

    plan: Plan
    values: StageValues
    status: Status
    notes: list[str] = field(default_factory=list)
    objective: float | None = None
    bound: float | None = None
    variables: int | None = None
    constraints: int | None = None
    classes: int | None = None
    bounds: StageBounds | None = None


class _Solve:
    """One CP-SAT solve: its budget, progress display, the greedy floor and the score."""

    def __init__(
        self,
        instance: Instance,
        options: SolveOptions,
        greedy: Plan,
        budget: Budget,
        progress: Progress,
    ) -> None:
        self.instance = instance
        self.options = options
        self.greedy = greedy
        self.budget = budget
        self.progress = progress
        self.tail = tail_seconds(instance)
        progress.phase("compile")
        started = budget.elapsed()
        self.full = compile_instance(
            instance,
            tdm_lookahead=options.objective.tdm_lookahead,
            aggregate=options.search.aggregate,
            typical=typical_for(instance, options),
        )
        self.tail = max(self.tail, TAIL_PER_TABLES * (budget.elapsed() - started))
        self.active = options.objective.active_stages
        self.reported = [s for s in ALL_STAGES if s in STAGES or s in self.active]
        self.scales, self.dropped = weighted_scales(self.full, options, self.active)
        self.score = Ranking(
            tuple(self.active), self.scales if options.objective.kind == "weighted" else None
        ).score
        self.greedy_values = evaluate(self.full, greedy)
        # Volcano evicts only to pipeline the beneficiaries (nothing binds on the released room
        # in the same cycle), so greedy's placements stand without its preempt and reclaim
        # evictions: that plan is a hint every eviction rule of the model accepts. shuffle's
        # evictions stay: Volcano makes them whatever else the cycle does.
        # Nothing is pipelined in a CP-SAT plan either.
        shuffled = tuple(e for e in greedy.evictions if e.reason == SHUFFLE_REASON)
        self.floor = greedy.replace(evictions=shuffled, pipelined=())
        self.capped = breaches(instance, greedy, options)
        if self.capped:
            # Greedy follows Volcano, which has no disruption cap: a greedy plan that evicts
            # more than the user allows cannot be the answer, its placements alone can.
            self.greedy = self.floor
            self.greedy_values = evaluate(self.full, self.floor)
        self.floor_name = "greedy"
        self._start_from(options.start)

    def _start_from(self, start: Plan | None) -> None:
        """A given plan replaces greedy's as hint and floor when it is sound and better."""
        if (
            start is None
            or verify(self.instance, start)
            or breaches(self.instance, start, self.options)
        ):
            return
        values = evaluate(self.full, start)
        if self.score(values) > self.score(self.greedy_values):
            self.greedy, self.greedy_values = start, values
            self.floor = start.replace(pipelined=())
            self.floor_name = "the start plan"

    # -- monolithic --------------------------------------------------------------------------

    def monolithic(self, share: float = 1.0) -> _Result:
        """One model (re-split where the expansion fails); its searches use at most ``share``
        of what is left of the budget when it starts."""
        cap = share * self.budget.remaining()
        opened = self.budget.elapsed()
        split: frozenset[int] = frozenset()
        floor = self.floor
        best: tuple[_Result, Expansion] | None = None
        searches = 0
        budget = self.budget
        while True:
            self.progress.phase("compile")
            started = budget.elapsed()
            try:
                model = CpsatModel(
                    self.instance,
                    self.options,
                    split,
                    partial(budget.check, self.tail),
                    data=None if split else self.full,
                )
            except TimeUp:
                if best is not None:
                    break
                raise _NoPlan(Status.TIME_UP, self.time_up()) from None
            self.tail = max(self.tail, TAIL_PER_MODEL * (budget.elapsed() - started))
            hinting = budget.elapsed()
            start = model.hint_plan(floor)
            overhead = budget.elapsed() - hinting
            seconds = budget.search_seconds(self.tail)
            if share < 1 and seconds > 0:
                seconds = min(seconds, max(cap - (budget.elapsed() - opened), 0.0))
            if seconds <= 0:
                if best is not None:
                    break
                raise _NoPlan(Status.TIME_UP, self.time_up())
            baselines = dict(
                zip(
                    model.active, map(float, self.greedy_values.as_tuple(model.active)), strict=True
                )
            )
            search = model.search(start, seconds, self.progress, baselines, overhead)
            searches += 1
            if search.values is None:
                if best is not None:
                    break
                raise _NoPlan(*self.no_solution(model, search))
            self.progress.phase("expand")
            expansion = expand(model.vars, search.values)
            plan = plan_from(
                model.vars, search.values, expansion, self.instance, self.options.search.seed
            )
            values = evaluate(self.full, plan)
            if best is None or self.score(values) > self.score(best[0].values):
                best = (self.result(model, search, expansion, plan, values, searches), expansion)
            if not expansion.failed_classes or search.interrupted:
                break
            if budget.remaining() < REFINE_SHARE * budget.limit + self.tail:
                break
            classes = model.data.classes
            split = split | {n for c in expansion.failed_classes for n in classes[c].nodes}
            floor = best[0].plan
        return best[0]

    def result(
        self,
        model: CpsatModel,
        search: SearchResult,
        expansion: Expansion,
        plan: Plan,
        values: StageValues,
        searches: int,
    ) -> _Result:
        objectives = model.objectives()
        optimal = len(search.statuses) == len(objectives) and all(
            s == Status.OPTIMAL for s in search.statuses.values()
        )
        status = Status.OPTIMAL if optimal and not expansion.failed_classes else Status.FEASIBLE
        notes = [f"{k} {s}" for k, s in search.statuses.items()]
        if search.skipped:
            notes.append(f"stages {', '.join(search.skipped)} not run (time limit)")
        notes.append(f"{len(model.data.classes)} node classes for {len(model.data.nodes)} nodes")
        if searches > 1:
            notes.append(f"{searches} searches (classes split where the plan did not pack)")
        if expansion.failed_units or expansion.failed_jobs:
            left = len(expansion.failed_units) + len(expansion.failed_jobs)
            notes.append(f"{left} job(s) left pending: did not pack")
        if search.interrupted:
            status = Status.INTERRUPTED
        return _Result(
            plan,
            values,
            status,
            notes,
            search.objective,
            search.bound,
            model.num_variables,
            model.num_constraints,
            len(model.data.classes),
            model.bounds(search),
        )

    def no_solution(self, model: CpsatModel, search: SearchResult) -> tuple[Status, str]:
        objectives = model.objectives()
        if not objectives:
            return Status.UNKNOWN, "every objective stage is off"
        if search.interrupted:
            return Status.INTERRUPTED, "interrupted before CP-SAT found a plan"
        if search.skipped and not search.statuses:
            return Status.TIME_UP, self.time_up()
        return search.statuses.get(objectives[0][0], Status.UNKNOWN), "no CP-SAT solution"

    # -- decompose ---------------------------------------------------------------------------

    def hybrid(self) -> _Result:
        """One model first — for its bound, and the optimum on anything small —, then rounds
        over the parts from its plan with the time left."""
        try:
            first = self.monolithic(HYBRID_SHARE)
        except _NoPlan as nothing:
            # The one model found no plan in its share: the rounds may, from the floor, in
            # what is left (each needs only a second or so) — unless the user stopped the
            # search or the time is gone.
            if not self.active or nothing.status in (Status.INTERRUPTED, Status.TIME_UP):
                raise
            try:
                rounds = self.decompose()
            except _NoPlan:
                raise nothing from None
            rounds.notes = [f"one model: {nothing.reason}", *rounds.notes]
            return rounds
        if first.status in (Status.OPTIMAL, Status.INTERRUPTED):
            return first
        if self.budget.search_seconds(self.tail) < MIN_ROUNDS_SECONDS:
            return first
        second = self.decompose(first.plan, relax=False)
        if self.score(second.values) <= self.score(first.values):
            return first
        second.notes = [*first.notes, *second.notes]
        second.objective = (
            float(self.score(second.values)[0]) if first.objective is not None else None
        )
        second.bound, second.bounds = first.bound, first.bounds
        second.variables, second.constraints = first.variables, first.constraints
        return second

    def decompose(self, start: Plan | None = None, relax: bool = True) -> _Result:
        """Rounds over the parts; ``relax``: first solve the linear relaxation of the work
        stage, for a bound when no model proved one and to aim the first rounds."""
        relaxation = None
        if relax:
            self.progress.phase("bound", "(linear relaxation of the work stage)")
            seconds = RELAXATION_SHARE * self.budget.search_seconds(self.tail)
            relaxation = linear_relaxation(self.full, seconds)
        outcome = improve(
            self.instance,
            self.options,
            start or self.floor,
            self.full,
            self.score,
            self.budget,
            self.tail,
            self.progress,
            self.greedy_values,
            relaxation,
        )
        if not outcome.rounds:
            raise _NoPlan(Status.TIME_UP, self.time_up())
        plan = outcome.plan.replace(jobs=decisions(self.full, outcome.plan, Expansion()))
        notes = [
            f"decomposed into {outcome.parts} parts, {outcome.rounds} rounds, "
            f"{outcome.improved} improving",
            f"{len(self.full.classes)} node classes for {len(self.full.nodes)} nodes",
        ]
        status = Status.INTERRUPTED if outcome.interrupted else Status.FEASIBLE
        if outcome.interrupted:
            notes.append("interrupted: best plan so far")
        result = _Result(plan, outcome.values, status, notes, classes=len(self.full.classes))
        if relaxation is not None and self.active[:1] == ["work"]:
            work = relaxation.bound
            notes.append("work bound from the linear relaxation")
            result.bounds = StageBounds(tuple(self.active), proved={"work": work})
            if self.options.objective.kind == "lexicographic":
                result.objective, result.bound = float(outcome.values.work), work
        return result

    # -- the answer --------------------------------------------------------------------------

    def time_up(self) -> str:
        return (
            f"the time limit ({self.budget.limit:g}s) was spent before CP-SAT could start "
            f"({self.budget.elapsed():.1f}s elapsed)"
        )

    def finish(self, result: _Result) -> Plan:
        self.progress.phase("verify")
        violations = verify(self.instance, result.plan)
        if violations:
            first = violations[0]
            reason = (
                f"CP-SAT plan breaks {first.rule} ({len(violations)} violation(s)): {first.message}"
            )
            return self.fallback(Status.FEASIBLE, reason, result)
        if within_model(self.full, self.greedy) and self.score(result.values) <= self.score(
            self.greedy_values
        ):
            return self.fallback(
                result.status, f"CP-SAT plan not better than {self.floor_name}", result
            )
        trade = self.trade(result)
        if trade is not None and trade.refused:
            return self.fallback(result.status, trade.refusal(self.floor_name), result)
        if trade is not None:
            result.notes = [*result.notes, trade.text(self.floor_name)]
        info = SolverInfo(
            status=result.status,
            wall_seconds=round(self.budget.elapsed(), 3),
            objective=result.objective,
            bound=result.bound,
            gap=_gap(result.bound, result.objective),
            workers=self.options.search.workers,
            stages={s: float(x) for s, x in result.values.as_dict(self.active).items()},
            stage_bounds=result.bounds.for_plan(result.values) if result.bounds else {},
            variables=result.variables,
            constraints=result.constraints,
            classes=result.classes,
            message=self.message(result.notes),
        )
        return result.plan.replace(engine="cpsat", solver=info)

    def trade(self, result: _Result) -> _Trade | None:
        """What the plan gives up against the floor, when it admits fewer jobs or evicts more
        pods (measured only then: the metrics cost a pass over the cluster)."""
        floor_admitted = sum(1 for j in self.greedy.jobs if j.status == ADMITTED)
        admitted = sum(1 for j in result.plan.jobs if j.status == ADMITTED)
        if admitted >= floor_admitted and len(result.plan.evictions) <= len(self.greedy.evictions):
            return None
        work = self.greedy_values.work
        edge = (result.values.work - work) / max(1, abs(work))
        floor, plan = measure(self.instance, self.greedy), measure(self.instance, result.plan)
        return _Trade(floor, plan, edge)

    def message(self, notes: list[str]) -> str:
        if self.floor_name != "greedy":
            notes = [*notes, f"hinted with {self.floor_name}"]
        if self.capped:
            notes = [*notes, f"greedy plan over the disruption caps ({'; '.join(self.capped)})"]
        if self.dropped:
            notes = [
                *notes,
                f"stages {', '.join(self.dropped)} left out of the weighted sum (int64)",
            ]
        return ", ".join(notes)

    def fallback(self, status: Status, reason: str, result: _Result | None = None) -> Plan:
        """The floor's plan, with the search's bound when there was a search and the floor
        lies within the model: the bound is then a limit on every plan the model admits,
        whichever is returned, and says how far the floor may be from the optimum. (A floor
        outside the model, beyond a restriction the model adds, could score above it.)"""
        score = self.score(self.greedy_values)
        objective = float(score[0]) if score else None
        bound = result.bound if result and within_model(self.full, self.greedy) else None
        bounds = result.bounds if result and bound is not None else None
        notes = [*(result.notes if result else []), reason]
        info = SolverInfo(
            status=status,
            wall_seconds=round(self.budget.elapsed(), 3),
            objective=objective,
            bound=bound,
            gap=_gap(bound, objective),
            workers=self.options.search.workers,
            stages={k: float(x) for k, x in self.greedy_values.as_dict(self.reported).items()},
            stage_bounds=bounds.for_plan(self.greedy_values) if bounds else {},
            variables=result.variables if result else None,
            constraints=result.constraints if result else None,
            classes=len(self.full.classes),
            fallback=reason,
            message=self.message(notes),
        )
        return self.greedy.replace(engine="cpsat", solver=info)


@dataclass(frozen=True)
class _Trade:
    """How a plan that admits fewer jobs or evicts more pods than the floor compares with it."""

    floor: Metrics
    plan: Metrics
    work_edge: float
    """Priority-weighted work over the floor's, relative to it."""

    @property
    def refused(self) -> bool:
        return (
            self.plan.jobs_admitted < self.floor.jobs_admitted
            and self.plan.gpu_allocated < self.floor.gpu_allocated
            and self.work_edge < MIN_TRADE_EDGE
        )

    def text(self, floor: str) -> str:
        """The trade in a user's units, e.g. "vs greedy: −3 jobs, −1.5 GPUs, +2 evictions,
        +0.8 % priority-weighted work"."""
        parts = [
            f"{_signed(f'{self.plan.jobs_admitted - self.floor.jobs_admitted:+d}')} jobs",
            f"{_signed(f'{self.plan.gpu_allocated - self.floor.gpu_allocated:+.3g}')} GPUs",
        ]
        evicted = self.plan.evictions - self.floor.evictions
        if evicted:
            parts.append(f"{_signed(f'{evicted:+d}')} evictions")
        parts.append(f"{_signed(f'{self.work_edge:+.2%}')} priority-weighted work")
        return f"vs {floor}: " + ", ".join(parts)

    def refusal(self, floor: str) -> str:
        return (
            f"CP-SAT plan admits fewer jobs and allocates fewer GPUs than {floor} for a work "
            f"gain below {MIN_TRADE_EDGE:.0%} ({self.text(floor)})"
        )


def _signed(number: str) -> str:
    """A number formatted with its sign, the minus as a person writes it."""
    return "−" + number[1:] if number.startswith("-") else number


def _gap(bound: float | None, objective: float | None) -> float | None:
    if bound is None or objective is None:
        return None
    return round(abs(bound - objective) / max(1.0, abs(objective)), 6)


def solve(
    instance: Instance,
    options: SolveOptions,
    greedy: Plan,
    *,
    budget: Budget | None = None,
    progress: Progress | None = None,
) -> Plan:
    """The CP-SAT plan for ``instance``; never worse than ``greedy`` on the objective."""
    budget = budget or Budget(options.search.time_limit)
    progress = progress or Progress(options.search.time_limit)
    run = _Solve(instance, options, greedy, budget, progress)
    strategy = strategy_for(options, run.full)
    steps = {"monolithic": run.monolithic, "hybrid": run.hybrid, "decompose": run.decompose}
    try:
        result = steps[strategy]()
    except _NoPlan as nothing:
        return run.fallback(nothing.status, nothing.reason)
    return run.finish(result)
