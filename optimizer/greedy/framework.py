"""The vocabulary plugins and actions share (Volcano's ``framework`` types): hook votes, the
fit failure statuses, events, and the plugin base class with the session hooks it registers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.scheduler_conf import PluginOption

from .api import TaskInfo

if TYPE_CHECKING:
    from .session import Session

PERMIT, ABSTAIN, REJECT = 1, 0, -1

UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"

HOOK_FLAGS = {
    "queue_order": "QueueOrder",
    "job_order": "JobOrder",
    "task_order": "TaskOrder",
    "predicate": "Predicate",
    "pre_predicate": "Predicate",
    "predicate_key": "Predicate",
    "node_order": "NodeOrder",
    "node_order_key": "NodeOrder",
    "batch_node_order": "NodeOrder",
    "batch_node_order_array": "NodeOrder",
    "hypernode_order": "HyperNodeOrder",
    "hypernode_gradient": "HyperNodeGradient",
    "allocatable": "Allocatable",
    "job_ready": "JobReady",
    "job_pipelined": "JobPipelined",
    "job_enqueueable": "JobEnqueued",
    "job_enqueued": "JobEnqueued",
    "job_starving": "JobStarving",
    "overused": "Overused",
    "preemptive": "Preemptive",
    "preemptable": "Preemptable",
    "reclaimable": "Reclaimable",
    "victim_tasks": "Victim",
    "job_valid": None,
    "victim_queue_order": None,
}
"""Hook → the ``enableXxx`` flag that gates it (None: never gated, as in Volcano)."""


@dataclass(frozen=True)
class FitFailure:
    """Why a predicate rejected a node (a Volcano ``FitError`` status)."""

    code: str
    reason: str
    plugin: str = ""

    @property
    def resolvable(self) -> bool:
        return self.code != UNRESOLVABLE


class ScoreSkip(Exception):
    """A NodeOrderFn error: the node gets no NodeOrder part of its score (§6 TDM)."""


@dataclass
class Event:
    task: TaskInfo


@dataclass
class EventHandler:
    allocate: Callable[[Event], None] | None = None
    deallocate: Callable[[Event], None] | None = None


class Plugin:
    """Base of every plugin: keeps its option and arguments."""

    name = ""

    def __init__(self, option: PluginOption) -> None:
        self.option = option
        self.arguments = option.arguments

    def on_session_open(self, ssn: Session) -> None:
        raise NotImplementedError

    def on_session_close(self, ssn: Session) -> None:
        return None


def compare_task(left: TaskInfo, right: TaskInfo) -> int:
    """``controllers/job/helpers.CompareTask``: index suffix, then creation time, then UID.

    Pods of one snapshot share a creation time, so the UID decides; vcopt's UID is the
    ``namespace/name`` key, which orders like Volcano's test UIDs (``namespace-name``).
    The index suffix is the task's :attr:`TaskInfo.name_index` (``pod_index``).
    """
    li, ri = left.name_index, right.name_index
    if li is not None and ri is not None and li != ri:
        return -1 if li < ri else 1
    if left.uid == right.uid:
        return 0
    return -1 if left.uid < right.uid else 1
