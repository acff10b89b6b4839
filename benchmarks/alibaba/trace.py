"""The typical-task mix of a trace's task list (fgd-benchmark.md §4 step 9), the one FGD, the
fragmentation metric and vcopt's fragmentation stage all read."""

from __future__ import annotations

from collections.abc import Sequence

from models.fragmentation import COVERAGE, TypicalTask, mix_of, most_common
from optimizer.trace_import import TraceTask


def trace_mix(tasks: Sequence[TraceTask], coverage: float = COVERAGE) -> tuple[TypicalTask, ...]:
    """The most common specs until they cover ``coverage`` of the tasks, renormalised (on
    ``default`` the 35th and 36th specs have different counts, 31 and 29, so the tie order
    does not matter there). A spec's models are its device types: the simulator's devices
    have their model's name, the imported instance's ``NVIDIA-<model>``, and types match as
    substrings, so both read one mix (the seven model names are not substrings of one
    another)."""
    return mix_of(most_common((t.spec for t in tasks), coverage))
