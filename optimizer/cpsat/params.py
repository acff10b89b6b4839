"""The CP-SAT parameters a solve's options translate to (spec/cpsat-practice.md B.6–B.10)."""

from __future__ import annotations

from ortools.sat.python import cp_model

from ..options import SolveOptions

LARGE_MODEL = 10_000
"""Above this many variables presolve is kept light: with a complete greedy hint, probing and
symmetry detection cost more than they return on 2 cores (cpsat-practice B.10). Measured on a
200-node, 33 k-variable instance: default presolve spent the whole 8 s of the first stage
(probing alone 6.5 s) and returned nothing; light presolve improved on greedy in every stage."""
STEP_TERMS_PRESOLVE = False
"""Presolve on a model holding the fragmentation stage's step-wise terms (``frag_stage``):
off. OR-Tools 9.15's presolve loses the complete hint on them (its own
``debug_crash_if_presolve_breaks_hint`` check reports "Presolve broke a feasible hint") and the
search then starts from nothing. Measured on ``instances/alibaba-slice.yaml`` (no aggregation,
stage on, 8,956 variables, 2 workers): with presolve no solution in 3 s, one at 5 s; without,
the hint at once and a better solution at 5 s (1.8717e12 against 1.8579e12)."""
DETERMINISTIC_RATE = 0.5
"""Deterministic seconds granted per wall second in ``--deterministic`` mode: deterministic
time runs slower than the wall clock on 2 cores, so a budget of half the wall time ends
before the wall limit on a machine that is not heavily loaded (the wall limit stays as a
safety net, at the cost of reproducibility when it is reached)."""


def parameters(
    solver: cp_model.CpSolver,
    options: SolveOptions,
    seconds: float,
    num_vars: int,
    step_terms: bool = False,
) -> None:
    """``step_terms``: the model holds the fragmentation stage's per-device terms."""
    p = solver.parameters
    p.num_workers = options.search.workers
    p.random_seed = options.search.seed
    p.relative_gap_limit = options.search.gap
    p.max_time_in_seconds = max(seconds, 0.001)
    if options.search.deterministic:
        p.interleave_search = True
        p.max_deterministic_time = max(seconds * DETERMINISTIC_RATE, 0.01)
    if num_vars > LARGE_MODEL:
        p.cp_model_probing_level = 0
        p.max_presolve_iterations = 1
        p.symmetry_level = 0
    if step_terms:
        p.cp_model_presolve = STEP_TERMS_PRESOLVE
    if not options.search.bound:
        p.use_lns_only = True
    for name, value in options.search.parameters.items():
        setattr(p, name, value)
