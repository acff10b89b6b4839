"""The Kubernetes rules pods carry about other pods: ``pod-affinity``, ``pod-anti-affinity``,
``topology-spread`` (``spec/k8s-affinity-spread.md`` §2, §4.3).

Each is a condition *at the moment of placement* (§6.9), so the plan is replayed: the running
pods that stay (evictions take effect first), then the placements in the plan's order, each
judged against the pods present before it. Anti-affinity is judged both ways (the new pod's
terms and the terms of every pod already present), with every present pod visible: that is
Kubernetes' rule, stricter than Volcano's lists frozen at session open (docs/AFFINITY.md).

A domain is a (topologyKey, value) pair of a node label; a node without the key is in no
domain. The term semantics (selectors merged with matchLabelKeys, namespaces) are the models'.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from models.affinity import PodAffinityTerm, SpreadConstraint
from models.cluster import Node
from models.selectors import LabelSelector
from models.workload import Task

from .context import Context, Member, Violation

AFFINITY, ANTI_AFFINITY, SPREAD = "pod-affinity", "pod-anti-affinity", "topology-spread"
Selector = LabelSelector | None


def describe(term: PodAffinityTerm, selector: Selector) -> str:
    """How a message names a term: its key and its selector after the merge."""
    if selector is None:
        sel = "nil"
    else:
        parts = [f"{k}={v}" for k, v in selector.match_labels]
        parts += [
            f"{r.key} {r.operator} [{','.join(r.values)}]" for r in selector.match_expressions
        ]
        sel = "{" + ", ".join(parts) + "}"
    return f"topologyKey {term.topology_key}, labelSelector {sel}"


@dataclass(frozen=True)
class Present:
    """A pod present on a node during the replay."""

    key: str
    node: Node
    member: Member
    namespace_labels: Mapping[str, str] | None = None
    """Labels of the pod's Namespace object (None: the instance has none)."""

    @property
    def namespace(self) -> str:
        return self.member.pod.namespace


def matches(owner: Present, term: PodAffinityTerm, sel: Selector, pod: Present) -> bool:
    return term.matches(
        sel, owner.namespace, pod.namespace, pod.member.task.labels, pod.namespace_labels
    )


def terms(
    task: Task, kind: str, preferred: bool = False
) -> list[tuple[int, PodAffinityTerm, Selector]]:
    """(index, term, merged selector) of a task's affinity (``kind`` "affinity") or
    anti-affinity terms, required or preferred."""
    rules = task.pod_affinity if kind == "affinity" else task.pod_anti_affinity
    if rules is None:
        return []
    chosen = rules.preferred if preferred else rules.required
    return [(i, t, t.selector_for(task.labels)) for i, t in enumerate(chosen)]


def _present(ctx: Context, pod: str, node: str) -> Present:
    member = ctx.members[pod]
    labels = ctx.instance.namespaces.get(member.pod.namespace)
    return Present(pod, ctx.node(node), member, labels)


def replay(ctx: Context) -> Iterator[tuple[Present, Sequence[Present]]]:
    """Each placement, in plan order, with the pods present just before it: the running pods
    that stay, then the earlier placements. Nothing when no pod carries a term."""
    jobs = (*ctx.instance.jobs, *ctx.instance.foreign_jobs)
    if not any(t.pod_terms for j in jobs for t in j.tasks):
        return
    fresh = {p.pod for p in ctx.plan.placements}
    order = [_present(ctx, b.pod, b.node) for b in ctx.held.values() if b.pod not in fresh]
    for p in ctx.plan.placements:
        me = _present(ctx, p.pod, p.node)
        yield me, order
        order.append(me)


def _same_domain(key: str, a: Node, b: Node) -> bool:
    return key in a.labels and b.labels.get(key) == a.labels[key]


def check_pod_affinity(ctx: Context) -> Iterator[Violation]:
    """§2.2 check 1: for each required affinity term, the new pod's node has the key and its
    domain holds a pod matching *all* the terms, unless no such pod exists anywhere (on a node
    with the keys) yet and the pod matches its own terms (the first pod of a group)."""
    for me, before in replay(ctx):
        own = terms(me.member.task, "affinity")
        if not own:
            continue
        where = f"pod {me.key} on node {me.node.name}"
        missing = [t for _, t, _ in own if t.topology_key not in me.node.labels]
        if missing:
            yield Violation(
                AFFINITY,
                (me.key, me.node.name),
                f"{where}: the node has no label {missing[0].topology_key} that the required "
                "pod affinity term reads",
            )
            continue
        matching = [e for e in before if all(matches(me, t, s, e) for _, t, s in own)]
        anywhere = any(any(t.topology_key in e.node.labels for _, t, _ in own) for e in matching)
        first = not anywhere and all(matches(me, t, s, me) for _, t, s in own)
        for i, t, s in own:
            key = t.topology_key
            if first or any(_same_domain(key, me.node, e.node) for e in matching):
                continue
            yield Violation(
                AFFINITY,
                (me.key, me.node.name),
                f"{where}: required pod affinity term {i} ({describe(t, s)}) has no matching "
                f"pod in domain {key}={me.node.labels[key]}",
            )


