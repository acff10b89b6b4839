"""How good a plan is: the numbers ``vcopt compare`` puts side by side (DESIGN §6).

Metrics judge the cluster *after* the plan: every running pod that is not evicted plus every
placement (:meth:`Plan.bound_pods`); pipelined pods hold nothing yet. They read only ``models``
and the plan, never an engine, so the greedy and CP-SAT plans are measured by the same ruler,
and a hand-written plan can be measured too. A plan is not checked here (that is the verifier's
job); a pod, node or device it names that the instance lacks raises ValueError.

A placement may leave its GPU devices open (``gpus`` None). GPU-equivalents then come from the
pod's request on the node's first device, as DESIGN §6 says. The per-device measures
(partially used GPUs, fragmentation) need devices, so those pods are put on devices the way
HAMi's binpack policy would: the most used healthy devices the pod's filter allows that still
have room, lowest index first among equals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import timedelta
from math import ceil
from typing import Any

from models.cluster import Node
from models.fragmentation import TypicalTask, fragmentation, instance_mix
from models.gpu import FULL_CORES, GpuDevice, GpuFilter, GpuRequest
from models.instance import Instance
from models.queues import capacity_flat, capacity_hierarchical, proportion_deserved, share
from models.resources import CPU, EMPTY, MEMORY, NVIDIA_GPU, Resources, format_amount, parse_amount
from models.tdm import Window, node_zone, pod_preemptable, window_active, window_closes_at
from models.workload import DeviceShare, Job, Task

from .affinity_metrics import soft_terms
from .plan import ADMITTED, PENDING, RUNNING, Bound, Plan

MILLI = 1000
_EPS = 1e-9
"""Float slack for share sums: four 0.25 shares must make a full GPU, not 0.9999…."""


@dataclass(frozen=True)
class QueueMetrics:
    """One queue after the plan; amounts are Resreq sums in vcopt units."""

    queue: str
    allocated: Resources
    deserved: Resources
    requested: Resources
    """Allocated plus the Resreq of the queue's pods still pending after the plan."""
    share: float
    """``models.queues.share`` (capacity's rule: an empty deserved has share 1)."""
    leaf: bool = True
    """False for an ancestor reported, in hierarchical mode, with its subtree's sums."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "leaf": self.leaf,
            "share": self.share,
            "allocated": _quantities(self.allocated),
            "deserved": _quantities(self.deserved),
            "requested": _quantities(self.requested),
        }


@dataclass(frozen=True)
class Metrics:
    """Every measure of one plan. Ratios are fractions in [0, 1] (not percent)."""

    jobs_admitted: int
    """Jobs with new placements that end up with ≥ minAvailable bound pods."""
    jobs_running: int
    """Jobs with ≥ minAvailable bound pods and no new placement."""
    jobs_pending: int
    """Jobs with no bound pod after the plan, or fewer than minAvailable."""
    pods_placed: int
    pods_pipelined: int
    evictions: int
    gpu_allocated: float
    """GPU-equivalents held by bound pods: per device share max(cores/100, memory/device)."""
    gpu_total: int
    """Healthy GPUs, and the GPUs nodes of the plain NVIDIA device plugin count."""
    gpu_allocation_ratio: float
    gpu_memory_allocated: int
    """MiB of GPU memory held by bound pods."""
    gpu_memory_total: int
    """MiB of GPU memory on healthy GPUs."""
    gpu_memory_ratio: float
    cpu_allocation_ratio: float
    memory_allocation_ratio: float
    gpus_partially_used: int
    """Devices whose shares sum strictly between 0 and 1."""
    deserved_satisfaction: float
    multi_pod_jobs: int
    """Jobs with ≥ 2 bound pods, the jobs the topology measures look at."""
    mean_lca_tier: float
    """Mean of ``job_lca_tiers`` (0 when there is no multi-pod job)."""
    lowest_tier_share: float
    """Share of multi-pod jobs at the lowest tier that could hold them (1 when there is none)."""
    gpu_free: float
    """Free GPU-equivalents on healthy GPUs, the denominator of the fragmentation rate."""
    fragmentation: float
    """FGD fragmentation in GPU-equivalents (fgd-benchmark.md §6), against the typical mix
    the CP-SAT objective uses."""
    fragmentation_rate: float
    pods_on_revocable_nodes: int
    pods_evicted_at_window_close: int
    soft_terms: int = 0
    """Soft terms (preferred node and pod affinity, ScheduleAnyway spread) of placed pods."""
    soft_terms_satisfied: int = 0
    """How many of them the cluster after the plan satisfies (``affinity_metrics``)."""
    queues: tuple[QueueMetrics, ...] = ()
    job_lca_tiers: Mapping[str, int] = field(default_factory=dict)
    """Job key → tier of the smallest domain holding its bound pods, for multi-pod jobs."""

    def scalars(self) -> dict[str, int | float]:
        """The scalar measures by name, in declaration order."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _TABLES}

    def to_frame(self) -> Any:
        """One row with every scalar measure."""
        import pandas as pd

        return pd.DataFrame([self.scalars()])

    def queues_frame(self) -> Any:
        """One row per queue; amounts in the resource's own unit (cores, bytes, GPUs)."""
        import pandas as pd

        names = sorted({r for q in self.queues for part in _PARTS for r in getattr(q, part)})
        rows = []
        for q in self.queues:
            row: dict[str, Any] = {"queue": q.queue, "leaf": q.leaf, "share": q.share}
            for part in _PARTS:
                amounts: Resources = getattr(q, part)
                for name in names:
                    row[f"{part}.{name}"] = amounts.get(name) / parse_amount(name, 1)
            rows.append(row)
        columns = ["queue", "leaf", "share", *(f"{p}.{n}" for p in _PARTS for n in names)]
        return pd.DataFrame(rows, columns=columns)

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe form for a plan's ``metrics`` section; amounts as Kubernetes quantities."""
        return {
            **self.scalars(),
            "queues": [q.as_dict() for q in self.queues],
            "job_lca_tiers": dict(self.job_lca_tiers),
        }


