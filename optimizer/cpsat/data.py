"""What the CP-SAT model is built from: the instance compiled into dense, solver-ready tables.

Pending pods of one task are identical, so they form one :class:`Group` and the model counts
how many of them land on each node (spec/cpsat-practice.md B.1). Everything that does not
depend on the decision — which nodes a group may use at all (selectors, taints, TDM, GPU
filters), what running pods already hold, each queue's limit — is worked out here once, so the
model only contains decisions that can actually be taken.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from math import ceil

from models.cluster import Node
from models.gpu import GpuDevice, GpuRequest
from models.instance import Instance
from models.queues import QueueAttrs, capacity_flat, capacity_hierarchical, proportion_deserved
from models.resources import CPU, MEMORY, PODS, Resources
from models.tdm import (
    MAX_UNAVAILABLE_KEYS,
    MIN_AVAILABLE_KEYS,
    max_evictable,
    node_zone,
    pod_preemptable,
    pod_revocable_zone,
    window_closes_at,
)
from models.workload import Job, Pod, Task

MIB = 2**20
PROTECTED_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def model_units(resources: Mapping[str, int]) -> dict[str, int]:
    """Resources in model units: memory-like amounts in MiB (rounded up), the rest as is, so
    that coefficients stay small enough for CP-SAT's linear propagation."""
    out = {}
    for name, amount in resources.items():
        if name == PODS:
            continue
        out[name] = ceil(amount / MIB) if name in (MEMORY, "ephemeral-storage") else amount
    return out


@dataclass
class Group:
    """The pending pods of one task of one job."""

    index: int
    job: Job
    task: Task
    pods: list[Pod]
    request: dict[str, int]
    gpu: GpuRequest | None
    value: int
    """Stage-1 worth of one pod (GPU-equivalents × 1000, see :func:`pod_value`)."""
    nodes: list[int] = field(default_factory=list)
    """Candidate node indices (static predicates pass)."""
    devices: dict[int, list[int]] = field(default_factory=dict)
    """Per candidate node, the indices of the devices this group may use."""


@dataclass
class RunningPod:
    pod: Pod
    job: Job
    task: Task
    node: int
    request: dict[str, int]
    gpus: list[tuple[int, int, int]]
    """(device index on the node, memory, cores) per held device."""
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
    """Per queue (model units), the quota the pods of its subtree may not exceed."""
    queue_deserved: dict[str, dict[str, int]]
    queue_guarantee: dict[str, dict[str, int]]
    queue_members: dict[str, list[str]]
    """Queue → jobs in its subtree (the queue itself and, hierarchically, its descendants)."""
    leaf_ok: dict[str, bool]
    evictions_on: bool
    topology_on: bool
    eviction_budget: dict[str, int]

    def node_index(self, name: str) -> int:
        return self._node_index[name]

    def __post_init__(self) -> None:
        self._node_index = {n.name: i for i, n in enumerate(self.nodes)}


def pod_value(instance: Instance, task: Task) -> int:
    """Worth of admitting one pod, in thousandths of a GPU-equivalent.

    GPU pods are worth their GPU-equivalents (per device max(cores, memory) share, memory
    measured against the cluster's largest card so that the value does not depend on where the
    pod lands); CPU-only pods are worth their CPU measured in the cluster's CPU per GPU; every
    pod is worth at least 1, so admitting anything beats admitting nothing.
    """
    gpus = [d for n in instance.nodes for d in n.gpus]
    cpu = instance.total_allocatable.get(CPU)
    if task.gpu:
        largest = max((d.memory for d in gpus), default=1) or 1
        total = 0.0
        for req in task.gpu:
            pct = req.percentage if req.percentage is not None else 0
            mem_share = max(pct / 100, req.memory / largest)
            total += req.nums * max(req.booked_cores / 100, min(mem_share, 1.0))
        return max(1, round(1000 * total))
    per_gpu_cpu = cpu / len(gpus) if gpus and cpu else 1000
    return max(1, round(1000 * task.resources.get(CPU) / per_gpu_cpu))


def _selector_ok(task: Task, node: Node) -> bool:
    if any(node.labels.get(k) != v for k, v in task.node_selector.items()):
        return False
    return not task.required_affinity or any(t.matches(node.labels) for t in task.required_affinity)


