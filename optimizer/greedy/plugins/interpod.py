"""kube-scheduler's InterPodAffinity plugin as Volcano runs it: the required terms as a filter
(``predicates``), the preferred ones as a score (``nodeorder``).

The rules are ``spec/k8s-affinity-spread.md`` §2 (PreFilter counts, Filter checks in order,
the self-affinity exception for the first pod of a group) and §3 (the score map ``T`` built
from all nodes, normalised over the candidates). Counts are taken from :class:`NodePods`, so
pods placed earlier in the session count and evicted ones do not. Volcano runs PreFilter
before every attempt of a task, so :func:`prefilter` is computed afresh each time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from models.affinity import PodAffinityTerm
from models.selectors import LabelSelector
from models.workload import Task

from ..api import NodeInfo, TaskInfo
from ..session import UNRESOLVABLE, UNSCHEDULABLE, FitFailure
from .node_pods import NodePods, has_affinity

AFFINITY_FAILED = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_FAILED = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_FAILED = "node(s) didn't satisfy existing pods anti-affinity rules"
PLUGIN = "InterPodAffinity"

Pair = tuple[str, str]
Compiled = tuple[tuple[PodAffinityTerm, LabelSelector | None], ...]


class TermBook:
    """Each task's terms with their selectors merged for the task's own labels, computed once
    per task (all pods of a task share labels and terms)."""

    def __init__(self, namespaces: Mapping[str, Mapping[str, str]]) -> None:
        self._namespaces = namespaces
        """Namespace objects' labels (what a ``namespaceSelector`` reads)."""
        self._cache: dict[int, dict[str, Compiled]] = {}
        self._alive: list[Task] = []
        self._matches: dict[tuple[int, int, str, str, int], bool] = {}

    def terms(self, task: Task, kind: str) -> Compiled:
        """``kind``: required_affinity, required_anti, preferred_affinity, preferred_anti."""
        book = self._cache.get(id(task))
        if book is None:
            book = self._cache[id(task)] = _compile(task)
            self._alive.append(task)
        return book[kind]

    def match(
        self, owner: TaskInfo, term: PodAffinityTerm, sel: LabelSelector | None, pod: TaskInfo
    ) -> bool:
        """``match(t, pod)`` for a term of :meth:`terms` (whose objects live as long as the
        book), memoised: pods of one task in one namespace are alike to every term."""
        key = (id(term), id(sel), owner.namespace, pod.namespace, id(pod.task))
        hit = self._matches.get(key)
        if hit is None:
            hit = self._matches[key] = term.matches(
                sel,
                owner.namespace,
                pod.namespace,
                pod.task.labels,
                self._namespaces.get(pod.namespace),
            )
            self._alive.append(pod.task)
        return hit


def _compile(task: Task) -> dict[str, Compiled]:
    def merged(terms: Sequence[PodAffinityTerm]) -> Compiled:
        return tuple((t, t.selector_for(task.labels)) for t in terms)

    aff, anti = task.pod_affinity, task.pod_anti_affinity
    return {
        "required_affinity": merged(aff.required) if aff else (),
        "preferred_affinity": merged(aff.preferred) if aff else (),
        "required_anti": merged(anti.required) if anti else (),
        "preferred_anti": merged(anti.preferred) if anti else (),
    }


@dataclass
class FilterState:
    """What PreFilter computed for one task: the three count maps of §2.1."""

    skip: bool
    affinity: Compiled = ()
    anti: Compiled = ()
    aff_counts: Counter[Pair] = field(default_factory=Counter)
    anti_counts: Counter[Pair] = field(default_factory=Counter)
    existing_anti: Counter[Pair] = field(default_factory=Counter)
    self_match: bool = False


def _existing_anti(
    task: TaskInfo, nodes: Sequence[NodeInfo], pods: NodePods, book: TermBook
) -> Counter[Pair]:
    """``existingAnti``: existing pods' required anti-affinity terms that match the task, per
    pair, walking only the nodes listed at session open (Volcano's frozen list)."""
    existing: Counter[Pair] = Counter()
    for index in pods.anti_affinity_nodes:
        labels = nodes[index].node.labels
        for other in pods.on[index].values():
            for term, sel in book.terms(other.task, "required_anti"):
                key = term.topology_key
                if key in labels and book.match(other, term, sel, task):
                    existing[(key, labels[key])] += 1
    return existing


