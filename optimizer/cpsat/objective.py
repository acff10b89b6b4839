"""The objective, in four integer stages (DESIGN §5), as model expressions and as a plain
evaluation of any plan.

Both sides follow the same definitions so that "the CP-SAT plan is never worse than the greedy
plan" can be checked on the plans themselves: a plan's stage values are computed by
:func:`evaluate` from its placements, whoever produced it. At an optimum of a stage the model's
expression equals :func:`evaluate` exactly (the auxiliaries are pushed to their true values);
tests hold the two sides to that.

1. ``work``: priority-weighted admitted work — Σ over bound pods of job weight × pod value
   (``data.pod_value``: GPU-equivalents in thousandths; weight 1 + rank of the job priority).
2. ``fairness``: fill every queue to its deserved share before any borrows beyond it, then
   max-min share: 10001 × Σ_{queue, resource} min(1000, ⌊1000·allocated/deserved⌋) +
   min over the same of min(10000, ⌊1000·allocated/deserved⌋). Allocated counts the pods of
   jobs in the queue itself, in model units (memory in MiB, each pod rounded up).
3. ``topology``: − Σ over multi-pod jobs with pending pods of the level index of their lowest
   common HyperNode (0 = one node, then each real tier; all levels + 1 when none holds them).
4. ``packing``: − (100 × evictions + GPUs opened + nodes opened), where "opened" means holding
   no running pod before the plan and receiving a new pod (a new device share) from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from ..plan import Plan
from .data import Compiled
from .variables import Expr, Linear, Values, Variables

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

    def as_tuple(self, stages: Sequence[str] = STAGES) -> tuple[int, ...]:
        return tuple(getattr(self, s) for s in stages)

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


def multi_pod_jobs(data: Compiled) -> list[str]:
    return [j.key for j in data.jobs if data.job_groups[j.key] and j.replicas >= 2]


def _share(allocated: int, deserved: int, cap: int) -> int:
    return min(cap, FILL_SCALE * allocated // deserved)


# -- model side ----------------------------------------------------------------------------


def stage_expressions(
    m: cp_model.CpModel, v: Variables, data: Compiled, stages: Sequence[str] = STAGES
) -> dict[str, Expr]:
    """The model expression of each requested stage; stages not asked for create nothing."""
    build = {"work": _work, "fairness": _fairness, "topology": _topology, "packing": _packing}
    return {s: build[s](m, v, data) for s in stages}


def stage_span(data: Compiled, stage: str) -> int:
    """An upper bound on max − min of a stage over all plans (for weighted sums)."""
    if stage == "work":
        pods = [(g.job.key, g.value, g.size) for g in data.groups]
        pods += [(r.job.key, r.value, 1) for r in data.running]
        return sum(data.weights[job] * value * size for job, value, size in pods)
    if stage == "fairness":
        return (SHARE_CAP + 1) * FILL_SCALE * len(_fair_pairs(data)) + SHARE_CAP
    if stage == "topology":
        return (len(data.levels) + 1) * len(multi_pod_jobs(data))
    evictable = sum(1 for r in data.running if r.evictable)
    devices = sum(len(n.gpus) for n in data.nodes)
    return EVICTION_COST * evictable + devices + len(data.nodes)


def _work(m: cp_model.CpModel, v: Variables, data: Compiled) -> Expr:
    del m
    new = [data.weights[g.job.key] * g.value * v.placed(g.index) for g in data.groups]
    kept = [data.weights[r.job.key] * r.value * v.kept(i) for i, r in enumerate(data.running)]
    return sum(new) + sum(kept)


def _allocated(v: Variables, data: Compiled, queue: str, resource: str) -> Expr:
    total: Expr = 0
    for job in data.jobs:
        if job.queue != queue:
            continue
        for g in data.job_groups[job.key]:
            total += data.groups[g].request.get(resource, 0) * v.placed(g)
        for i in data.job_running[job.key]:
            total += data.running[i].request.get(resource, 0) * v.kept(i)
    return total


def _fairness(m: cp_model.CpModel, v: Variables, data: Compiled) -> Expr:
    pairs = _fair_pairs(data)
    if not pairs:
        return 0
    allocated = {(q, r): _allocated(v, data, q, r) for q, r, _ in pairs}
    linear = {key: Linear(expr) for key, expr in allocated.items()}

    def least(vals: Values) -> int:
        return min(_share(linear[q, r].value(vals), d, SHARE_CAP) for q, r, d in pairs)

    z = v.max_min_share(SHARE_CAP, least)
    fills = []
    for queue, resource, deserved in pairs:
        expr = allocated[queue, resource]

        def fill(
            vals: Values, lin: Linear = linear[queue, resource], deserved: int = deserved
        ) -> int:
            return _share(lin.value(vals), deserved, FILL_SCALE)

        f = v.fill(queue, resource, fill)
        m.add(deserved * f <= FILL_SCALE * expr)
        m.add(deserved * z <= FILL_SCALE * expr)
        fills.append(f)
    return (SHARE_CAP + 1) * sum(fills) + z


def _topology(m: cp_model.CpModel, v: Variables, data: Compiled) -> Expr:
    del m
    jobs = multi_pod_jobs(data)
    if not jobs:
        return 0
    levels = len(data.levels)
    return -sum(1 - v.within_level(job, level) for job in jobs for level in range(levels))


def _packing(m: cp_model.CpModel, v: Variables, data: Compiled) -> Expr:
    """Opened devices: per-device shares on devices no running pod holds, plus the whole
    devices a node's whole-device containers need beyond the held devices that end up free
    (the plan is read back giving them those first)."""
    devices: list[Expr] = [
        v.device_used_flag(n, d) for (n, d) in v.device_users() if (n, d) not in data.holders
    ]
    for n in v.whole:
        freed = [1 - v.occupied_flag(n, d) for d in data.pool[n] if (n, d) in data.holders]
        beyond = Linear(v.whole_devices(n) - sum(freed))
        opened = v.aux_int(
            0, len(data.pool[n]), f"opened_whole[{n}]", lambda vals, e=beyond: max(0, e.value(vals))
        )
        m.add(opened >= v.whole_devices(n) - sum(freed))
        devices.append(opened)
    nodes = [
        v.node_used_flag(n)
        for n in range(len(data.nodes))
        if data.groups_on[n] and not data.running_on[n]
    ]
    return -(EVICTION_COST * sum(v.evict.values()) + sum(devices) + sum(nodes))


# -- plan side -----------------------------------------------------------------------------


def evaluate(data: Compiled, plan: Plan) -> StageValues:
    """The four stage values of any plan for the compiled instance."""
    instance = data.instance
    bound = plan.bound_pods(instance)
    evicted = {e.pod for e in plan.evictions}
    group_of = {p.key: g for g in data.groups for p in g.pods}
    running_of = {r.pod.key: r for r in data.running}
    work = 0
    per_job_nodes: dict[str, set[int]] = {}
    allocated: dict[tuple[str, str], int] = {}
    for key, b in bound.items():
        if key in group_of:
            g = group_of[key]
            job, value, request = g.job, g.value, g.request
        else:
            r = running_of[key]
            job, value, request = r.job, r.value, r.request
        work += data.weights[job.key] * value
        per_job_nodes.setdefault(job.key, set()).add(data.node_index(b.node))
        for resource, amount in request.items():
            allocated[job.queue, resource] = allocated.get((job.queue, resource), 0) + amount
    fairness = _fairness_value(data, allocated)
    topology = -sum(_level_cost(data, per_job_nodes.get(j, set())) for j in multi_pod_jobs(data))
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
    fills = [_share(allocated.get((q, r), 0), d, FILL_SCALE) for q, r, d in pairs]
    shares = [_share(allocated.get((q, r), 0), d, SHARE_CAP) for q, r, d in pairs]
    return (SHARE_CAP + 1) * sum(fills) + min(shares)


def _level_cost(data: Compiled, nodes: set[int]) -> int:
    if len(nodes) <= 1:
        return 0
    for level, row in enumerate(data.domains):
        if len({row[n] for n in nodes}) == 1:
            return level
    return len(data.levels)
