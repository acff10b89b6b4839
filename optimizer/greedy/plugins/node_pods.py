"""Which pods each node holds, as kube-scheduler's ``NodeInfo`` lists them during a session.

Inter-pod affinity and topology spread judge a node by the pods on it (and on the nodes of its
topology domain). Volcano keeps those lists in step with the session through the ``predicates``
plugin's event handler (``spec/k8s-affinity-spread.md`` §6.2): a pod allocated or pipelined
this session is added at once, an evicted or un-placed one removed at once.

Volcano quirk (§6.2, inferred from the code): the lists of nodes that hold pods *with
affinity* and pods *with required anti-affinity* are computed once, at session open, so a pod
placed this session on a node outside them is invisible to the checks that walk only those
lists (existing pods' anti-affinity, existing pods' preferred terms). ``affinity_nodes`` and
``anti_affinity_nodes`` keep that frozen view.
"""

from __future__ import annotations

from ..api import TaskInfo
from ..session import Event, EventHandler, Session


def has_affinity(task: TaskInfo) -> bool:
    """``podWithAffinity``: any podAffinity or podAntiAffinity object, even without terms."""
    spec = task.task
    return spec.pod_affinity is not None or spec.pod_anti_affinity is not None


def has_required_anti(task: TaskInfo) -> bool:
    rules = task.task.pod_anti_affinity
    return rules is not None and bool(rules.required)


class NodePods:
    """Per node index, the session's pods on it (uid → task), following session events."""

    def __init__(self, ssn: Session) -> None:
        self._ssn = ssn
        self.on: list[dict[str, TaskInfo]] = [{} for _ in ssn.node_list]
        self._where: dict[str, int] = {}
        for node in ssn.node_list:
            for task in node.tasks.values():
                self._add(task, node.index)
        self.affinity_nodes = [
            n.index
            for n in ssn.node_list
            if any(has_affinity(t) for t in self.on[n.index].values())
        ]
        self.anti_affinity_nodes = [
            n.index
            for n in ssn.node_list
            if any(has_required_anti(t) for t in self.on[n.index].values())
        ]
        ssn.add_event_handler(EventHandler(allocate=self._on_allocate, deallocate=self._on_free))

    def _add(self, task: TaskInfo, index: int) -> None:
        self._where[task.uid] = index
        self.on[index][task.uid] = task

    def _on_allocate(self, event: Event) -> None:
        task = event.task
        if task.uid not in self._where and task.node in self._ssn.nodes:
            self._add(task, self._ssn.nodes[task.node].index)

    def _on_free(self, event: Event) -> None:
        index = self._where.pop(event.task.uid, None)
        if index is not None:
            del self.on[index][event.task.uid]
