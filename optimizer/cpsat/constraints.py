"""One function per constraint family, named after the verifier rule it enforces.

``selector``, ``taint``, ``gpu-filter``, ``tdm-window`` and ``tdm-revocable-only`` are static:
they decide which variables exist at all (``data.compile_instance``) and need no constraint.
``running-kept`` holds by construction: running pods have no placement variables, only an
eviction literal when they may be evicted.

Like the verifier, capacity is judged only where the plan adds something: a node or device
that running pods already over-commit does not make the model infeasible, it just cannot take
new pods until evictions bring it back within its limits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from ortools.sat.python import cp_model

from models.gpu import FULL_CORES, GpuRequest

from .data import Compiled, model_units
from .variables import Expr, Linear, Variables

IntVar = cp_model.IntVar


def _limit(
    m: cp_model.CpModel,
    v: Variables,
    new: Sequence[tuple[int, Expr, int]],
    held: Sequence[tuple[int, int]],
    limit: int,
    gate: Callable[[], IntVar] | None = None,
    extra: Expr = 0,
) -> None:
    """``Σ coef·expr (new) + Σ amount·kept (held) + extra ≤ limit``.

    ``new`` holds (coefficient, expression, the expression's upper bound), ``held`` (amount,
    running pod index); ``extra`` is a literal or 0. When the running pods alone may exceed the
    limit, the rule applies only if ``gate()`` holds (the plan adds something here), so an
    over-commitment that is already there does not make the model infeasible.
    """
    max_new = sum(c * ub for c, _, ub in new)
    max_held = sum(a for a, _ in held) + (0 if isinstance(extra, int) else 1)
    if max_new + max_held <= limit:
        return
    expr = sum(c * e for c, e, _ in new) + sum(a * v.kept(i) for a, i in held) + extra
    if max_held <= limit or gate is None:
        m.add(expr <= limit)
    else:
        m.add(expr <= limit).only_enforce_if(gate())


def node_capacity(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Σ requests of kept running and new pods ≤ allocatable, per node and resource, on every
    node the plan places pods on (a resource the node lacks has 0)."""
    for n, node in enumerate(data.nodes):
        groups = data.groups_on[n]
        if not groups:
            continue
        running = data.running_on[n]
        limits = model_units(node.allocatable, round_up=False)
        dims = {r for g in groups for r, a in data.groups[g].request.items() if a > 0}
        dims |= {r for i in running for r, a in data.running[i].request.items() if a > 0}
        for resource in sorted(dims):
            new = [
                (data.groups[g].request[resource], v.count[g, n], data.groups[g].size)
                for g in groups
                if data.groups[g].request.get(resource, 0) > 0
            ]
            held = [
                (data.running[i].request[resource], i)
                for i in running
                if data.running[i].request.get(resource, 0) > 0
            ]
            _limit(m, v, new, held, limits.get(resource, 0), partial(v.node_used_flag, n))


