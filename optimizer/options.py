"""What a user chooses for one solve, whichever engine runs it.

The same options drive ``vcopt solve``, ``compare``, the what-if API and the benchmarks, so
they are checked once, here: a value no engine could honour (a negative time limit, a gap of
5, a seed CP-SAT cannot take) is refused with the option's name before any work starts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from models.errors import shown_value

if TYPE_CHECKING:
    from models.fragmentation import TypicalTask

    from .plan import Plan

STAGES = ("work", "fairness", "topology", "packing")
"""The objective stages on by default, in their lexicographic order (DESIGN §5)."""
ALL_STAGES = ("work", "fairness", "topology", "fragmentation", "packing")
"""Every stage in lexicographic order: ``fragmentation`` (FGD's expected fragmentation against
a typical-task mix) is off unless given a weight, and ranks after the rules' stages (it judges
the future, they the snapshot) and before packing (fewer GPUs opened is a tie-break, and one
that fragmentation-aware placement contradicts: it opens a whole device rather than spoil one)."""
DEFAULT_WEIGHTS = {"fragmentation": 0}
OBJECTIVES = ("lexicographic", "weighted")
STRATEGIES = ("auto", "monolithic", "decompose")
MAX_SEED = 2**31 - 1
"""CP-SAT's ``random_seed`` is an int32."""
MAX_WEIGHT = 10**6
"""Weights multiply stage scales that already fill most of int64; larger ones cannot fit."""
MAX_WORKERS = 256


