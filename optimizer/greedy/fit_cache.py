"""Reuse of the allocate predicate's verdict on a node while nothing it reads has changed.

The node check of allocate (resource fit, every PredicateFn, device fit, spec §2.2) reads two
things: what the task asks of a node — its *fit shape* — and that node's own state, which
changes only through ``NodeInfo.add_task`` / ``remove_task`` (each bumps ``NodeInfo.version``).
Tasks of one shape therefore get the same verdict on a node of the same version, and scanning a
large cluster for every pod of a job does not re-run the filters on nodes nobody touched. The
verdict also says whether the task fits the node's *idle* resources (§2.4), which decides the
idle-fit / future-fit split and is read right after.

Hook for predicate plugins: a plugin that registers a ``predicate`` also registers a
``predicate_key`` function, ``key(task) -> Hashable | None``, returning everything its predicate
reads of the task. Return None when the verdict depends on more than the task and the node's own
state — pods placed on *other* nodes (inter-pod affinity, topology spread), a clock: that task's
nodes are then checked afresh every time. A plugin with a predicate and no key makes every task
uncheckable from the cache, so a new predicate is correct before it is fast. The key of a task
is computed once, at its first check, so it must not depend on anything that changes during the
session.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .api import NodeInfo, TaskInfo

if TYPE_CHECKING:
    from collections.abc import Callable

    from .session import FitFailure, Session

UNKNOWN = -1
"""``TaskInfo.fit_shape`` before the first check."""
UNCACHEABLE = -2
"""``TaskInfo.fit_shape`` of a task some predicate plugin declared uncacheable."""


@dataclass
class Verdict:
    """A node check's result: the failure (None: the node passes) and, for a passing node,
    whether the task fits its idle resources."""

    failure: FitFailure | None
    idle_fit: bool


@dataclass
class FitTable:
    """The verdicts of one fit shape, per node index, with the node version they hold for."""

    versions: list[int]
    verdicts: list[Verdict | None]


@dataclass
class FitCache:
    """Every fit shape of a session and its table (kept on the session)."""

    shapes: dict[Hashable, int] = field(default_factory=dict)
    tables: list[FitTable] = field(default_factory=list)


def fit_table(
    ssn: Session, task: TaskInfo, device_key: Callable[[TaskInfo], Hashable]
) -> FitTable | None:
    """The table of the task's fit shape, or None if the task is not cacheable.

    ``device_key`` gives what the device fit reads of the task (None for a task without GPU
    requests)."""
    shape = task.fit_shape
    cache = ssn.fit_cache
    if shape == UNKNOWN:
        keys = ssn.predicate_key(task)
        if keys is None:
            task.fit_shape = UNCACHEABLE
            return None
        key = (task.init_needs, device_key(task), keys)
        shape = cache.shapes.get(key)
        if shape is None:
            shape = cache.shapes[key] = len(cache.tables)
            count = len(ssn.node_list)
            cache.tables.append(FitTable([-1] * count, [None] * count))
        task.fit_shape = shape
    if shape == UNCACHEABLE:
        return None
    return cache.tables[shape]


def lookup(table: FitTable, node: NodeInfo) -> Verdict | None:
    """The verdict stored for ``node`` if it is still current."""
    i = node.index
    return table.verdicts[i] if table.versions[i] == node.version else None


def store(table: FitTable, node: NodeInfo, verdict: Verdict) -> Verdict:
    i = node.index
    table.versions[i] = node.version
    table.verdicts[i] = verdict
    return verdict
