"""What a solve returns: how the engine's search ended (one vocabulary for both engines and
the plan files), and the typed result of a solve — plan, solver facts and metrics."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .metrics import Metrics
    from .plan import Plan, SolverInfo


class Status(StrEnum):
    """The status a plan reports in ``solver.status``.

    CP-SAT's own outcomes keep CP-SAT's names; ``HEURISTIC`` is the greedy engine (no bound);
    ``INTERRUPTED`` is a search the user stopped, whose best verified plan so far is returned;
    ``TIME_UP`` is a solve whose budget was spent before CP-SAT could start (the greedy
    baseline or the compile took it all).
    """

    OPTIMAL = "OPTIMAL"
    FEASIBLE = "FEASIBLE"
    INFEASIBLE = "INFEASIBLE"
    MODEL_INVALID = "MODEL_INVALID"
    UNKNOWN = "UNKNOWN"
    HEURISTIC = "HEURISTIC"
    INTERRUPTED = "INTERRUPTED"
    TIME_UP = "TIME_UP"

    @classmethod
    def parse(cls, text: str) -> Status:
        """A status read back from a plan file; older files appended text after the name."""
        head = text.split(" ", 1)[0].strip().upper() if text else ""
        try:
            return cls(head)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True)
class Result:
    """One engine's answer for one snapshot (``optimizer.solve.solve_result``): the plan, the
    facts of its search and its metrics as typed fields, where the plan file and
    ``Plan.metrics`` hold them as a mapping for YAML and JSON."""

    plan: Plan
    metrics: Metrics

    @property
    def solver(self) -> SolverInfo | None:
        return self.plan.solver

    @property
    def status(self) -> Status:
        """The search's status; a plan without solver facts (written by hand) is a heuristic."""
        return self.plan.solver.status if self.plan.solver else Status.HEURISTIC

    def summary(self) -> str:
        """A few lines a person reads first: status, time and gap; jobs and pods; GPUs."""
        m, solver = self.metrics, self.plan.solver
        head = f"{self.plan.engine} plan for {self.plan.instance}: {self.status}"
        if solver is not None and solver.wall_seconds:
            head += f" in {solver.wall_seconds:.1f} s"
        if solver is not None and solver.gap is not None:
            head += f", gap {solver.gap:.2%}"
        return "\n".join(
            [
                head,
                f"  jobs: {m.jobs_admitted} admitted, {m.jobs_running} running, "
                f"{m.jobs_pending} pending",
                f"  pods: {m.pods_placed} placed, {m.pods_pipelined} pipelined, "
                f"{m.evictions} evicted",
                f"  GPUs: {m.gpu_allocated:,.1f} of {m.gpu_total:,} allocated "
                f"({m.gpu_allocation_ratio:.1%}), {m.gpus_partially_used} partly used, "
                f"fragmentation {m.fragmentation_rate:.1%} of the free GPU",
            ]
        )

    def __str__(self) -> str:
        return self.summary()
