"""``eviction-allowed``: which running pods the model may evict, and how many.

Evict only what Volcano's rules could: preemptable pods (static, ``data.py``), within
disruption budgets, leaving a job either gone or at its minAvailable (gang), never below a
queue's guarantee; by preempt only when the queue has a pending job of higher priority than
the victim's, by reclaim only from a reclaimable queue above its deserved while another queue
has pending work, and only down to that deserved.

Like Volcano, which evicts and only pipelines the preemptor, the rules do not require the
beneficiary to be placed in the same plan: an eviction that places nothing lowers the work
stage, so the objective never makes one, and a greedy plan that preempts or reclaims stays a
feasible hint.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from .constraints import held_terms
from .data import Compiled
from .variables import Expr, IntVar, Linear, Variables, lsum, wsum


def eviction_allowed(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    if not v.evict:
        return
    for unit in data.units:
        _unit_evictions(m, v, data, unit.index)
    by_queue: dict[str, list[int]] = {}
    for eg in data.evict_groups:
        by_queue.setdefault(data.running[eg.pods[0]].job.queue, []).append(eg.index)
    for queue, groups in by_queue.items():
        guarantee = _floors(v, data, queue, data.queue_guarantee.get(queue, {}))
        if guarantee:
            flags: list[Expr] = [v.evict[eg] for eg in groups]
            bounds = [data.evict_groups[eg].size for eg in groups]
            guarded = v.any_positive(f"evicts_from[{queue}]", flags, bounds)
            for expr, target in guarantee:
                m.add(expr >= target).only_enforce_if(guarded)
        reclaim = _reclaim_source(m, v, data, queue) if can_reclaim(data, queue) else None
        for eg in groups:
            if can_preempt(data, data.evict_groups[eg].pods[0]):
                continue
            if reclaim is not None:
                m.add(v.evict[eg] <= data.evict_groups[eg].size * reclaim)
            else:
                m.add(v.evict[eg] == 0)


def can_preempt(data: Compiled, i: int) -> bool:
    """Preempt may take running pod ``i``: a job of its queue with pending pods has a higher
    priority than the victim's job."""
    if "preempt" not in data.instance.scheduler.actions:
        return False
    victim = data.running[i].job
    return any(
        u.job.queue == victim.queue and u.groups and u.job.priority > victim.priority
        for u in data.units
    )


def can_reclaim(data: Compiled, queue: str) -> bool:
    """Reclaim may take from ``queue``: reclaim is configured, the queue is reclaimable and
    above its deserved, and another queue has pending pods."""
    return (
        "reclaim" in data.instance.scheduler.actions
        and _above_deserved(data, queue)
        and any(u.job.queue != queue and u.groups for u in data.units)
    )


def _unit_evictions(m: cp_model.CpModel, v: Variables, data: Compiled, unit: int) -> None:
    running = data.units[unit].running
    groups = sorted({data.evict_group_of[i] for i in running if i in data.evict_group_of})
    if not groups:
        return
    job = data.units[unit].job
    evicted = [v.evict[eg] for eg in groups]
    if job.key in data.eviction_budget:
        m.add(lsum(evicted) <= data.eviction_budget[job.key])
    bound: Expr = wsum(
        [(e, t) for e, t, _ in held_terms(v, running, lambda i: 1)]
        + [(1, v.placed(g)) for g in data.units[unit].groups]
    )
    most = len(running) + sum(data.groups[g].size for g in data.units[unit].groups)
    sizes = [data.evict_groups[eg].size for eg in groups]
    evicting = v.any_positive(f"evicts[{job.key}]", list(evicted), sizes)
    alive = v.any_positive(f"alive[{job.key}]", [bound], [most])
    m.add(bound >= job.min_available * alive).only_enforce_if(evicting)


def _reclaim_source(m: cp_model.CpModel, v: Variables, data: Compiled, queue: str) -> IntVar:
    """The literal "reclaim takes from ``queue``": it keeps the queue at min(deserved, current)
    on every deserved resource."""
    rules = _floors(v, data, queue, data.queue_deserved.get(queue, {}), floor_current=True)
    linear = [(Linear(expr), target) for expr, target in rules]
    flag = v.aux_bool(
        f"reclaim[{queue}]",
        lambda vals: int(all(expr.value(vals) >= target for expr, target in linear)),
    )
    for expr, target in rules:
        m.add(expr >= target).only_enforce_if(flag)
    return flag


def _queue_running(data: Compiled, queue: str) -> list[int]:
    return [i for u in data.units if u.job.queue == queue for i in u.running]


def _above_deserved(data: Compiled, queue: str) -> bool:
    """Reclaim takes only from reclaimable queues holding more than they deserve (capacity
    §5.4 step 3); a queue that deserves nothing is an immediate victim."""
    if not data.instance.queue_tree.queue(queue).reclaimable:
        return False
    deserved = {r: a for r, a in data.queue_deserved.get(queue, {}).items() if a > 0}
    if not deserved:
        return True
    held: dict[str, int] = {}
    for i in _queue_running(data, queue):
        for resource, amount in data.running[i].request.items():
            held[resource] = held.get(resource, 0) + amount
    return any(held.get(resource, 0) > amount for resource, amount in deserved.items())


def _floors(
    v: Variables,
    data: Compiled,
    queue: str,
    floor: dict[str, int],
    *,
    floor_current: bool = False,
) -> list[tuple[Expr, int]]:
    """(allocation expression, target) per resource of ``floor``: the queue's pods after the
    plan (rounded down) must reach the floor (or the current allocation where that is lower,
    with ``floor_current``)."""
    units = [u for u in data.units if u.job.queue == queue]
    running = [i for u in units for i in u.running]
    out = []
    for resource, amount in sorted(floor.items()):
        if amount <= 0:
            continue
        current = sum(data.running[i].request_floor.get(resource, 0) for i in running)
        target = min(amount, current) if floor_current else amount
        if target <= 0:
            continue
        kept = wsum(
            (e, t)
            for e, t, _ in held_terms(
                v, running, lambda i, r=resource: data.running[i].request_floor.get(r, 0)
            )
        )
        new = wsum(
            (data.groups[g].request_floor.get(resource, 0), v.placed(g))
            for u in units
            for g in u.groups
        )
        out.append((lsum([kept, new]), target))
    return out
