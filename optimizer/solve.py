"""One entry point for both engines, returning a plan with its metrics attached.

The CP-SAT engine always starts from the greedy plan (its hint and its floor), so asking for
``cpsat`` runs ``greedy`` first; both plans carry the same metrics so they can be compared.
"""

from __future__ import annotations

from models.instance import Instance

from .cpsat.model import solve as solve_cpsat
from .cpsat.params import SolveOptions
from .greedy.engine import solve as solve_greedy
from .metrics import evaluate
from .plan import Plan

ENGINES = ("cpsat", "greedy")


def with_metrics(instance: Instance, plan: Plan) -> Plan:
    return plan.replace(metrics=evaluate(instance, plan).as_dict())


def solve(instance: Instance, engine: str = "cpsat", options: SolveOptions | None = None) -> Plan:
    """The plan of ``engine`` for ``instance`` (``options.seed`` seeds greedy's ties too)."""
    options = options or SolveOptions()
    greedy = solve_greedy(instance, options.seed)
    if engine == "greedy":
        return with_metrics(instance, greedy)
    if engine != "cpsat":
        raise ValueError(f"unknown engine {engine!r} (choose from {', '.join(ENGINES)})")
    return with_metrics(instance, solve_cpsat(instance, options, greedy))


def solve_both(instance: Instance, options: SolveOptions | None = None) -> tuple[Plan, Plan]:
    """The greedy and the CP-SAT plan, solving greedy once."""
    options = options or SolveOptions()
    greedy = solve_greedy(instance, options.seed)
    cpsat = solve_cpsat(instance, options, greedy)
    return with_metrics(instance, greedy), with_metrics(instance, cpsat)
