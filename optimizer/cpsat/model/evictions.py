"""``eviction-allowed``: which running pods the model may evict, and how many, and which it
must.

Evict only what Volcano's rules could: preemptable pods (static, ``data.py``), within
disruption budgets, leaving a job either gone or at its minAvailable (gang), never below a
queue's guarantee; by preempt only when the queue has a pending job of higher priority than
the victim's, by reclaim only from a reclaimable queue above its deserved while another queue
has pending work, and only down to that deserved.

TDM's ``shuffle`` is different: its victims are not the plan's choice. Volcano evicts what
``VictimTasks`` names whatever else the cycle does, so per closed zone and job the model evicts
exactly the count ``data.py`` worked out (``Compiled.tdm_evictions``), free only in which of
the zone's candidates go, as Volcano's map order is. None of the rules above applies to those
pods (shuffle asks no gang, conformance, queue or disruption-cap question), and a job that
shuffle takes pods from loses none to preempt or reclaim: an eviction before the round would
change the job's budget, so the model does not mix the two.

Like Volcano, which evicts and only pipelines the preemptor, the rules do not require the
beneficiary to be placed in the same plan: an eviction that places nothing lowers the work
stage, so the objective never makes one, and a greedy plan that preempts or reclaims stays a
feasible hint.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from models.queues import ROOT

from ...disruption import carried_by
from ...options import SolveOptions
from ..compile.data import Compiled
from .constraints import held_terms
from .variables import Expr, IntVar, Linear, Variables, lsum, wsum


def eviction_allowed(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    if not v.evict:
        return
    shuffle_evictions(m, v, data)
    shuffled_jobs = {key for _, key in data.tdm_evictions}
    for unit in data.units:
        _unit_evictions(m, v, data, unit.index, shuffled_jobs)
    by_queue: dict[str, list[int]] = {}
    for eg in data.evict_groups:
        if not shuffled(data, eg.index):
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


def eviction_caps(m: cp_model.CpModel, v: Variables, data: Compiled, options: SolveOptions) -> None:
    """The user's disruption caps: ``--max-evictions`` over all evictions, and each queue's
    budget over the pods its quota carries (``optimizer.disruption``). They bound the
    evictions the plan chooses; shuffle's happen whatever the plan is, so they do not count."""
    chosen = [eg for eg in data.evict_groups if not shuffled(data, eg.index)]
    if not chosen:
        return
    caps = options.disruption
    if caps.max_evictions is not None:
        m.add(lsum([v.evict[eg.index] for eg in chosen]) <= caps.max_evictions)
    for queue, budget in sorted(caps.queue_eviction_budgets.items()):
        counted = [
            v.evict[eg.index]
            for eg in chosen
            if carried_by(data.instance, queue, data.running[eg.pods[0]].job.queue)
        ]
        if counted:
            m.add(lsum(counted) <= budget)


def shuffled(data: Compiled, eg: int) -> bool:
    """Eviction group ``eg`` holds shuffle's candidates (classes never mix TDM zones, and a
    closed zone's evictable pods are all candidates)."""
    return data.evict_groups[eg].pods[0] in data.tdm_zone


