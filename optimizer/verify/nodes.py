"""Rules of one node: its resources and pod count, and what lets a pod onto it (selectors,
taints).

Capacity is judged only on nodes that receive a placement: a node whose running pods already
exceed it and that gets nothing new is not the plan's fault.
"""

from __future__ import annotations

from collections.abc import Iterator

from models.resources import PODS, Resources, format_amount

from .context import Context, Violation


def check_node_capacity(ctx: Context) -> Iterator[Violation]:
    """Σ Resreq of the pods bound to a node ≤ its allocatable, on every resource some bound pod
    requests (a resource the node lacks has 0), for every node that receives a placement.

    A node whose running pods already exceed it and that gets no placement is not the plan's
    fault and is skipped. ``pods`` is left to ``pod-count``. Volcano's per-task fit test uses
    ``InitResreq`` against the idle resources at the time of the placement, which depends on an
    order a plan does not have; the final steady state is what is judged here.
    """
    for name in ctx.placed_nodes:
        node = ctx.node(name)
        used = sum((ctx.resreq(b.pod) for b in ctx.on_node[name]), Resources())
        for resource in sorted(used.dims() - {PODS}):
            limit = node.allocatable.get(resource, 0)
            if used[resource] > limit:
                yield Violation(
                    "node-capacity",
                    (name,),
                    f"node {name}: {resource} {format_amount(resource, used[resource])} > "
                    f"allocatable {format_amount(resource, limit)}",
                )


def check_pod_count(ctx: Context) -> Iterator[Violation]:
    """Pods bound to a node ≤ its pod capacity, for every node that receives a placement."""
    for name in ctx.placed_nodes:
        count, capacity = len(ctx.on_node[name]), ctx.node(name).pod_capacity
        if count > capacity:
            yield Violation(
                "pod-count", (name,), f"node {name}: {count} pods > pod capacity {capacity}"
            )


def check_selector(ctx: Context) -> Iterator[Violation]:
    """nodeSelector labels and required node affinity hold on the node of each new placement.

    Affinity terms are ORed; as in Kubernetes, a term without expressions matches no node.
    """
    for p in ctx.plan.placements:
        task, labels = ctx.members[p.pod].task, ctx.node(p.node).labels
        wrong = [f"{k}={v}" for k, v in task.node_selector.items() if labels.get(k) != v]
        if wrong:
            yield Violation(
                "selector",
                (p.pod, p.node),
                f"pod {p.pod} on node {p.node}: nodeSelector {', '.join(wrong)} does not match",
            )
        terms = task.required_affinity
        if terms and not any(t.match_expressions and t.matches(labels) for t in terms):
            yield Violation(
                "selector",
                (p.pod, p.node),
                f"pod {p.pod} on node {p.node}: no required node affinity term "
                f"(of {len(terms)}) matches",
            )


def check_taint(ctx: Context) -> Iterator[Violation]:
    """NoSchedule and NoExecute taints are tolerated, and an unschedulable node takes a new pod
    only if it tolerates ``node.kubernetes.io/unschedulable:NoSchedule``."""
    for p in ctx.plan.placements:
        tolerations, node = ctx.members[p.pod].task.tolerations, ctx.node(p.node)
        untolerated = [
            f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
            for t in node.scheduling_taints
            if not any(tol.tolerates(t.key, t.value, t.effect) for tol in tolerations)
        ]
        if untolerated:
            yield Violation(
                "taint",
                (p.pod, p.node),
                f"pod {p.pod} on node {p.node}: untolerated taint {', '.join(untolerated)}",
            )