_TABLES = frozenset({"queues", "job_lca_tiers"})
_PARTS = ("allocated", "deserved", "requested")


def measure(
    instance: Instance, plan: Plan, typical_mix: Sequence[TypicalTask] | None = None
) -> Metrics:
    """Measure ``plan`` on ``instance``; fragmentation is F against ``typical_mix``, by default
    the instance's own (``models.fragmentation.instance_mix``), the mix the CP-SAT objective
    optimises unless the user gives one.

    Job states are exclusive: a job is pending when it has no bound pod after the plan or
    fewer than ``minAvailable``; otherwise admitted when the plan places any of its pods, and
    running when it does not.

    ``deserved_satisfaction`` is DESIGN's Σ min(allocated, deserved) / Σ min(requested,
    deserved), made unit-free by dividing each term by its deserved amount:
    Σ_q Σ_r min(alloc_qr, des_qr)/des_qr ÷ Σ_q Σ_r min(req_qr, des_qr)/des_qr, over the leaf
    queues that hold jobs and the resources r their deserved sets (> 0). So one GPU short in a
    queue deserving 2 weighs as much as 32 cores short in a queue deserving 64, and memory
    bytes never drown GPUs. 1.0 when no queue deserves anything its jobs request (denominator 0).
    """
    _check_references(instance, plan)
    bound = plan.bound_pods(instance)
    jobs = {p.key: instance.job_by_key[p.job] for p in instance.pods}
    tasks = {key: job.task(instance.pod_by_key[key].task) for key, job in jobs.items()}
    admitted, running, pending = _job_states(instance, plan, bound)
    held = plan.held_pods(instance)  # what nodes hold, other schedulers' pods included
    tasks.update({pod.key: job.task(pod.task) for job, pod in instance.foreign_pods})
    gpu = _gpu_use(instance, held, tasks)
    healthy = [d for n in instance.nodes for d in n.gpus if d.health]
    plain = sum(n.allocatable.get(NVIDIA_GPU) // MILLI for n in instance.nodes if n.plain_gpus)
    gpu_total = len(healthy) + plain
    gpu_memory_total = sum(d.memory for d in healthy)
    used = sum((tasks[b.pod].resources for b in held.values()), EMPTY)
    total = instance.total_allocatable
    queues = _queue_metrics(instance, bound, tasks)
    tiers, at_lowest = _topology(instance, bound, tasks)
    mix = instance_mix(instance) if typical_mix is None else typical_mix
    free, fragmented = _fragmentation(instance, held, tasks, gpu.used, mix)
    on_revocable, evicted = _tdm_counts(instance, bound, jobs, tasks)
    soft, satisfied = soft_terms(instance, plan, bound)
    return Metrics(
        jobs_admitted=admitted,
        jobs_running=running,
        jobs_pending=pending,
        pods_placed=len(plan.placements),
        pods_pipelined=len(plan.pipelined),
        evictions=len(plan.evictions),
        gpu_allocated=gpu.allocated,
        gpu_total=gpu_total,
        gpu_allocation_ratio=_ratio(gpu.allocated, gpu_total),
        gpu_memory_allocated=gpu.memory,
        gpu_memory_total=gpu_memory_total,
        gpu_memory_ratio=_ratio(gpu.memory, gpu_memory_total),
        cpu_allocation_ratio=_ratio(used.get(CPU), total.get(CPU)),
        memory_allocation_ratio=_ratio(used.get(MEMORY), total.get(MEMORY)),
        gpus_partially_used=sum(
            1 for per_node in gpu.used.values() for s in per_node.values() if _EPS < s < 1 - _EPS
        ),
        deserved_satisfaction=_deserved_satisfaction(queues),
        multi_pod_jobs=len(tiers),
        mean_lca_tier=_ratio(sum(tiers.values()), len(tiers)),
        lowest_tier_share=_ratio(at_lowest, len(tiers)) if tiers else 1.0,
        gpu_free=free,
        fragmentation=fragmented,
        fragmentation_rate=_ratio(fragmented, free),
        pods_on_revocable_nodes=on_revocable,
        pods_evicted_at_window_close=evicted,
        soft_terms=soft,
        soft_terms_satisfied=satisfied,
        queues=queues,
        job_lca_tiers=tiers,
    )


def _check_references(instance: Instance, plan: Plan) -> None:
    for p in (*plan.placements, *plan.evictions, *plan.pipelined):
        if p.pod not in instance.pod_by_key:
            raise ValueError(f'Pod "{p.pod}": no such pod in the instance')
        if p.node not in instance.node_by_name:
            raise ValueError(f'Pod "{p.pod}": no such node {p.node!r}')


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


# -- jobs ------------------------------------------------------------------------------


def _job_states(instance: Instance, plan: Plan, bound: Mapping[str, Bound]) -> tuple[int, int, int]:
    states = Counter(plan.job_statuses(instance, bound).values())
    return states[ADMITTED], states[RUNNING], states[PENDING]


# -- GPUs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _GpuUse:
    allocated: float
    memory: int
    used: dict[str, dict[str, float]]
    """Node → device id → sum of the shares on it."""


def _device_share(share: DeviceShare, device: GpuDevice) -> float:
    return max(share.cores / FULL_CORES, share.memory / device.memory)


def _gpu_use(instance: Instance, bound: Mapping[str, Bound], tasks: Mapping[str, Task]) -> _GpuUse:
    """GPU-equivalents and MiB held, and per-device use for the device-level measures.

    GPUs of the plain NVIDIA device plugin (no device inventory) count whole, by the request.
    A bound pod that requests GPUs but names no devices (``gpus`` None or empty, also a running
    pod whose devices the instance does not list) counts by its request, and is put on devices
    after every pod whose devices are known.
    """
    used = {n.name: {d.id: 0.0 for d in n.gpus} for n in instance.nodes}
    allocated = 0.0
    memory = 0
    open_devices: list[Bound] = []
    for b in bound.values():
        node = instance.node_by_name[b.node]
        task = tasks[b.pod]
        if b.gpus:
            for s in b.gpus:
                device = node.device(s.id)
                if device is None:
                    raise ValueError(f'Pod "{b.pod}": node {node.name} has no GPU {s.id!r}')
                amount = _device_share(s, device)
                used[node.name][device.id] += amount
                allocated += amount
                memory += s.memory
        elif task.gpu and node.plain_gpus:
            allocated += sum(r.nums for r in task.gpu)
        elif task.gpu:
            open_devices.append(b)
            if node.gpus:
                first = node.gpus[0].memory
                allocated += sum(r.nums * r.share_of(first) for r in task.gpu)
                memory += sum(r.nums * r.memory_on(first) for r in task.gpu)
    for b in open_devices:
        task = tasks[b.pod]
        _binpack(instance.node_by_name[b.node], task.gpu, task.gpu_filter, used[b.node])
    return _GpuUse(allocated, memory, used)


def _binpack(
    node: Node, requests: Iterable[GpuRequest], gpu_filter: GpuFilter | None, used: dict[str, float]
) -> None:
    """Put requests on devices as HAMi's binpack would; a request that fits nowhere (an invalid
    plan) still takes the least used healthy devices, so its GPUs are not counted as free."""
    healthy = [d for d in node.gpus if d.health]
    for request in requests:
        allowed = [d for d in healthy if gpu_filter is None or gpu_filter.allows(d)]
        fitting = [d for d in allowed if used[d.id] + request.share_of(d.memory) <= 1 + _EPS]
        chosen = sorted(fitting, key=lambda d: (-used[d.id], d.index))[: request.nums]
        rest = sorted((d for d in healthy if d not in chosen), key=lambda d: (used[d.id], d.index))
        for device in (*chosen, *rest)[: request.nums]:
            used[device.id] += request.share_of(device.memory)


# -- queues ----------------------------------------------------------------------------


def _queue_metrics(
    instance: Instance, bound: Mapping[str, Bound], tasks: Mapping[str, Task]
) -> tuple[QueueMetrics, ...]:
    """Rows for the queues that hold jobs, plus (hierarchical capacity) their ancestors.

    Deserved is what the configured quota plugin derives: hierarchical capacity, flat capacity
    over the queues with jobs, or proportion's water-filling with requests = allocated + pending
    (that is, every pod of the queue's jobs). With neither plugin the scheduler has no notion of
    deserved, and the queue's ``spec.deserved`` is reported as written.
    """
    tree = instance.queue_tree
    allocated: dict[str, Resources] = {}
    requested: dict[str, Resources] = {}
    for job in instance.jobs:
        for pod in job.pods:
            amount = tasks[pod.key].resources
            requested[job.queue] = requested.get(job.queue, EMPTY) + amount
            if pod.key in bound:
                allocated[job.queue] = allocated.get(job.queue, EMPTY) + amount
    with_jobs = list(requested)
    total = instance.total_allocatable
    scheduler = instance.scheduler
    reported = set(with_jobs)
    if scheduler.hierarchy():
        deserved = {n: a.deserved for n, a in capacity_hierarchical(tree, total).items()}
        for leaf in with_jobs:
            for ancestor in tree.ancestors(leaf):
                reported.add(ancestor)
                allocated[ancestor] = allocated.get(ancestor, EMPTY) + allocated.get(leaf, EMPTY)
                requested[ancestor] = requested.get(ancestor, EMPTY) + requested[leaf]
    elif scheduler.has("capacity"):
        deserved = {n: a.deserved for n, a in capacity_flat(tree, total, with_jobs).items()}
    elif scheduler.has("proportion"):
        real = {n: a.real_capability for n, a in capacity_flat(tree, total, with_jobs).items()}
        queues = [tree.queue(n) for n in with_jobs]
        deserved = proportion_deserved(queues, total, requested, real)
    else:
        deserved = {n: tree.queue(n).deserved for n in with_jobs}
    rows = []
    for name in tree.names:
        if name not in reported:
            continue
        alloc = allocated.get(name, EMPTY)
        rows.append(
            QueueMetrics(
                queue=name,
                allocated=alloc,
                deserved=deserved[name],
                requested=requested[name],
                share=share(alloc, deserved[name], empty_share=1.0),
                leaf=name in with_jobs,
            )
        )
    return tuple(rows)


def _deserved_satisfaction(queues: Iterable[QueueMetrics]) -> float:
    got = wanted = 0.0
    for q in queues:
        if not q.leaf:
            continue
        for r in q.deserved.dims():
            des = q.deserved[r]
            got += min(q.allocated.get(r), des) / des
            wanted += min(q.requested.get(r), des) / des
    return got / wanted if wanted > 0 else 1.0


# -- topology --------------------------------------------------------------------------


def _topology(
    instance: Instance, bound: Mapping[str, Bound], tasks: Mapping[str, Task]
) -> tuple[dict[str, int], int]:
    """Each multi-pod job's LCA tier, and how many sit at the lowest tier that could hold them.

    A job counts as at the lowest tier when its LCA tier is not above it; for a plan that fits
    its nodes the two are equal, and only an overcommitted plan can do better.
    """
    lowest = _LowestTier(instance)
    tiers: dict[str, int] = {}
    at_lowest = 0
    for job in instance.jobs:
        pods = [bound[p.key] for p in job.pods if p.key in bound]
        if len(pods) < 2:
            continue
        tier = instance.topology.lca_tier(b.node for b in pods)
        tiers[job.key] = tier
        if tier <= lowest(sum((lowest.need(tasks[b.pod]) for b in pods), EMPTY)):
            at_lowest += 1
    return tiers, at_lowest


class _LowestTier:
    """The lowest tier that could hold a total request, other jobs ignored: 0 if one node's
    allocatable holds it, else the lowest tier with a HyperNode whose nodes together do; the
    virtual top tier always holds it. Remembered per request, since gangs repeat shapes."""

    def __init__(self, instance: Instance) -> None:
        self._instance = instance
        self._domain_size: dict[str, Resources] = {}
        self._known: dict[Resources, int] = {}
        self._largest = max((d.memory for n in instance.nodes for d in n.gpus), default=1)

    def need(self, task: Task) -> Resources:
        """A pod's request with ``nvidia.com/gpu`` counted in GPU-equivalents (milli): node
        allocatable counts HAMi time-slices there, which says nothing about whole cards."""
        if not task.gpu:
            return task.resources
        share = sum(r.nums * r.share_of(self._largest) for r in task.gpu)
        return task.resources + {
            NVIDIA_GPU: ceil(MILLI * share - _EPS) - task.resources.get(NVIDIA_GPU)
        }

    def _capacity(self, node: Node) -> Resources:
        """Allocatable with ``nvidia.com/gpu`` as healthy whole cards (milli) when the node
        lists its devices."""
        if not node.gpus:
            return node.allocatable
        cards = MILLI * sum(1 for d in node.gpus if d.health)
        return node.allocatable + {NVIDIA_GPU: cards - node.allocatable.get(NVIDIA_GPU)}

    def __call__(self, need: Resources) -> int:
        if need not in self._known:
            self._known[need] = self._find(need)
        return self._known[need]

    def _find(self, need: Resources) -> int:
        instance = self._instance
        if any(need.less_equal(self._capacity(n)) for n in instance.nodes):
            return 0
        topo = instance.topology
        for tier in topo.tiers():
            if tier == topo.top_tier:
                break
            if any(need.less_equal(self._size(hn)) for hn in topo.at_tier(tier)):
                return tier
        return topo.top_tier

    def _size(self, hn: str) -> Resources:
        if hn not in self._domain_size:
            nodes = self._instance.node_by_name
            self._domain_size[hn] = sum(
                (self._capacity(nodes[n]) for n in self._instance.topology.real_nodes(hn)), EMPTY
            )
        return self._domain_size[hn]


# -- fragmentation ---------------------------------------------------------------------


def _fragmentation(
    instance: Instance,
    bound: Mapping[str, Bound],
    tasks: Mapping[str, Task],
    used: Mapping[str, Mapping[str, float]],
    mix: Sequence[TypicalTask],
) -> tuple[float, float]:
    """Free GPU-equivalents and Σ_n F_n (``models.fragmentation``), both over healthy GPUs.

    Free milli of a device is round(1000 · (1 − used share)), clipped at 0.
    """
    cpu_used: dict[str, int] = {}
    for b in bound.values():
        cpu_used[b.node] = cpu_used.get(b.node, 0) + tasks[b.pod].resources.get(CPU)
    free_total = 0
    fragmented = 0.0
    for node in instance.nodes:
        healthy = [d for d in node.gpus if d.health]
        free = [max(0, MILLI - round(MILLI * used[node.name][d.id])) for d in healthy]
        if not any(free):
            continue
        free_total += sum(free)
        cpu_free = node.allocatable.get(CPU) - cpu_used.get(node.name, 0)
        fragmented += fragmentation(cpu_free, free, [d.type for d in healthy], mix)
    return free_total / MILLI, fragmented / MILLI


# -- TDM -------------------------------------------------------------------------------


def _tdm_counts(
    instance: Instance,
    bound: Mapping[str, Bound],
    jobs: Mapping[str, Job],
    tasks: Mapping[str, Task],
) -> tuple[int, int]:
    """Bound pods on revocable nodes, and those TDM will evict when their zone's window closes.

    A node is revocable when it carries the zone label. A pod is counted as evicted when TDM
    would take it as a victim: its node's zone is configured, the pod is preemptable (TDM only
    evicts preemptable pods), its job has a ``duration``, and it outlives the window: now +
    duration is after the last active second (Volcano's faithful window reading). A zone that is
    inactive at ``now`` has closed already, so its pods with a duration all count; a zone that
    never closes (``00:00-00:00``) evicts nobody. Pods of jobs without a duration are never
    counted: how long they run is unknown. Whether the ``shuffle`` action, which carries out TDM
    evictions, is configured is not checked: the measure is exposure to the window.
    """
    config = instance.tdm
    on_revocable = evicted = 0
    for b in bound.values():
        zone = node_zone(instance.node_by_name[b.node].labels)
        if not zone:
            continue
        on_revocable += 1
        job, task = jobs[b.pod], tasks[b.pod]
        window = config.zones.get(zone) if config is not None else None
        if window is None or job.duration is None:
            continue
        if pod_preemptable(task.annotations, task.labels) and _outlives(
            window, instance, job.duration
        ):
            evicted += 1
    return on_revocable, evicted


def _outlives(window: Window, instance: Instance, duration: timedelta) -> bool:
    now, tz = instance.now, instance.tz
    if not window_active(window, now, tz, faithful=True):
        return True
    closes = window_closes_at(window, now, tz, faithful=True)
    return closes is not None and now + duration > closes


def _quantities(amounts: Resources) -> dict[str, str]:
    return {name: format_amount(name, v) for name, v in amounts.items() if v}
