"""What a CP-SAT plan gives up against the floor: said in the plan, refused when it is a
sub-percent work edge bought with both jobs and GPUs."""

from __future__ import annotations

from dataclasses import MISSING, fields, replace

import pytest

from optimizer.cpsat.engine import MIN_TRADE_EDGE, _Trade
from optimizer.metrics import Metrics


def _metrics(jobs: int, gpus: float, evictions: int = 0) -> Metrics:
    required = {f.name: 0 for f in fields(Metrics) if f.default is MISSING}
    base = Metrics(**required)
    return replace(base, jobs_admitted=jobs, gpu_allocated=gpus, evictions=evictions)


@pytest.mark.parametrize(
    ("plan", "edge", "refused"),
    [
        # Fewer jobs and fewer GPUs for 0.5 % more work: not worth it.
        ((8, 30.0), 0.005, True),
        # The same losses for 1 % (the threshold) or more: the user asked for work first.
        ((8, 30.0), MIN_TRADE_EDGE, False),
        ((8, 30.0), 0.04, False),
        # Fewer jobs but more GPUs: the plan packs bigger jobs, which is allowed.
        ((8, 34.0), 0.001, False),
        # As many jobs, fewer GPUs: not a trade of jobs at all.
        ((10, 30.0), 0.001, False),
    ],
)
def test_refused_only_when_jobs_and_gpus_both_drop_for_little_work(
    plan: tuple[int, float], edge: float, refused: bool
) -> None:
    trade = _Trade(_metrics(10, 32.0), _metrics(*plan), edge)
    assert trade.refused is refused


def test_the_trade_reads_in_a_users_units() -> None:
    trade = _Trade(_metrics(10, 32.0, 1), _metrics(7, 33.5, 3), 0.024)
    assert trade.text("greedy") == (
        "vs greedy: −3 jobs, +1.5 GPUs, +2 evictions, +2.40% priority-weighted work"
    )
    assert "below 1%" in trade.refusal("greedy")