def pod_count(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Pods bound to a node ≤ its pod capacity, for every node the plan places pods on."""
    for n, node in enumerate(data.nodes):
        groups = data.groups_on[n]
        if not groups:
            continue
        new = [(1, v.count[g, n], data.groups[g].size) for g in groups]
        held = [(1, i) for i in data.running_on[n]]
        _limit(m, v, new, held, node.pod_capacity, partial(v.node_used_flag, n))


def gpu_capacity(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Device-level sharing (hami-gpu §3.4): each container gets ``nums`` distinct devices (on
    one NUMA node when bound), and per device slots, memory, cores, exclusive use and the
    zero-core rule hold. Whole-device containers take devices that carry nothing else: per
    node, the whole devices taken plus the occupied devices fit in the device pool."""
    for g in data.groups:
        for n in g.nodes:
            for c, request in enumerate(g.gpus):
                if not g.whole[n][c]:
                    _container_devices(m, v, data, g.index, c, n, request.nums)
    for n in v.whole:
        occupied = [v.occupied_flag(n, d) for d in data.pool[n]]
        m.add(v.whole_devices(n) + sum(occupied) <= len(data.pool[n]))
    for (n, d), users in v.device_users().items():
        device = data.nodes[n].gpus[d]
        held = data.holders.get((n, d), [])
        gate = partial(v.device_used_flag, n, d)
        shares = [(data.groups[gi].size, data.groups[gi].gpus[c], var) for gi, c, var in users]
        slots = [(1, var, size) for size, _, var in shares]
        _limit(m, v, slots, [(1, i) for i, _, _ in held], device.count, gate)
        memory = [(r.memory_on(device.memory), var, size) for size, r, var in shares]
        memory_held = [(a, i) for i, a, _ in held if a > 0]
        _limit(m, v, [t for t in memory if t[0] > 0], memory_held, device.memory, gate)
        cores = [(r.booked_cores, var, size) for size, r, var in shares if r.booked_cores > 0]
        cores_held = [(c, i) for i, _, c in held if c > 0]
        zero_new = [(var, size) for size, r, var in shares if r.booked_cores == 0]
        zero_held = [i for i, _, c in held if c == 0]
        zero: Expr = 0
        if device.cores > 0 and (zero_new or zero_held):
            zero = v.any_positive(
                f"zero_core[{n},{d}]",
                [var for var, _ in zero_new] + [v.kept(i) for i in zero_held],
                [size for _, size in zero_new] + [1] * len(zero_held),
            )
        _limit(m, v, cores, cores_held, device.cores, gate, zero)
        if device.cores == FULL_CORES:
            _exclusive_use(m, v, n, d, shares, [i for i, _, _ in held])


def _container_devices(
    m: cp_model.CpModel, v: Variables, data: Compiled, g: int, c: int, n: int, nums: int
) -> None:
    """Σ devices = nums × pods, and no device twice in one container (a device's count ≤ the
    pods, or ≤ the pods on its NUMA node when the container is NUMA-bound)."""
    count = v.count[g, n]
    devices = data.groups[g].devices[n]
    numas = v.numa_nodes(g, c, n)
    if not numas:
        m.add(sum(v.on_device[g, c, n, d] for d in devices) == nums * count)
        if nums > 1:
            for d in devices:
                m.add(v.on_device[g, c, n, d] <= count)
        return
    gpus = data.nodes[n].gpus
    m.add(sum(v.on_numa[g, c, n, k] for k in numas) == count)
    for k in numas:
        inside = [v.on_device[g, c, n, d] for d in devices if gpus[d].numa == k]
        m.add(sum(inside) == nums * v.on_numa[g, c, n, k])
        for var in inside:
            m.add(var <= v.on_numa[g, c, n, k])
    for d in devices:
        if gpus[d].numa not in numas:
            m.add(v.on_device[g, c, n, d] == 0)


def _exclusive_use(
    m: cp_model.CpModel,
    v: Variables,
    n: int,
    d: int,
    shares: Sequence[tuple[int, GpuRequest, IntVar]],
    held: Sequence[int],
) -> None:
    """A cores-100 share of a 100-core device is the device's only share (pitfall 5). Running
    exclusive holders need no rule here: their 100 cores leave room only for zero-core shares,
    which the zero-core rule refuses."""
    exclusive = [var for _, r, var in shares if r.booked_cores >= FULL_CORES]
    if not exclusive:
        return
    others = [(var, size) for size, r, var in shares if r.booked_cores < FULL_CORES]
    e = v.aux_bool(
        f"exclusive[{n},{d}]", lambda vals: min(1, sum(vals[x.index] for x in exclusive))
    )
    m.add(sum(exclusive) == e)
    rest = [var for var, _ in others] + [v.kept(i) for i in held]
    if rest:
        m.add(sum(rest) <= (sum(size for _, size in others) + len(held)) * (1 - e))


def gang(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """All or nothing: new pods only for admitted jobs (at most a task's pending pods per
    task), and an admitted job ends with at least minAvailable bound pods (and each role's
    minTaskMember) — spec/cpsat-practice.md B.2."""
    for job in data.jobs:
        groups = data.job_groups[job.key]
        if not groups:
            continue
        admit = v.admit[job.key]
        for g in groups:
            m.add(v.placed(g) <= data.groups[g].size * admit)
        new = sum(v.placed(g) for g in groups)
        kept = sum(v.kept(i) for i in data.job_running[job.key])
        m.add(new >= admit)
        m.add(new + kept >= job.min_available * admit)
        if job.min_available < sum(job.min_task_member.values()):
            continue
        for role, minimum in job.min_task_member.items():
            role_new = sum(v.placed(g) for g in groups if data.groups[g].task.role == role)
            role_kept = sum(
                v.kept(i) for i in data.job_running[job.key] if data.running[i].task.role == role
            )
            m.add(role_new + role_kept >= minimum * admit)


def topology_hard(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """A hard-topology job's bound pods share one HyperNode of tier ≤ its limit (enforced by
    Volcano only with the network-topology-aware plugin, spec §9.6)."""
    if not data.topology_on:
        return
    top = data.instance.topology.top_tier
    for job in data.jobs:
        limit = data.instance.hard_topology_limit(job)
        if job.key not in v.admit or limit is None or limit >= top:
            continue
        allowed = [i for i, t in enumerate(data.levels) if t <= limit]
        m.add(v.within_level(job.key, allowed[-1]) >= v.admit[job.key])


def queue_capability(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Pods of a queue (and, hierarchically, of its subtree) stay within the quota the plugin
    enforces at allocation, on each resource the queue's new pods request."""
    for queue, limit in data.queue_limits.items():
        jobs = [j for j in data.queue_members.get(queue, []) if j in v.admit]
        groups = [g for j in jobs for g in data.job_groups[j]]
        if not groups:
            continue
        held_all = [i for j in data.queue_members[queue] for i in data.job_running[j]]
        requested = sorted(
            {r for g in groups for r, amount in data.groups[g].request.items() if amount > 0}
        )
        for resource in requested:
            new = [
                (data.groups[g].request[resource], v.placed(g), data.groups[g].size)
                for g in groups
                if data.groups[g].request.get(resource, 0) > 0
            ]
            held = [
                (data.running[i].request[resource], i)
                for i in held_all
                if data.running[i].request.get(resource, 0) > 0
            ]
            requesters = [
                v.admit[j]
                for j in jobs
                if any(data.groups[g].request.get(resource, 0) > 0 for g in data.job_groups[j])
            ]
            gate = partial(
                v.any_positive,
                f"queue_new[{queue},{resource}]",
                list(requesters),
                [1] * len(requesters),
            )
            _limit(m, v, new, held, limit.get(resource, 0), gate)


def queue_leaf(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Hierarchical capacity admits jobs only in leaf queues; closed queues admit nothing."""
    tree = data.instance.queue_tree
    for job in data.jobs:
        if job.key not in v.admit:
            continue
        open_queue = job.queue in tree and tree.queue(job.queue).is_open
        if not data.leaf_ok.get(job.queue, True) or not open_queue:
            m.add(v.admit[job.key] == 0)


def eviction_allowed(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Evict only what Volcano's rules could: preemptable pods (static), within disruption
    budgets, leaving a job either gone or at its minAvailable (gang), never below a queue's
    guarantee; by preempt only when the queue has a pending job of higher priority than the
    victim's, by reclaim only from a reclaimable queue above its deserved while another queue
    has pending work, and only down to that deserved.

    Like Volcano, which evicts and only pipelines the preemptor, the rules do not require the
    beneficiary to be placed in the same plan: an eviction that places nothing lowers the
    work stage, so the objective never makes one, and a greedy plan that preempts or
    reclaims stays a feasible hint.
    """
    if not v.evict:
        return
    for job in data.jobs:
        _job_evictions(m, v, data, job.key)
    by_queue: dict[str, list[int]] = {}
    for i in v.evict:
        by_queue.setdefault(data.running[i].job.queue, []).append(i)
    for queue, pods in by_queue.items():
        guarantee = _floors(v, data, queue, data.queue_guarantee.get(queue, {}))
        if guarantee:
            flags: list[Expr] = [v.evict[i] for i in pods]
            guarded = v.any_positive(f"evicts_from[{queue}]", flags, [1] * len(flags))
            for expr, target in guarantee:
                m.add(expr >= target).only_enforce_if(guarded)
        reclaim = _reclaim_source(m, v, data, queue) if can_reclaim(data, queue) else None
        for i in pods:
            if can_preempt(data, i):
                continue
            if reclaim is not None:
                m.add(v.evict[i] <= reclaim)
            else:
                m.add(v.evict[i] == 0)


def can_preempt(data: Compiled, i: int) -> bool:
    """Preempt may take running pod ``i``: a job of its queue with pending pods has a higher
    priority than the victim's job."""
    if "preempt" not in data.instance.scheduler.actions:
        return False
    victim = data.running[i].job
    return any(
        j.queue == victim.queue and data.job_groups[j.key] and j.priority > victim.priority
        for j in data.jobs
    )


def can_reclaim(data: Compiled, queue: str) -> bool:
    """Reclaim may take from ``queue``: reclaim is configured, the queue is reclaimable and
    above its deserved, and another queue has pending pods."""
    return (
        "reclaim" in data.instance.scheduler.actions
        and _above_deserved(data, queue)
        and any(j.queue != queue and data.job_groups[j.key] for j in data.jobs)
    )


def _job_evictions(m: cp_model.CpModel, v: Variables, data: Compiled, job: str) -> None:
    evicted = [v.evict[i] for i in data.job_running[job] if i in v.evict]
    if not evicted:
        return
    if job in data.eviction_budget:
        m.add(sum(evicted) <= data.eviction_budget[job])
    minimum = data.instance.job_by_key[job].min_available
    bound = sum(v.kept(i) for i in data.job_running[job])
    bound += sum(v.placed(g) for g in data.job_groups[job])
    most = len(data.job_running[job]) + sum(data.groups[g].size for g in data.job_groups[job])
    evicting = v.any_positive(f"evicts[{job}]", list(evicted), [1] * len(evicted))
    alive = v.any_positive(f"alive[{job}]", [bound], [most])
    m.add(bound >= minimum * alive).only_enforce_if(evicting)


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


def _above_deserved(data: Compiled, queue: str) -> bool:
    """Reclaim takes only from reclaimable queues holding more than they deserve (capacity
    §5.4 step 3); a queue that deserves nothing is an immediate victim."""
    if not data.instance.queue_tree.queue(queue).reclaimable:
        return False
    deserved = {r: a for r, a in data.queue_deserved.get(queue, {}).items() if a > 0}
    if not deserved:
        return True
    held: dict[str, int] = {}
    for j in data.jobs:
        if j.queue != queue:
            continue
        for i in data.job_running[j.key]:
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
    jobs = [j.key for j in data.jobs if j.queue == queue]
    running = [i for j in jobs for i in data.job_running[j]]
    out = []
    for resource, amount in sorted(floor.items()):
        if amount <= 0:
            continue
        current = sum(data.running[i].request_floor.get(resource, 0) for i in running)
        target = min(amount, current) if floor_current else amount
        if target <= 0:
            continue
        kept = sum(data.running[i].request_floor.get(resource, 0) * v.kept(i) for i in running)
        new = sum(
            data.groups[g].request_floor.get(resource, 0) * v.placed(g)
            for j in jobs
            for g in data.job_groups[j]
        )
        out.append((kept + new, target))
    return out


ALL = (
    node_capacity,
    pod_count,
    gpu_capacity,
    gang,
    topology_hard,
    queue_capability,
    queue_leaf,
    eviction_allowed,
)