def prefilter(
    task: TaskInfo, nodes: Sequence[NodeInfo], pods: NodePods, book: TermBook
) -> FilterState:
    """§2.1: existing pods' anti-affinity, then the task's own affinity (pods matching *all*
    its terms) and anti-affinity counts over every node."""
    existing = _existing_anti(task, nodes, pods, book)
    affinity = book.terms(task.task, "required_affinity")
    anti = book.terms(task.task, "required_anti")
    if not existing and not affinity and not anti:
        return FilterState(skip=True)
    state = FilterState(False, affinity, anti, existing_anti=existing)
    for node in nodes:
        labels = node.node.labels
        for other in pods.on[node.index].values():
            if affinity and all(book.match(task, t, s, other) for t, s in affinity):
                for term, _ in affinity:
                    if term.topology_key in labels:
                        state.aff_counts[(term.topology_key, labels[term.topology_key])] += 1
            for term, sel in anti:
                if term.topology_key in labels and book.match(task, term, sel, other):
                    state.anti_counts[(term.topology_key, labels[term.topology_key])] += 1
    state.self_match = all(book.match(task, t, s, task) for t, s in affinity)
    return state


def filter_node(state: FilterState, node: NodeInfo) -> FitFailure | None:
    """§2.2: P's affinity (unresolvable), P's anti-affinity, existing pods' anti-affinity."""
    if state.skip:
        return None
    labels = node.node.labels
    exists = True
    for term, _ in state.affinity:
        key = term.topology_key
        if key not in labels:
            return FitFailure(UNRESOLVABLE, AFFINITY_FAILED, PLUGIN)
        if state.aff_counts[(key, labels[key])] <= 0:
            exists = False
    # The first pod of a self-affine group: no match anywhere yet and P matches its own terms.
    if not exists and not (not state.aff_counts and state.self_match):
        return FitFailure(UNRESOLVABLE, AFFINITY_FAILED, PLUGIN)
    for term, _ in state.anti:
        key = term.topology_key
        if key in labels and state.anti_counts[(key, labels[key])] > 0:
            return FitFailure(UNSCHEDULABLE, ANTI_AFFINITY_FAILED, PLUGIN)
    if state.existing_anti and any(state.existing_anti[kv] > 0 for kv in labels.items()):
        return FitFailure(UNSCHEDULABLE, EXISTING_ANTI_FAILED, PLUGIN)
    return None


# -- preemption dry runs (§6.1) ------------------------------------------------------------------


def _bump(counts: Counter[Pair], pair: Pair, delta: int) -> None:
    """Add ``delta`` to a pair, dropping it at zero as kube-scheduler's count maps do (the
    self-affinity exception asks whether the affinity map is empty)."""
    counts[pair] += delta
    if counts[pair] == 0:
        del counts[pair]


