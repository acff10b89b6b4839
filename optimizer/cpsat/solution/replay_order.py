"""The order a CP-SAT plan lists its placements in, so that replaying it keeps DoNotSchedule
spread at every step (spec/k8s-affinity-spread.md §6.9).

The model bounds the *final* skew of each domain that receives a group's pods; a replay judges
each placement against the pods placed before it. Listing first the pods without hard spread
constraints (they raise counts but are not judged by them), then each constrained pod into the
currently least filled of its domains, turns the first into the second: a domain below the
final minimum is then always the one being filled (``affinity.py``'s module note).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ...plan import Placement
from ..compile.data import Compiled
from ..compile.records import Group
from ..model.affinity import eligible_nodes

Tracked = tuple[Group, int, set[int], Counter[str]]
"""(group, index of its hard constraint, eligible nodes, matching pods per domain)."""


def _counts(
    tracked: Sequence[Tracked], data: Compiled, ns: str, labels: dict[str, str], n: int
) -> None:
    """Count one pod (namespace, labels, node) into every tracked constraint it matches."""
    for g, i, nodes, counter in tracked:
        c = g.task.spread[i]
        if n in nodes and ns == g.job.namespace and c.counts(c.selector_for(g.task.labels), labels):
            counter[data.nodes[n].labels[c.topology_key]] += 1


def order_placements(
    data: Compiled, placements: Sequence[Placement], evicted: Sequence[int]
) -> list[Placement]:
    group_of = {p.key: g for g in data.groups for p in g.pods}
    constrained = {g.index for g in data.groups if any(c.hard for c in g.task.spread)}
    if not constrained:
        return list(placements)
    free: list[Placement] = []
    todo: list[Placement] = []
    for p in placements:
        g = group_of.get(p.pod)
        (todo if g is not None and g.index in constrained else free).append(p)
    tracked: list[Tracked] = []
    for gi in sorted(constrained):
        g = data.groups[gi]
        hard = [c for c in g.task.spread if c.hard]
        keys = [c.topology_key for c in hard]
        for i, c in enumerate(g.task.spread):
            if c.hard:
                tracked.append((g, i, set(eligible_nodes(data, g, c, keys)), Counter()))
    gone = set(evicted)
    for i, r in enumerate(data.running):
        if i not in gone:
            _counts(tracked, data, r.job.namespace, dict(r.task.labels), r.node)
    for p in free:
        g = group_of.get(p.pod)
        if g is not None:
            _counts(tracked, data, g.job.namespace, dict(g.task.labels), data.node_index(p.node))
    out = list(free)
    while todo:

        def fill(j: int) -> tuple[int, ...]:
            p = todo[j]
            g = group_of[p.pod]
            labels = data.nodes[data.node_index(p.node)].labels
            return tuple(
                counter[labels.get(g.task.spread[i].topology_key, "")]
                for tg, i, _, counter in tracked
                if tg is g
            )

        best = min(range(len(todo)), key=lambda j: (fill(j), j))
        p = todo.pop(best)
        g = group_of[p.pod]
        _counts(tracked, data, g.job.namespace, dict(g.task.labels), data.node_index(p.node))
        out.append(p)
    return out
