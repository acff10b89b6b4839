"""The user's wall clock for one solve, shared out among its phases.

``--time-limit`` is a promise about the whole run (greedy baseline, compile, hint, search,
expansion to nodes and devices, verification), so every phase asks one :class:`Budget` how
much is left instead of keeping its own timer. The clock is injectable: the phase arithmetic
is tested with a fake clock, end-to-end wall times belong to the benchmarks.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

Clock = Callable[[], float]

MIN_SEARCH = 0.2
"""Below this many seconds a CP-SAT search cannot even load a large model: skip it."""
MAX_START_UP = 60.0
"""A process older than this when vcopt starts was not started for this run (vcopt called
from a long-lived program): its age is not the user's wait."""
TAIL_FLOOR = 0.05
"""Share of the limit always kept for the phases after the search."""


def process_started() -> float:
    """``time.perf_counter()``'s reading at the moment this process started (Linux ``/proc``;
    elsewhere, now): the interpreter's start-up and imports take about a second before any
    vcopt code runs, and the user's wall clock includes them."""
    try:
        with open("/proc/self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as up:
            uptime = float(up.read().split()[0])
        age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.perf_counter()
    return time.perf_counter() - (age if 0.0 < age <= MAX_START_UP else 0.0)


class TimeUp(Exception):
    """The budget ran out in a phase that cannot return a partial result (compiling)."""


class Budget:
    """Seconds left of ``limit`` since the budget was created (or since ``started``)."""

    def __init__(
        self, limit: float, clock: Clock = time.perf_counter, started: float | None = None
    ):
        self.limit = limit
        self.clock = clock
        self.started = clock() if started is None else started

    def elapsed(self) -> float:
        return self.clock() - self.started

    def remaining(self) -> float:
        return max(0.0, self.limit - self.elapsed())

    def check(self, keep: float) -> None:
        """Raise :class:`TimeUp` when less than ``keep`` seconds are left."""
        if self.remaining() < keep:
            raise TimeUp

    def search_seconds(self, tail: float) -> float:
        """Seconds the search may use now, keeping ``tail`` seconds (the estimated cost of
        expanding and verifying the result) and a small share of the limit in hand; 0 when
        that leaves too little for a search to be worth starting."""
        keep = max(tail, TAIL_FLOOR * self.limit)
        left = self.remaining() - keep
        return left if left >= MIN_SEARCH else 0.0

    def share(self, seconds: float, weights: list[float], position: int) -> float:
        """The part of ``seconds`` for phase ``position`` of phases weighted ``weights``, when
        the earlier phases are done: what they left over is shared among the rest."""
        rest = sum(weights[position:])
        return seconds * weights[position] / rest if rest > 0 else 0.0
