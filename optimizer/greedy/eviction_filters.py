"""The node filters of ``preempt`` and ``reclaim``, over every node at once.

Both actions walk every node for each preemptor task and ask of each, before anything
costlier: may evicting make the node usable (``PredicateForPreemptAction``: the predicates pass
or fail only with resolvable reasons), and, for reclaim, could the victims it may take there
make room at all (``ValidateVictims`` on every candidate victim)? On a large cluster those two
questions, asked node by node in Python, are most of the actions' time, and they are array
arithmetic: the predicates' verdicts per node are the fit cache's (:mod:`fit_cache`), and what
reclaim's candidates hold on each node is a sum kept per node (:class:`ReclaimableRoom`).

The filters only drop nodes the actions would skip; the actions still ask every question of
the nodes that remain, in node order, so they decide exactly as before.
"""

from __future__ import annotations

import numpy as np

from .api import POD_DIM, NodeInfo, TaskInfo, TaskStatus
from .fit_cache import PASSES, fit_table, predicate_failures
from .node_arrays import representable
from .nodes import device_key
from .session import Session


def may_free_mask(ssn: Session, task: TaskInfo) -> np.ndarray | None:
    """Per node, whether the predicates pass for ``task`` or fail only with resolvable
    reasons (``preempt.may_free``); None when the task's verdicts are not cacheable."""
    table = fit_table(ssn, task, device_key)
    if table is None:
        return None
    numbers = predicate_failures(ssn, table, lambda node: ssn.predicate(task, node))
    if numbers is None:
        return None
    resolvable = ssn.fit_cache.resolvable_mask()
    passing = numbers == PASSES
    return passing | resolvable[np.where(passing, 0, numbers)] if len(resolvable) else passing


class ReclaimableRoom:
    """Per node, the Σ ``Resreq`` of the pods reclaim may take there (Running, preemptable, of
    a job whose queue is reclaimable), in all and per queue, kept current from the session's
    change log. Only the queues asked for (those that reclaim) get a per-queue array."""

    def __init__(self, ssn: Session) -> None:
        self._ssn = ssn
        count = len(ssn.node_list)
        self.total = np.zeros((count, len(ssn.dims)), dtype=np.int64)
        self._queues: dict[str, np.ndarray] = {}
        for node in ssn.node_list:
            self._refresh(node)
        self._synced = len(ssn.node_changes)

    def _owner(self, task: TaskInfo) -> str | None:
        """The queue of a pod reclaim may take (``reclaim._reclaimees``), else None."""
        if task.status is not TaskStatus.RUNNING or not task.preemptable:
            return None
        job = self._ssn.jobs.get(task.job)
        if job is None or not self._ssn.queues[job.queue].reclaimable:
            return None
        return job.queue

    def _rows(self, node: NodeInfo) -> tuple[list[int], dict[str, list[int]]]:
        width = len(self._ssn.dims)
        total = [0] * width
        by_queue: dict[str, list[int]] = {}
        for task in node.tasks.values():
            queue = self._owner(task)
            if queue is None:
                continue
            row = by_queue.setdefault(queue, [0] * width)
            for i, amount in enumerate(task.resreq):
                total[i] += amount
                row[i] += amount
        return total, by_queue

    def _refresh(self, node: NodeInfo) -> None:
        total, by_queue = self._rows(node)
        self.total[node.index] = total
        for queue, array in self._queues.items():
            array[node.index] = by_queue.get(queue, 0)

    def sync(self) -> ReclaimableRoom:
        log = self._ssn.node_changes
        if self._synced != len(log):
            nodes = self._ssn.node_list
            for i in set(log[self._synced :]):
                self._refresh(nodes[i])
            self._synced = len(log)
        return self

    def of_queue(self, queue: str) -> np.ndarray:
        """Per node, the part of :attr:`total` held by ``queue``'s pods."""
        array = self._queues.get(queue)
        if array is None:
            array = self._queues[queue] = np.zeros_like(self.total)
            for node in self._ssn.node_list:
                array[node.index] = self._rows(node)[1].get(queue, 0)
        return array


def reclaim_candidates(ssn: Session, task: TaskInfo) -> list[NodeInfo] | None:
    """The nodes, in node order, where ``task`` may reclaim: the predicates allow eviction to
    help, some pod of another queue may be taken, and all of them together would make room
    (``ValidateVictims`` on the reclaimees). None when this cannot be read from arrays (the
    task's verdicts are not cacheable, or its amounts too large)."""
    may_free = may_free_mask(ssn, task)
    arrays = ssn.arrays()
    if may_free is None or arrays is None or not representable(list(enumerate(task.init_resreq))):
        return None
    if ssn.reclaim_room is None:
        ssn.reclaim_room = ReclaimableRoom(ssn)
    room = ssn.reclaim_room.sync()
    others = room.total - room.of_queue(ssn.jobs[task.job].queue)
    freed = arrays.future_idle + others
    enough = (freed >= np.array(task.init_resreq, dtype=np.int64)).all(axis=1)
    mask = may_free & (others[:, POD_DIM] > 0) & enough
    nodes = ssn.node_list
    return [nodes[i] for i in mask.nonzero()[0].tolist()]
