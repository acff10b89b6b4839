"""The soft terms pods carry — preferred node affinity, preferred pod (anti-)affinity and
``ScheduleAnyway`` spread — as one integer score, on the model and on any plan alike.

The score ranks inside the ``topology`` stage, after the LCA tiers: the stage is
``(span + 1) × (LCA part) + soft score``, so no soft term can buy a worse tier (docs/AFFINITY.md).
It is a linear stand-in for Volcano's normalised plugin scores, defined per new pod so that
the model and :func:`soft_value` agree exactly:

- each preferred node affinity term (matchExpressions only) whose expressions the pod's node
  matches: its weight;
- each preferred pod affinity term: its weight if the pod's domain holds a running pod that
  cannot be evicted and matches the term; each preferred anti-affinity term: its weight if it
  holds none (pending pods do not count here);
- each ``ScheduleAnyway`` constraint of a group on a class-level key: − ``SPREAD_SCORE`` × the
  skew after the plan (matching pods of its fullest eligible domain minus its least filled).
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from models.affinity import PreferredNodeTerm, preferred_node_score

from ...plan import Plan
from ..compile.affinity_keys import (
    compiled_terms,
    group_ns,
    has_pod_terms,
    matches_pod,
    per_node_keys,
    running_ns,
)
from ..compile.data import Compiled
from ..compile.records import Group
from .affinity import SPREAD_SCORE, domain_counts, eligible_nodes, minimum_of
from .variables import Expr, Linear, Variables, lsum, wsum


def _expression_terms(g: Group) -> tuple[PreferredNodeTerm, ...]:
    return tuple(t for t in g.task.preferred_node_affinity if not t.fields)


def _soft_spread(data: Compiled, g: Group) -> list[int]:
    """Indices into ``g.task.spread`` of the soft constraints the score reads."""
    per_node = per_node_keys(data.instance)
    return [i for i, c in enumerate(g.task.spread) if not c.hard and c.topology_key not in per_node]


def _pod_term_score(data: Compiled, g: Group, n: int) -> int:
    """Σ weights of the group's preferred pod terms satisfied on node ``n``."""
    node = data.nodes[n]
    kinds = [
        (terms, wanted)
        for kind, wanted in (("preferred_affinity", True), ("preferred_anti", False))
        if (terms := compiled_terms(g.task, kind))
    ]
    if not kinds:
        return 0
    staying = [r for i, r in enumerate(data.running) if i not in data.evict_group_of]
    total = 0
    for terms, wanted in kinds:
        for term in terms:
            key = term[0].topology_key
            value = node.labels.get(key)
            found = value is not None and any(
                data.nodes[r.node].labels.get(key) == value
                and matches_pod(
                    data.instance.namespaces, group_ns(g), term, running_ns(r), r.task.labels
                )
                for r in staying
            )
            if found == wanted:
                total += term[0].weight
    return total


def _per_pod(data: Compiled, g: Group, n: int) -> int:
    node = data.nodes[n]
    return preferred_node_score(_expression_terms(g), node.name, node.labels) + _pod_term_score(
        data, g, n
    )


def soft_span(data: Compiled) -> int:
    """An upper bound on the score."""
    if not has_pod_terms(data.instance):
        return 0
    pods = len(data.instance.pods)
    total = 0
    for g in data.groups:
        weights = sum(t.weight for t in g.task.preferred_node_affinity)
        for kind in ("preferred_affinity", "preferred_anti"):
            weights += sum(t.weight for t, _ in compiled_terms(g.task, kind))
        total += g.size * weights + SPREAD_SCORE * pods * len(_soft_spread(data, g))
    return total


def soft_score(m: cp_model.CpModel, v: Variables, data: Compiled) -> Expr:
    """The score as a model expression."""
    if not has_pod_terms(data.instance):
        return 0
    terms: list[tuple[int, Expr]] = []
    spread: list[Expr] = []
    for g in data.groups:
        for c in g.classes:
            score = _per_pod(data, g, data.classes[c].rep)
            if score:
                terms.append((score, v.count[g.index, c]))
        soft = [g.task.spread[i] for i in _soft_spread(data, g)]
        keys = [c.topology_key for c in soft]
        for i, c in enumerate(soft):
            counts = domain_counts(v, g, c, keys)
            if counts:
                top = max(b for _, b in counts.values())
                exprs = [e for e, _ in counts.values()]
                low = minimum_of(m, v, exprs, top, f"soft{g.index},{i}")
                spread.append(low - _maximum_of(m, v, exprs, top, f"soft{g.index},{i}"))
    return wsum(terms) + SPREAD_SCORE * lsum(spread)


def _maximum_of(m: cp_model.CpModel, v: Variables, exprs: list[Expr], top: int, name: str) -> Expr:
    """A variable at least every expression (the solver lowers it to their maximum)."""
    linear = [Linear(e) for e in exprs]
    high = v.aux_int(0, top, f"spread_max[{name}]", lambda vals: max(e.value(vals) for e in linear))
    for expr in exprs:
        m.add(high >= expr)
    return high


def soft_value(data: Compiled, plan: Plan) -> int:
    """The score of any plan."""
    if not has_pod_terms(data.instance):
        return 0
    group_of = {p.key: g for g in data.groups for p in g.pods}
    total = 0
    for p in plan.placements:
        g = group_of.get(p.pod)
        if g is not None:
            total += _per_pod(data, g, data.node_index(p.node))
    bound = plan.bound_pods(data.instance)
    labels_of = {
        p.key: data.instance.job_by_key[p.job].task(p.task).labels for p in data.instance.pods
    }
    ns_of = {p.key: p.namespace for p in data.instance.pods}
    for g in data.groups:
        soft = [g.task.spread[i] for i in _soft_spread(data, g)]
        keys = [c.topology_key for c in soft]
        for c in soft:
            nodes = eligible_nodes(data, g, c, keys)
            counts = {data.nodes[n].labels[c.topology_key]: 0 for n in nodes}
            eligible = {data.nodes[n].name for n in nodes}
            sel = c.selector_for(g.task.labels)
            for key, b in bound.items():
                if (
                    b.node in eligible
                    and ns_of[key] == group_ns(g)
                    and c.counts(sel, labels_of[key])
                ):
                    counts[data.instance.node_by_name[b.node].labels[c.topology_key]] += 1
            if counts:
                total += SPREAD_SCORE * (min(counts.values()) - max(counts.values()))
    return total
