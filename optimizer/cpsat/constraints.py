"""One function per constraint family, named after the verifier rule it enforces.

``selector``, ``taint``, ``gpu-filter``, ``tdm-window`` and ``tdm-revocable-only`` are static:
they decide which variables exist at all (``data.compile_instance``) and need no constraint.
``running-kept`` holds by construction: running pods have no placement variables, only an
eviction literal when they may be evicted.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from models.resources import MEMORY

from .data import MIB, Compiled
from .variables import Variables


def node_capacity(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Σ requests of kept running and new pods ≤ allocatable, per node and resource."""
    for n, node in enumerate(data.nodes):
        groups = [g for g in data.groups if n in g.nodes]
        running = [i for i, r in enumerate(data.running) if r.node == n]
        if not groups:
            continue
        for resource in data.resources:
            terms = [
                g.request.get(resource, 0) * v.count[g.index, n]
                for g in groups
                if g.request.get(resource)
            ]
            if not terms:
                continue
            used = sum(data.running[i].request.get(resource, 0) * v.kept(i) for i in running)
            amount = node.allocatable.get(resource, 0)
            limit = amount // MIB if resource == MEMORY else amount
            m.add(sum(terms) + used <= limit)


def pod_count(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    for n, node in enumerate(data.nodes):
        groups = [g for g in data.groups if n in g.nodes]
        if not groups:
            continue
        kept = sum(v.kept(i) for i, r in enumerate(data.running) if r.node == n)
        m.add(sum(v.count[g.index, n] for g in groups) + kept <= node.pod_capacity)


def gpu_capacity(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Device-level sharing (hami-gpu §3.4): slots, memory, cores, exclusive use, the
    zero-core rule, and distinct devices for a multi-GPU container."""
    users: dict[tuple[int, int], list[tuple[int, cp_model.IntVar]]] = {}
    for (gi, n, d), var in v.on_device.items():
        users.setdefault((n, d), []).append((gi, var))
    for g in data.groups:
        if g.gpu is None:
            continue
        for n in g.nodes:
            devices = [v.on_device[g.index, n, d] for d in g.devices[n]]
            m.add(sum(devices) == g.gpu.nums * v.count[g.index, n])
            if g.gpu.nums > 1:
                for var in devices:
                    m.add(var <= v.count[g.index, n])
    holders: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for i, r in enumerate(data.running):
        for d, memory, cores in r.gpus:
            holders.setdefault((r.node, d), []).append((i, memory, cores))
    for (n, d), new in users.items():
        device = data.nodes[n].gpus[d]
        held = holders.get((n, d), [])
        slots = [var for _, var in new] + [v.kept(i) for i, _, _ in held]
        m.add(sum(slots) <= device.count)
        memory = [data.groups[gi].gpu.memory_on(device.memory) * var for gi, var in new]  # type: ignore[union-attr]
        memory += [mem * v.kept(i) for i, mem, _ in held]
        m.add(sum(memory) <= device.memory)
        cores = [data.groups[gi].gpu.booked_cores * var for gi, var in new]  # type: ignore[union-attr]
        cores += [c * v.kept(i) for i, _, c in held]
        exclusive = [var for gi, var in new if _exclusive(data, gi, device.cores)]
        zero = [var for gi, var in new if data.groups[gi].gpu.booked_cores == 0]  # type: ignore[union-attr]
        zero_held = [i for i, _, c in held if c == 0]
        if zero or zero_held:
            w = v.zero_core_on(n, d)
            for var in zero:
                m.add(var <= device.count * w)
            for i in zero_held:
                m.add(w >= v.kept(i))
            m.add(sum(cores) <= device.cores - w)
        else:
            m.add(sum(cores) <= device.cores)
        if exclusive:
            e = v.exclusive_on(n, d)
            m.add(sum(exclusive) == e)
            others = [var for gi, var in new if not _exclusive(data, gi, device.cores)]
            others += [v.kept(i) for i, _, _ in held]
            m.add(sum(others) <= device.count * (1 - e))


def _exclusive(data: Compiled, group: int, device_cores: int) -> bool:
    gpu = data.groups[group].gpu
    return gpu is not None and gpu.booked_cores >= 100 and device_cores == 100


def gang(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """All or nothing: new pods only for admitted jobs, and an admitted job ends with at least
    minAvailable bound pods (and each role's minTaskMember) — spec/cpsat-practice.md B.2."""
    for job in data.jobs:
        groups = data.job_groups[job.key]
        if not groups:
            continue
        admit = v.admit[job.key]
        pending = sum(len(data.groups[g].pods) for g in groups)
        new = sum(v.placed(g) for g in groups)
        kept = sum(v.kept(i) for i in data.job_running[job.key])
        m.add(new <= pending * admit)
        m.add(new + kept >= job.min_available * admit)
        m.add(new >= admit)
        if job.min_available >= sum(job.min_task_member.values()):
            for role, minimum in job.min_task_member.items():
                role_new = sum(v.placed(g) for g in groups if data.groups[g].task.role == role)
                role_kept = sum(
                    v.kept(i)
                    for i in data.job_running[job.key]
                    if data.running[i].task.role == role
                )
                m.add(role_new + role_kept >= minimum * admit)


def topology_hard(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """A hard-topology job's bound pods share one HyperNode of tier ≤ its limit (enforced by
    Volcano only with the network-topology-aware plugin, spec §9.6)."""
    if not data.topology_on:
        return
    levels = v.levels[0]
    for job in data.jobs:
        spec = job.network_topology
        if (
            job.key not in v.admit
            or spec is None
            or spec.mode != "hard"
            or spec.highest_tier is None
        ):
            continue
        allowed = [i for i, t in enumerate(levels) if t <= spec.highest_tier]
        m.add(v.within_level(job.key, allowed[-1]) >= v.admit[job.key])


def queue_capability(m: cp_model.CpModel, v: Variables, data: Compiled) -> None:
    """Pods of a queue (and, hierarchically, of its subtree) stay within the quota the plugin
    enforces at allocation, on the resources the new pods request."""
    for queue, limit in data.queue_limits.items():
        jobs = data.queue_members.get(queue, [])
        groups = [g for j in jobs for g in data.job_groups[j]]
        if not groups:
            continue
        admits = [v.admit[j] for j in jobs if j in v.admit]
        any_new = m.new_bool_var(f"queue_new[{queue}]")
        for a in admits:
            m.add(any_new >= a)
        requested = {
            r for g in groups for r, amount in data.groups[g].request.items() if amount > 0
        }
        for resource in sorted(requested):
            new = sum(data.groups[g].request.get(resource, 0) * v.placed(g) for g in groups)
            kept = sum(
                data.running[i].request.get(resource, 0) * v.kept(i)
                for j in jobs
                for i in data.job_running[j]
            )
            cap = limit.get(resource, 0)
            big = sum(
                data.groups[g].request.get(resource, 0) * len(data.groups[g].pods) for g in groups
            )
            big += sum(
                data.running[i].request.get(resource, 0) for j in jobs for i in data.job_running[j]
            )
            if cap >= big:
                continue
            m.add(new + kept <= cap + big * (1 - any_new))


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
    budgets, never below a queue's guarantee, by preempt only for a higher-priority job of the
    same queue, by reclaim only from a queue that stays at or above its deserved share."""
    if not v.evict:
        return
    actions = set(data.instance.scheduler.actions)
    for job in data.jobs:
        evicted = [v.evict[i] for i in data.job_running[job.key] if i in v.evict]
        if not evicted:
            continue
        if job.key in data.eviction_budget:
            m.add(sum(evicted) <= data.eviction_budget[job.key])
        kept = sum(v.kept(i) for i in data.job_running[job.key])
        alive = m.new_bool_var(f"alive[{job.key}]")
        running = len(data.job_running[job.key])
        m.add(kept >= job.min_available * alive)
        m.add(kept <= running * alive)
    by_queue: dict[str, list[int]] = {}
    for i in v.evict:
        by_queue.setdefault(data.running[i].job.queue, []).append(i)
    for queue, pods in by_queue.items():
        reclaimable = None
        if "reclaim" in actions and _above_deserved(data, queue):
            reclaimable = m.new_bool_var(f"reclaimable[{queue}]")
            _keep_at_least(
                m,
                v,
                data,
                queue,
                data.queue_deserved.get(queue, {}),
                reclaimable,
                floor_current=True,
            )
        guarded = m.new_bool_var(f"evicts_from[{queue}]")
        for i in pods:
            m.add(guarded >= v.evict[i])
        _keep_at_least(
            m, v, data, queue, data.queue_guarantee.get(queue, {}), guarded, floor_current=False
        )
        for i in pods:
            sources = []
            if reclaimable is not None:
                sources.append(reclaimable)
            if "preempt" in actions:
                victim = data.running[i].job
                sources += [
                    v.admit[j.key]
                    for j in data.jobs
                    if j.queue == queue and j.key in v.admit and j.priority > victim.priority
                ]
            if sources:
                m.add(v.evict[i] <= sum(sources))
            else:
                m.add(v.evict[i] == 0)


def _above_deserved(data: Compiled, queue: str) -> bool:
    """Reclaim takes only from reclaimable queues holding more than they deserve (capacity
    §5.4 step 3); a queue that deserves nothing is an immediate victim."""
    if not data.instance.queue_tree.queue(queue).reclaimable:
        return False
    deserved = {r: a for r, a in data.queue_deserved.get(queue, {}).items() if a > 0}
    if not deserved:
        return True
    held: dict[str, int] = {}
    for r in data.running:
        if r.job.queue == queue:
            for resource, amount in r.request.items():
                held[resource] = held.get(resource, 0) + amount
    return any(held.get(resource, 0) > amount for resource, amount in deserved.items())


def _keep_at_least(
    m: cp_model.CpModel,
    v: Variables,
    data: Compiled,
    queue: str,
    floor: dict[str, int],
    when: cp_model.IntVar,
    *,
    floor_current: bool,
) -> None:
    """When ``when`` holds, the queue's allocation after the plan stays ≥ ``floor`` on each of
    its resources (or ≥ the current allocation where that is lower, with ``floor_current``)."""
    jobs = [j.key for j in data.jobs if j.queue == queue]
    for resource, amount in floor.items():
        if amount <= 0:
            continue
        running = [i for j in jobs for i in data.job_running[j]]
        current = sum(data.running[i].request.get(resource, 0) for i in running)
        target = min(amount, current) if floor_current else amount
        if target <= 0:
            continue
        kept = sum(data.running[i].request.get(resource, 0) * v.kept(i) for i in running)
        new = sum(
            data.groups[g].request.get(resource, 0) * v.placed(g)
            for j in jobs
            for g in data.job_groups[j]
        )
        m.add(kept + new >= target).only_enforce_if(when)


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
