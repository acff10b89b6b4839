"""What a person watching a long solve sees on standard error.

On a terminal one live status line (rich) shows the phase, elapsed time against the limit, the
best objective of the current stage against the greedy plan's, the bound and the gap. When
standard error is not a terminal (a CI log, a pipe) a plain line is printed instead, on a
phase change or a new solution, at most one every ``VCOPT_PROGRESS_INTERVAL`` seconds (5 by
default; 0 prints every one), so logs stay readable. ``--quiet`` prints nothing.

Reports come from CP-SAT's solution callbacks, which run on a solver thread: every method only
records numbers and, at most a few times a second, writes one line.

``VCOPT_PAUSE_AT`` is a test hook (inert when unset): see :func:`pause_if_asked`.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.text import Text

PLAIN_INTERVAL = 5.0
INTERVAL_VARIABLE = "VCOPT_PROGRESS_INTERVAL"
PAUSE_VARIABLE = "VCOPT_PAUSE_AT"


@dataclass
class _State:
    phase: str = "starting"
    detail: str = ""
    objective: float | None = None
    bound: float | None = None
    baseline: float | None = None


class Progress:
    """Silent by default; subclasses decide how the state is shown."""

    def __init__(self, limit: float | None = None) -> None:
        self.limit = limit
        self.started = time.perf_counter()
        self.state = _State()
        self._lock = threading.Lock()

    def phase(self, name: str, detail: str = "", baseline: float | None = None) -> None:
        """A new phase starts (``greedy``, ``compile``, ``stage work (1/4)``, ``LNS round 3``,
        ``expand``, ``verify``); ``baseline`` is the greedy plan's value of what it optimises."""
        with self._lock:
            self.state = _State(name, detail, baseline=baseline)
        self._show(force=True)
        pause_if_asked(name)

    def solution(self, objective: float, bound: float) -> None:
        with self._lock:
            self.state.objective, self.state.bound = objective, bound
        self._show(force=False)

    def close(self) -> None:
        """The solve is over; a live line is removed."""

    def _show(self, force: bool) -> None:
        del force

    def line(self) -> str:
        """The status as one line of text."""
        with self._lock:
            s = self.state
        elapsed = time.perf_counter() - self.started
        clock = f"{elapsed:.1f}s" + (f"/{self.limit:g}s" if self.limit else "")
        parts = [f"vcopt {clock}", s.phase + (f" {s.detail}" if s.detail else "")]
        if s.objective is not None:
            objective = f"best {s.objective + 0.0:,.0f}"
            if s.baseline is not None:
                delta = (s.objective - s.baseline) / max(1.0, abs(s.baseline))
                objective += f" ({delta:+.1%} vs greedy)"
            parts.append(objective)
        if s.bound is not None:
            parts.append(f"bound {s.bound + 0.0:,.0f}")
            if s.objective is not None:
                gap = abs(s.bound - s.objective) / max(1.0, abs(s.objective))
                parts.append(f"gap {gap:.2%}")
        return "  ".join(parts)


class PlainProgress(Progress):
    """A line at most every ``interval`` seconds (so a short solve prints nothing)."""

    def __init__(
        self, limit: float | None, stream: TextIO, interval: float = PLAIN_INTERVAL
    ) -> None:
        super().__init__(limit)
        self.stream = stream
        self.interval = interval
        self._last = self.started

    def _show(self, force: bool) -> None:
        del force
        now = time.perf_counter()
        if now - self._last < self.interval:
            return
        self._last = now
        print(self.line(), file=self.stream, flush=True)


class LiveProgress(Progress):
    """One status line redrawn in place on a terminal."""

    def __init__(self, limit: float | None, stream: TextIO) -> None:
        super().__init__(limit)
        self._live = Live(
            Text(""),
            console=Console(file=stream),
            refresh_per_second=4,
            transient=True,
            get_renderable=lambda: Text(self.line(), no_wrap=True, overflow="ellipsis"),
        )
        self._live.start()

    def close(self) -> None:
        self._live.stop()


def reporter(quiet: bool, limit: float | None, stream: TextIO | None = None) -> Progress:
    """The progress display for a command: none with ``--quiet``, a live line on a
    terminal, plain lines otherwise."""
    stream = stream or sys.stderr
    if quiet:
        return Progress(limit)
    if stream.isatty():
        return LiveProgress(limit, stream)
    return PlainProgress(limit, stream, plain_interval())


def plain_interval() -> float:
    """Seconds between plain lines: ``VCOPT_PROGRESS_INTERVAL`` when it is a number ≥ 0 (a log
    that should show every phase sets 0), else the default."""
    text = os.environ.get(INTERVAL_VARIABLE, "")
    try:
        value = float(text)
    except ValueError:
        return PLAIN_INTERVAL
    return value if 0 <= value < float("inf") else PLAIN_INTERVAL


def pause_if_asked(phase: str) -> None:
    """Test hook, inert unless ``VCOPT_PAUSE_AT`` is set: on entering a phase it names (a
    comma-separated list of exact names, e.g. ``stage work,expand``) the run prints
    ``vcopt paused at PHASE`` on stderr and waits until a signal handler raises (SIGINT,
    SIGTERM). A test then signals a run in exactly the phase it means, however fast or loaded
    the machine. Only on the main thread, the one Python runs signal handlers on."""
    names = os.environ.get(PAUSE_VARIABLE)
    if not names or phase not in names.split(","):
        return
    if threading.current_thread() is not threading.main_thread():
        return
    print(f"vcopt paused at {phase}", file=sys.stderr, flush=True)
    while True:
        signal.pause()
