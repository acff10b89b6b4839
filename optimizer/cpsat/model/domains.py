""" "All of a job's pods inside one domain of a topology level", for hard topology and the
topology stage alike (spec/cpsat-practice.md B.3).

Per (job, level) a literal ``within`` may be 1 only if one domain literal is chosen and every
bound pod of the job lies in that domain: one aggregated row per domain, not per node. The
domains of a level ≥ 1 are HyperNodes, and every node class lies inside one. Level 0 is "one
node": on a class of several nodes, choosing it also requires the job's new pods to fit the
free room of one node of the class, and the plan's expansion then puts them on one node.
"""

from __future__ import annotations

from collections.abc import Callable

from ortools.sat.python import cp_model

from ..compile.affinity_keys import node_caps
from ..compile.classes import EvictGroup
from .variables import Expr, IntVar, Linear, Values, Variables, lsum, wsum


def _domain(v: Variables, level: int, cls: int) -> str:
    if level == 0:
        return f"class:{cls}"
    return v.data.classes[cls].path[level - 1]


def within_level(v: Variables, unit: int, level: int) -> IntVar:
    """``within[unit, level]`` with its domain-choice literals and linking constraints.

    ``within`` may be 1 when the unit has no bound pod at all (a pending job costs nothing);
    otherwise one domain literal must hold it, and domains that cannot (at level 0: classes
    none of whose nodes could hold the job) get no literal.
    """
    key = (unit, level)
    if key in v.within:
        return v.within[key]
    m, data = v.model, v.data
    per_class = v.unit_pods_on(unit)
    blocked: set[int] = set()
    if level == 0:
        blocked = _level0_blocked(v, unit) | {c for c in per_class if not _could_hold(v, unit, c)}
    by_domain: dict[str, list[int]] = {}
    for c in per_class:
        if c not in blocked:
            by_domain.setdefault(_domain(v, level, c), []).append(c)
    fits = (
        {c: _one_node_rows(v, unit, c) for c in per_class if c not in blocked} if level == 0 else {}
    )
    linear = {c: Linear(e) for c, e in per_class.items()}
    fit_rows = {c: [(Linear(e), limit) for e, limit in rows] for c, rows in fits.items()}
    state: list[object] = [set(), 0]

    def inside(vals: Values) -> int:
        used_classes = {c for c, e in linear.items() if e.value(vals) > 0}
        used = {_domain(v, level, c) for c in used_classes}
        ok = not used_classes or (
            len(used) == 1
            and not used_classes & blocked
            and all(e.value(vals) <= lim for c in used_classes for e, lim in fit_rows.get(c, []))
        )
        state[0], state[1] = used, int(ok)
        return int(ok)

    a = v.aux_bool(f"within[{data.units[unit].key},{level}]", inside)
    v.within[key] = a
    most = _max_pods(v, unit)
    chosen: dict[str, IntVar] = {}
    for name, cs in by_domain.items():

        def derive(vals: Values, name: str = name) -> int:
            # ``inside`` ran just before (auxiliaries are derived in creation order).
            used, ok = state
            return int(bool(ok) and name in used)  # type: ignore[operator]

        literal = v.aux_bool(f"domain[{data.units[unit].key},{level},{name}]", derive)
        chosen[name] = literal
        v.domain[unit, level, name] = literal
        m.add(lsum(per_class[c] for c in cs) <= most * literal + most * (1 - a))
        for c in cs:
            for expr, limit in fits.get(c, []):
                _at_most_if(m, expr, limit, literal)
    held_out = [per_class[c] for c in blocked & set(per_class)]
    if held_out:
        m.add(lsum(held_out) <= most * (1 - a))
    if len(chosen) > 1:
        m.add(lsum(chosen.values()) <= a)
    return a


def _at_most_if(m: cp_model.CpModel, expr: Expr, limit: int, literal: IntVar) -> None:
    m.add(expr <= limit).only_enforce_if(literal)


def _one_node_rows(v: Variables, unit: int, cls: int) -> list[tuple[Expr, int]]:
    """(expression, limit) rows saying the unit's new pods on ``cls`` fit one of its nodes;
    none for a one-node class, whose own capacity rows already say so.

    Evictable pods sit on every node of the class alike (``q`` per node), so the emptiest
    node after ``e`` of them are evicted still holds ``max(0, q − e)``: each row moves
    ``amount × (q − e)`` to the left, a bound that is exact when no pod is evicted.
    """
    data = v.data
    node_class = data.classes[cls]
    if node_class.size == 1:
        return []
    groups = [g for g in data.units[unit].groups if (g, cls) in v.count]
    evictable = [data.evict_groups[eg] for eg in node_class.evict_groups]

    def held(amount: Callable[[EvictGroup], int]) -> Expr:
        return wsum(
            (amount(eg), eg.size // node_class.size - v.evict[eg.index])
            for eg in evictable
            if amount(eg)
        )

    rows: list[tuple[Expr, int]] = []
    resources = sorted({r for g in groups for r, a in data.groups[g].request.items() if a > 0})
    for resource in resources:
        expr = wsum((data.groups[g].request.get(resource, 0), v.count[g, cls]) for g in groups)
        expr += held(lambda eg, r=resource: data.running[eg.pods[0]].request.get(r, 0))
        rows.append((expr, max(0, node_class.free(resource))))
    pods = lsum([*(v.count[g, cls] for g in groups), held(lambda eg: 1)])
    rows.append((pods, node_class.pod_capacity - node_class.held_pods))
    # A group's own device room on one node (shares per device, summed over its devices):
    # summed memory alone would let three 60 % shares onto a node of two devices.
    rows += [(v.count[g, cls], v.per_node[g, cls]) for g in groups if data.groups[g].gpus]
    caps = node_caps(data)
    rows += [(v.count[g, cls], caps[g]) for g in groups if g in caps]
    whole = wsum(
        (data.groups[g].gpus[k].nums, v.count[g, cls])
        for g in groups
        for k, options in enumerate(data.groups[g].where.containers.get(cls, []))
        if all(w for _, w in options)
    )
    if not isinstance(whole, int):
        pool = [dc for dc in node_class.devices if dc.pool and not dc.fixed]
        in_pool = {dc.index for dc in pool}
        whole += held(lambda eg: sum(1 for d, _, _ in eg.holdings if d in in_pool))
        rows.append((whole, sum(dc.per_node for dc in pool)))
    return rows


def _could_hold(v: Variables, unit: int, cls: int) -> bool:
    """One node of ``cls`` could hold what the unit must have bound when admitted."""
    data = v.data
    job = data.units[unit].job
    room = sum(v.per_node.get((g, cls), 0) for g in data.units[unit].groups)
    running = len(data.units[unit].running)
    return room + running >= max(1, job.min_available)


def _level0_blocked(v: Variables, unit: int) -> set[int]:
    """Classes of several nodes on two of which the unit has running pods: its pods there
    cannot end on one node (without evictions the model does not tie to a node)."""
    data = v.data
    nodes_per_class: dict[int, set[int]] = {}
    for i in data.units[unit].running:
        n = data.running[i].node
        nodes_per_class.setdefault(data.node_class[n], set()).add(n)
    return {
        c for c, nodes in nodes_per_class.items() if len(nodes) > 1 and data.classes[c].size > 1
    }


def _max_pods(v: Variables, unit: int) -> int:
    """Pods the unit can have bound after the plan: its pending and its running pods."""
    data = v.data
    pending = sum(data.groups[g].size for g in data.units[unit].groups)
    return pending + len(data.units[unit].running)
