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
   common HyperNode (0 = one node, then each real tier; all levels + 1 when none holds them),
   ranked below the pods' own soft terms: ``(LCA span + 1) × soft score − Σ levels``
   (``soft_terms.py``).
4. ``packing``: − (100 × evictions + GPUs opened + nodes opened), where "opened" means holding
   no running pod before the plan and receiving a new pod (a new device share) from it.

Between topology and packing, when given a weight, ``fragmentation``: − the growth of FGD's
expected fragmentation against a typical-task mix, written per device (``frag_stage.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from ...options import ALL_STAGES, STAGES
from ...plan import Plan
from ..compile.data import Compiled
from . import frag_stage
from .constraints import gpu_users, held_terms, new_share_devices, occupied_devices
from .domains import within_level
from .soft_terms import soft_score, soft_span, soft_value
from .variables import Expr, Linear, Values, Variables, lsum, wsum

FILL_SCALE = 1000
SHARE_CAP = 10000
EVICTION_COST = 100


@dataclass(frozen=True)
class StageValues:
    work: int
    fairness: int
    topology: int
    packing: int
    fragmentation: int = 0

    def as_tuple(self, stages: Sequence[str] = STAGES) -> tuple[int, ...]:
        return tuple(getattr(self, s) for s in stages)

    def as_dict(self, stages: Sequence[str] = STAGES) -> dict[str, int]:
        return dict(zip(stages, self.as_tuple(stages), strict=True))


@dataclass(frozen=True)
class Ranking:
    """What "better" means for the chosen objective, in one place for the search, the engine's
    floor and the decomposition's rounds: the active stages in order, or — when ``scales`` is
    given (a weighted objective) — their weighted sum."""

    active: tuple[str, ...]
    scales: Mapping[str, int] | None = None

    def score(self, values: StageValues) -> tuple[int, ...]:
        if self.scales is not None:
            return (sum(self.scales[s] * getattr(values, s) for s in self.scales),)
        return values.as_tuple(self.active)


def _fair_pairs(data: Compiled) -> list[tuple[str, str, int]]:
    """(queue, resource, deserved) for every queue with jobs and each resource it deserves."""
    with_jobs = {j.queue for j in data.jobs}
    pairs = []
    for queue in sorted(with_jobs):
        for resource, amount in sorted(data.queue_deserved.get(queue, {}).items()):
            if amount > 0:
                pairs.append((queue, resource, amount))
    return pairs


def multi_pod_units(data: Compiled) -> list[int]:
    """Units whose topology is scored: one job with pending pods and at least two pods."""
    return [u.index for u in data.units if u.groups and u.size == 1 and u.job.replicas >= 2]


def _share(allocated: int, deserved: int, cap: int) -> int:
    return min(cap, FILL_SCALE * allocated // deserved)


# -- model side ----------------------------------------------------------------------------


def stage_expressions(
    m: cp_model.CpModel, v: Variables, data: Compiled, stages: Sequence[str] = ALL_STAGES
) -> dict[str, Expr]:
    """The model expression of each requested stage; stages not asked for create nothing."""
    build = {
        "work": _work,
        "fairness": _fairness,
        "topology": _topology,
        "fragmentation": lambda m, v, data: frag_stage.stage_expression(v, data),
        "packing": _packing,
    }
    return {s: build[s](m, v, data) for s in stages}


def stage_span(data: Compiled, stage: str) -> int:
    """An upper bound on max − min of a stage over all plans (for weighted sums)."""
    if stage == "work":
        pods = [(g.job.key, g.value, g.size) for g in data.groups]
        pods += [(data.running[i].job.key, data.running[i].value, 1) for i in _owned(data)]
        return sum(data.weights[job] * value * size for job, value, size in pods)
    if stage == "fairness":
        return (SHARE_CAP + 1) * FILL_SCALE * len(_fair_pairs(data)) + SHARE_CAP
    if stage == "topology":
        lca = _lca_span(data)
        return (lca + 1) * soft_span(data) + lca
    if stage == "fragmentation":
        return frag_stage.stage_span(data)
    evictable = sum(eg.size for eg in data.evict_groups)
    devices = sum(len(n.gpus) for n in data.nodes)
    return EVICTION_COST * evictable + devices + len(data.nodes)


def _owned(data: Compiled) -> list[int]:
    """Running pods of Volcano's jobs: other schedulers' pods are room, not work."""
    return [i for u in data.units for i in u.running]


def _work(m: cp_model.CpModel, v: Variables, data: Compiled) -> Expr:
    del m
    new = [(data.weights[g.job.key] * g.value, v.placed(g.index)) for g in data.groups]
    kept = held_terms(
        v,
        _owned(data),
        lambda i: data.weights[data.running[i].job.key] * data.running[i].value,
    )
    return wsum(new + [(c, e) for c, e, _ in kept])


def _allocated(v: Variables, data: Compiled, queue: str, resource: str) -> Expr:
    terms: list[tuple[int, Expr]] = []
    running: list[int] = []
    for unit in data.units:
        if unit.job.queue != queue:
            continue
        terms += [(data.groups[g].request.get(resource, 0), v.placed(g)) for g in unit.groups]
        running += unit.running
    held = held_terms(v, running, lambda i: data.running[i].request.get(resource, 0))
    return wsum(terms + [(c, e) for c, e, _ in held])


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
    return wsum([(SHARE_CAP + 1, f) for f in fills] + [(1, z)])


def _topology(m: cp_model.CpModel, v: Variables, data: Compiled) -> Expr:
    """The pods' own soft terms (``soft_terms.py``), then the LCA part below them."""
    soft = soft_score(m, v, data)
    units = multi_pod_units(data)
    if not units:
        return soft
    levels = len(data.levels)
    withins = [within_level(v, u, level) for u in units for level in range(levels)]
    return (_lca_span(data) + 1) * soft + lsum(withins) - len(withins)


def _lca_span(data: Compiled) -> int:
    return (len(data.levels) + 1) * len(multi_pod_units(data))


def nodes_used(v: Variables, c: int) -> Expr:
    """Nodes of an idle class that get new pods (an auxiliary, made once): at least what the
    class's new pods need by each resource, pod slots and whole devices, one node's worth at a
    time."""
    if c in v.nodes_used:
        return v.nodes_used[c]
    data = v.data
    cls = data.classes[c]
    groups = data.groups_on[c]
    rows: list[tuple[Expr, int]] = []
    for g in groups:
        rows.append((v.count[g, c], max(1, v.per_node[g, c])))
    resources = sorted({r for g in groups for r, a in data.groups[g].request.items() if a > 0})
    for resource in resources:
        expr = wsum((data.groups[g].request.get(resource, 0), v.count[g, c]) for g in groups)
        rows.append((expr, max(1, cls.allocatable.get(resource, 0))))
    rows.append((lsum(v.count[g, c] for g in groups), max(1, cls.pod_capacity)))
    devices = sum(dc.per_node for dc in cls.devices if dc.pool)
    taken = [u.uses for dc in cls.devices for u in gpu_users(v, c, dc.index) if u.whole]
    taken += [new_share_devices(v, c, dc) for dc in cls.devices]
    taken.append(v.pooled_whole(c))
    if devices and any(not isinstance(e, int) for e in taken):
        rows.append((lsum(taken), devices))
    linear = [(Linear(expr), per) for expr, per in rows]
    u = v.aux_int(
        0,
        cls.size,
        f"nodes_used[{c}]",
        lambda vals: max(-(-e.value(vals) // per) for e, per in linear),
    )
    for expr, per in rows:
        v.model.add(expr <= per * u)
    v.nodes_used[c] = u
    return u


def _pooled_opened(v: Variables, c: int) -> Expr:
    """Whole devices the pooled containers of ``c`` open: those beyond the devices running
    pods held before the plan that end up free (the plan gives them those first)."""
    cls = v.data.classes[c]
    held = [cls.devices[d] for d in v.pooled[c] if cls.devices[d].held]
    taken = v.pooled_whole(c)
    if not held:
        return taken
    freed = sum(cls.size * dc.per_node for dc in held) - lsum(
        occupied_devices(v, c, dc) for dc in held
    )
    beyond = Linear(taken - freed)
    total = sum(cls.size * dc.per_node for dc in cls.devices)
    opened = v.aux_int(0, total, f"opened_whole[{c}]", lambda vals: max(0, beyond.value(vals)))
    v.model.add(opened >= taken - freed)
    return opened


def _packing(m: cp_model.CpModel, v: Variables, data: Compiled) -> Expr:
    """Evictions, then devices opened (taken whole or given a first share where no running pod
    held a share), then nodes opened (given pods where no running pod was)."""
    del m
    devices: list[Expr] = []
    nodes: list[Expr] = []
    for c, cls in enumerate(data.classes):
        if not data.groups_on[c]:
            continue
        for dc in cls.devices:
            if dc.held:
                continue
            devices += [u.uses for u in gpu_users(v, c, dc.index) if u.whole]
            devices.append(new_share_devices(v, c, dc))
        if c in v.pooled:
            devices.append(_pooled_opened(v, c))
        if not cls.busy:
            nodes.append(nodes_used(v, c))
    terms = [(-EVICTION_COST, e) for e in v.evict.values()]
    return wsum(terms + [(-1, e) for e in devices] + [(-1, e) for e in nodes])


# -- plan side -----------------------------------------------------------------------------
def evaluate(data: Compiled, plan: Plan) -> StageValues:
    """The stage values of any plan for the compiled instance (fragmentation 0 without a
    mix)."""
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
    multi = [data.units[u].key for u in multi_pod_units(data)]
    lca = sum(_level_cost(data, per_job_nodes.get(j, set())) for j in multi)
    topology = (
        (_lca_span(data) + 1) * soft_value(data, plan) - lca if multi else soft_value(data, plan)
    )
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
    frag = frag_stage.plan_value(data, plan.placements, evicted)
    return StageValues(work, fairness, topology, packing, frag)


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
