"""Task operations and their undo (``framework/statement.go``): what an action does to the
session in a trial it may still discard, and the statement that commits or discards them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.workload import DeviceShare

from .api import NodeInfo, TaskInfo

if TYPE_CHECKING:
    from .session import Session


@dataclass
class Operation:
    kind: str
    task: TaskInfo
    node: str
    reason: str = ""
    gpus: tuple[DeviceShare, ...] | None = None
    before: int = -1
    """The node's version before the operation (see :meth:`Session.undo`)."""
    after: int = -1
    """The node's version right after it."""


class Statement:
    """A group of operations that is committed or discarded together (``framework.Statement``)."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[Operation] = []

    def allocate(
        self, task: TaskInfo, node: NodeInfo, gpus: tuple[DeviceShare, ...] | None = None
    ) -> None:
        self.operations.append(self.ssn.allocate(task, node, gpus))

    def pipeline(
        self, task: TaskInfo, node: NodeInfo, gpus: tuple[DeviceShare, ...] | None = None
    ) -> None:
        self.operations.append(self.ssn.pipeline(task, node, gpus))

    def evict(self, task: TaskInfo, reason: str) -> None:
        self.operations.append(self.ssn.evict(task, reason))

    def discard(self) -> None:
        for op in reversed(self.operations):
            self.ssn.undo(op)
        self.operations = []

    def commit(self) -> None:
        for op in self.operations:
            self.ssn.commit_op(op)
        self.operations = []

    def merge(self, other: Statement) -> None:
        self.operations.extend(other.operations)
        other.operations = []

    def recover(self, operations: Sequence[Operation]) -> None:
        """Replay saved operations (the hard-topology path re-applies a dry run's winner)."""
        for op in operations:
            self.operations.append(self.ssn.redo(op))
