"""Reuse of the allocate predicate's verdict on a node while nothing it reads has changed.

The node check of allocate (resource fit, every PredicateFn, device fit, spec §2.2) reads two
things: what the task asks of a node — its *fit shape* — and that node's own state, which
changes only through ``NodeInfo.touch`` (task added or removed, devices booked or released),
which bumps ``NodeInfo.version`` and logs the node in the session's change log. Tasks of one
shape therefore get the same verdict on a node of the same version, and scanning a large cluster
for every pod of a job does not re-run the filters on nodes nobody touched. The verdict also
says whether the task fits the node's *idle* resources (§2.4), which decides the idle-fit /
future-fit split and is read right after.

A shape scanned often also gets its verdicts on *every* node as an array (:class:`DenseFits`),
brought up to date from the change log before each scan, so that a scan picks its first K
feasible nodes with array operations instead of a loop over nodes. Failures are interned: the
array holds each node's failure number (−1: it passes).

Hook for predicate plugins: a plugin that registers a ``predicate`` also registers a
``predicate_key`` function, ``key(task) -> Hashable | None``, returning everything its predicate
reads of the task. Return None when the verdict depends on more than the task and the node's own
state — pods placed on *other* nodes (inter-pod affinity, topology spread), a clock: that task's
nodes are then checked afresh every time. A plugin with a predicate and no key makes every task
uncacheable, so a new predicate is correct before it is fast. The key of a task is computed
once, at its first check, so it must not depend on anything that changes during the session.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .api import NodeInfo, TaskInfo

if TYPE_CHECKING:
    from .session import FitFailure, Session

UNKNOWN = -1
"""``TaskInfo.fit_shape`` before the first check."""
UNCACHEABLE = -2
"""``TaskInfo.fit_shape`` of a task some predicate plugin declared uncacheable."""
PASSES = -1
"""The failure number of a node that passes."""


@dataclass
class Verdict:
    """A node check's result: the failure (None: the node passes) and, for a passing node,
    whether the task fits its idle resources."""

    failure: FitFailure | None
    idle_fit: bool


@dataclass
class DenseFits:
    """Every node's verdict for one shape, current as of position ``synced`` of the log."""

    failures: np.ndarray
    """Failure number per node index (``PASSES`` if it passes)."""
    synced: int


@dataclass
class FitTable:
    """The verdicts of one fit shape by node index, each with the node version it holds for.
    Only nodes checked for the shape have one, so that thousands of one-pod shapes do not each
    cost a list of every node. Each node also keeps its verdict for the version before: a dry
    run that is discarded gives the node its earlier version back (``Session.undo``), whose
    verdict then still holds."""

    current: dict[int, tuple[int, Verdict]] = field(default_factory=dict)
    earlier: dict[int, tuple[int, Verdict]] = field(default_factory=dict)
    visited: int = 0
    """Nodes checked one by one for this shape so far (node-by-node scans)."""
    dense: DenseFits | None = None


@dataclass
class FitCache:
    """Every fit shape of a session and its table, and the interned failures."""

    shapes: dict[Hashable, int] = field(default_factory=dict)
    tables: list[FitTable] = field(default_factory=list)
    failures: list[FitFailure] = field(default_factory=list)
    numbers: dict[FitFailure, int] = field(default_factory=dict)
    _mask: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    _mask_plugin: str = ""

    def plugin_mask(self, plugin: str) -> np.ndarray:
        """Per failure number, whether ``plugin`` reported it (summaries group the device
        fit's failures, which name their node); extended for the failures added since the
        last call."""
        if self._mask_plugin != plugin:
            self._mask, self._mask_plugin = np.zeros(0, dtype=bool), plugin
        done = len(self._mask)
        if done != len(self.failures):
            tail = np.array([f.plugin == plugin for f in self.failures[done:]], dtype=bool)
            self._mask = np.concatenate((self._mask, tail))
        return self._mask

    def number(self, failure: FitFailure | None) -> int:
        """The interned number of ``failure`` (``PASSES`` for None)."""
        if failure is None:
            return PASSES
        found = self.numbers.get(failure)
        if found is None:
            found = self.numbers[failure] = len(self.failures)
            self.failures.append(failure)
        return found


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
            cache.tables.append(FitTable())
        task.fit_shape = shape
    if shape == UNCACHEABLE:
        return None
    return cache.tables[shape]


def lookup(table: FitTable, node: NodeInfo) -> Verdict | None:
    """The verdict stored for ``node``'s current version, if any."""
    entry = table.current.get(node.index)
    if entry is None:
        return None
    if entry[0] == node.version:
        return entry[1]
    entry = table.earlier.get(node.index)
    return entry[1] if entry is not None and entry[0] == node.version else None


def store(table: FitTable, node: NodeInfo, verdict: Verdict) -> Verdict:
    i = node.index
    old = table.current.get(i)
    if old is not None:
        table.earlier[i] = old
    table.current[i] = (node.version, verdict)
    return verdict


def dense_fits(
    ssn: Session, table: FitTable, check: Callable[[NodeInfo], Verdict]
) -> DenseFits | None:
    """The shape's verdicts on every node, brought up to date; ``check`` gives a node's current
    verdict. None until node-by-node scans of the shape have checked as many nodes as the
    cluster has: building the arrays costs a check of every node, which a shape seen once
    (a single-pod job) would pay for a scan that may stop after a few, so it is built once
    the shape has spent that much anyway."""
    log = ssn.node_changes
    nodes = ssn.node_list
    if table.dense is None and table.visited < len(nodes):
        return None
    cache = ssn.fit_cache
    dense = table.dense
    if dense is None:
        numbers = [cache.number((lookup(table, node) or check(node)).failure) for node in nodes]
        dense = table.dense = DenseFits(np.array(numbers, dtype=np.int32), len(log))
        return dense
    if dense.synced == len(log):
        return dense
    fresh = len(log) - dense.synced
    changed = set(log[dense.synced :]) if fresh < len(nodes) else range(len(nodes))
    failures = dense.failures
    for i in changed:
        node = nodes[i]
        failures[i] = cache.number((lookup(table, node) or check(node)).failure)
    dense.synced = len(log)
    return dense
