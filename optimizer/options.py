"""What a user chooses for one solve, whichever engine runs it.

The same options drive ``vcopt solve``, ``compare``, the what-if API and the benchmarks, so
they are checked once, here: a value no engine could honour (a negative time limit, a gap of
5, a seed CP-SAT cannot take) is refused with the option's name before any work starts.
They come in three parts — how to search, what the objective values, how much disruption is
allowed — which is also the shape of a preset file (``optimizer.presets``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.errors import InputError, Problem, shown_value

from .presets import read_preset

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


FLAGS = {
    "time_limit": "--time-limit",
    "workers": "--workers",
    "seed": "--seed",
    "gap": "--gap",
    "strategy": "--strategy",
    "objective": "--objective",
    "weights": "--weights",
    "max_evictions": "--max-evictions",
    "queue_eviction_budgets": "--queue-eviction-budget",
    "dask": "--dask",
}
"""How the command line spells an option, by its flat name (as :meth:`SolveOptions.of` takes
it): a refused value is named the way the user gave it. Options no flag sets keep their name."""


class OptionError(ValueError):
    """An option value no engine can honour. ``name`` is the option's flat name (``time_limit``),
    ``option`` its command-line spelling (``--time-limit``): the command line reports the one,
    a preset file its ``table.key``, so each user reads the name they wrote."""

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        self.option = FLAGS.get(name, name)
        self.message = message
        super().__init__(f"{self.option}: {message}")


@dataclass(frozen=True)
class SearchOptions:
    """How the engines search: the clock, the threads, the seed, the CP-SAT strategy."""

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
    strategy: str = "auto"
    """``monolithic`` solves one model of the whole snapshot; ``decompose`` solves it part by
    part and then improves it by large-neighbourhood rounds; ``auto`` picks from the size of
    the compiled model."""
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
    dask: str | None = None
    """Address of a Dask scheduler that runs the decomposition rounds; None: in this process."""

    def __post_init__(self) -> None:
        if not math.isfinite(self.time_limit) or self.time_limit <= 0:
            raise OptionError(
                "time_limit", f"must be a positive number of seconds, got {self.time_limit}"
            )
        if not 1 <= self.workers <= MAX_WORKERS:
            raise OptionError("workers", f"must be between 1 and {MAX_WORKERS}, got {self.workers}")
        if not 0 <= self.seed <= MAX_SEED:
            raise OptionError("seed", f"must be between 0 and {MAX_SEED}, got {self.seed}")
        if not (math.isfinite(self.gap) and 0 <= self.gap <= 1):
            raise OptionError("gap", f"must be a relative gap between 0 and 1, got {self.gap}")
        if self.strategy not in STRATEGIES:
            raise OptionError("strategy", f"must be one of {', '.join(STRATEGIES)}")
        if self.dask is not None and (not isinstance(self.dask, str) or not self.dask.strip()):
            raise OptionError(
                "dask", f"must be a Dask scheduler's address, got {shown_value(self.dask)}"
            )


@dataclass(frozen=True)
class ObjectiveOptions:
    """What the CP-SAT objective values, and how its stages are combined."""

    kind: str = "lexicographic"
    """``lexicographic`` (sequential solves) or ``weighted`` (one solve of a weighted sum)."""
    weights: Mapping[str, int] = field(default_factory=dict)
    """Per-stage weights (default 1); 0 switches a stage off. In weighted mode each stage is
    also scaled so that it dominates the stages after it, and the weight multiplies that."""
    tdm_lookahead: bool = False
    """Keep jobs off revocable nodes whose window closes before the job's ``duration`` ends."""
    typical_mix: tuple[TypicalTask, ...] | None = None
    """The typical-task mix of the fragmentation stage; None: the instance's own pods."""

    def __post_init__(self) -> None:
        if self.kind not in OBJECTIVES:
            raise OptionError("objective", f"must be one of {', '.join(OBJECTIVES)}")
        for stage, weight in self.weights.items():
            if stage not in ALL_STAGES:
                raise OptionError(
                    "weights", f"unknown stage {stage!r} (stages: {', '.join(ALL_STAGES)})"
                )
            if isinstance(weight, bool) or not isinstance(weight, int):
                raise OptionError("weights", f"{stage}: expected an integer, got {weight!r}")
            if not 0 <= weight <= MAX_WEIGHT:
                raise OptionError(
                    "weights", f"{stage}: must be between 0 and {MAX_WEIGHT}, got {weight}"
                )

    def weight(self, stage: str) -> int:
        return self.weights.get(stage, DEFAULT_WEIGHTS.get(stage, 1))

    @property
    def active_stages(self) -> list[str]:
        """The stages the objective keeps, in order."""
        return [s for s in ALL_STAGES if self.weight(s) != 0]


