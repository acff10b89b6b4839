"""The ``predicates`` plugin: the Kubernetes filters Volcano runs on every (task, node) pair.

Volcano's ``plugins/predicates/predicates.go`` wraps kube-scheduler Filter plugins (spec §2.2).
vcopt models the ones whose inputs an instance carries: the pod count, NodeUnschedulable,
NodeAffinity (nodeSelector and required node affinity), TaintToleration, and InterPodAffinity
and PodTopologySpread (``pod_filters.py``, which also registers their PreFilter). CPU and memory are
*not* checked here (spec §9 item 16): the allocate action's own ``InitResreq ≤ FutureIdle`` does
that before any PredicateFn runs.

The plugin keeps a kube-scheduler ``NodeInfo`` per node, updated by session events exactly as
Volcano's event handler does: a pod placed or pipelined this session is added, an evicted or
un-placed one removed. :class:`KubeNodeView` is that bookkeeping; ``nodeorder`` reads the same
one, because its scores read the same ``NodeInfo``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from models.affinity import SpreadConstraint
from models.cluster import CORDON, Taint
from models.resources import CPU, MEMORY
from models.workload import Toleration

from ..api import NodeInfo, TaskInfo, vadd, vsub
from ..session import UNRESOLVABLE, UNSCHEDULABLE, Event, EventHandler, FitFailure, Plugin, Session
from .pod_filters import PodFilters

DEFAULT_MILLI_CPU = 100
"""kube-scheduler ``DefaultMilliCPURequest``: what a pod without a CPU request counts for."""
DEFAULT_MEMORY = 200 * 1024 * 1024
"""kube-scheduler ``DefaultMemoryRequest`` (200 MiB)."""

TOO_MANY_PODS = "node(s) pod number exceeded"
NODE_UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"

ENABLE_ARGS = (
    "NodeUnschedulable",
    "NodeAffinity",
    "TaintToleration",
    "PodAffinity",
    "PodTopologySpread",
)
"""The filters that ``predicate.<Name>Enable: false`` switches off; the pod count has no switch."""


class KubeNodeView:
    """Per node, the pods kube-scheduler's ``NodeInfo`` holds during a Volcano session.

    It starts from the snapshot (every pod bound to the node) and follows the session events:
    allocate and pipeline add the pod (so, unlike Volcano's own ``node.Used``, pipelined pods
    count, spec §9 item 20), evict and undo remove it. An evicted pod therefore stops counting
    at once, although Volcano's NodeInfo keeps it as Releasing: that is what lets preempt free a
    pod slot. Amounts are the pod's full request (``InitResreq``: init containers included, as
    kube-scheduler's ``PodRequests``) and its *non-zero* CPU and memory, where a request that is
    not set counts as 100m / 200 MiB (an explicit 0 stays 0, ``GetNonzeroRequestForResource``).
    Lists are indexed by ``NodeInfo.index``.
    """

    @classmethod
    def of(cls, ssn: Session) -> KubeNodeView:
        """The session's view, made by the first plugin that needs it: ``predicates`` and
        ``nodeorder`` read the same kube-scheduler NodeInfo, so they share one."""
        if ssn.kube_nodes is None:
            ssn.kube_nodes = cls(ssn)
        return ssn.kube_nodes  # type: ignore[no-any-return]

    def __init__(self, ssn: Session) -> None:
        self._ssn = ssn
        self._cpu = ssn.dims.index[CPU]
        self._memory = ssn.dims.index[MEMORY]
        count = len(ssn.node_list)
        self.pods = [0] * count
        self.requested = [ssn.dims.zero() for _ in range(count)]
        self.nonzero_cpu = [0] * count
        self.nonzero_memory = [0] * count
        self._placed: dict[str, int] = {}
        """Task uid → index of the node it was counted on (undo clears ``task.node`` first)."""
        for node in ssn.node_list:
            for task in node.tasks.values():
                self._add(task, node.index)
        ssn.add_event_handler(EventHandler(allocate=self._on_allocate, deallocate=self._on_free))

    def nonzero(self, task: TaskInfo) -> tuple[int, int]:
        """The task's CPU and memory as kube-scheduler's non-zero accounting sees them."""
        declared = task.task.init_resources
        cpu = task.init_resreq[self._cpu] if CPU in declared else DEFAULT_MILLI_CPU
        memory = task.init_resreq[self._memory] if MEMORY in declared else DEFAULT_MEMORY
        return cpu, memory

    def _add(self, task: TaskInfo, index: int) -> None:
        self._placed[task.uid] = index
        self.pods[index] += 1
        self.requested[index] = vadd(self.requested[index], task.init_resreq)
        cpu, memory = self.nonzero(task)
        self.nonzero_cpu[index] += cpu
        self.nonzero_memory[index] += memory

    def _on_allocate(self, event: Event) -> None:
        task = event.task
        if task.uid not in self._placed and task.node in self._ssn.nodes:
            self._add(task, self._ssn.nodes[task.node].index)

    def _on_free(self, event: Event) -> None:
        task = event.task
        index = self._placed.pop(task.uid, None)
        if index is None:
            return
        self.pods[index] -= 1
        self.requested[index] = vsub(self.requested[index], task.init_resreq)
        cpu, memory = self.nonzero(task)
        self.nonzero_cpu[index] -= cpu
        self.nonzero_memory[index] -= memory


def enabled_filters(arguments: Mapping[str, object]) -> frozenset[str]:
    """The switchable filters left on: each defaults to on, and only a YAML boolean
    ``false`` turns it off (Volcano's ``Arguments.GetBool`` ignores any other type)."""
    return frozenset(
        name for name in ENABLE_ARGS if arguments.get(f"predicate.{name}Enable") is not False
    )


def tolerated(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    """``TolerationsTolerateTaint``: some toleration matches the taint."""
    return any(t.tolerates(taint.key, taint.value, taint.effect) for t in tolerations)


def spread_included(task: TaskInfo, c: SpreadConstraint, node: NodeInfo) -> bool:
    """Topology spread's node-inclusion policies (``SpreadConstraint.includes``) on the
    session's task and node."""
    return c.includes(task.task, node.node)


class PredicatesPlugin(Plugin):
    name = "predicates"

    def on_session_open(self, ssn: Session) -> None:
        self.view = KubeNodeView.of(ssn)
        filters = enabled_filters(self.arguments)
        self._unschedulable = "NodeUnschedulable" in filters
        self._affinity = "NodeAffinity" in filters
        self._taints = "TaintToleration" in filters
        self._hard_taints = [node.node.hard_taints for node in ssn.node_list]
        self.pod_filters = PodFilters.open(
            ssn, "PodAffinity" in filters, "PodTopologySpread" in filters, spread_included
        )
        if self.pod_filters is not None:
            ssn.add("pre_predicate", self.name, self.pod_filters.prefilter)
        ssn.add("predicate", self.name, self.predicate)
        ssn.add("predicate_key", self.name, self.predicate_key)

    def predicate_key(self, task: TaskInfo) -> Hashable:
        """What :meth:`predicate` reads of a task (the fit-cache hook): the rest is the
        node's own state. None, so nothing is reused, when the answer also depends on pods
        placed elsewhere (inter-pod terms and spread, the task's own or others' on it)."""
        if self.depends_on_placed_pods(task):
            return None
        spec = task.task
        return (tuple(sorted(spec.node_selector.items())), spec.required_affinity, spec.tolerations)

    def depends_on_placed_pods(self, task: TaskInfo) -> bool:
        """Whether this plugin's answer for ``task`` on a node can change when a pod is placed
        or evicted elsewhere: then no cache may reuse it across tasks of one shape or across
        placements (inter-pod terms, spread constraints, or others' anti-affinity on it)."""
        return self.pod_filters is not None and self.pod_filters.depends_on_placed_pods(task)

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitFailure | None:
        """Pod count first (Unschedulable: evicting pods can fix it), then the stable filters,
        each of which fails UnschedulableAndUnresolvable and ends the check, then the inter-pod
        filters. As in Volcano every filter runs until one is unresolvable, so a node is a
        preemption candidate only if all its failures are resolvable (the first is reported)."""
        first = None
        if node.pod_capacity <= self.view.pods[node.index]:
            first = FitFailure(UNSCHEDULABLE, TOO_MANY_PODS, self.name)
        failure = self._node_rules(task, node)
        if failure is None and self.pod_filters is not None:
            failure = self.pod_filters.filter(task, node)
        if failure is not None and (first is None or not failure.resolvable):
            return failure
        return first

    def _node_rules(self, task: TaskInfo, node: NodeInfo) -> FitFailure | None:
        spec = task.task
        if (
            self._unschedulable
            and node.node.unschedulable
            and not tolerated(spec.tolerations, CORDON)
        ):
            return FitFailure(UNRESOLVABLE, NODE_UNSCHEDULABLE, self.name)
        if (
            self._affinity
            and (spec.node_selector or spec.required_affinity)
            and not spec.node_affinity_matches(node.node.labels)
        ):
            return FitFailure(UNRESOLVABLE, AFFINITY_MISMATCH, self.name)
        if self._taints:
            for taint in self._hard_taints[node.index]:
                if not tolerated(spec.tolerations, taint):
                    reason = f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
                    return FitFailure(UNRESOLVABLE, reason, self.name)
        return None
