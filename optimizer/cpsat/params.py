"""Solver options and the CP-SAT parameters they translate to (spec/cpsat-practice.md B.6–B.10)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

LARGE_MODEL = 10_000
"""Above this many variables presolve is kept light: with a complete greedy hint, probing and
symmetry detection cost more than they return on 2 cores (cpsat-practice B.10). Measured on a
200-node, 33 k-variable instance: default presolve spent the whole 8 s of the first stage
(probing alone 6.5 s) and returned nothing; light presolve improved on greedy in every stage."""


@dataclass(frozen=True)
class SolveOptions:
    time_limit: float = 30.0
    """Wall-clock budget in seconds for building and solving all stages together (with
    ``deterministic``, the deterministic-time budget of the solves)."""
    workers: int = 2
    seed: int = 0
    deterministic: bool = False
    """Reproducible search: interleaved workers, fixed seed, a deterministic time budget."""
    gap: float = 0.0
    """Stop when the relative gap of the current stage falls below this."""
    objective: str = "lexicographic"
    """``lexicographic`` (sequential solves) or ``weighted`` (one solve of a weighted sum)."""
    weights: Mapping[str, int] = field(default_factory=dict)
    """Per-stage weights (default 1); 0 switches a stage off. In weighted mode each stage is
    also scaled so that it dominates the stages after it, and the weight multiplies that."""
    tdm_lookahead: bool = False
    """Keep jobs off revocable nodes whose window closes before the job's ``duration`` ends."""
    quiet: bool = False
    parameters: Mapping[str, object] = field(default_factory=dict)
    """Raw CP-SAT parameters applied last, e.g. ``{"log_search_progress": True}``."""


def parameters(
    solver: cp_model.CpSolver, options: SolveOptions, seconds: float, num_vars: int
) -> None:
    p = solver.parameters
    p.num_workers = max(1, options.workers)
    p.random_seed = options.seed
    p.relative_gap_limit = options.gap
    if options.deterministic:
        p.interleave_search = True
        p.max_deterministic_time = max(seconds, 0.01)
        p.max_time_in_seconds = 4 * max(seconds, 0.1) + 10
    else:
        p.max_time_in_seconds = max(seconds, 0.001)
    if num_vars > LARGE_MODEL:
        p.cp_model_probing_level = 0
        p.max_presolve_iterations = 1
        p.symmetry_level = 0
    for name, value in options.parameters.items():
        setattr(p, name, value)