class OptionError(ValueError):
    """An option value no engine can honour; ``option`` names it as the user spelled it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option
        self.message = message


@dataclass(frozen=True)
class SolveOptions:
    time_limit: float = 30.0
    """Wall-clock seconds for the whole solve, every phase in: the greedy baseline, compiling
    the model, hinting, searching, expanding the plan to nodes and devices, verifying it."""
    workers: int = 2
    seed: int = 0
    """Seeds greedy's random tie-breaks and CP-SAT's search."""
    deterministic: bool = False
    """Reproducible CP-SAT search: interleaved workers, fixed seed, deterministic budgets."""
    gap: float = 0.0
    """Stop a stage when its relative gap falls below this (0 = prove optimality)."""
    objective: str = "lexicographic"
    """``lexicographic`` (sequential solves) or ``weighted`` (one solve of a weighted sum)."""
    weights: Mapping[str, int] = field(default_factory=dict)
    """Per-stage weights (default 1); 0 switches a stage off. In weighted mode each stage is
    also scaled so that it dominates the stages after it, and the weight multiplies that."""
    strategy: str = "auto"
    """``monolithic`` solves one model of the whole snapshot; ``decompose`` solves it part by
    part and then improves it by large-neighbourhood rounds; ``auto`` picks from the size of
    the compiled model."""
    tdm_lookahead: bool = False
    """Keep jobs off revocable nodes whose window closes before the job's ``duration`` ends."""
    quiet: bool = False
    reasons: bool = True
    """Name the dominant reason of each job a CP-SAT plan leaves pending. That takes up to a
    tenth of the limit, kept back from the search; a caller that only wants the placements (a
    replay, a loop of solves) gives it to the search, and pending jobs keep the engine's own
    short reason (Volcano's message when the plan is greedy's)."""
    bound: bool = True
    """Prove a bound on the first stage, and so report a gap: one CP-SAT worker solves the whole
    model with its LP relaxation. ``False`` gives that worker to large-neighbourhood search
    too (``use_lns_only``): no bound, no gap, and more improvement of a complete start within
    one solve. Over a loop of solves that gain need not last: the trace replay saved more
    fragmentation per batch and placed less in the end (docs/BENCHMARKS.md)."""
    aggregate: bool = True
    """Count pods per class of interchangeable nodes (exact, and what makes large clusters
    solvable); ``False`` gives every node its own class, for checking the reduction."""
    parameters: Mapping[str, object] = field(default_factory=dict)
    """Raw CP-SAT parameters applied last, e.g. ``{"log_search_progress": True}``."""
    max_evictions: int | None = None
    """At most this many running pods evicted by a CP-SAT plan (None: no cap). Volcano has no
    such cap, so the greedy plan ignores it and the breach is reported."""
    queue_eviction_budgets: Mapping[str, int] = field(default_factory=dict)
    """Per queue, at most this many of the pods its quota carries (its subtree, hierarchically)
    evicted by a CP-SAT plan."""
    typical_mix: tuple[TypicalTask, ...] | None = None
    """The typical-task mix of the fragmentation stage; None: the instance's own pods."""
    start: Plan | None = None
    """A plan for the same instance to start CP-SAT from — the plan in force, an earlier
    solve's, another scheduler's: when it verifies, keeps to the disruption caps and scores
    above greedy's, it replaces greedy's as the search's hint and the result's floor."""

    def __post_init__(self) -> None:
        if not math.isfinite(self.time_limit) or self.time_limit <= 0:
            raise OptionError(
                "--time-limit", f"must be a positive number of seconds, got {self.time_limit}"
            )
        if not 1 <= self.workers <= MAX_WORKERS:
            raise OptionError(
                "--workers", f"must be between 1 and {MAX_WORKERS}, got {self.workers}"
            )
        if not 0 <= self.seed <= MAX_SEED:
            raise OptionError("--seed", f"must be between 0 and {MAX_SEED}, got {self.seed}")
        if not (math.isfinite(self.gap) and 0 <= self.gap <= 1):
            raise OptionError("--gap", f"must be a relative gap between 0 and 1, got {self.gap}")
        if self.objective not in OBJECTIVES:
            raise OptionError("--objective", f"must be one of {', '.join(OBJECTIVES)}")
        if self.strategy not in STRATEGIES:
            raise OptionError("--strategy", f"must be one of {', '.join(STRATEGIES)}")
        for stage, weight in self.weights.items():
            if stage not in ALL_STAGES:
                raise OptionError(
                    "--weights", f"unknown stage {stage!r} (stages: {', '.join(ALL_STAGES)})"
                )
            if isinstance(weight, bool) or not isinstance(weight, int):
                raise OptionError("--weights", f"{stage}: expected an integer, got {weight!r}")
            if not 0 <= weight <= MAX_WEIGHT:
                raise OptionError(
                    "--weights", f"{stage}: must be between 0 and {MAX_WEIGHT}, got {weight}"
                )

        self._check_eviction_caps()

    def _check_eviction_caps(self) -> None:
        cap = self.max_evictions
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
            raise OptionError("--max-evictions", f"must be a non-negative integer, got {cap}")
        for queue, budget in self.queue_eviction_budgets.items():
            if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
                raise OptionError(
                    "--queue-eviction-budget",
                    f"{queue}: must be a non-negative integer, got {budget!r}",
                )

    def weight(self, stage: str) -> int:
        return self.weights.get(stage, DEFAULT_WEIGHTS.get(stage, 1))

    @property
    def active_stages(self) -> list[str]:
        """The stages the objective keeps, in order."""
        return [s for s in ALL_STAGES if self.weight(s) != 0]


def parse_weights(text: str) -> dict[str, int]:
    """``work=1,packing=0`` as a mapping; raises :class:`OptionError` naming ``--weights``."""
    weights: dict[str, int] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not value.isdigit() or len(value) > 7:
            raise OptionError("--weights", f"expected stage=integer, got {item.strip()!r}")
        if name in weights:
            raise OptionError("--weights", f"stage {name!r} is given twice")
        weights[name] = int(value)
    return weights


def parse_queue_budgets(text: str) -> dict[str, int]:
    """``team-a=2,team-b=0`` as a mapping; raises :class:`OptionError` naming
    ``--queue-eviction-budget``."""
    budgets: dict[str, int] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value.isascii() or not value.isdigit() or len(value) > 9:
            raise OptionError(
                "--queue-eviction-budget",
                f"expected queue=integer, got {shown_value(item.strip())}",
            )
        if name in budgets:
            raise OptionError(
                "--queue-eviction-budget", f"queue {shown_value(name)} is given twice"
            )
        budgets[name] = int(value)
    return budgets
