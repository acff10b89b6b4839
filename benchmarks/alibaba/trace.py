"""The typical-task mix of a trace's task list, as the arrays FGD and the metric read (§4.9)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optimizer.cpsat.fragmentation import COVERAGE, TypicalTask, mix_of, most_common
from optimizer.trace_import import TraceTask


@dataclass(frozen=True)
class Typical:
    """The typical-task mix as arrays: one column per spec m."""

    cpu: np.ndarray
    milli: np.ndarray
    count: np.ndarray
    allowed: np.ndarray
    """``allowed[m, model]``: whether spec m may use a node of that model index."""
    gpu: np.ndarray
    """Whether spec m asks for GPUs; CPU-only specs count every free milli as fragment."""
    weight: np.ndarray
    """p_m, renormalised to sum to 1."""


def typical_tasks(
    tasks: Sequence[TraceTask], models: Sequence[str], coverage: float = COVERAGE
) -> Typical:
    """The most common specs until they cover ``coverage`` of the tasks, renormalised (the
    rule of :func:`optimizer.cpsat.fragmentation.most_common`; on ``default`` the 35th and 36th
    specs have different counts, 31 and 29, so the tie order does not matter there)."""
    kept = most_common((t.spec for t in tasks), coverage)
    total = sum(n for _, n in kept)
    model_index = {m: i for i, m in enumerate(models)}
    allowed = np.ones((len(kept), len(models)), dtype=bool)
    for j, ((_, _, _, names), _) in enumerate(kept):
        if names:
            allowed[j, :] = False
            for name in names:
                if name in model_index:
                    allowed[j, model_index[name]] = True
    return Typical(
        cpu=np.array([s[0] for s, _ in kept], dtype=np.int64),
        milli=np.array([s[1] for s, _ in kept], dtype=np.int64),
        count=np.array([s[2] for s, _ in kept], dtype=np.int64),
        allowed=allowed,
        gpu=np.array([s[2] > 0 for s, _ in kept], dtype=bool),
        weight=np.array([n / total for _, n in kept], dtype=np.float64),
    )


def engine_mix(tasks: Sequence[TraceTask], coverage: float = COVERAGE) -> tuple[TypicalTask, ...]:
    """The same mix for vcopt's fragmentation stage: models become the device types the
    import gives them (``NVIDIA-<model>``), matched as substrings."""
    return mix_of(most_common((t.spec for t in tasks), coverage))
