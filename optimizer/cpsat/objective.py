"""The objective, in four integer stages (DESIGN §5), as model expressions and as a plain
evaluation of any plan.

Both sides come from the same definitions so that "the CP-SAT plan is never worse than the
greedy plan" can be checked on the plans themselves: a plan's stage values are computed by
:func:`evaluate` from its placements, whoever produced it.

1. ``work``: priority-weighted admitted work — Σ over bound pods of job weight × pod value
   (``data.pod_value``: GPU-equivalents in thousandths; weight 1 + rank of the job priority).
2. ``fairness``: fill every queue to its deserved share before any borrows beyond it, then
   max-min share: 10001 × Σ_{queue, resource} min(1000, ⌊1000·allocated/deserved⌋) +
   min over the same of min(10000, ⌊1000·allocated/deserved⌋).
3. ``topology``: − Σ over jobs with pending pods of the level index of their lowest common
   HyperNode (0 = one node, then each real tier), so lower LCA tiers score higher.
4. ``packing``: − (100 × evictions + GPUs opened + nodes opened), where "opened" means empty
   before the plan and used after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from ..plan import Plan
from .data import Compiled, topology_levels
from .variables import Variables

STAGES = ("work", "fairness", "topology", "packing")
FILL_SCALE = 1000
SHARE_CAP = 10000
EVICTION_COST = 100


@dataclass(frozen=True)
class StageValues:
    work: int
    fairness: int
    topology: int
    packing: int

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.work, self.fairness, self.topology, self.packing)

    def as_dict(self) -> dict[str, int]:
        return dict(zip(STAGES, self.as_tuple(), strict=True))


def _fair_pairs(data: Compiled) -> list[tuple[str, str, int]]:
    """(queue, resource, deserved) for every queue with jobs and each resource it deserves."""
    with_jobs = {j.queue for j in data.jobs}
    pairs = []
    for queue in sorted(with_jobs):
        for resource, amount in sorted(data.queue_deserved.get(queue, {}).items()):
            if amount > 0:
                pairs.append((queue, resource, amount))
    return pairs


def _levels_count(data: Compiled) -> int:
    return len(topology_levels(data.instance)[0])


def multi_pod_jobs(data: Compiled) -> list[str]:
    return [j.key for j in data.jobs if data.job_groups[j.key] and j.replicas >= 2]


# -- model side ----------------------------------------------------------------------------


def stage_expressions(
    m: cp_model.CpModel, v: Variables, data: Compiled
) -> dict[str, cp_model.LinearExprT]:
    return {
        "work": _work(v, data),
        "fairness": _fairness(m, v, data),
        "topology": _topology(v, data),
        "packing": _packing(m, v, data),
    }


def _work(v: Variables, data: Compiled) -> cp_model.LinearExprT:
    new = [data.weights[g.job.key] * g.value * v.placed(g.index) for g in data.groups]
    kept = [data.weights[r.job.key] * r.value * v.kept(i) for i, r in enumerate(data.running)]
    return sum(new) + sum(kept)


def _allocated(v: Variables, data: Compiled, queue: str, resource: str) -> cp_model.LinearExprT:
    total: cp_model.LinearExprT = 0
    for job in data.jobs:
        if job.queue != queue:
            continue
        for g in data.job_groups[job.key]:
            total += data.groups[g].request.get(resource, 0) * v.placed(g)
        for i in data.job_running[job.key]:
            total += data.running[i].request.get(resource, 0) * v.kept(i)
    return total


def _fairness(m: cp_model.CpModel, v: Variables, data: Compiled) -> cp_model.LinearExprT:
    pairs = _fair_pairs(data)
    if not pairs:
        return 0
    z = v.max_min_share(SHARE_CAP)
    fills = []
    for queue, resource, deserved in pairs:
        allocated = _allocated(v, data, queue, resource)
        f = v.fill(queue, resource)
        m.add(deserved * f <= FILL_SCALE * allocated)
        m.add(deserved * z <= FILL_SCALE * allocated)
        fills.append(f)
    return (SHARE_CAP + 1) * sum(fills) + z


def _topology(v: Variables, data: Compiled) -> cp_model.LinearExprT:
    jobs = multi_pod_jobs(data)
    if not jobs:
        return 0
    levels = _levels_count(data)
    return -sum(1 - v.within_level(job, level) for job in jobs for level in range(levels))


def _packing(m: cp_model.CpModel, v: Variables, data: Compiled) -> cp_model.LinearExprT:
    held_devices = {(r.node, d) for r in data.running for d, _, _ in r.gpus}
    busy_nodes = {r.node for r in data.running}
    opened = []
    for (gi, n, d), var in v.on_device.items():
        if (n, d) not in held_devices:
            flag = v.device_opened(n, d)
            m.add(var <= len(data.groups[gi].pods) * flag)
            opened.append((n, d))
    for (gi, n), var in v.count.items():
        if n not in busy_nodes:
            m.add(var <= len(data.groups[gi].pods) * v.node_opened(n))
    devices = sum(v.opened_device[k] for k in dict.fromkeys(opened))
    nodes = sum(v.opened_node.values())
    return -(EVICTION_COST * sum(v.evict.values()) + devices + nodes)


# -- plan side -----------------------------------------------------------------------------


def evaluate(data: Compiled, plan: Plan) -> StageValues:
    """The four stage values of any plan for the compiled instance."""
    instance = data.instance
    bound = plan.bound_pods(instance)
    evicted = {e.pod for e in plan.evictions}
    group_of = {p.key: g for g in data.groups for p in g.pods}
    running_of = {r.pod.key: r for r in data.running}
    work = 0
    per_job_nodes: dict[str, list[str]] = {}
    allocated: dict[tuple[str, str], int] = {}
    for key, b in bound.items():
        if key in group_of:
            g = group_of[key]
            job, value, request = g.job, g.value, g.request
        else:
            r = running_of[key]
            job, value, request = r.job, r.value, r.request
        work += data.weights[job.key] * value
        per_job_nodes.setdefault(job.key, []).append(b.node)
        for resource, amount in request.items():
            allocated[job.queue, resource] = allocated.get((job.queue, resource), 0) + amount
    fairness = _fairness_value(data, allocated)
    topology = -sum(_level_cost(data, per_job_nodes.get(j, [])) for j in multi_pod_jobs(data))
    held_devices = {(r.node, d) for r in data.running for d, _, _ in r.gpus}
    busy_nodes = {r.node for r in data.running}
    opened_devices: set[tuple[int, int]] = set()
    opened_nodes: set[int] = set()
    for p in plan.placements:
        n = data.node_index(p.node)
        if n not in busy_nodes:
            opened_nodes.add(n)
        device_index = {d.id: i for i, d in enumerate(data.nodes[n].gpus)}
        for share in p.gpus or ():
            d = device_index[share.id]
            if (n, d) not in held_devices:
                opened_devices.add((n, d))
    packing = -(EVICTION_COST * len(evicted) + len(opened_devices) + len(opened_nodes))
    return StageValues(work, fairness, topology, packing)


def _fairness_value(data: Compiled, allocated: Mapping[tuple[str, str], int]) -> int:
    pairs = _fair_pairs(data)
    if not pairs:
        return 0
    fills = []
    shares = []
    for queue, resource, deserved in pairs:
        scaled = FILL_SCALE * allocated.get((queue, resource), 0) // deserved
        fills.append(min(FILL_SCALE, scaled))
        shares.append(min(SHARE_CAP, scaled))
    return (SHARE_CAP + 1) * sum(fills) + min(shares)


def _level_cost(data: Compiled, nodes: Sequence[str]) -> int:
    if len(nodes) <= 1:
        return 0
    levels, domains = topology_levels(data.instance)
    indices = {data.node_index(n) for n in nodes}
    for level in range(len(levels)):
        if len({domains[level][n] for n in indices}) == 1:
            return level
    return len(levels)
