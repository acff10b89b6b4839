"""What the CP-SAT model is built from: the instance compiled into dense, solver-ready tables.

Pending pods of one task are identical, so they form one :class:`Group` and the model counts
how many of them land on each node (spec/cpsat-practice.md B.1). Everything that does not
depend on the decision — which nodes a group may use at all (selectors, taints, TDM, GPU
filters), what running pods already hold, each queue's limit — is worked out here once, so the
model only contains decisions that can actually be taken.

Amounts are integers in *model units*: Volcano units, except memory-like resources in MiB so
that coefficients stay small. MiB rounding always errs on the safe side: a pod's request is
rounded up where it counts against a limit and down where it counts towards a floor; limits
are rounded down and floors up. The verifier judges bytes, so a model-feasible plan passes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from math import ceil

from models.cluster import Node
from models.gpu import GpuFilter, GpuRequest
from models.instance import Instance
from models.queues import QueueAttrs, capacity_flat, capacity_hierarchical, proportion_deserved
from models.resources import INFINITE, MEMORY, PODS, Resources
from models.tdm import (
    has_disruption_budget,
    job_eviction_budget,
    node_zone,
    pod_preemptable,
    pod_revocable_zone,
    window_closes_at,
)
from models.vocabulary import CRITICAL_PRIORITY_CLASSES as PROTECTED_CLASSES
from models.vocabulary import SYSTEM_NAMESPACE, UNSCHEDULABLE_TAINT
from models.workload import Job, Pod, Task

MIB = 2**20
MIB_RESOURCES = frozenset({MEMORY, "ephemeral-storage"})
UNLIMITED = 2**62
"""Model stand-in for an unlimited quota (Volcano's infinity does not fit in int64)."""
NO_FILTER = GpuFilter()


def model_units(resources: Mapping[str, int], *, round_up: bool) -> dict[str, int]:
    """``resources`` in model units (``pods`` dropped); ``round_up`` says which way MiB round."""
    out = {}
    for name, amount in resources.items():
        if name == PODS:
            continue
        if amount >= INFINITE // 2:
            out[name] = UNLIMITED
        elif name in MIB_RESOURCES:
            out[name] = ceil(amount / MIB) if round_up else amount // MIB
        else:
            out[name] = amount
    return out


@dataclass
class Group:
    """The pending pods of one task of one job."""

    index: int
    job: Job
    task: Task
    pods: list[Pod]
    request: dict[str, int]
    """Per pod, rounded up (what it takes from a limit)."""
    request_floor: dict[str, int]
    """Per pod, rounded down (what it adds towards a floor such as a guarantee)."""
    value: int
    """Stage-1 worth of one pod (GPU-equivalents × 1000, see :func:`pod_value`)."""
    numa_bind: bool
    """Each multi-GPU container must take its devices from one NUMA node."""
    nodes: list[int] = field(default_factory=list)
    """Candidate node indices (static predicates pass)."""
    devices: dict[int, list[int]] = field(default_factory=dict)
    """Per candidate node, the indices of the devices this group may use."""
    whole: dict[int, list[bool]] = field(default_factory=dict)
    """Per candidate node and container: the container takes whole devices from the node's
    pool (see :func:`_takes_whole`), so the model only counts them instead of choosing them."""

    @property
    def gpus(self) -> tuple[GpuRequest, ...]:
        """One request per GPU container (empty for a pod without GPUs)."""
        return self.task.gpu

    @property
    def size(self) -> int:
        return len(self.pods)


@dataclass
class RunningPod:
    pod: Pod
    job: Job
    task: Task
    node: int
    request: dict[str, int]
    request_floor: dict[str, int]
    gpus: list[tuple[int, int, int]]
    """(device index on the node, memory, cores) per held device share."""
    evictable: bool
    value: int


@dataclass
class Compiled:
    instance: Instance
    nodes: list[Node]
    groups: list[Group]
    running: list[RunningPod]
    jobs: list[Job]
    job_groups: dict[str, list[int]]
    job_running: dict[str, list[int]]
    weights: dict[str, int]
    """Stage-1 priority weight of each job (1 + rank of its priority)."""
    resources: list[str]
    queue_limits: dict[str, dict[str, int]]
    """Per queue (model units, rounded down), the quota the pods of its subtree may not exceed."""
    queue_deserved: dict[str, dict[str, int]]
    queue_guarantee: dict[str, dict[str, int]]
    queue_members: dict[str, list[str]]
    """Queue → jobs whose pods its quota counts (the queue and, hierarchically, its subtree)."""
    leaf_ok: dict[str, bool]
    evictions_on: bool
    topology_on: bool
    eviction_budget: dict[str, int]
    levels: list[int]
    """Topology levels: 0 (one node) and every real HyperNode tier (see :func:`topology_levels`)."""
    domains: list[list[str]]
    pool: list[list[int]]
    """Per node, the devices any GPU pod may use (healthy, NVIDIA, not cordoned)."""
    groups_on: list[list[int]] = field(init=False)
    """Per node, the groups that may use it."""
    running_on: list[list[int]] = field(init=False)
    """Per node, the running pods on it."""
    holders: dict[tuple[int, int], list[tuple[int, int, int]]] = field(init=False)
    """(node, device) → (running pod, memory, cores) of every share running pods hold."""

    def __post_init__(self) -> None:
        self._node_index = {n.name: i for i, n in enumerate(self.nodes)}
        self.groups_on = [[] for _ in self.nodes]
        for g in self.groups:
            for n in g.nodes:
                self.groups_on[n].append(g.index)
        self.running_on = [[] for _ in self.nodes]
        self.holders = {}
        for i, r in enumerate(self.running):
            self.running_on[r.node].append(i)
            for d, memory, cores in r.gpus:
                self.holders.setdefault((r.node, d), []).append((i, memory, cores))

    def node_index(self, name: str) -> int:
        return self._node_index[name]


def pod_value(task: Task, largest_gpu_memory: int, cpu_per_gpu: float) -> int:
    """Worth of admitting one pod, in thousandths of a GPU-equivalent.

    GPU pods are worth their GPU-equivalents (per device max(cores, memory) share, memory
    measured against the cluster's largest card so that the value does not depend on where the
    pod lands); CPU-only pods are worth their CPU measured in the cluster's CPU per GPU; every
    pod is worth at least 1, so admitting anything beats admitting nothing.
    """
    if task.gpu:
        total = 0.0
        for req in task.gpu:
            pct = req.percentage if req.percentage is not None else 0
            mem_share = max(pct / 100, req.memory / largest_gpu_memory)
            total += req.nums * max(req.booked_cores / 100, min(mem_share, 1.0))
        return max(1, round(1000 * total))
    return max(1, round(1000 * task.resources.get("cpu") / cpu_per_gpu))


def _selector_ok(task: Task, node: Node) -> bool:
    if any(node.labels.get(k) != v for k, v in task.node_selector.items()):
        return False
    terms = task.required_affinity
    return not terms or any(t.match_expressions and t.matches(node.labels) for t in terms)


def _taints_ok(task: Task, node: Node) -> bool:
    taints = [
        (t.key, t.value, t.effect) for t in node.taints if t.effect in ("NoSchedule", "NoExecute")
    ]
    if node.unschedulable:
        taints.append((UNSCHEDULABLE_TAINT, "", "NoSchedule"))
    return all(any(tol.tolerates(*taint) for tol in task.tolerations) for taint in taints)


def _device_pool(node: Node) -> list[int]:
    """HAMi's device checks that depend on neither the pod nor what else runs (§3.3)."""
    cordoned = node.cordoned_gpus
    return [
        d
        for d, dev in enumerate(node.gpus)
        if dev.health and "NVIDIA" in dev.type.upper() and dev.id not in cordoned
    ]


class _WholeDevices:
    """Whether a container needs, on every device of a node's pool, the whole memory and
    fits alone: then which devices it gets does not matter, only that they carry no other
    share, and the model counts whole devices instead of choosing them. Containers with a
    device filter narrower than the pool, or a NUMA binding that can bite, are chosen per
    device. Answers are cached per request and pool shape: nodes are mostly alike."""

    def __init__(self) -> None:
        self._cache: dict[tuple[bool, GpuRequest, tuple[tuple[int, int, int, int], ...]], bool] = {}

    def __call__(self, numa_bind: bool, request: GpuRequest, node: Node, pool: list[int]) -> bool:
        shape = tuple((d.count, d.memory, d.cores, d.numa) for d in (node.gpus[i] for i in pool))
        key = (numa_bind, request, shape)
        if key not in self._cache:
            self._cache[key] = self._decide(numa_bind, request, shape)
        return self._cache[key]

    @staticmethod
    def _decide(
        numa_bind: bool, request: GpuRequest, shape: tuple[tuple[int, int, int, int], ...]
    ) -> bool:
        if numa_bind and request.nums > 1 and len({numa for *_, numa in shape}) > 1:
            return False
        return all(
            count >= 1 and request.memory_on(memory) == memory and request.booked_cores <= cores
            for count, memory, cores, _ in shape
        )


def _devices_fit(group: Group, node: Node, usable: list[int]) -> bool:
    """Enough usable devices for the widest container (on one NUMA node when bound)."""
    widest = max(r.nums for r in group.gpus)
    if not group.numa_bind:
        return len(usable) >= widest
    per_numa: dict[int, int] = {}
    for d in usable:
        per_numa[node.gpus[d].numa] = per_numa.get(node.gpus[d].numa, 0) + 1
    return max(per_numa.values(), default=0) >= widest


def compile_instance(instance: Instance, *, tdm_lookahead: bool = False) -> Compiled:
    """Build the tables; ``tdm_lookahead`` also forbids revocable nodes to jobs that would
    outlive the zone's window (DESIGN §5, optional)."""
    conf = instance.scheduler
    nodes = list(instance.nodes)
    node_index = {n.name: i for i, n in enumerate(nodes)}
    priorities = sorted({j.priority for j in instance.jobs})
    rank = {p: i for i, p in enumerate(priorities)}
    weights = {j.key: 1 + rank[j.priority] for j in instance.jobs}
    gpu_devices = [d for n in nodes for d in n.gpus]
    largest = max((d.memory for d in gpu_devices), default=1) or 1
    total_cpu = instance.total_allocatable.get("cpu")
    cpu_per_gpu = total_cpu / len(gpu_devices) if gpu_devices and total_cpu else 1000
    resources: set[str] = set()
    groups: list[Group] = []
    running: list[RunningPod] = []
    job_groups: dict[str, list[int]] = {}
    job_running: dict[str, list[int]] = {}
    tdm = instance.tdm
    pools = [_device_pool(n) for n in nodes]
    whole = _WholeDevices()
    evictions_on = conf.evicts
    for job in instance.jobs:
        job_groups[job.key] = []
        job_running[job.key] = []
        protected = job.namespace == SYSTEM_NAMESPACE or job.priority_class in PROTECTED_CLASSES
        for task in job.tasks:
            request = model_units(task.resources, round_up=True)
            request_floor = model_units(task.resources, round_up=False)
            resources.update(request)
            value = pod_value(task, largest, cpu_per_gpu)
            pods = [p for p in job.pods if p.task == task.name]
            for pod in pods:
                if not pod.running:
                    continue
                node = instance.node_by_name[pod.node]  # type: ignore[index]
                dev_index = {d.id: i for i, d in enumerate(node.gpus)}
                held = [
                    (dev_index[s.id], s.memory, s.cores)
                    for c in pod.gpus
                    for s in c
                    if s.id in dev_index
                ]
                evictable = (
                    evictions_on
                    and not protected
                    and pod_preemptable(task.annotations, task.labels)
                )
                job_running[job.key].append(len(running))
                running.append(
                    RunningPod(
                        pod,
                        job,
                        task,
                        node_index[node.name],
                        request,
                        request_floor,
                        held,
                        evictable,
                        value,
                    )
                )
            pending = [p for p in pods if not p.running]
            if not pending:
                continue
            numa_bind = task.numa_bind
            group = Group(len(groups), job, task, pending, request, request_floor, value, numa_bind)
            revocable = pod_revocable_zone(task.annotations) == "*"
            for i, node in enumerate(nodes):
                if not _selector_ok(task, node) or not _taints_ok(task, node):
                    continue
                zone = node_zone(node.labels)
                if zone and tdm is not None:
                    if not revocable or not tdm.zone_active(zone, instance.now, instance.tz):
                        continue
                    if tdm_lookahead and job.duration is not None:
                        window = tdm.zones.get(zone)
                        closes = (
                            window_closes_at(window, instance.now, instance.tz) if window else None
                        )
                        if closes is not None and instance.now + job.duration > closes:
                            continue
                if group.gpus:
                    usable = pools[i]
                    if task.gpu_filter is not None and task.gpu_filter != NO_FILTER:
                        usable = [d for d in pools[i] if task.gpu_filter.allows(node.gpus[d])]
                    if not _devices_fit(group, node, usable):
                        continue
                    group.devices[i] = usable
                    group.whole[i] = [
                        usable == pools[i] and whole(group.numa_bind, r, node, usable)
                        for r in group.gpus
                    ]
                group.nodes.append(i)
            job_groups[job.key].append(group.index)
            groups.append(group)
    limits, deserved, guarantee, members, leaf_ok = _queues(instance)
    budget = {}
    for job in instance.jobs:
        if has_disruption_budget(job.annotations):
            running_count = sum(1 for p in job.pods if p.running)
            budget[job.key] = job_eviction_budget(job.annotations, job.replicas, running_count, 0)
    levels, domains = topology_levels(instance)
    return Compiled(
        instance=instance,
        nodes=nodes,
        groups=groups,
        running=running,
        jobs=list(instance.jobs),
        job_groups=job_groups,
        job_running=job_running,
        weights=weights,
        resources=sorted(resources),
        queue_limits=limits,
        queue_deserved=deserved,
        queue_guarantee=guarantee,
        queue_members=members,
        leaf_ok=leaf_ok,
        evictions_on=evictions_on,
        topology_on=conf.enforces_topology,
        eviction_budget=budget,
        levels=levels,
        domains=domains,
        pool=pools,
    )


def _queues(
    instance: Instance,
) -> tuple[
    dict[str, dict[str, int]],
    dict[str, dict[str, int]],
    dict[str, dict[str, int]],
    dict[str, list[str]],
    dict[str, bool],
]:
    """Queue limits as the configured quota plugin enforces them at allocation time."""
    conf = instance.scheduler
    tree = instance.queue_tree
    hierarchical = conf.hierarchy()
    with_jobs = {j.queue for j in instance.jobs}
    members: dict[str, list[str]] = {q: [] for q in tree.names}
    for job in instance.jobs:
        if job.queue not in members:
            continue
        members[job.queue].append(job.key)
        if hierarchical:
            for ancestor in tree.ancestors(job.queue):
                members[ancestor].append(job.key)
    leaf_ok = {q: (not hierarchical) or tree.is_leaf(q) for q in tree.names}
    attrs: Mapping[str, QueueAttrs] = {}
    total = instance.total_allocatable
    limits: dict[str, dict[str, int]] = {}
    if conf.has("capacity"):
        attrs = (
            capacity_hierarchical(tree, total)
            if hierarchical
            else capacity_flat(tree, total, [q for q in tree.names if q in with_jobs])
        )
        for q, a in attrs.items():
            if hierarchical or q in with_jobs:
                limits[q] = model_units(a.real_capability, round_up=False)
    elif conf.has("proportion"):
        requests: dict[str, Resources] = {}
        for job in instance.jobs:
            req = Resources()
            for task in job.tasks:
                req = req + task.resources.scaled(task.replicas)
            requests[job.queue] = requests.get(job.queue, Resources()) + req
        queues = [tree.queue(q) for q in tree.names if q in with_jobs]
        real = capacity_flat(tree, total, [q.name for q in queues])
        deserved_p = proportion_deserved(
            queues, total, requests, {q: a.real_capability for q, a in real.items()}
        )
        for q, d in deserved_p.items():
            limits[q] = model_units(d, round_up=False)
        attrs = {
            q: QueueAttrs(d, real[q].capability, real[q].real_capability, real[q].guarantee)
            for q, d in deserved_p.items()
        }
    if attrs:
        deserved = {q: model_units(a.deserved, round_up=True) for q, a in attrs.items()}
    else:
        deserved = {q: model_units(tree.queue(q).deserved, round_up=True) for q in tree.names}
    guarantee = {q: model_units(tree.queue(q).guarantee, round_up=True) for q in tree.names}
    return limits, deserved, guarantee, members, leaf_ok


def topology_levels(instance: Instance) -> tuple[list[int], list[list[str]]]:
    """Topology levels for LCA reasoning: tier 0 (one node) and every real HyperNode tier.

    ``domains[l][n]`` names the largest HyperNode of tier ≤ ``levels[l]`` that contains node
    ``n`` (the node itself when there is none), so the domains of one level partition the nodes
    and "all of a job's pods within one HyperNode of tier ≤ t" becomes "all in one domain".
    """
    topology = instance.topology
    levels = [0, *sorted({topology.tier(h) for h in topology.names})]
    containing: dict[str, list[tuple[int, str]]] = {n.name: [] for n in instance.nodes}
    for h in topology.names:
        for node in topology.real_nodes(h):
            if node in containing:
                containing[node].append((topology.tier(h), h))
    domains = []
    for level in levels:
        row = []
        for node in instance.nodes:
            fitting = [c for c in containing[node.name] if c[0] <= level]
            row.append(max(fitting)[1] if level > 0 and fitting else f"node:{node.name}")
        domains.append(row)
    return levels, domains
