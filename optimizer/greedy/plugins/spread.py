"""kube-scheduler's PodTopologySpread plugin as Volcano runs it: ``DoNotSchedule`` constraints as
a filter (``predicates``), ``ScheduleAnyway`` ones as a score (``nodeorder``).

Rules: ``spec/k8s-affinity-spread.md`` §4. The filter counts matching pods per domain over the
*eligible* nodes (all keys of the hard constraints, and the node-inclusion policies), an
eligible node creating its domain even when empty, so the global minimum can be 0; ``minDomains``
above the number of domains makes it 0 too. The score registers domains from the candidates
only and counts pods from every node into them.

System-default constraints (a pod without any) need the Services and ReplicaSets selecting the
pod, which an instance does not carry: a Volcano Job's pods get them only from a Service, so
such a pod has no default constraints here and the score skips.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from models.affinity import HOSTNAME, SpreadConstraint
from models.selectors import LabelSelector
from models.workload import Task

from ..api import NodeInfo, TaskInfo
from ..session import UNRESOLVABLE, UNSCHEDULABLE, FitFailure
from .node_pods import NodePods

MISSING_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
SKEW = "node(s) didn't match pod topology spread constraints"
PLUGIN = "PodTopologySpread"

Rule = tuple[SpreadConstraint, LabelSelector | None]


class SpreadBook:
    """Each task's constraints with merged selectors, and whether a selector counts a task's
    pods, computed once per session (pods of one task share labels)."""

    def __init__(self) -> None:
        self._rules: dict[int, tuple[list[Rule], list[Rule]]] = {}
        self._counts: dict[tuple[int, int], bool] = {}
        self._eligible: dict[tuple[int, int], list[tuple[int, str]]] = {}
        self._alive: list[object] = []
        """The rules the memo keys name, kept so that their ids stay theirs."""

    def rules(self, task: TaskInfo, hard: bool) -> list[Rule]:
        spec = task.task
        found = self._rules.get(id(spec))
        if found is None:
            merged = [(c, c.selector_for(spec.labels)) for c in spec.spread]
            found = ([r for r in merged if r[0].hard], [r for r in merged if not r[0].hard])
            self._rules[id(spec)] = found
            self._alive.append(spec)
        return found[0] if hard else found[1]

    def eligible(
        self,
        task: TaskInfo,
        rules: list[Rule],
        i: int,
        nodes: Sequence[NodeInfo],
        included: Included,
    ) -> list[tuple[int, str]]:
        """(node index, domain) of the nodes eligible for hard constraint ``i``: every key
        of the hard constraints, and the inclusion policies. Both read only what a session
        never changes (labels, taints, the pod's node affinity), so once per task spec."""
        key = (id(task.task), i)
        found = self._eligible.get(key)
        if found is None:
            keys = [c.topology_key for c, _ in rules]
            c = rules[i][0]
            found = [
                (n.index, n.node.labels[c.topology_key])
                for n in nodes
                if all(k in n.node.labels for k in keys) and included(task, c, n)
            ]
            self._eligible[key] = found
        return found

    def counts(self, rule: Rule, spec: Task) -> bool:
        key = (id(rule), id(spec))
        hit = self._counts.get(key)
        if hit is None:
            c, sel = rule
            hit = self._counts[key] = c.counts(sel, spec.labels)
            self._alive.append(rule)
        return hit

    def count(self, task: TaskInfo, rule: Rule, pods: NodePods, index: int) -> int:
        """``countPodsMatchSelector``: pods of the task's namespace the selector matches."""
        ns = task.namespace
        return sum(
            1
            for other in pods.on[index].values()
            if other.namespace == ns and self.counts(rule, other.task)
        )


Included = Callable[[TaskInfo, SpreadConstraint, NodeInfo], bool]
"""The node-inclusion policies (``nodeAffinityPolicy``, ``nodeTaintsPolicy``) for one
constraint: the ``predicates`` plugin's node-affinity and taint rules, passed in."""


@dataclass
class SpreadState:
    """PreFilter's counts for one task, and the filter's verdict per (constraint, domain),
    which is all a node's answer depends on besides its labels."""

    rules: list[Rule]
    domains: list[Counter[str]]
    minimum: list[int]
    own: list[int]
    """1 where the constraint's selector matches the task itself (``self`` of §4.3)."""
    verdicts: dict[tuple[int, str], bool] = field(default_factory=dict)


def prefilter(
    task: TaskInfo,
    nodes: Sequence[NodeInfo],
    pods: NodePods,
    included: Included,
    book: SpreadBook,
) -> SpreadState | None:
    """§4.2: per hard constraint, matching pods per domain over the eligible nodes and the
    global minimum after the minDomains rule; None (skip) without hard constraints."""
    rules = book.rules(task, hard=True)
    if not rules:
        return None
    domains: list[Counter[str]] = [Counter() for _ in rules]
    for i, rule in enumerate(rules):
        counter = domains[i]
        for index, value in book.eligible(task, rules, i, nodes, included):
            counter[value] += book.count(task, rule, pods, index) if pods.on[index] else 0
    minimum = [
        min(d.values()) if len(d) >= c.domains_needed else 0
        for d, (c, _) in zip(domains, rules, strict=True)
    ]
    own = [int(sel is not None and sel.matches(task.task.labels)) for _, sel in rules]
    return SpreadState(rules, domains, minimum, own)


def filter_node(state: SpreadState | None, node: NodeInfo) -> FitFailure | None:
    """§4.3, constraints in order: a missing key is unresolvable, too much skew is not."""
    if state is None:
        return None
    labels = node.node.labels
    for i, (c, _) in enumerate(state.rules):
        value = labels.get(c.topology_key)
        if value is None:
            return FitFailure(UNRESOLVABLE, MISSING_LABEL, PLUGIN)
        ok = state.verdicts.get((i, value))
        if ok is None:
            skew = state.domains[i].get(value, 0) + state.own[i] - state.minimum[i]
            ok = state.verdicts[i, value] = skew <= c.max_skew
        if not ok:
            return FitFailure(UNSCHEDULABLE, SKEW, PLUGIN)
    return None


# -- score (§4.4) ------------------------------------------------------------------------------


def scores(
    task: TaskInfo,
    nodes: Sequence[NodeInfo],
    pods: NodePods,
    candidates: Sequence[NodeInfo],
    included: Included,
    book: SpreadBook,
) -> dict[str, int] | None:
    """PreScore, Score and NormalizeScore over ``candidates``; None when the plugin skips."""
    rules = book.rules(task, hard=False)
    if not rules or not nodes:
        return None
    keys = [c.topology_key for c, _ in rules]
    ignored = {n.name for n in candidates if any(k not in n.node.labels for k in keys)}
    kept = [n for n in candidates if n.name not in ignored]
    registered = _domain_counts(task, rules, kept, nodes, pods, included, book)
    weights = [
        math.log((len(kept) if c.topology_key == HOSTNAME else len(reg)) + 2)
        for (c, _), reg in zip(rules, registered, strict=True)
    ]
    raw: dict[str, int] = {}
    for node in kept:
        total = 0.0
        for i, rule in enumerate(rules):
            c = rule[0]
            if c.topology_key == HOSTNAME:
                count = book.count(task, rule, pods, node.index)
            else:
                count = registered[i][node.node.labels[c.topology_key]]
            total += count * weights[i] + (c.max_skew - 1)
        raw[node.name] = math.floor(total + 0.5)  # Go's math.Round: halves away from zero
    return _normalise(raw, [n.name for n in candidates])


def _domain_counts(
    task: TaskInfo,
    rules: list[Rule],
    kept: Sequence[NodeInfo],
    nodes: Sequence[NodeInfo],
    pods: NodePods,
    included: Included,
    book: SpreadBook,
) -> list[Counter[str]]:
    """Per non-hostname constraint, the domains the kept candidates register, with the
    matching pods of every node (that has all keys and passes the policies) counted in."""
    keys = [c.topology_key for c, _ in rules]
    registered: list[Counter[str]] = [Counter() for _ in rules]
    for node in kept:
        for i, (c, _) in enumerate(rules):
            if c.topology_key != HOSTNAME:
                registered[i][node.node.labels[c.topology_key]] += 0
    for node in nodes:
        labels = node.node.labels
        if any(k not in labels for k in keys):
            continue
        for i, rule in enumerate(rules):
            c = rule[0]
            if c.topology_key == HOSTNAME or not included(task, c, node):
                continue
            value = labels[c.topology_key]
            if value in registered[i]:
                registered[i][value] += book.count(task, rule, pods, node.index)
    return registered


def _normalise(raw: dict[str, int], names: Sequence[str]) -> dict[str, int]:
    """Ignored nodes 0; the others ``100·(mx + mn − s) // mx`` (100 when mx is 0)."""
    low = min(raw.values(), default=0)
    high = max([0, *raw.values()])
    out = {}
    for name in names:
        if name not in raw:
            out[name] = 0
        elif high == 0:
            out[name] = 100
        else:
            out[name] = 100 * (high + low - raw[name]) // high
    return out
