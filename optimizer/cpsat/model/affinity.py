"""Pod (anti-)affinity and topology spread in the CP-SAT model: hard terms as constraints over
topology domains, soft ones as a score inside the topology stage (docs/AFFINITY.md).

Everything is linear in per-domain counts: the pods of a group in a domain are the sum of its
class counts there, because a class agrees on every label value a term reads (``classes.py``
puts those keys in the class key, and the running pods that terms read in the node signature).
Keys whose value differs on every node (``kubernetes.io/hostname``) are *per-node keys*: a
required anti-affinity on one keeps its classes (at most one pod of a self-rejecting group per
node, which ``expand.py`` honours; two groups that reject each other never share a class),
while required affinity and hard spread on one put the key into the class key.

The rules are those the verifier replays (spec/k8s-affinity-spread.md §6.9), made to hold for
any order where the rule needs it, and conservatively where a final state cannot tell:

- anti-affinity, both ways: a group stays out of every domain where a running pod (evictable
  or not) or another group's pod matches one of its terms or rejects it;
- affinity: with a matching running pod somewhere, every pod goes to a domain that holds a
  matching running pod that cannot be evicted; with none, a group matching its own terms puts
  all its pods, and those of every other pending group its terms match, into one domain; a
  group that needs pods no one runs yet is not placed;
- DoNotSchedule spread: for each domain that receives the group's pods, its final count minus
  the final minimum over eligible domains is at most maxSkew (the minimum is 0 under
  minDomains); placements are then ordered by ``order_placements`` so that the replay holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ortools.sat.python import cp_model

from models.affinity import SpreadConstraint
from models.cluster import Node

from ..compile.affinity_keys import (
    Term,
    compiled_terms,
    group_ns,
    has_pod_terms,
    matches_pod,
    per_node_keys,
    running_ns,
)
from ..compile.data import Compiled
from ..compile.records import Group, RunningPod
from .variables import Expr, IntVar, Linear, Variables, lsum

SPREAD_SCORE = 100
"""Soft-spread score per pod of skew between eligible domains (the scale of a term weight)."""

# -- domains --------------------------------------------------------------------------------


class _Domains:
    """Domains of the classes and nodes for the keys the terms read."""

    def __init__(self, data: Compiled) -> None:
        self.data = data
        self.per_node = per_node_keys(data.instance)

    def rep(self, c: int) -> Node:
        return self.data.nodes[self.data.classes[c].rep]

    def of_class(self, c: int, key: str) -> str | None:
        """The class's domain for a class-level key (None: its nodes lack the key)."""
        return self.rep(c).labels.get(key)

    def of_node(self, n: int, key: str) -> str | None:
        return self.data.nodes[n].labels.get(key)

    def by_value(self, classes: Iterable[int], key: str) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for c in classes:
            value = self.of_class(c, key)
            if value is not None:
                out.setdefault(value, []).append(c)
        return out


def _forbid(m: cp_model.CpModel, v: Variables, g: Group, classes: Iterable[int]) -> None:
    for c in classes:
        var = v.count.get((g.index, c))
        if var is not None:
            m.add(var == 0)


def _sum(v: Variables, g: Group, classes: Iterable[int]) -> tuple[Expr, int]:
    cs = [c for c in classes if (g.index, c) in v.count]
    return lsum(v.count[g.index, c] for c in cs), sum(v.count_bound[g.index, c] for c in cs)


# -- pod-anti-affinity ------------------------------------------------------------------------