def check_pod_anti_affinity(ctx: Context) -> Iterator[Violation]:
    """§2.2 checks 2 and 3: no pod present in the new pod's domain matches one of its required
    anti-affinity terms, and the new pod matches no present pod's term in that pod's domain."""
    rejecting: list[Present] = []
    """The pods present with required anti-affinity terms (kept as the replay grows)."""
    seen = 0
    for me, before in replay(ctx):
        rejecting += [e for e in before[seen:] if _has_required_anti(e.member.task)]
        seen = len(before)
        yield from _own_anti(me, before)
        for e in rejecting:
            for i, t, s in terms(e.member.task, "anti"):
                key = t.topology_key
                if _same_domain(key, e.node, me.node) and matches(e, t, s, me):
                    yield Violation(
                        ANTI_AFFINITY,
                        (me.key, e.key, me.node.name),
                        f"pod {me.key} on node {me.node.name}: pod {e.key}'s required "
                        f"anti-affinity term {i} ({describe(t, s)}) rejects it in domain "
                        f"{key}={e.node.labels[key]}",
                    )


def _own_anti(me: Present, before: Sequence[Present]) -> Iterator[Violation]:
    for i, t, s in terms(me.member.task, "anti"):
        key = t.topology_key
        for e in before:
            if _same_domain(key, me.node, e.node) and matches(me, t, s, e):
                yield Violation(
                    ANTI_AFFINITY,
                    (me.key, e.key, me.node.name),
                    f"pod {me.key} on node {me.node.name}: required anti-affinity term {i} "
                    f"({describe(t, s)}) matches pod {e.key} in domain "
                    f"{key}={me.node.labels[key]}",
                )
                break


def _has_required_anti(task: Task) -> bool:
    return task.pod_anti_affinity is not None and bool(task.pod_anti_affinity.required)


def _spread_counts(
    ctx: Context,
    me: Present,
    hard: list[SpreadConstraint],
    c: SpreadConstraint,
    before: Sequence[Present],
) -> dict[str, int]:
    """Matching pods per domain of ``c`` over the eligible nodes (every key of the hard
    constraints, the inclusion policies); an eligible node creates its domain even if empty."""
    sel = c.selector_for(me.member.task.labels)
    keys = [h.topology_key for h in hard]
    counts: dict[str, int] = {}
    eligible = set()
    for node in ctx.instance.nodes:
        if all(k in node.labels for k in keys) and c.includes(me.member.task, node):
            eligible.add(node.name)
            counts.setdefault(node.labels[c.topology_key], 0)
    for e in before:
        if (
            e.node.name in eligible
            and e.namespace == me.namespace
            and c.counts(sel, e.member.task.labels)
        ):
            counts[e.node.labels[c.topology_key]] += 1
    return counts


def check_topology_spread(ctx: Context) -> Iterator[Violation]:
    """§4.3 for each DoNotSchedule constraint of a new pod: its node has the key, and the
    pod's domain count + 1 (if it selects itself) − the global minimum ≤ maxSkew, where the
    minimum is 0 when fewer eligible domains exist than minDomains."""
    for me, before in replay(ctx):
        hard = [c for c in me.member.task.spread if c.hard]
        for i, c in enumerate(hard):
            where = f"pod {me.key} on node {me.node.name}"
            key = c.topology_key
            if key not in me.node.labels:
                yield Violation(
                    SPREAD,
                    (me.key, me.node.name),
                    f"{where}: the node has no label {key} that DoNotSchedule constraint {i} reads",
                )
                continue
            counts = _spread_counts(ctx, me, hard, c, before)
            low = min(counts.values()) if len(counts) >= c.domains_needed else 0
            sel = c.selector_for(me.member.task.labels)
            own = 1 if sel is not None and sel.matches(me.member.task.labels) else 0
            value = me.node.labels[key]
            skew = counts.get(value, 0) + own - low
            if skew > c.max_skew:
                yield Violation(
                    SPREAD,
                    (me.key, me.node.name),
                    f"{where}: DoNotSchedule constraint {i} on {key}: domain {key}={value} "
                    f"would hold {counts.get(value, 0) + own} matching pods against a minimum of "
                    f"{low}, skew {skew} > maxSkew {c.max_skew}",
                )
