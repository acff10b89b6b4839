"""Every node's resources and version as numpy arrays, kept current from the change log.

A scheduling step asks the same questions of every candidate node — does the task fit its
future idle resources, its idle resources, is what is cached for the node still valid — and a
Python loop per node makes those questions the cost of a large cluster. The session's nodes
keep their vectors as Python lists (an allocation touches one node, and list arithmetic on a
handful of dimensions is cheaper than numpy's per-call overhead); this mirror holds the same
numbers as one row per node, and is brought up to date before it is read by re-reading only
the nodes logged as touched since (``NodeInfo.touch``), so one placement costs one row.

Amounts are kept as 64-bit integers. An instance whose amounts do not fit (a quantity beyond
2⁶²) gets no mirror, and the engine then checks nodes one by one.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from operator import add, sub
from typing import TYPE_CHECKING

import numpy as np

from .api import NodeInfo

if TYPE_CHECKING:
    from .devices import DeviceRules

LIMIT = 2**62
"""Amounts at or above this (in absolute value) are not mirrored: sums of a few of them must
stay within int64."""


class NodeArrays:
    """Per node index: allocatable, idle and future idle vectors (one column per session
    dimension), and the node's version."""

    def __init__(self, nodes: Sequence[NodeInfo], log: list[int], width: int) -> None:
        self.nodes = nodes
        self._log = log
        count = len(nodes)
        self.allocatable = np.zeros((count, width), dtype=np.int64)
        self.idle = np.zeros((count, width), dtype=np.int64)
        self.future_idle = np.zeros((count, width), dtype=np.int64)
        self.version = np.zeros(count, dtype=np.int64)
        self.devices = DeviceState(nodes)
        for node in nodes:
            self.allocatable[node.index] = node.allocatable
            self._refresh(node)
        self.synced = len(log)

    @classmethod
    def of(cls, nodes: Sequence[NodeInfo], log: list[int], width: int) -> NodeArrays | None:
        """The mirror of ``nodes``, or None when some amount is too large to mirror."""
        for node in nodes:
            for vector in (node.allocatable, node.used, node.releasing, node.pipelined):
                if not all(-LIMIT < amount < LIMIT for amount in vector):
                    return None
        return cls(nodes, log, width)

    def _refresh(self, node: NodeInfo) -> None:
        i = node.index
        idle = list(map(sub, node.allocatable, node.used))
        self.idle[i] = idle
        self.future_idle[i] = list(map(sub, map(add, idle, node.releasing), node.pipelined))
        self.version[i] = node.version
        if node.gpus:
            self.devices.refresh(node)

    def sync(self) -> NodeArrays:
        """Re-read the nodes touched since the last sync; returns itself."""
        log = self._log
        if self.synced != len(log):
            nodes = self.nodes
            fresh = len(log) - self.synced
            changed = set(log[self.synced :]) if fresh < len(nodes) else range(len(nodes))
            for i in changed:
                self._refresh(nodes[i])
            self.synced = len(log)
        return self


def representable(needs: Sequence[tuple[int, int]]) -> bool:
    """Whether a task's (dimension, amount) needs can be compared with the mirror."""
    return all(-LIMIT < amount < LIMIT for _, amount in needs)


class DeviceState:
    """Every device of the cluster, nodes' devices contiguous in node order: the static
    capacities and the usage, refreshed per node by :meth:`refresh`."""

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        sizes = [len(node.gpus) for node in nodes]
        self.sizes = np.array(sizes, dtype=np.int64)
        self.offsets = np.cumsum(self.sizes) - self.sizes
        total = int(self.sizes.sum())
        self.count = np.zeros(total, dtype=np.int64)
        self.memory = np.zeros(total, dtype=np.int64)
        self.used_num = np.zeros(total, dtype=np.int64)
        self.used_mem = np.zeros(total, dtype=np.int64)
        self.used_core = np.zeros(total, dtype=np.int64)
        self._devices = [state.device for node in nodes for state in node.gpus]
        """Every device, in the order of the arrays (nodes in index order)."""
        self.count[:] = [device.count for device in self._devices]
        self.memory[:] = [device.memory for device in self._devices]
        for node in nodes:
            self.refresh(node)
        self._usable: dict[Hashable, np.ndarray] = {}
        self._subsets: dict[int, tuple[np.ndarray, DeviceSubset]] = {}
        self.everything = DeviceSubset(None, self.sizes, self.offsets)

    def subset(self, indices: np.ndarray | None) -> DeviceSubset:
        """The devices of the nodes at ``indices`` (a node set fixed for the session, such
        as a HyperNode's, whose array is kept alive by its owner), in their order."""
        if indices is None:
            return self.everything
        found = self._subsets.get(id(indices))
        if found is None or found[0] is not indices:
            sizes = self.sizes[indices]
            starts = np.cumsum(sizes) - sizes
            positions = np.repeat(self.offsets[indices] - starts, sizes) + np.arange(
                int(sizes.sum()), dtype=np.int64
            )
            found = self._subsets[id(indices)] = (indices, DeviceSubset(positions, sizes, starts))
        return found[1]

    def usable(self, rules: DeviceRules) -> np.ndarray:
        """Per device, whether a pod with ``rules`` may use it at all (type, UUID and health,
        as ``DeviceRules.usable_on`` with health checked); shared by the request signatures
        with the same filters."""
        key = (rules.use_types, rules.nouse_types, rules.use_uuids, rules.nouse_uuids)
        found = self._usable.get(key)
        if found is None:
            by_type: dict[str, bool] = {}
            flags = []
            for device in self._devices:
                allowed = by_type.get(device.type)
                if allowed is None:
                    allowed = by_type[device.type] = rules.allows_type(device.type)
                flags.append(allowed and device.health and rules.allows_uuid(device.id))
            found = self._usable[key] = np.array(flags, dtype=bool)
        return found

    def refresh(self, node: NodeInfo) -> None:
        start = int(self.offsets[node.index])
        stop = start + len(node.gpus)
        gpus = node.gpus
        self.used_num[start:stop] = [g.used_num for g in gpus]
        self.used_mem[start:stop] = [g.used_mem for g in gpus]
        self.used_core[start:stop] = [g.used_core for g in gpus]


class DeviceSubset:
    """Where the devices of some nodes are in :class:`DeviceState`: their positions (None:
    all devices, in place), and per node its number of devices and the start of its segment
    among those positions."""

    def __init__(self, positions: np.ndarray | None, sizes: np.ndarray, starts: np.ndarray):
        self.positions = positions
        self.sizes = sizes
        self.starts = starts
        self.having = (sizes > 0).nonzero()[0]
        """Nodes (positions in the subset) that have devices: ``reduceat`` segments."""

    def take(self, values: np.ndarray) -> np.ndarray:
        return values if self.positions is None else values[self.positions]
