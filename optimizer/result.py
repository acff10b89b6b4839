"""How an engine's search ended, as one vocabulary for both engines and the plan files."""

from __future__ import annotations

from enum import StrEnum


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