def shuffle_evictions(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Per closed zone and job, exactly the pods ``shuffle``'s rounds evict, from the job's
    candidates on the zone's nodes."""
    groups: dict[tuple[str, str], list[int]] = {}
    for eg in data.evict_groups:
        first = eg.pods[0]
        if first in data.tdm_zone:
            key = (data.tdm_zone[first], data.running[first].job.key)
            groups.setdefault(key, []).append(eg.index)
    for key, count in sorted(data.tdm_evictions.items()):
        m.add(lsum([v.evict[eg] for eg in groups.get(key, [])]) == count)


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
    above its deserved, and another queue with pending pods may reclaim from it."""
    if "reclaim" not in data.instance.scheduler.actions or not _above_deserved(data, queue):
        return False
    reclaimers = {u.job.queue for u in data.units if u.groups and u.job.queue != queue}
    return any(
        _preemptive(data, mine) and _may_reclaim_from(data, mine, queue)
        for mine in sorted(reclaimers)
    )


def _preemptive(data: Compiled, mine: str) -> bool:
    """The ``Preemptive`` gate of queue ``mine`` at the snapshot: the queue is Open and, with
    capacity (spec §5.4), some pending pod of it stays within realCapability and within deserved
    on some resource it requests, at the leaf or (level L > 0) at an ancestor 1..L up."""
    conf = data.instance.scheduler
    if not data.instance.queue_tree.queue(mine).is_open:
        return False
    if not conf.has("capacity"):
        return True
    chain = [mine, *_near_ancestors(data, mine, conf.reclaim_level())]
    held = {q: _amounts(data, q) for q in chain}
    limit = data.queue_limits.get(mine, {})
    for u in data.units:
        if u.job.queue != mine:
            continue
        for g in u.groups:
            request = {r: a for r, a in data.groups[g].request.items() if a > 0}
            used = {r: held[mine].get(r, 0) + a for r, a in request.items()}
            if any(amount > limit.get(r, 0) for r, amount in used.items()):
                continue
            if any(_partly_within(held[q], request, data.queue_deserved.get(q, {})) for q in chain):
                return True
    return False


def _partly_within(held: dict[str, int], request: dict[str, int], deserved: dict[str, int]) -> bool:
    """``LessEqualPartlyWithDimensionZeroFiltered``: on some requested resource the queue stays
    within its deserved with the request added."""
    return any(held.get(r, 0) + a <= deserved.get(r, 0) for r, a in request.items())


def _amounts(data: Compiled, queue: str) -> dict[str, int]:
    """What the running pods ``queue`` carries hold, per resource (model units)."""
    out: dict[str, int] = {}
    for i in _queue_running(data, queue):
        for r, a in data.running[i].request.items():
            out[r] = out.get(r, 0) + a
    return out


def _may_reclaim_from(data: Compiled, mine: str, queue: str) -> bool:
    """Whether hierarchical capacity with ``ancestorReclaimLevel`` L lets queue ``mine``
    reclaim from ``queue`` (spec §5.4, as ``capacity.go`` Reclaimable decides per victim; here
    per queue, from what the queues hold at the snapshot).

    With L > 0: the contention gate (both sides without a deserved signal for what they use,
    under a shared non-root ancestor within L levels) refuses; and each of ``queue``'s
    ancestors 1..L levels up that is not root and not ``mine``'s ancestor at the same depth
    must deserve none of what ``queue`` holds or hold more than it deserves.
    """
    level = data.instance.scheduler.reclaim_level()
    if level == 0:
        return True
    tree = data.instance.queue_tree
    held = _held(data, queue)
    wanted = {
        r for u in data.units if u.job.queue == mine for g in u.groups for r in _uses(data, g)
    }
    shared = set(_near_ancestors(data, mine, level)) & set(_near_ancestors(data, queue, level))
    if shared and _deserves_none(data, queue, held) and _deserves_none(data, mine, wanted):
        return False
    ancestors, mine_ancestors = tree.ancestors(queue), tree.ancestors(mine)
    for step in range(1, level + 1):
        depth = len(ancestors) - step
        if depth < 0:
            break
        name = ancestors[depth]
        if name == ROOT or (depth < len(mine_ancestors) and mine_ancestors[depth] == name):
            continue
        if not (_deserves_none(data, name, held) or _exceeds_deserved(data, name)):
            return False
    return True


def _uses(data: Compiled, group: int) -> set[str]:
    return {r for r, a in data.groups[group].request.items() if a > 0}


def _held(data: Compiled, queue: str) -> set[str]:
    """The resources the running pods of ``queue`` (its subtree, hierarchically) hold."""
    return {
        r for i in _queue_running(data, queue) for r, a in data.running[i].request.items() if a > 0
    }


def _deserves_none(data: Compiled, queue: str, resources: set[str]) -> bool:
    """``isImmediateVictim``: ``queue`` deserves none of ``resources``."""
    deserved = data.queue_deserved.get(queue, {})
    return not any(deserved.get(r, 0) > 0 for r in resources)


def _near_ancestors(data: Compiled, queue: str, level: int) -> list[str]:
    ancestors = data.instance.queue_tree.ancestors(queue)
    return [name for name in ancestors[max(len(ancestors) - level, 0) :] if name != ROOT]


def _unit_evictions(
    m: cp_model.CpModel, v: Variables, data: Compiled, unit: int, shuffled_jobs: set[str]
) -> None:
    """The budget and gang rules of the evictions the plan chooses from one unit's pods
    (none from a job that shuffle takes pods from)."""
    running = data.units[unit].running
    groups = sorted(
        eg
        for eg in {data.evict_group_of[i] for i in running if i in data.evict_group_of}
        if not shuffled(data, eg)
    )
    if not groups:
        return
    job = data.units[unit].job
    if job.key in shuffled_jobs:
        for eg in groups:
            m.add(v.evict[eg] == 0)
        return
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
    """Running pods whose quota ``queue`` carries (its members: its subtree hierarchically)."""
    members = set(data.queue_members.get(queue, ()))
    return [i for u in data.units if u.job.queue == queue or u.key in members for i in u.running]


def _above_deserved(data: Compiled, queue: str) -> bool:
    """Reclaim takes only from reclaimable queues holding more than they deserve (capacity
    §5.4 step 3); a queue that deserves nothing is an immediate victim."""
    return data.instance.queue_tree.queue(queue).reclaimable and _exceeds_deserved(data, queue)


def _exceeds_deserved(data: Compiled, queue: str) -> bool:
    """``queue`` (its subtree, hierarchically) holds more than it deserves on a resource it
    deserves, or deserves nothing."""
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
