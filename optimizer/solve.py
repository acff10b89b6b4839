"""One entry point for both engines, returning a plan with its metrics attached.

The CP-SAT engine always starts from the greedy plan (its hint and its floor), so asking for
``cpsat`` runs ``greedy`` first; both plans carry the same metrics so they can be compared.
The time limit is the user's wall clock: the budget opens when the command started (reading
the input counts), the greedy baseline is the first phase of the CP-SAT engine's budget, and
parts of it are kept back for what follows the engine: naming why each pending job of a
CP-SAT plan is pending (``optimizer.reasons.annotate``), queue positions, metrics and the
report, which grow with the snapshot.
"""

from __future__ import annotations

from models.fragmentation import TypicalTask
from models.instance import Instance

from .budget import Budget
from .cpsat.engine import solve as solve_cpsat
from .disruption import check_budgets
from .greedy.engine import solve as solve_greedy
from .metrics import measure
from .options import SolveOptions
from .plan import PENDING, Plan
from .progress import Progress
from .reasons.annotate import MAX_NODES, REASON_SECONDS, REASON_SHARE, annotate
from .reasons.position import queue_positions
from .result import Result, Status

ENGINES = ("cpsat", "greedy")
REPORT_PER_OBJECT = 4e-4
"""Seconds per node and pod kept back for queue positions, metrics and the report of both
plans (measured: 4.5 s for the 1,213 nodes and 10,771 pods of the Alibaba trace import)."""


def with_metrics(
    instance: Instance, plan: Plan, typical_mix: tuple[TypicalTask, ...] | None = None
) -> Plan:
    """The plan with its metrics; fragmentation against ``typical_mix`` (``--typical-mix``),
    else the instance's own mix: the mix the CP-SAT objective optimises is the one reported."""
    return measured(instance, plan, typical_mix).plan


def measured(
    instance: Instance, plan: Plan, typical_mix: tuple[TypicalTask, ...] | None = None
) -> Result:
    """The plan and its metrics, typed; the plan carries them too (its ``metrics`` section)."""
    metrics = measure(instance, plan, typical_mix)
    return Result(plan.replace(metrics=metrics.as_dict()), metrics)


def _report_seconds(instance: Instance) -> float:
    return REPORT_PER_OBJECT * (len(instance.nodes) + len(instance.pods))


def _reserve(instance: Instance, greedy: Plan, options: SolveOptions, reasons: bool) -> float:
    """Seconds of the time limit kept back from the CP-SAT engine: the report's share, and for
    the pending reasons a tenth of the limit, at most :data:`REASON_SECONDS` (none when the
    reasons are not wanted, greedy leaves nothing pending or the cluster is too large for
    per-job reasons)."""
    report = _report_seconds(instance)
    pending = any(d.status == PENDING for d in greedy.jobs)
    if not reasons or not pending or len(instance.nodes) > MAX_NODES:
        return report
    return report + min(REASON_SECONDS, REASON_SHARE * options.search.time_limit)


def annotated(
    instance: Instance,
    plan: Plan,
    budget: Budget | None = None,
    positions: dict[str, int] | None = None,
    wanted: bool = True,
) -> Plan:
    """The plan with queue positions and, for CP-SAT plans when ``wanted``, each pending job's
    dominant reason, within what is left of the time limit less the report's share. A search
    the user stopped gets no reasons: the plan is wanted now."""
    stopped = plan.solver is not None and plan.solver.status == Status.INTERRUPTED
    reasons = wanted and budget is not None and not stopped
    seconds = 0.0
    if reasons and budget is not None:
        seconds = min(REASON_SECONDS, budget.remaining() - _report_seconds(instance))
    return annotate(instance, plan, reasons=reasons, seconds=seconds, positions=positions)


def _cpsat(
    instance: Instance,
    options: SolveOptions,
    greedy: Plan,
    budget: Budget,
    progress: Progress,
    reasons: bool,
) -> Plan:
    """The CP-SAT plan, within the limit less the reserve for pending reasons."""
    reserve = _reserve(instance, greedy, options, reasons)
    engine_budget = Budget(options.search.time_limit - reserve, budget.clock, budget.started)
    return solve_cpsat(instance, options, greedy, budget=engine_budget, progress=progress)


def solve(
    instance: Instance,
    engine: str = "cpsat",
    options: SolveOptions | None = None,
    progress: Progress | None = None,
    started: float | None = None,
    reasons: bool = True,
) -> Plan:
    """The plan of ``engine`` for ``instance`` (``options.search.seed`` seeds greedy's ties
    too); ``started`` is when the user's clock started (``time.perf_counter``; default now).
    ``reasons`` names the dominant reason of each job a CP-SAT plan leaves pending, which takes
    up to a tenth of the limit, kept back from the search: a caller that only wants the
    placements (a replay, a loop of solves) gives it to the search, and pending jobs keep the
    engine's own short reason (Volcano's message when the plan is greedy's)."""
    return solve_result(instance, engine, options, progress, started, reasons).plan


def solve_result(
    instance: Instance,
    engine: str = "cpsat",
    options: SolveOptions | None = None,
    progress: Progress | None = None,
    started: float | None = None,
    reasons: bool = True,
) -> Result:
    """:func:`solve`'s answer, typed: the plan, how its search ended and its metrics
    (``print(result)`` shows them in a few lines)."""
    options = options or SolveOptions()
    plan, budget = _decide(instance, engine, options, progress, started, reasons)
    mix = options.objective.typical_mix
    if engine == "greedy":
        return measured(instance, annotated(instance, plan), mix)
    if progress is not None:
        progress.phase("metrics")
    return measured(instance, annotated(instance, plan, budget, wanted=reasons), mix)


def decide(instance: Instance, engine: str = "cpsat", options: SolveOptions | None = None) -> Plan:
    """The engine's decisions alone — no queue positions, pending reasons or metrics — for a
    caller that only applies them (a simulation's cycles): the report's parts cost a pass over
    the cluster each."""
    return _decide(instance, engine, options or SolveOptions(), None, None, reasons=False)[0]


def _decide(
    instance: Instance,
    engine: str,
    options: SolveOptions,
    progress: Progress | None,
    started: float | None,
    reasons: bool,
) -> tuple[Plan, Budget]:
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (choose from {', '.join(ENGINES)})")
    check_budgets(instance, options)
    progress = progress or Progress(options.search.time_limit)
    budget = Budget(options.search.time_limit, started=started)
    progress.phase("greedy")
    greedy = solve_greedy(instance, options.search.seed)
    if engine == "greedy":
        return greedy, budget
    return _cpsat(instance, options, greedy, budget, progress, reasons), budget


def solve_both(
    instance: Instance,
    options: SolveOptions | None = None,
    progress: Progress | None = None,
    started: float | None = None,
    reasons: bool = True,
) -> tuple[Plan, Plan]:
    """The greedy and the CP-SAT plan, solving greedy once (``started`` and ``reasons`` as in
    :func:`solve`)."""
    options = options or SolveOptions()
    check_budgets(instance, options)
    progress = progress or Progress(options.search.time_limit)
    budget = Budget(options.search.time_limit, started=started)
    progress.phase("greedy")
    greedy = solve_greedy(instance, options.search.seed)
    cpsat = _cpsat(instance, options, greedy, budget, progress, reasons)
    progress.phase("metrics")
    positions = queue_positions(instance)
    mix = options.objective.typical_mix
    return (
        with_metrics(instance, annotated(instance, greedy, positions=positions), mix),
        with_metrics(
            instance, annotated(instance, cpsat, budget, positions=positions, wanted=reasons), mix
        ),
    )
