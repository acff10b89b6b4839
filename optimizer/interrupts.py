"""How a run ends when the user stops it, as optimisation solvers behave.

The first Ctrl-C during a CP-SAT search stops only the search (``cpsat.search``): the best
verified plan so far is returned with status ``INTERRUPTED``. Ctrl-C anywhere else, a second
Ctrl-C, or SIGTERM ends the run at once: the command prints ``interrupted``, writes nothing
and exits 128 + the signal number (130, 143), as a shell reports a process killed by it.
SIGTERM is raised as :class:`Terminated`, which no ``except Exception`` and no search loop
catches, so it unwinds everything (temporary files of half-done writes are removed) on its way
to the command line.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

EXIT_SIGINT = 128 + signal.SIGINT
EXIT_SIGTERM = 128 + signal.SIGTERM


class Terminated(BaseException):
    """SIGTERM arrived."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def stopped(stop: BaseException) -> int:
    """Say ``interrupted`` and give the exit code for ``stop`` (KeyboardInterrupt or
    :class:`Terminated`), ignoring any further SIGINT or SIGTERM first: freeing a large model
    takes the interpreter a moment after ``main`` returns, and it puts the default handlers
    back as it finalises, so one more Ctrl-C in that moment would kill the process with the
    signal instead of letting it exit with the code reported here."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except ValueError:  # not the main thread: the signals are its owner's to handle
        pass
    print("interrupted", file=sys.stderr)
    return EXIT_SIGINT if isinstance(stop, KeyboardInterrupt) else EXIT_SIGTERM


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` inside the block (main thread only); the previous
    handler is put back after it, so a caller embedding the CLI keeps its own."""
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread: leave signals to whoever owns it
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