def _taints_ok(task: Task, node: Node) -> bool:
    taints = [
        (t.key, t.value, t.effect) for t in node.taints if t.effect in ("NoSchedule", "NoExecute")
    ]
    if node.unschedulable:
        taints.append(("node.kubernetes.io/unschedulable", "", "NoSchedule"))
    return all(any(tol.tolerates(*taint) for tol in task.tolerations) for taint in taints)


def _device_ok(task: Task, device: GpuDevice) -> bool:
    if not device.health or "nvidia" not in device.type.lower():
        return False
    return task.gpu_filter is None or task.gpu_filter.allows(device)


def compile_instance(instance: Instance, *, tdm_lookahead: bool = False) -> Compiled:
    """Build the tables; ``tdm_lookahead`` also forbids revocable nodes to jobs that would
    outlive the zone's window (DESIGN §5, optional)."""
    conf = instance.scheduler
    nodes = list(instance.nodes)
    node_index = {n.name: i for i, n in enumerate(nodes)}
    priorities = sorted({j.priority for j in instance.jobs})
    weights = {j.key: 1 + priorities.index(j.priority) for j in instance.jobs}
    resources: set[str] = set()
    groups: list[Group] = []
    running: list[RunningPod] = []
    job_groups: dict[str, list[int]] = {}
    job_running: dict[str, list[int]] = {}
    tdm = instance.tdm
    actions = set(conf.actions)
    evictions_on = bool(actions & {"preempt", "reclaim"})
    for job in instance.jobs:
        job_groups[job.key] = []
        job_running[job.key] = []
        protected = job.namespace == "kube-system" or job.priority_class in PROTECTED_CLASSES
        for task in job.tasks:
            request = model_units(task.resources)
            resources.update(request)
            value = pod_value(instance, task)
            pods = [p for p in job.pods if p.task == task.name]
            pending = [p for p in pods if not p.running]
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
                        pod, job, task, node_index[node.name], request, held, evictable, value
                    )
                )
            if not pending:
                continue
            group = Group(
                len(groups), job, task, pending, request, task.gpu[0] if task.gpu else None, value
            )
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
                if group.gpu is not None:
                    usable = [d for d, dev in enumerate(node.gpus) if _device_ok(task, dev)]
                    if len(usable) < group.gpu.nums:
                        continue
                    group.devices[i] = usable
                group.nodes.append(i)
            job_groups[job.key].append(group.index)
            groups.append(group)
    limits, deserved, guarantee, members, leaf_ok = _queues(instance)
    budget = {}
    for job in instance.jobs:
        if any(k in job.annotations for k in (*MAX_UNAVAILABLE_KEYS, *MIN_AVAILABLE_KEYS)):
            running_count = sum(1 for p in job.pods if p.running)
            budget[job.key] = max_evictable(job.annotations, job.replicas, running_count, 0)
    if not evictions_on:
        for r in running:
            r.evictable = False
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
        topology_on=instance.scheduler.has("network-topology-aware"),
        eviction_budget=budget,
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
            else capacity_flat(tree, total, with_jobs)
        )
        for q, a in attrs.items():
            if hierarchical or q in with_jobs:
                limits[q] = model_units(a.real_capability)
    elif conf.has("proportion"):
        requests: dict[str, Resources] = {}
        for job in instance.jobs:
            req = Resources()
            for task in job.tasks:
                req = req + task.resources.scaled(task.replicas)
            requests[job.queue] = requests.get(job.queue, Resources()) + req
        queues = [tree.queue(q) for q in tree.names if q in with_jobs]
        real = capacity_flat(tree, total, with_jobs)
        deserved_p = proportion_deserved(
            queues, total, requests, {q: a.real_capability for q, a in real.items()}
        )
        for q, d in deserved_p.items():
            limits[q] = model_units(d)
        attrs = {
            q: QueueAttrs(d, real[q].capability, real[q].real_capability, real[q].guarantee)
            for q, d in deserved_p.items()
        }
    deserved = {q: model_units(a.deserved) for q, a in attrs.items()}
    if not attrs:
        deserved = {q: model_units(tree.queue(q).deserved) for q in tree.names}
    guarantee = {q: model_units(tree.queue(q).guarantee) for q in tree.names}
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
