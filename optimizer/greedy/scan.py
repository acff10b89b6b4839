"""``PredicateNodes`` (spec §2.3): the nodes a task's scan finds, and why the others failed.

Volcano scans from a global rotating offset and stops after ``numNodesToFind`` feasible nodes;
which nodes it finds, how far the offset moves and the fit errors it reports are all part of
its decision. The scan here gives exactly those results by two routes: node by node through
the fit cache (a task whose verdicts cannot be cached, a handful of nodes), or with array
operations on every node's failure number for the task's shape (:func:`failures_of`), which
pick the first K passing nodes after the offset and keep the failures of the nodes passed
over as an array in scan order. Both routes read and write the same error cache of one
placement call (:class:`RoleCache`), so a job whose tasks take different routes is scanned as
if by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .api import NodeInfo, NodeList, TaskInfo
from .devices import PLUGIN as DEVICE_PLUGIN
from .fit_cache import PASSES, FitCache, FitTable, ScannedSet, fit_table, lookup, node_failures
from .nodes import device_failure, device_key, device_numbers, verdict
from .session import FitFailure, Session

MIN_FEASIBLE_NODES = 100
MIN_PERCENTAGE = 5
DEVICE_SHORTAGE = "node(s) without the free GPU devices requested"
ARRAY_SCAN_MIN = 8
"""Below this many nodes a node-by-node scan costs less than the array operations."""
ONE_BY_ONE = 6
"""A kept scan of a node set is brought up to date node by node when at most this many of
its nodes changed, and checked again with arrays otherwise."""


def nodes_to_find(total: int) -> int:
    """``numNodesToFind`` (§2.3) with Volcano's default arguments."""
    if total <= MIN_FEASIBLE_NODES:
        return total
    percentage = max(MIN_PERCENTAGE, 50 - total // 125)
    return max(MIN_FEASIBLE_NODES, total * percentage // 100)


@dataclass
class _Scanned:
    """Failure numbers of the nodes one array scan passed, in scan order from ``start``."""

    numbers: np.ndarray
    start: int
    nodes: Sequence[NodeInfo]


@dataclass
class FitReport:
    """Why nodes failed, aggregated for a pending reason (like Volcano's FitErrors).

    Node-by-node scans fill ``failures``; array scans leave their failures as arrays until a
    summary needs them."""

    cache: FitCache
    failures: dict[str, FitFailure] = field(default_factory=dict)
    scanned: list[_Scanned] = field(default_factory=list)

    def summary(self, total: int) -> str:
        """``0/N nodes are available: <count> <reason>, …``, most frequent first.

        Device-fit messages name their node and its free devices, so they are counted under
        one heading, with the first one as an example.
        """
        if self.failures or len(self.scanned) > 1:
            self.materialise()
        counts, example = self._counts()
        parts = [
            f"{n} {reason}" + (f" (e.g. {example})" if reason == DEVICE_SHORTAGE else "")
            for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        return (
            f"0/{total} nodes are available: " + ", ".join(parts) if parts else f"0/{total} nodes"
        )

    def materialise(self) -> None:
        """Turn array scans into per-node entries, in scan order, after the existing ones."""
        failures = self.cache.failures
        for scan in self.scanned:
            nodes, start, count = scan.nodes, scan.start, len(scan.nodes)
            for k, number in enumerate(scan.numbers.tolist()):
                if number != PASSES:
                    self.failures[nodes[(start + k) % count].name] = failures[number]
        self.scanned = []

    def _counts(self) -> tuple[dict[str, int], str]:
        counts: dict[str, int] = {}
        example = ""
        for failure in self.failures.values():
            reason = failure.reason
            if failure.plugin == DEVICE_PLUGIN:
                example = example or reason
                reason = DEVICE_SHORTAGE
            counts[reason] = counts.get(reason, 0) + 1
        for scan in self.scanned:
            failed = scan.numbers[scan.numbers != PASSES]
            device = self.cache.plugin_mask(DEVICE_PLUGIN)[failed]
            if device.any():
                counts[DEVICE_SHORTAGE] = int(device.sum())
                example = self.cache.failures[int(failed[device.argmax()])].reason
            numbers, times = np.unique(failed[~device], return_counts=True)
            for number, n in zip(numbers.tolist(), times.tolist(), strict=True):
                reason = self.cache.failures[number].reason
                counts[reason] = counts.get(reason, 0) + n
        return counts, example


class RoleCache:
    """The predicate helper's error cache within one placement call (§2.3): per task role, the
    failure first recorded for each node, as a failure number per node index."""

    def __init__(self, ssn: Session) -> None:
        self._cache = ssn.fit_cache
        self._count = len(ssn.node_list)
        self._roles: dict[str, np.ndarray] = {}

    def numbers(self, role: str) -> np.ndarray:
        found = self._roles.get(role)
        if found is None:
            found = self._roles[role] = np.full(self._count, PASSES, dtype=np.int32)
        return found

    def get(self, role: str, node: NodeInfo) -> FitFailure | None:
        found = self._roles.get(role)
        if found is None:
            return None
        number = int(found[node.index])
        return None if number == PASSES else self._cache.failures[number]

    def record(self, role: str, node: NodeInfo, failure: FitFailure) -> None:
        numbers = self.numbers(role)
        if numbers[node.index] == PASSES:
            numbers[node.index] = self._cache.number(failure)


def predicate_nodes(
    ssn: Session,
    task: TaskInfo,
    nodes: Sequence[NodeInfo],
    report: FitReport,
    role_cache: RoleCache | None = None,
) -> list[NodeInfo]:
    """``PredicateNodes``: scan from the global rotating offset, stop after K feasible nodes.

    The offset is taken modulo the size of the node set being scanned and advanced by the nodes
    checked, whatever that set is (all nodes, one HyperNode's, a nominated node), as Volcano's
    ``lastProcessedNodeIndex`` is. Volcano scans with 16 parallel workers, so which K nodes it
    finds in a large cluster depends on timing; vcopt scans sequentially from the same offset (a
    deterministic stand-in, see docs/FIDELITY.md). ``role_cache`` holds nodes that already
    failed for a task of the same job and role within this placement call (the predicate
    helper's error cache).
    """
    total = len(nodes)
    if total == 0:
        return []
    table = fit_table(ssn, task, device_key)
    if table is not None and isinstance(nodes, NodeList) and total >= ARRAY_SCAN_MIN:
        failures = failures_of(ssn, task, table, nodes)
        if failures is not None:
            return _array_scan(ssn, task, nodes, failures, report, role_cache)
    if report.scanned:
        report.materialise()
    want = nodes_to_find(total)
    start = ssn.last_processed_node % total
    feasible: list[NodeInfo] = []
    processed = 0
    role = task.role
    for node in (*nodes[start:], *nodes[:start]):
        processed += 1
        cached = role_cache.get(role, node) if role_cache is not None and role else None
        if cached is not None:
            failure: FitFailure | None = cached
        else:
            found = lookup(table, node) if table is not None else None
            failure = (found or verdict(ssn, task, node)).failure
        if failure is None:
            feasible.append(node)
            if len(feasible) >= want:
                break
        else:
            report.failures[node.name] = failure
            if role_cache is not None and role:
                role_cache.record(role, node, failure)
    ssn.last_processed_node = (start + processed) % total
    return feasible


def failures_of(
    ssn: Session, task: TaskInfo, table: FitTable, nodes: NodeList
) -> np.ndarray | None:
    """The failure number of ``task`` on each of ``nodes``, in their order (None without node
    arrays). The numbers of the shape's last scan of the same node set are kept: when only a
    few of its nodes changed since (a placement, or a dry run not yet undone), those are
    checked one by one (:func:`nodes.verdict`); otherwise the set is checked with arrays
    (:func:`fit_cache.node_failures`)."""
    arrays = ssn.arrays()
    if arrays is None:
        return None
    whole = nodes is ssn.node_list
    indices = None if whole else nodes.indices
    versions = arrays.version if whole else arrays.version[indices]
    held = table.scanned.get(id(nodes))
    if held is not None and held.nodes is nodes:
        changed = (held.versions != versions).nonzero()[0]
        if len(changed) <= ONE_BY_ONE:
            number = ssn.fit_cache.number
            for k in changed.tolist():
                held.numbers[k] = number(verdict(ssn, task, nodes[k]).failure)
            held.versions[changed] = versions[changed]
            return held.numbers
    numbers = node_failures(
        ssn,
        task,
        table,
        indices,
        lambda node: ssn.predicate(task, node),
        lambda node: device_failure(ssn, task, node),
        lambda arrays: device_numbers(ssn, task, arrays, indices),
    )
    if numbers is not None:
        table.scanned[id(nodes)] = ScannedSet(nodes, numbers, versions.copy())
    return numbers


def _array_scan(
    ssn: Session,
    task: TaskInfo,
    nodes: NodeList,
    failures: np.ndarray,
    report: FitReport,
    role_cache: RoleCache | None,
) -> list[NodeInfo]:
    """The scan of ``nodes`` on the shape's failure number of each of them (``failures``, in
    their order): the same nodes, offset and failures as the node-by-node scan, without a
    loop over nodes."""
    total = len(nodes)
    whole = nodes is ssn.node_list
    start = ssn.last_processed_node % total
    role = task.role
    recorded = None
    if role_cache is not None and role:
        numbers = role_cache.numbers(role)
        recorded = numbers if whole else numbers[nodes.indices]
    effective = failures if recorded is None else np.where(recorded != PASSES, recorded, failures)
    in_order = np.concatenate((effective[start:], effective[:start])) if start else effective
    want = nodes_to_find(total)
    passing = (in_order == PASSES).nonzero()[0][:want]
    processed = int(passing[-1]) + 1 if len(passing) == want else total
    # The report keeps its own copy: ``failures`` may be a kept scan that changes later.
    report.scanned.append(
        _Scanned(
            in_order[:processed].copy() if in_order is failures else in_order[:processed],
            start,
            nodes,
        )
    )
    if recorded is not None and role_cache is not None:
        # Every failing node passed over is recorded; a node recorded before keeps its entry,
        # which ``effective`` already holds. The nodes passed over are one or two runs of
        # positions: from the offset on, then from the start of the set.
        first = slice(start, min(start + processed, total))
        second = slice(0, max(0, start + processed - total))
        numbers = role_cache.numbers(role)
        for part in (first, second):
            if whole:
                numbers[part] = effective[part]
            else:
                numbers[nodes.indices[part]] = effective[part]
    ssn.last_processed_node = (start + processed) % total
    found = passing + start
    if start:
        found %= total
    return NodeList.of(nodes.objects[found].tolist(), nodes.indices[found])
