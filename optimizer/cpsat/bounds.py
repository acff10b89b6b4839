"""What a search proved about each objective stage, for the plan the report is about.

One gap on the first stage (or on the weighted sum) says little when the stage that is still
open comes last: in a weighted solve the work stage dominates the sum, so its gap reads 0.00 %
while most of the fragmentation value may be unproven. Each stage's bound here is the most
that stage can reach among the plans no worse on the stages before it — the question a
lexicographic objective asks of each stage.

A staged search proves that directly: each stage's solve runs with the stages before it held
at the values they reached, so its bound holds for a plan only while the plan is at least that
good on them. A weighted search proves one bound on the sum; as each stage's scale exceeds the
span of every stage after it, the sum's slack over a plan, divided by a stage's scale and
rounded up, caps what that stage can gain while the stages before it lose nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from .model.objective import StageValues


@dataclass(frozen=True)
class StageBounds:
    order: tuple[str, ...]
    """The active stages, first priority first."""
    proved: Mapping[str, float] = field(default_factory=dict)
    """Staged search: CP-SAT's bound of each stage it ran (its value where proved optimal)."""
    held: Mapping[str, int] = field(default_factory=dict)
    """Staged search: the value each stage was held at (at least) for the stages after it."""
    weighted: float | None = None
    """Weighted search: CP-SAT's bound on the weighted sum (an exact int where optimal)."""
    scales: Mapping[str, int] = field(default_factory=dict)
    """Weighted search: each summed stage's multiplier."""

    def for_plan(self, values: StageValues) -> dict[str, float]:
        """Each stage's bound that applies to a plan (within the model) with these values."""
        if self.weighted is not None:
            return self._weighted(values)
        out: dict[str, float] = {}
        for stage in self.order:
            if stage in self.proved:
                out[stage] = float(self.proved[stage])
            if stage in self.held and getattr(values, stage) < self.held[stage]:
                break
        return out

    def _weighted(self, values: StageValues) -> dict[str, float]:
        bound = _integer_bound(self.weighted)
        score = sum(scale * getattr(values, s) for s, scale in self.scales.items())
        slack = max(0, bound - score)
        return {
            s: float(getattr(values, s) + -(-slack // scale)) for s, scale in self.scales.items()
        }


def _integer_bound(bound: float | int | None) -> int:
    """The sum's bound as the integer it is: CP-SAT returns a double, exact up to 2^53; above
    that (weighted sums reach 2^62) one ulp up keeps it a bound."""
    assert bound is not None
    if isinstance(bound, int):
        return bound
    if abs(bound) <= 2**53:
        return math.ceil(bound)
    return math.ceil(bound + math.ulp(bound))
