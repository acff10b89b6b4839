"""The plans ``explain`` and ``capacity`` ask their questions of.

Ctrl-C during such a plan's search ends the command, where ``vcopt solve`` keeps the best plan
so far: the plan of a search cut short is not the one the user asked about, and what follows
(the proofs, the round trip with the change applied) would be read off the wrong plan.
"""

from __future__ import annotations

from models.instance import Instance

from ..options import SolveOptions
from ..plan import Plan
from ..result import Status
from ..solve import solve


def plan_of(instance: Instance, engine: str, options: SolveOptions) -> Plan:
    """``engine``'s plan of ``instance``; KeyboardInterrupt when the user stopped its search."""
    plan = solve(instance, engine, options)
    if plan.solver is not None and plan.solver.status == Status.INTERRUPTED:
        raise KeyboardInterrupt
    return plan