@dataclass
class PreemptionState:
    """The preemptor's Filter state during one node's preemption dry run.

    Volcano's topology-aware preempt (``SimulateRemoveTask`` / ``SimulateAddTask`` /
    ``SimulatePredicate`` of the ``predicates`` plugin) runs only InterPodAffinity's
    ``RemovePod``, ``AddPod`` and ``Filter`` on a clone of the preemptor's PreFilter state, so
    taking a pod off the node can lift the anti-affinity that blocked it, which the ordinary
    Filter, reading the state PreFilter computed before the evictions, never sees.
    """

    task: TaskInfo
    state: FilterState
    book: TermBook
    updates: bool = True
    """Whether RemovePod / AddPod run: Volcano calls them only for a ``predicates`` entry with
    ``enablePreemptable`` or ``enableAllocatable``; Filter still runs without them."""

    def copy(self) -> PreemptionState:
        """A clone of the state for another node (``CycleState.Clone``)."""
        s = self.state
        clone = FilterState(
            s.skip,
            s.affinity,
            s.anti,
            Counter(s.aff_counts),
            Counter(s.anti_counts),
            Counter(s.existing_anti),
            s.self_match,
        )
        return PreemptionState(self.task, clone, self.book, self.updates)

    def remove_pod(self, pod: TaskInfo, node: NodeInfo) -> None:
        """``RemovePod``: the pod no longer counts on ``node``."""
        self._update(pod, node, -1)

    def add_pod(self, pod: TaskInfo, node: NodeInfo) -> None:
        """``AddPod``: the pod counts on ``node`` again (a victim reprieved)."""
        self._update(pod, node, 1)

    def filter(self, node: NodeInfo) -> FitFailure | None:
        """``Filter`` on the simulated state."""
        return filter_node(self.state, node)

    def _update(self, pod: TaskInfo, node: NodeInfo, delta: int) -> None:
        """``preFilterState.updateWithPod``: the pod's required anti-affinity terms that match
        the preemptor, the preemptor's affinity terms if the pod matches them all, and the
        preemptor's anti-affinity terms the pod matches, each on the node's pair of the term's
        key. Unlike PreFilter it reads the pod's own terms whatever the session-open lists say."""
        s, book, task = self.state, self.book, self.task
        if s.skip or not self.updates:
            return
        labels = node.node.labels
        for term, sel in book.terms(pod.task, "required_anti"):
            key = term.topology_key
            if key in labels and book.match(pod, term, sel, task):
                _bump(s.existing_anti, (key, labels[key]), delta)
        if s.affinity and all(book.match(task, t, sel, pod) for t, sel in s.affinity):
            for term, _ in s.affinity:
                if term.topology_key in labels:
                    _bump(s.aff_counts, (term.topology_key, labels[term.topology_key]), delta)
        for term, sel in s.anti:
            key = term.topology_key
            if key in labels and book.match(task, term, sel, pod):
                _bump(s.anti_counts, (key, labels[key]), delta)


# -- score (§3) --------------------------------------------------------------------------------


def _add(table: dict[str, Counter[str]], labels: Mapping[str, str], key: str, delta: int) -> None:
    if key in labels:
        table.setdefault(key, Counter())[labels[key]] += delta


def _weigh(
    book: TermBook,
    table: dict[str, Counter[str]],
    labels: Mapping[str, str],
    owner: TaskInfo,
    terms: Compiled,
    pod: TaskInfo,
    sign: int,
) -> None:
    """Add ``sign × weight`` to the node's pair of each of ``owner``'s terms matching ``pod``."""
    for term, sel in terms:
        if book.match(owner, term, sel, pod):
            _add(table, labels, term.topology_key, sign * term.weight)


def score_table(
    task: TaskInfo, nodes: Sequence[NodeInfo], pods: NodePods, book: TermBook
) -> dict[str, Counter[str]] | None:
    """PreScore's ``T[key][value]`` (rows a, b, d, e of §3.1; Volcano's hard weight is 0, so
    existing pods' required affinity adds nothing), or None when the plugin skips. Without
    preferred terms of its own, the task is scored only by the pods with affinity on the
    nodes listed at session open (Volcano's frozen list)."""
    pref_aff = book.terms(task.task, "preferred_affinity")
    pref_anti = book.terms(task.task, "preferred_anti")
    own = bool(pref_aff or pref_anti)
    scanned = range(len(nodes)) if own else pods.affinity_nodes
    table: dict[str, Counter[str]] = {}
    for index in scanned:
        labels = nodes[index].node.labels
        if not labels:
            continue
        for other in pods.on[index].values():
            if not own and not has_affinity(other):
                continue
            _weigh(book, table, labels, task, pref_aff, other, 1)
            _weigh(book, table, labels, task, pref_anti, other, -1)
            _weigh(
                book, table, labels, other, book.terms(other.task, "preferred_affinity"), task, 1
            )
            _weigh(book, table, labels, other, book.terms(other.task, "preferred_anti"), task, -1)
    return table or None


def normalised_scores(
    table: Mapping[str, Mapping[str, int]], candidates: Sequence[NodeInfo]
) -> dict[str, int]:
    """Score then NormalizeScore over the candidates: ``int(100 * ((s - mn) / (mx - mn)))`` in
    float64, in this order (Go's truncation), 0 everywhere when all raw scores tie."""
    raw = {}
    for node in candidates:
        labels = node.node.labels
        raw[node.name] = sum(
            values.get(labels[key], 0) for key, values in table.items() if key in labels
        )
    low, high = min(raw.values(), default=0), max(raw.values(), default=0)
    if high <= low:
        return dict.fromkeys(raw, 0)
    return {name: int(100.0 * ((s - low) / (high - low))) for name, s in raw.items()}
