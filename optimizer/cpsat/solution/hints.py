"""A plan as values of the model's variables: the greedy plan hints the first solve.

Every core variable is set from the plan (counts per group and class, device uses per device
class, NUMA nodes, admissions, evictions) and every auxiliary from its derivation, so the hint
is complete (cpsat-practice B.6). A plan that uses something the model rules out (a node the
TDM look-ahead forbids, say), or that keeps a pod shuffle evicts, is not *within* the model: it
is still a hint, but never the fallback result.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...plan import Placement, Plan
from ..compile.data import Compiled
from ..compile.records import Group
from ..model.variables import Variables


def _bump(values: dict[int, int], index: int, by: int = 1) -> None:
    values[index] = values.get(index, 0) + by


def group_of_pods(data: Compiled) -> dict[str, Group]:
    return {p.key: g for g in data.groups for p in g.pods}


def within_model(data: Compiled, plan: Plan) -> bool:
    """Whether every placement of ``plan`` is a choice the model of ``data`` offers, and the
    plan makes the evictions the model must (shuffle's count per closed zone and job)."""
    group_of = group_of_pods(data)
    for p in plan.placements:
        g = group_of.get(p.pod)
        if g is None or data.node_class[data.node_index(p.node)] not in g.classes:
            return False
    if not data.tdm_evictions:
        return True
    evicted = {e.pod for e in plan.evictions}
    made = dict.fromkeys(data.tdm_evictions, 0)
    for i, zone in data.tdm_zone.items():
        running = data.running[i]
        if running.pod.key in evicted:
            made[zone, running.job.key] += 1
    return made == data.tdm_evictions


def core_values(v: Variables, plan: Plan) -> dict[int, int]:
    """Counts, device uses, admissions and evictions of ``plan`` (pipelined pods hold nothing
    yet and are not hinted)."""
    data = v.data
    values: dict[int, int] = {}
    group_of = group_of_pods(data)
    admitted: dict[int, set[str]] = {}
    for p in plan.placements:
        g = group_of.get(p.pod)
        n = data.node_index(p.node)
        c = data.node_class[n]
        if g is None or (g.index, c) not in v.count:
            continue
        _bump(values, v.count[g.index, c].index)
        admitted.setdefault(g.unit, set()).add(data.instance.pod_by_key[p.pod].job)
        if g.gpus_on(c):
            _hint_devices(v, values, g, c, n, _containers(data, g, c, n, p))
    for unit, var in v.admit.items():
        values[var.index] = len(admitted.get(unit, ()))
    evicted = {e.pod for e in plan.evictions}
    for eg in data.evict_groups:
        n = sum(1 for i in eg.pods if data.running[i].pod.key in evicted)
        values[v.evict[eg.index].index] = n
    return values


def hint_values(v: Variables, plan: Plan) -> dict[int, int]:
    """Every variable's value under ``plan``."""
    return v.complete(core_values(v, plan))


def _containers(data: Compiled, g: Group, c: int, n: int, p: Placement) -> list[list[int] | None]:
    """Per GPU container, the device indices the placement gives it (None: not chosen)."""
    if p.gpus is None:
        return [None] * len(g.gpus)
    index = {d.id: i for i, d in enumerate(data.nodes[n].gpus)}
    flat = [index[s.id] for s in p.gpus if s.id in index]
    out: list[list[int] | None] = []
    start = 0
    for request in g.gpus:
        out.append(flat[start : start + request.nums])
        start += request.nums
    return out


def _hint_devices(
    v: Variables,
    values: dict[int, int],
    g: Group,
    c: int,
    n: int,
    containers: Sequence[list[int] | None],
) -> None:
    """Count one pod's container devices into the device-use and NUMA hints; a container
    whose devices the plan leaves open is counted on its first usable device class."""
    data = v.data
    devices = data.nodes[n].gpus
    for k, chosen in enumerate(containers):
        options = g.where.containers[c][k]
        nums = g.gpus[k].nums
        if chosen is None:
            chosen_classes = [options[0][0]] * nums
            numas = {data.classes[c].devices[options[0][0]].device.numa}
        else:
            chosen_classes = [data.device_class[n, d] for d in chosen]
            numas = {devices[d].numa for d in chosen}
        for dc in chosen_classes:
            var = v.use.get((g.index, k, c, dc))
            if var is not None:
                _bump(values, var.index)
        if len(numas) == 1:
            var = v.on_numa.get((g.index, k, c, numas.pop()))
            if var is not None:
                _bump(values, var.index)
