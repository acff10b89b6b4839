"""The ``predicates`` plugin's InterPodAffinity and PodTopologySpread filters: their PreFilter
state per task and the hook that tells caches which tasks they make session-dependent.

Volcano's ``PrePredicate`` runs every PreFilter before each attempt of a task, against the
session's current pods (``spec/k8s-affinity-spread.md`` §6.1), so :meth:`PodFilters.prefilter`
is registered as the ``pre_predicate`` hook and recomputes; the per-node filters then read
that state. A node failing both filters reports the first, unless the second is unresolvable
(Volcano runs every filter until an unresolvable one, and preemption reads that).

Volcano quirk (§6.1, inferred from the code): a PreFilter ``Skip`` puts the plugin in the
task's skip set for the whole session, so a task that once had nothing to check (no terms, no
matching anti-affinity of existing pods) keeps skipping the InterPodAffinity filter even after
a conflicting pod is placed. ``sticky_skip`` reproduces it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models.workload import Task

from ..api import NodeInfo, TaskInfo
from ..session import FitFailure, Session
from . import interpod, spread
from .node_pods import NodePods


@dataclass
class PodFilters:
    """The two filters' session state: the pods on each node, the compiled terms, and the
    PreFilter result of each task's latest attempt (read by the per-node filter)."""

    ssn: Session
    affinity: bool
    spread: bool
    included: spread.Included
    pods: NodePods
    book: interpod.TermBook
    spread_book: spread.SpreadBook = field(default_factory=spread.SpreadBook)
    sticky_skip: set[str] = field(default_factory=set)
    """Tasks whose InterPodAffinity PreFilter skipped once this session."""
    _affinity: dict[str, interpod.FilterState] = field(default_factory=dict)
    _spread: dict[str, spread.SpreadState | None] = field(default_factory=dict)
    _anti_tasks: list[Task] = field(default_factory=list)

    @classmethod
    def open(
        cls, ssn: Session, affinity: bool, spread_on: bool, included: spread.Included
    ) -> PodFilters | None:
        """None when no pod of the instance carries a term either filter reads."""
        tasks = [t for job in ssn.instance.jobs for t in job.tasks]
        if not any(t.pod_terms for t in tasks) or not (affinity or spread_on):
            return None
        book = interpod.TermBook(ssn.instance.namespaces)
        filters = cls(ssn, affinity, spread_on, included, NodePods(ssn), book)
        filters._anti_tasks = [
            t for t in tasks if t.pod_anti_affinity and t.pod_anti_affinity.required
        ]
        return filters

    def depends_on_placed_pods(self, task: TaskInfo) -> bool:
        """The task's own terms, or some task's required anti-affinity that may reject it."""
        if task.task.pod_terms:
            return True
        return any(
            sel is not None and sel.matches(task.task.labels)
            for other in self._anti_tasks
            for _, sel in self.book.terms(other, "required_anti")
        )

    def prefilter(self, task: TaskInfo) -> FitFailure | None:
        """The ``pre_predicate`` hook: both PreFilters on the session's current pods."""
        nodes = self.ssn.node_list
        if self.affinity and task.uid not in self.sticky_skip:
            state = interpod.prefilter(task, nodes, self.pods, self.book)
            if state.skip:
                self.sticky_skip.add(task.uid)
            self._affinity[task.uid] = state
        if self.spread:
            self._spread[task.uid] = spread.prefilter(
                task, nodes, self.pods, self.included, self.spread_book
            )
        return None

    def filter(self, task: TaskInfo, node: NodeInfo) -> FitFailure | None:
        """InterPodAffinity then PodTopologySpread on one node; the first failure is reported
        unless a later one is unresolvable."""
        if task.uid not in self._affinity and task.uid not in self._spread:
            self.prefilter(task)
        first = None
        if self.affinity and task.uid not in self.sticky_skip:
            first = interpod.filter_node(self._affinity[task.uid], node)
            if first is not None and not first.resolvable:
                return first
        if self.spread:
            failure = spread.filter_node(self._spread.get(task.uid), node)
            if failure is not None and (first is None or not failure.resolvable):
                return failure
        return first
