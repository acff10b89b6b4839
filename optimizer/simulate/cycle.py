"""One scheduling cycle of a simulation: the engine's plan for the current state, checked by
the verifier, then applied.

A cycle sees exactly what a snapshot command sees (``optimizer.solve.solve`` on an
:class:`~models.instance.Instance`), so the simulation adds no scheduling rule of its own. The
one thing Volcano remembers between cycles, the time of TDM's last eviction round, travels in
the ``tdm`` plugin's ``vcopt.lastEvictAt`` argument: a round runs when ``tdm.evict.period``
has passed since the last one (``models.tdm.shuffle_rounds``), and every round that runs
sets it, whether or not it found victims.

The pods a plan evicts hold their room for the grace period, so the cluster can only carry out
a placement that does without it. Greedy's never needs it: Volcano evicts, and pipelines the
preemptor onto the room being released. CP-SAT frees an evicted pod's room within its plan,
so a placement of its that needs it waits, pending, as Volcano's pipelined preemptor does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from models.instance import Instance
from models.tdm import shuffle_rounds

from ..options import SolveOptions
from ..plan import Plan
from ..solve import decide
from ..verify import Violation, format_violations, verify
from ..verify.context import Context
from ..verify.gpu import check_gpu_capacity, check_gpu_exclusive
from ..verify.nodes import check_node_capacity, check_pod_count
from .state import Change, SimState

_ROOM = (check_node_capacity, check_pod_count, check_gpu_capacity, check_gpu_exclusive)
"""The verifier's rules on a node's room and its GPUs'."""


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
    change = state.apply(carried_out(instance, plan) if state.grace else plan)
    return Cycle(state.now, plan, change, tdm_round)


def carried_out(instance: Instance, plan: Plan) -> Plan:
    """``plan`` without the placements that need room its evicted pods still hold: those
    on a node where, with the evicted pods kept, a rule on the node's room or its GPUs
    breaks, and then every placement of a job whose gang is not bound without them."""
    if not plan.evictions or not plan.placements:
        return plan
    kept_evicted = Context(instance, Plan(placements=plan.placements))
    targets = {p.node for p in plan.placements}
    full = {o for check in _ROOM for v in check(kept_evicted) for o in v.objects if o in targets}
    if not full:
        return plan
    placements = [p for p in plan.placements if p.node not in full]
    evicted = {e.pod for e in plan.evictions}
    short = set()
    for key in {instance.pod_by_key[p.pod].job for p in plan.placements if p.node in full}:
        job = instance.job_by_key[key]
        bound = sum(1 for pod in job.pods if pod.running and pod.key not in evicted)
        placed = sum(1 for p in placements if instance.pod_by_key[p.pod].job == key)
        if bound + placed < max(job.min_available, 1):
            short.add(key)
    kept = tuple(p for p in placements if instance.pod_by_key[p.pod].job not in short)
    return plan.replace(placements=kept)
