"""Reuse of the allocate predicate's verdict on a node while nothing it reads has changed.

The node check of allocate (resource fit, every PredicateFn, device fit, spec §2.2) reads two
things: what the task asks of a node — its *fit shape* — and that node's own state, which
changes only through ``NodeInfo.touch`` (task added or removed, devices booked or released),
which bumps ``NodeInfo.version`` and logs the node in the session's change log. Tasks of one
shape therefore get the same verdict on a node of the same version, and scanning a large cluster
for every pod of a job does not re-run the filters on nodes nobody touched. The verdict also
says whether the task fits the node's *idle* resources (§2.4), which decides the idle-fit /
future-fit split and is read right after.

A scan of many nodes reads the verdicts of *every* node as an array instead
(:func:`node_failures`), so that it picks its first K feasible nodes with array operations
instead of a loop over nodes. The parts of the check are kept apart there, each with the
least it depends on: the resource fit is arithmetic on the nodes' resource arrays
(:mod:`node_arrays`), and the predicates and the device fit are cached per key of what they
read of a task — far fewer than shapes, since every distinct request is a shape of its own —
and per node version. Failures are interned: the arrays hold each node's failure number
(−1: it passes).

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

from .api import NodeInfo, NodeList, TaskInfo
from .framework import UNSCHEDULABLE, FitFailure
from .node_arrays import NodeArrays, representable

if TYPE_CHECKING:
    from .device_arrays import DeviceVerdicts
    from .session import Session

UNKNOWN = -1
"""``TaskInfo.fit_shape`` before the first check."""
UNCACHEABLE = -2
"""``TaskInfo.fit_shape`` of a task some predicate plugin declared uncacheable."""
PASSES = -1
"""The failure number of a node that passes."""


def insufficient(resource: str) -> FitFailure:
    """Step 1 of the allocate predicate failing on ``resource`` (``InitResreq ≤ FutureIdle``)."""
    return FitFailure(UNSCHEDULABLE, f"Insufficient {resource}", "allocate")


@dataclass
class Verdict:
    """A node check's result: the failure (None: the node passes) and, for a passing node,
    whether the task fits its idle resources."""

    failure: FitFailure | None
    idle_fit: bool


@dataclass
class KeyedVerdicts:
    """One part of the node check (the predicates, or the device fit) for one key of what it
    reads of a task: every node's failure number, each with the node version it holds for
    (-1: never checked). A node is checked again only when its version differs, so a dry run
    that is discarded, which gives its nodes their earlier versions back, costs no re-check."""

    numbers: np.ndarray
    versions: np.ndarray

    @classmethod
    def empty(cls, count: int) -> KeyedVerdicts:
        return cls(np.full(count, PASSES, dtype=np.int32), np.full(count, -1, dtype=np.int64))


@dataclass
class FitTable:
    """The verdicts of one fit shape by node index, each with the node version it holds for.
    Only nodes checked for the shape have one, so that thousands of one-pod shapes do not each
    cost a list of every node. Each node also keeps its verdict for the version before: a dry
    run that is discarded gives the node its earlier version back (``Session.undo``), whose
    verdict then still holds."""

    predicate_key: Hashable = None
    """What the PredicateFns read of the shape's tasks (``Session.predicate_key``)."""
    device_key: Hashable = None
    """What the device fit reads of them (None: no GPU request)."""
    current: dict[int, tuple[int, Verdict]] = field(default_factory=dict)
    earlier: dict[int, tuple[int, Verdict]] = field(default_factory=dict)
    scanned: dict[int, ScannedSet] = field(default_factory=dict)
    """Per node set scanned with arrays (by identity), its failure numbers (``scan``)."""


@dataclass
class ScannedSet:
    """The failure numbers of one shape on one node set (the cluster, a HyperNode's nodes), in
    the set's order, each with the node version it holds for: the next scan of the set
    re-checks only the nodes whose version changed."""

    nodes: NodeList
    """The node set itself (its identity keys the entry)."""
    numbers: np.ndarray
    versions: np.ndarray


