"""One function per constraint family, named after the verifier rule it enforces.

Rules the model enforces by construction, with no constraint of their own:
- ``selector``, ``taint``, ``gpu-filter``, ``tdm-window``, ``tdm-revocable-only``: static
  predicates; they decide which count and device-use variables exist (``candidates.py``).
  ``tdm-window``'s other half, the evictions ``shuffle`` makes at a window's close, is
  ``evictions.shuffle_evictions``.
- ``running-kept``: running pods have no placement variables, only an eviction count when
  they may be evicted.

``pod-affinity``, ``pod-anti-affinity`` and ``topology-spread`` are ``affinity.py``'s families.

On a class of several nodes the capacity families bound the class as a whole (its size times
one node); ``expand.py`` then packs the counts into the class's nodes and devices, and a class
whose counts it cannot pack is solved again node by node. On a one-node class with one device
per device class the families are exactly the per-node, per-device rules.

Like the verifier, capacity is judged only where the plan adds something: a class that running
pods already over-commit does not make the model infeasible, it just cannot take new pods until
evictions bring it back within its limits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ortools.sat.python import cp_model

from models.admission import EnqueueLimit, enqueue_minimum, judged_at_enqueue
from models.gpu import GpuDevice

from ..compile.classes import DeviceClass
from ..compile.data import Compiled
from ..compile.records import Unit
from ..compile.units import UNLIMITED, model_units
from .domains import within_level
from .variables import Expr, IntVar, Linear, ShareUser, Variables, lsum, wsum


def _limit(
    m: cp_model.CpModel,
    new: Sequence[tuple[int, Expr, int]],
    held: Sequence[tuple[int, Expr, int]],
    limit: int,
    gate: Callable[[], IntVar] | None = None,
) -> None:
    """``Σ coef·expr (new) + Σ coef·expr (held) ≤ limit``; each term is (coefficient,
    expression, the expression's upper bound). When what is held alone may exceed the limit,
    the rule applies only if ``gate()`` holds (the plan adds something here)."""
    max_new = sum(c * ub for c, _, ub in new)
    max_held = sum(c * ub for c, _, ub in held)
    if max_new + max_held <= limit:
        return
    expr = wsum([(c, e) for c, e, _ in new] + [(c, e) for c, e, _ in held])
    if max_held <= limit or gate is None:
        m.add(expr <= limit)
    else:
        m.add(expr <= limit).only_enforce_if(gate())


def held_terms(
    v: Variables, pods: Iterable[int], amount: Callable[[int], int]
) -> list[tuple[int, Expr, int]]:
    """What running pods ``pods`` hold after the plan, as terms: a constant for those that
    stay for sure, ``amount × kept`` per eviction group for the others."""
    data = v.data
    fixed = 0
    groups: dict[int, int] = {}
    for i in pods:
        eg = data.evict_group_of.get(i)
        if eg is None:
            fixed += amount(i)
        elif eg not in groups:
            groups[eg] = amount(i)
    terms: list[tuple[int, Expr, int]] = [(fixed, 1, 1)] if fixed else []
    for eg, a in sorted(groups.items()):
        if a:
            terms.append((a, v.kept(eg), data.evict_groups[eg].size))
    return terms


def _class_held(
    v: Variables, cls: int, amount: Callable[[int], int]
) -> list[tuple[int, Expr, int]]:
    """What the evictable pods of a class hold, per eviction group."""
    data = v.data
    out: list[tuple[int, Expr, int]] = []
    for eg in data.classes[cls].evict_groups:
        a = amount(data.evict_groups[eg].pods[0])
        if a:
            out.append((a, v.kept(eg), data.evict_groups[eg].size))
    return out


def node_capacity(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Σ requests of running pods that stay and new pods ≤ allocatable, per class and
    resource, on every class the plan places pods on (a resource the node lacks has 0)."""
    for c, cls in enumerate(data.classes):
        groups = data.groups_on[c]
        if not groups:
            continue
        resources = {r for g in groups for r, a in data.groups[g].request.items() if a > 0}
        for resource in sorted(resources):
            new = [
                (data.groups[g].request[resource], v.count[g, c], v.count_bound[g, c])
                for g in groups
                if data.groups[g].request.get(resource, 0) > 0
            ]
            held = [(cls.size * cls.held.get(resource, 0), 1, 1)]
            held += _class_held(v, c, lambda i, r=resource: data.running[i].request.get(r, 0))
            limit = cls.size * cls.allocatable.get(resource, 0)
            _limit(m, new, held, limit, lambda c=c: v.any_new(c))


def pod_count(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Pods bound to a node ≤ its pod capacity, per class the plan places pods on."""
    for c, cls in enumerate(data.classes):
        groups = data.groups_on[c]
        if not groups:
            continue
        new = [(1, v.count[g, c], v.count_bound[g, c]) for g in groups]
        held = [(cls.size * cls.held_pods, 1, 1), *_class_held(v, c, lambda i: 1)]
        _limit(m, new, held, cls.size * cls.pod_capacity, lambda c=c: v.any_new(c))


def gpu_users(v: Variables, c: int, dc: int) -> list[ShareUser]:
    """(group, container, takes it whole, uses, bound of the uses) of every possible new
    share of device class ``dc`` of class ``c`` (collected once per class)."""
    if c not in v.device_users:
        data = v.data
        per_dc: dict[int, list[ShareUser]] = {}
        for g in data.groups_on[c]:
            group = data.groups[g]
            for k, options in enumerate(group.where.containers.get(c, [])):
                if v.is_pooled(g, k, c):
                    continue
                bound = group.gpus[k].nums * v.count_bound[g, c]
                for d, whole in options:
                    user = ShareUser(g, k, whole, v.uses(g, k, c, d), bound)
                    per_dc.setdefault(d, []).append(user)
        v.device_users[c] = per_dc
    return v.device_users[c].get(dc, [])


def _holdings(v: Variables, c: int, dc: int) -> list[tuple[int, int, int, int]]:
    """(eviction group, shares per pod, memory per pod, cores per pod) on ``dc``."""
    data = v.data
    out = []
    for eg in data.classes[c].evict_groups:
        on = [(mem, cor) for d, mem, cor in data.evict_groups[eg].holdings if d == dc]
        if on:
            out.append((eg, len(on), sum(a for a, _ in on), sum(b for _, b in on)))
    return out


def gpu_capacity(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Per device class (per device on a one-node class): time-slices, memory and cores of
    the shares running pods keep and new pods take stay within the devices (hami-gpu §3.4),
    with the zero-core rule on single devices. Devices taken whole are in ``gpu_exclusive``."""
    for c, cls in enumerate(data.classes):
        for dc in cls.devices:
            users = [u for u in gpu_users(v, c, dc.index) if not u.whole]
            if users:
                _shares_fit(m, v, c, dc, users)


def _shares_fit(
    m: cp_model.CpModel,
    v: Variables,
    c: int,
    dc: DeviceClass,
    users: list[ShareUser],
) -> None:
    data = v.data
    total = data.classes[c].size * dc.per_node
    dev = dc.device
    holdings = _holdings(v, c, dc.index)
    gate = lambda: v.any_new(c)  # noqa: E731
    requests = [(data.groups[g].gpus[k], uses, ub) for g, k, _, uses, ub in users]
    slots = [(1, uses, ub) for _, uses, ub in requests]
    held_slots = [(total * dc.used_slots, 1, 1)] + [
        (n, v.kept(eg), data.evict_groups[eg].size) for eg, n, _, _ in holdings
    ]
    _limit(m, slots, held_slots, total * dev.count, gate)
    memory = [
        (r.memory_on(dev.memory), uses, ub) for r, uses, ub in requests if r.memory_on(dev.memory)
    ]
    held_memory = [(total * dc.used_memory, 1, 1)] + [
        (a, v.kept(eg), data.evict_groups[eg].size) for eg, _, a, _ in holdings
    ]
    _limit(m, memory, held_memory, total * dev.memory, gate)
    cores = [(r.booked_cores, uses, ub) for r, uses, ub in requests if r.booked_cores]
    held_cores = [(total * dc.used_cores, 1, 1)] + [
        (b, v.kept(eg), data.evict_groups[eg].size) for eg, _, _, b in holdings
    ]
    if total == 1 and dev.cores > 0:
        zero_new = [(uses, ub) for r, uses, ub in requests if r.booked_cores == 0]
        zero_held = [eg for eg, _, _, b in holdings if b == 0]
        if dc.used_zero_core:
            held_cores.append((1, 1, 1))
        elif zero_new or zero_held:
            flag = v.any_positive(
                f"zero_core[{c},{dc.index}]",
                [e for e, _ in zero_new] + [v.kept(eg) for eg in zero_held],
                [ub for _, ub in zero_new] + [data.evict_groups[eg].size for eg in zero_held],
            )
            held_cores.append((1, flag, 1))
    _limit(m, cores, held_cores, total * dev.cores, gate)


def new_share_devices(v: Variables, c: int, dc: DeviceClass) -> Expr:
    """Devices of ``dc`` that carry new shares (an auxiliary, made once): at least the
    shares over the time-slices, the memory over a device's free memory and the cores over
    its free cores."""
    key = (c, dc.index)
    if key in v.new_devices:
        return v.new_devices[key]
    data = v.data
    users = [u for u in gpu_users(v, c, dc.index) if not u.whole]
    if not users:
        return 0
    total = data.classes[c].size * dc.per_node
    dev = dc.device
    rows: list[tuple[Linear, int, Expr]] = []
    uses = lsum(u.uses for u in users)
    rows.append((Linear(uses), max(1, dev.count), uses))
    mem = wsum((data.groups[g].gpus[k].memory_on(dev.memory), e) for g, k, _, e, _ in users)
    if not isinstance(mem, int):
        rows.append((Linear(mem), max(1, dev.memory), mem))
    cores = wsum((data.groups[g].gpus[k].booked_cores, e) for g, k, _, e, _ in users)
    if not isinstance(cores, int) and dev.cores > 0:
        rows.append((Linear(cores), dev.cores, cores))
    rows.extend(_large_share_rows(data, dev, users))

    def least(vals: object) -> int:
        return max(-(-row.value(vals) // per) for row, per, _ in rows)  # type: ignore[arg-type]

    s = v.aux_int(0, total, f"new_devices[{c},{dc.index}]", least)
    for _, per, expr in rows:
        m = v.model
        m.add(expr <= per * s)
    v.new_devices[key] = s
    return s


LARGE_SHARE_SPLITS = (1, 2, 3)
"""``k`` for which a row bounds the shares larger than ``1/(k+1)`` of a device."""


def _large_share_rows(
    data: Compiled, dev: GpuDevice, users: Sequence[ShareUser]
) -> list[tuple[Linear, int, Expr]]:
    """Bin-packing cuts on top of the summed memory and cores: a device holds at most ``k``
    shares that each take more than ``1/(k+1)`` of its memory (or cores), so ``s`` devices
    hold at most ``k * s`` of them. Without them, three 60 % shares fit "1.8 ≤ 2 devices" in
    the model and fail when the counts are dealt out to devices."""
    rows: list[tuple[Linear, int, Expr]] = []
    seen: set[frozenset[int]] = set()
    for k in LARGE_SHARE_SPLITS:
        for capacity, size in (
            (dev.memory, lambda g, i: data.groups[g].gpus[i].memory_on(dev.memory)),
            (dev.cores, lambda g, i: data.groups[g].gpus[i].booked_cores),
        ):
            if capacity <= 0:
                continue
            large = [
                n for n, u in enumerate(users) if size(u.group, u.container) * (k + 1) > capacity
            ]
            if not large or (len(large) == len(users) and k >= max(1, dev.count)):
                continue
            if frozenset(large) in seen:
                continue
            seen.add(frozenset(large))
            expr = lsum(users[n].uses for n in large)
            if not isinstance(expr, int):
                rows.append((Linear(expr), k, expr))
    return rows


def occupied_devices(v: Variables, c: int, dc: DeviceClass) -> Expr:
    """Devices of ``dc`` that carry some share after the plan: at least those keeping a
    running share and at least those getting a new one (an auxiliary when both can be)."""
    key = (c, dc.index)
    if key in v.occupied:
        return v.occupied[key]
    kept_held: Expr = wsum((n, v.kept(eg)) for eg, n, _, _ in _holdings(v, c, dc.index))
    shared = new_share_devices(v, c, dc)
    if isinstance(shared, int):
        v.occupied[key] = kept_held
        return kept_held
    if isinstance(kept_held, int) and kept_held == 0:
        v.occupied[key] = shared
        return shared
    rows = [Linear(kept_held), Linear(shared)]
    total = v.data.classes[c].size * dc.per_node
    occupied = v.aux_int(
        0, total, f"occupied[{c},{dc.index}]", lambda vals: max(r.value(vals) for r in rows)
    )
    v.model.add(occupied >= kept_held)
    v.model.add(occupied >= shared)
    v.occupied[key] = occupied
    return occupied


def gpu_exclusive(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """A device taken whole (all its memory, or exclusive cores on a 100-core card) carries
    no other share: whole devices taken + devices that keep a running share or get a new one
    ≤ the devices of the class (pitfall 5 of hami-gpu), per device class — or over the pool
    of device classes that every whole-device container of the class may take alike."""
    for c, cls in enumerate(data.classes):
        if c in v.pooled:
            pool = [cls.devices[d] for d in v.pooled[c]]
            total = sum(cls.size * dc.per_node for dc in pool)
            occupied = lsum(occupied_devices(v, c, dc) for dc in pool)
            m.add(v.pooled_whole(c) + occupied <= total)
            continue
        for dc in cls.devices:
            whole = [u.uses for u in gpu_users(v, c, dc.index) if u.whole]
            if whole:
                m.add(lsum([*whole, occupied_devices(v, c, dc)]) <= cls.size * dc.per_node)


def gpu_distinct(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Each GPU container gets ``nums`` devices, no device twice (per node, a device class
    gives a container at most its devices per node), all on one NUMA node when bound."""
    for g in data.groups:
        for c in g.classes:
            for k in range(len(g.gpus_on(c))):
                if not v.is_pooled(g.index, k, c):
                    _container_devices(m, v, g.index, k, c)


def _container_devices(m: cp_model.CpModel, v: Variables, g: int, k: int, c: int) -> None:
    group = v.data.groups[g]
    nums = group.gpus[k].nums
    options = group.where.containers[c][k]
    count = v.count[g, c]
    devices = v.data.classes[c].devices
    if len(options) > 1:
        m.add(lsum(v.use[g, k, c, d] for d, _ in options) == nums * count)
    numas = v.numa_nodes(g, k, c)
    if not numas:
        if nums > 1 and len(options) > 1:
            for d, _ in options:
                m.add(v.use[g, k, c, d] <= devices[d].per_node * count)
        return
    on = {q: v.on_numa[g, k, c, q] for q in numas}
    m.add(lsum(on.values()) == count)
    for q, var in on.items():
        inside = [d for d, _ in options if devices[d].device.numa == q]
        m.add(lsum(v.uses(g, k, c, d) for d in inside) == nums * var)
        for d in inside:
            m.add(v.uses(g, k, c, d) <= devices[d].per_node * var)
    for d, _ in options:
        if devices[d].device.numa not in on:
            m.add(v.uses(g, k, c, d) == 0)


def gang(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """All or nothing: new pods only for admitted jobs (at most a task's pending pods per
    task), and an admitted job ends with at least minAvailable bound pods (and each role's
    minTaskMember) — spec/cpsat-practice.md B.2. A unit of interchangeable single-pod jobs
    places exactly one pod per admitted job."""
    for unit in data.units:
        if not unit.groups:
            continue
        admit = v.admit[unit.index]
        if unit.size > 1:
            (g,) = unit.groups
            m.add(v.placed(g) == admit)
            continue
        job = unit.job
        for g in unit.groups:
            m.add(v.placed(g) <= data.groups[g].size * admit)
        new = lsum(v.placed(g) for g in unit.groups)
        kept = wsum((e, t) for e, t, _ in held_terms(v, unit.running, lambda i: 1))
        m.add(new >= admit)
        m.add(new + kept >= job.min_available * admit)
        if job.min_available < sum(job.min_task_member.values()):
            continue
        for role, minimum in job.min_task_member.items():
            role_new = lsum(v.placed(g) for g in unit.groups if data.groups[g].task.role == role)
            role_pods = [i for i in unit.running if data.running[i].task.role == role]
            role_kept = wsum((e, t) for e, t, _ in held_terms(v, role_pods, lambda i: 1))
            m.add(role_new + role_kept >= minimum * admit)


def topology_hard(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """A hard-topology job's bound pods share one HyperNode of tier ≤ its limit (enforced by
    Volcano only with the network-topology-aware plugin, spec §9.6)."""
    if not data.topology_on:
        return
    top = data.instance.topology.top_tier
    for unit in data.units:
        limit = data.instance.hard_topology_limit(unit.job)
        if unit.index not in v.admit or limit is None or limit >= top or unit.size > 1:
            continue  # a unit of several jobs has one pod each, always inside one HyperNode
        allowed = [i for i, t in enumerate(data.levels) if t <= limit]
        m.add(within_level(v, unit.index, allowed[-1]) >= v.admit[unit.index])


def queue_capability(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Pods of a queue (and, hierarchically, of its subtree) stay within the quota the plugin
    enforces at allocation, on each resource the queue's new pods request."""
    for queue, limit in data.queue_limits.items():
        units = sorted({data.unit_of[j] for j in data.queue_members.get(queue, [])})
        admitting = [u for u in units if u in v.admit]
        groups = [g for u in admitting for g in data.units[u].groups]
        if not groups:
            continue
        running = [i for u in units for i in data.units[u].running]
        requested = sorted(
            {r for g in groups for r, amount in data.groups[g].request.items() if amount > 0}
        )
        for resource in requested:
            new = [
                (data.groups[g].request[resource], v.placed(g), data.groups[g].size)
                for g in groups
                if data.groups[g].request.get(resource, 0) > 0
            ]
            held = held_terms(v, running, lambda i, r=resource: data.running[i].request.get(r, 0))
            requesters = [
                v.admit[u]
                for u in admitting
                if any(data.groups[g].request.get(resource, 0) > 0 for g in data.units[u].groups)
            ]
            bounds = [data.units[u].size for u in admitting if v.admit[u] in requesters]

            def gate(
                queue: str = queue, resource: str = resource, r=requesters, b=bounds
            ) -> IntVar:
                return v.any_positive(f"queue_new[{queue},{resource}]", list(r), list(b))

            _limit(m, new, held, limit.get(resource, 0), gate)


def queue_leaf(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Hierarchical capacity admits jobs only in leaf queues; closed queues admit nothing."""
    tree = data.instance.queue_tree
    for unit in data.units:
        if unit.index not in v.admit:
            continue
        queue = unit.job.queue
        open_queue = queue in tree and tree.queue(queue).is_open
        if not data.leaf_ok.get(queue, True) or not open_queue:
            m.add(v.admit[unit.index] == 0)


def queue_enqueue(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """The Pending jobs with ``minResources`` the plan admits pass Volcano's enqueue together:
    per comparison the deciding plugins make (``models.admission.enqueue_limits``) and per
    resource one of them asks for, held back + Σ admitted minimums ≤ limit. Jobs whose pods
    a frozen part of the plan places (a large-neighbourhood view) count as admitted.

    In model units the minimums and what is held back round up and the limit down, so a plan
    the model allows passes the verifier's exact comparison."""
    limits = data.instance.enqueue_limits
    if not limits:
        return
    judged = [u for u in data.units if judged_at_enqueue(u.job)]
    for limit in limits:
        scoped = [u for u in judged if u.job.key in limit.jobs]
        deciding = [u for u in scoped if u.index in v.admit]
        if deciding:
            frozen = [u for u in scoped if u.index not in v.admit and _frozen_admitted(data, u)]
            _enqueue_limit(m, v, limit, deciding, frozen)


def _frozen_admitted(data: Compiled, unit: Unit) -> bool:
    """The unit's job holds pods it did not run before the plan: a frozen part placed them."""
    return any(data.running[i].pod.node is None for i in unit.running)


def _enqueue_limit(
    m: cp_model.CpModel,
    v: Variables,
    limit: EnqueueLimit,
    deciding: list[Unit],
    frozen: list[Unit],
) -> None:
    minimum = {u.index: model_units(enqueue_minimum(u.job), round_up=True) for u in deciding}
    held = model_units(limit.held, round_up=True)
    for u in frozen:
        for name, amount in model_units(enqueue_minimum(u.job), round_up=True).items():
            held[name] = held.get(name, 0) + amount
    bound = model_units(limit.limit, round_up=False)
    asked = sorted({r for need in minimum.values() for r, a in need.items() if a > 0})
    for resource in asked:
        room = bound.get(resource, 0)
        if room >= UNLIMITED:
            continue
        users = [u for u in deciding if minimum[u.index].get(resource, 0) > 0]
        left = room - held.get(resource, 0)
        if left < 0:
            for u in users:
                m.add(v.admit[u.index] == 0)
            continue
        terms = [(minimum[u.index][resource], v.admit[u.index], u.size) for u in users]
        if sum(c * size for c, _, size in terms) > left:
            m.add(wsum((c, admit) for c, admit, _ in terms) <= left)