def pod_anti_affinity(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Required anti-affinity of pending groups and running pods, both ways (see module)."""
    if not has_pod_terms(data.instance):
        return
    dom = _Domains(data)
    rejecting = [(r, compiled_terms(r.task, "required_anti")) for r in data.running]
    rejecting = [(r, ts) for r, ts in rejecting if ts]
    for g in data.groups:
        own = compiled_terms(g.task, "required_anti")
        for term in own:
            for r in data.running:
                if matches_pod(
                    data.instance.namespaces, group_ns(g), term, running_ns(r), r.task.labels
                ):
                    _forbid_running_domain(m, v, dom, g, term[0].topology_key, r)
            for h in data.groups:
                if matches_pod(
                    data.instance.namespaces, group_ns(g), term, group_ns(h), h.task.labels
                ):
                    _pending_pair(m, v, dom, g, h, term[0].topology_key)
        for r, terms in rejecting:
            for term in terms:
                if matches_pod(
                    data.instance.namespaces, running_ns(r), term, group_ns(g), g.task.labels
                ):
                    _forbid_running_domain(m, v, dom, g, term[0].topology_key, r)


def _forbid_running_domain(
    m: cp_model.CpModel, v: Variables, dom: _Domains, g: Group, key: str, r: RunningPod
) -> None:
    value = dom.of_node(r.node, key)
    if value is None:
        return
    if key in dom.per_node:
        _forbid(m, v, g, [dom.data.node_class[r.node]])
    else:
        _forbid(m, v, g, [c for c in g.classes if dom.of_class(c, key) == value])


def _pending_pair(
    m: cp_model.CpModel, v: Variables, dom: _Domains, g: Group, h: Group, key: str
) -> None:
    """g's pods and h's never share a domain of ``key`` (g = h: one pod per domain)."""
    if key in dom.per_node:
        for c in g.classes:
            if dom.of_class(c, key) is None or (h.index, c) not in v.count:
                continue
            if g is h:
                m.add(v.count[g.index, c] <= dom.data.classes[c].size)
            else:
                _exclusive(m, v, [v.count[g.index, c]], [v.count_bound[g.index, c]], h, [c])
        return
    mine = dom.by_value(g.classes, key)
    theirs = dom.by_value(h.classes, key)
    for value, classes in mine.items():
        if g is h:
            m.add(_sum(v, g, classes)[0] <= 1)
        elif value in theirs:
            exprs = [v.count[g.index, c] for c in classes]
            bounds = [v.count_bound[g.index, c] for c in classes]
            _exclusive(m, v, exprs, bounds, h, theirs[value])


def _exclusive(
    m: cp_model.CpModel,
    v: Variables,
    exprs: list[Expr],
    bounds: list[int],
    h: Group,
    classes: list[int],
) -> None:
    flag = v.any_positive(f"anti[{h.index}]", exprs, bounds)
    theirs, bound = _sum(v, h, classes)
    m.add(theirs <= bound * (1 - flag))


# -- pod-affinity -----------------------------------------------------------------------------


def pod_affinity(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Required affinity (see module): a domain with a running match that stays, or one
    domain for a self-affine group and the pods it matches."""
    if not has_pod_terms(data.instance):
        return
    dom = _Domains(data)
    for g in data.groups:
        terms = compiled_terms(g.task, "required_affinity")
        if not terms:
            continue
        keys = [t.topology_key for t, _ in terms]
        _forbid(m, v, g, [c for c in g.classes if any(dom.of_class(c, k) is None for k in keys)])

        def all_match(
            ns: str, labels: Mapping[str, str], g: Group = g, terms: list[Term] = terms
        ) -> bool:
            return all(
                matches_pod(data.instance.namespaces, group_ns(g), t, ns, labels) for t in terms
            )

        running = [
            (i, r)
            for i, r in enumerate(data.running)
            if all_match(running_ns(r), r.task.labels)
            and any(dom.of_node(r.node, k) is not None for k in keys)
        ]
        if running:
            staying = [r for i, r in running if i not in data.evict_group_of]
            for k in keys:
                allowed = {dom.of_node(r.node, k) for r in staying}
                _forbid(m, v, g, [c for c in g.classes if dom.of_class(c, k) not in allowed])
        elif all_match(group_ns(g), g.task.labels):
            others = [
                h for h in data.groups if h is not g and all_match(group_ns(h), h.task.labels)
            ]
            for k in keys:
                _one_domain(m, v, dom, [g, *others], k)
        else:
            _forbid(m, v, g, g.classes)


def _one_domain(
    m: cp_model.CpModel, v: Variables, dom: _Domains, groups: list[Group], key: str
) -> None:
    values = sorted({dom.of_class(c, key) or "" for g in groups for c in g.classes} - {""})
    chosen = {}
    for value in values:
        members = [(g, dom.by_value(g.classes, key).get(value, [])) for g in groups]
        exprs = [_sum(v, g, cs) for g, cs in members]
        linear = [Linear(e) for e, _ in exprs]
        chosen[value] = v.aux_bool(
            f"affine[{groups[0].index},{key}={value}]",
            lambda vals, linear=linear: int(any(e.value(vals) > 0 for e in linear)),
        )
        for expr, bound in exprs:
            m.add(expr <= bound * chosen[value])
    if chosen:
        m.add(lsum(chosen.values()) <= 1)


# -- topology-spread --------------------------------------------------------------------------


def eligible_nodes(data: Compiled, g: Group, c: SpreadConstraint, keys: Sequence[str]) -> list[int]:
    """Nodes with every key of the group's constraints (``keys``) that pass the inclusion
    policies (node affinity Honor by default, taints Ignore by default)."""
    out = []
    for n, node in enumerate(data.nodes):
        if any(k not in node.labels for k in keys):
            continue
        if c.includes(g.task, node):
            out.append(n)
    return out


def domain_counts(
    v: Variables, g: Group, c: SpreadConstraint, keys: Sequence[str]
) -> dict[str, tuple[Expr, int]]:
    """Per eligible domain, the matching pods after the plan (running ones that stay, the
    pending groups' new pods) as an expression with its upper bound."""
    data = v.data
    sel = c.selector_for(g.task.labels)
    ns = group_ns(g)
    nodes = eligible_nodes(data, g, c, keys)
    node_set = set(nodes)
    parts: dict[str, list[tuple[Expr, int]]] = {
        data.nodes[n].labels[c.topology_key]: [] for n in nodes
    }
    fixed: Counter[str] = Counter()
    kept: dict[int, str] = {}
    for i, r in enumerate(data.running):
        if r.node in node_set and running_ns(r) == ns and c.counts(sel, r.task.labels):
            value = data.nodes[r.node].labels[c.topology_key]
            if i in data.evict_group_of:
                kept[data.evict_group_of[i]] = value
            else:
                fixed[value] += 1
    for eg, value in kept.items():
        parts[value].append((v.kept(eg), data.evict_groups[eg].size))
    for h in data.groups:
        if group_ns(h) != ns or not c.counts(sel, h.task.labels):
            continue
        for cl in h.classes:
            rep = data.classes[cl].rep
            if rep in node_set:
                value = data.nodes[rep].labels[c.topology_key]
                parts[value].append((v.count[h.index, cl], v.count_bound[h.index, cl]))
    out = {}
    for value, terms in parts.items():
        expr = lsum([fixed[value], *(e for e, _ in terms)])
        out[value] = (expr, fixed[value] + sum(b for _, b in terms))
    return out


def minimum_of(m: cp_model.CpModel, v: Variables, exprs: list[Expr], top: int, name: str) -> IntVar:
    """A variable at most every expression (the solver raises it to their minimum)."""
    linear = [Linear(e) for e in exprs]
    low = v.aux_int(0, top, f"spread_min[{name}]", lambda vals: min(e.value(vals) for e in linear))
    for expr in exprs:
        m.add(low <= expr)
    return low


def topology_spread(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """DoNotSchedule constraints (see module)."""
    if not has_pod_terms(data.instance):
        return
    dom = _Domains(data)
    for g in data.groups:
        hard = [c for c in g.task.spread if c.hard]
        keys = [c.topology_key for c in hard]
        if not hard:
            continue
        _forbid(m, v, g, [c for c in g.classes if any(dom.of_class(c, k) is None for k in keys)])
        for i, c in enumerate(hard):
            counts = domain_counts(v, g, c, keys)
            top = max((b for _, b in counts.values()), default=0)
            low: Expr = 0
            if len(counts) >= c.domains_needed:
                low = minimum_of(m, v, [e for e, _ in counts.values()], top, f"{g.index},{i}")
            mine = dom.by_value(g.classes, c.topology_key)
            for value, classes in mine.items():
                expr, _ = counts.get(value, (0, 0))
                exprs = [v.count[g.index, cl] for cl in classes]
                bounds = [v.count_bound[g.index, cl] for cl in classes]
                receives = v.any_positive(f"spread_in[{g.index},{i},{value}]", exprs, bounds)
                m.add(expr - low <= c.max_skew + top * (1 - receives))
