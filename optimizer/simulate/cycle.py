"""One scheduling cycle of a simulation: the engine's plan for the current state, checked by
the verifier, then applied.

A cycle sees exactly what a snapshot command sees (``optimizer.solve.solve`` on an
:class:`~models.instance.Instance`), so the simulation adds no scheduling rule of its own. The
one thing Volcano remembers between cycles, the time of TDM's last eviction round, travels in
the ``tdm`` plugin's ``vcopt.lastEvictAt`` argument: a round runs when ``tdm.evict.period``
has passed since the last one (``models.tdm.shuffle_rounds``), and every round that runs
sets it, whether or not it found victims.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from models.tdm import shuffle_rounds

from ..options import SolveOptions
from ..plan import Plan
from ..solve import decide
from ..verify import Violation, format_violations, verify
from .state import Change, SimState


@dataclass(frozen=True)
class Cycle:
    time: datetime
    plan: Plan
    change: Change
    tdm_round: bool


class InvalidState(Exception):
    """A plan broke a rule: the simulation would enter a state the cluster cannot be in."""

    def __init__(self, time: datetime, engine: str, violations: list[Violation]) -> None:
        self.time = time
        self.engine = engine
        self.violations = violations
        super().__init__(
            f"{engine} plan at {time.isoformat()} breaks {len(violations)} rule(s):\n"
            + format_violations(violations)
        )

    def __reduce__(self) -> tuple[type[InvalidState], tuple[datetime, str, list[Violation]]]:
        """Rebuilt from its fields: a run on a Dask worker raises it in the command too."""
        return (InvalidState, (self.time, self.engine, self.violations))


def run_cycle(state: SimState, engine: str, options: SolveOptions, check: bool) -> Cycle:
    """Solve the state at ``state.now`` with ``engine``, verify the plan (``check``), apply it."""
    instance = state.instance()
    tdm_round = shuffle_rounds(instance.scheduler, instance.tdm, state.now) > 0
    plan = decide(instance, engine, options)
    if check:
        violations = verify(instance, plan)
        if violations:
            raise InvalidState(state.now, engine, violations)
    if tdm_round:
        state.last_evict_at = state.now
    change = state.apply(plan)
    return Cycle(state.now, plan, change, tdm_round)