@dataclass(frozen=True)
class DisruptionOptions:
    """How much of the running work a CP-SAT plan may evict. Volcano has no such cap, so the
    greedy plan ignores them and the breach is reported."""

    max_evictions: int | None = None
    """At most this many running pods evicted by a CP-SAT plan (None: no cap)."""
    queue_eviction_budgets: Mapping[str, int] = field(default_factory=dict)
    """Per queue, at most this many of the pods its quota carries (its subtree, hierarchically)
    evicted by a CP-SAT plan."""

    def __post_init__(self) -> None:
        cap = self.max_evictions
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
            raise OptionError("max_evictions", f"must be a non-negative integer, got {cap}")
        for queue, budget in self.queue_eviction_budgets.items():
            if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
                raise OptionError(
                    "queue_eviction_budgets",
                    f"{queue}: must be a non-negative integer, got {budget!r}",
                )


PARTS = {"search": SearchOptions, "objective": ObjectiveOptions, "disruption": DisruptionOptions}
"""The parts of :class:`SolveOptions`, by attribute (and by table of a preset file)."""
RENAMED = {("objective", "kind"): "objective"}
"""Fields whose flat name is not their own: the objective's ``kind`` is ``--objective``."""
ROUTES = {
    RENAMED.get((part, f.name), f.name): (part, f.name)
    for part, cls in PARTS.items()
    for f in fields(cls)
}
"""Flat option name → (part, field): the names :meth:`SolveOptions.of` takes, one per field."""


@dataclass(frozen=True)
class SolveOptions:
    """What the engines are asked for, in three parts that each check their own values; what a
    command shows or prints (progress, pending reasons) is the command's, not the engine's."""

    search: SearchOptions = field(default_factory=SearchOptions)
    objective: ObjectiveOptions = field(default_factory=ObjectiveOptions)
    disruption: DisruptionOptions = field(default_factory=DisruptionOptions)
    start: Plan | None = None
    """A plan for the same instance to start CP-SAT from — the plan in force, an earlier
    solve's, another scheduler's: when it verifies, keeps to the disruption caps and scores
    above greedy's, it replaces greedy's as the search's hint and the result's floor."""

    @classmethod
    def of(cls, **flat: Any) -> SolveOptions:
        """Options from flat names (``time_limit=5, max_evictions=0, objective="weighted"``),
        each routed to its part; a caller that sets a few options need not know the parts."""
        return cls()._routed("of", flat)

    def replaced(self, **flat: Any) -> SolveOptions:
        """A copy with the options named flat (as :meth:`of` takes them) changed."""
        return self._routed("replaced", flat)

    @classmethod
    def from_toml(cls, path: str | Path) -> SolveOptions:
        """The options of a preset file (tables ``[search]``, ``[objective]``,
        ``[disruption]``); a problem in it is an ``InputError`` naming the file and the key."""
        file = str(path)
        tables = read_preset(path)
        try:
            return cls(**{table: PARTS[table](**values) for table, values in tables.items()})
        except OptionError as err:
            table, key = ROUTES[err.name]
            raise InputError([Problem(err.message, field=f"{table}.{key}", file=file)]) from None

    def _routed(self, method: str, flat: Mapping[str, Any]) -> SolveOptions:
        changes: dict[str, dict[str, Any]] = {}
        top: dict[str, Any] = {}
        for name, value in flat.items():
            if name == "start":
                top[name] = value
            elif name in ROUTES:
                part, key = ROUTES[name]
                changes.setdefault(part, {})[key] = value
            else:
                raise TypeError(
                    f"SolveOptions.{method}() got an unexpected keyword argument {name!r}"
                )
        for part, values in changes.items():
            top[part] = replace(getattr(self, part), **values)
        return replace(self, **top)


def parse_weights(text: str) -> dict[str, int]:
    """``work=1,packing=0`` as a mapping; raises :class:`OptionError` naming ``--weights``."""
    weights: dict[str, int] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not value.isdigit() or len(value) > 7:
            raise OptionError("weights", f"expected stage=integer, got {item.strip()!r}")
        if name in weights:
            raise OptionError("weights", f"stage {name!r} is given twice")
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
                "queue_eviction_budgets",
                f"expected queue=integer, got {shown_value(item.strip())}",
            )
        if name in budgets:
            raise OptionError("queue_eviction_budgets", f"queue {shown_value(name)} is given twice")
        budgets[name] = int(value)
    return budgets
