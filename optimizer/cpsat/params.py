"""Solver options and the CP-SAT parameters they translate to (spec/cpsat-practice.md B.6–B.10)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

LARGE_MODEL = 50_000
"""Above this many variables presolve is kept light: with a complete greedy hint, probing and
symmetry detection cost more than they return on 2 cores (cpsat-practice B.10)."""


@dataclass(frozen=True)
class SolveOptions:
    time_limit: float = 30.0
    workers: int = 2
    seed: int = 0
    deterministic: bool = False
    """Reproducible search: interleaved workers, fixed seed, deterministic time budget."""
    gap: float = 0.0
    """Stop when the relative gap of the current stage falls below this."""
    objective: str = "lexicographic"
    """``lexicographic`` (sequential solves) or ``weighted`` (one solve of a weighted sum)."""
    weights: dict[str, int] = field(default_factory=dict)
    """Per-stage weights; 0 switches a stage off. In weighted mode the defaults are chosen so
    that each stage dominates the next."""
    tdm_lookahead: bool = False
    """Keep jobs off revocable nodes whose window closes before the job's ``duration`` ends."""
    quiet: bool = False


def parameters(
    solver: cp_model.CpSolver, options: SolveOptions, seconds: float, num_vars: int
) -> None:
    p = solver.parameters
    p.num_workers = max(1, options.workers)
    p.random_seed = options.seed
    p.relative_gap_limit = options.gap
    if options.deterministic:
        p.interleave_search = True
        p.max_deterministic_time = max(seconds, 0.1)
        p.max_time_in_seconds = 4 * max(seconds, 0.1) + 10
    else:
        p.max_time_in_seconds = max(seconds, 0.05)
    if num_vars > LARGE_MODEL:
        p.cp_model_probing_level = 0
        p.max_presolve_iterations = 1
        p.symmetry_level = 0