@dataclass
class FitCache:
    """Every fit shape of a session and its table, and the interned failures."""

    shapes: dict[Hashable, int] = field(default_factory=dict)
    tables: list[FitTable] = field(default_factory=list)
    failures: list[FitFailure] = field(default_factory=list)
    numbers: dict[FitFailure, int] = field(default_factory=dict)
    predicates: dict[Hashable, KeyedVerdicts] = field(default_factory=dict)
    devices: dict[Hashable, KeyedVerdicts] = field(default_factory=dict)
    device_arrays: dict[Hashable, DeviceVerdicts | None] = field(default_factory=dict)
    """Per device key, its :class:`device_arrays.DeviceVerdicts` (None: checked node by
    node)."""
    _resources: dict[int, int] = field(default_factory=dict)
    _resolvable: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
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

    def resolvable_mask(self) -> np.ndarray:
        """Per failure number, whether the failure is resolvable (eviction may fix it); extended
        for the failures added since the last call."""
        done = len(self._resolvable)
        if done != len(self.failures):
            tail = np.array([f.resolvable for f in self.failures[done:]], dtype=bool)
            self._resolvable = np.concatenate((self._resolvable, tail))
        return self._resolvable

    def resource_number(self, ssn: Session, dimension: int) -> int:
        """The number of the resource fit's failure on ``dimension``."""
        found = self._resources.get(dimension)
        if found is None:
            found = self._resources[dimension] = self.number(
                insufficient(ssn.dims.names[dimension])
            )
        return found

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
        devices = device_key(task)
        key = (task.init_needs, devices, keys)
        shape = cache.shapes.get(key)
        if shape is None:
            shape = cache.shapes[key] = len(cache.tables)
            cache.tables.append(FitTable(keys, devices))
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


def node_failures(
    ssn: Session,
    task: TaskInfo,
    table: FitTable,
    indices: np.ndarray | None,
    predicate: Callable[[NodeInfo], FitFailure | None],
    devices: Callable[[NodeInfo], FitFailure | None],
    device_numbers: Callable[[NodeArrays], np.ndarray | None],
) -> np.ndarray | None:
    """The failure number (``PASSES``: the node passes) of the task's shape on the nodes at
    ``indices`` (every node when None), in that order, as the node check of
    :func:`nodes.verdict` decides it: resource fit, then the predicates, then the device fit,
    the first failure reported. None when the session has no node arrays or the task's
    amounts cannot be compared with them. ``device_numbers`` gives the device fit's failure
    number on those nodes at once when it can (:mod:`device_arrays`), else None.

    The resource fit is array arithmetic on the nodes' future idle resources. The predicates
    and the device fit are kept per key (:class:`KeyedVerdicts`) and checked, with
    ``predicate`` and ``devices``, only on nodes whose version changed since and which
    the parts before them pass, so a shape seen once costs no check of nodes it cannot use,
    and one seen often costs a check of the nodes touched since it was last seen."""
    arrays = ssn.arrays()
    needs = task.init_needs
    if arrays is None or not representable(needs):
        return None
    cache = ssn.fit_cache
    future_idle = arrays.future_idle if indices is None else arrays.future_idle[indices]
    numbers = np.full(len(future_idle), PASSES, dtype=np.int32)
    # Later assignments win, so walking the needs backwards leaves each node the failure of
    # the first dimension it lacks, as the node-by-node check reports it.
    for i, need in reversed(needs):
        numbers[future_idle[:, i] < need] = cache.resource_number(ssn, i)
    passing = numbers == PASSES
    keyed = _synced(
        cache, cache.predicates, table.predicate_key, arrays, indices, passing, predicate
    )
    numbers[passing] = keyed[passing]
    if table.device_key is not None:
        passing &= keyed == PASSES
        vector = device_numbers(arrays)
        if vector is None:
            vector = _synced(
                cache, cache.devices, table.device_key, arrays, indices, passing, devices
            )
        numbers[passing] = vector[passing]
    return numbers


def predicate_failures(
    ssn: Session,
    table: FitTable,
    predicate: Callable[[NodeInfo], FitFailure | None],
) -> np.ndarray | None:
    """Every node's failure number of the PredicateFns alone for the shape's tasks (what
    preempt and reclaim ask of a node before its room), or None without node arrays."""
    arrays = ssn.arrays()
    if arrays is None:
        return None
    everywhere = np.ones(len(arrays.version), dtype=bool)
    return _synced(
        ssn.fit_cache,
        ssn.fit_cache.predicates,
        table.predicate_key,
        arrays,
        None,
        everywhere,
        predicate,
    )


def _synced(
    cache: FitCache,
    tables: dict[Hashable, KeyedVerdicts],
    key: Hashable,
    arrays: NodeArrays,
    indices: np.ndarray | None,
    mask: np.ndarray,
    check: Callable[[NodeInfo], FitFailure | None],
) -> np.ndarray:
    """The key's failure numbers on the nodes at ``indices`` (all when None), current on
    those of them ``mask`` selects."""
    keyed = tables.get(key)
    if keyed is None:
        keyed = tables[key] = KeyedVerdicts.empty(len(arrays.version))
    numbers, versions = keyed.numbers, keyed.versions
    if indices is None:
        stale = ((versions != arrays.version) & mask).nonzero()[0]
    else:
        stale = indices[(versions[indices] != arrays.version[indices]) & mask]
    if len(stale):
        nodes = arrays.nodes
        for i in stale.tolist():
            node = nodes[i]
            numbers[i] = cache.number(check(node))
            versions[i] = node.version
    return numbers if indices is None else numbers[indices]
