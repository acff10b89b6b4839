"""The verifier: does a plan keep every rule Volcano, HAMi and Kubernetes would enforce?

It is the oracle every engine is tested against, so it is written from the specs alone and
shares no code with the engines: it reads only ``models`` and ``optimizer.plan``. Each rule of
DESIGN §6 is one small ``_check_<rule>`` function that judges the state after the plan,
``plan.bound_pods(instance)``: running pods that are not evicted, plus the placements.
Pipelined pods hold nothing yet.

The plan is judged, not the cluster it starts from. Running pods are facts: capacity is only
judged where the plan adds something (a node or queue that gets new pods, a GPU that gets a new
assignment, a job that gets new pods), so an over-commitment that was there before and that the
plan does not touch is not reported; the filters (selectors, taints, GPU masks, TDM) apply to
new placements only.

A plan naming a pod, node or GPU the instance lacks is bad input, not a violation:
:func:`verify` raises :class:`~models.errors.InputError` for it, like ``read_plan`` does.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from models.cluster import Node
from models.errors import InputError, Problem
from models.gpu import FULL_CORES, GpuDevice, GpuRequest
from models.instance import Instance
from models.queues import capacity_flat, capacity_hierarchical
from models.resources import PODS, Resources, format_amount
from models.scheduler_conf import SchedulerConf
from models.tdm import (
    MAX_UNAVAILABLE_KEYS,
    MIN_AVAILABLE_KEYS,
    job_eviction_budget,
    node_zone,
    pod_preemptable,
    pod_revocable_zone,
)
from models.vocabulary import (
    CRITICAL_PRIORITY_CLASSES,
    DEVICE_CORDON,
    NUMA_BIND,
    PREEMPTABLE,
    SYSTEM_NAMESPACE,
    UNSCHEDULABLE_TAINT,
)
from models.workload import DeviceShare, Job, Pod, Task

from .plan import Bound, Eviction, Placement, Plan

RULES = (
    "node-capacity",
    "pod-count",
    "gpu-capacity",
    "gpu-distinct",
    "gpu-exclusive",
    "gpu-filter",
    "selector",
    "taint",
    "gang",
    "topology-hard",
    "queue-capability",
    "queue-leaf",
    "tdm-window",
    "tdm-revocable-only",
    "running-kept",
    "eviction-allowed",
)

EVICTING_ACTIONS = ("preempt", "reclaim")
TDM_REASON = "tdm"
NO_GUARANTEE_REASONS = frozenset({"preempt", TDM_REASON})
"""Eviction reasons whose Volcano path never consults the victim queue's guarantee: preempt
takes victims inside the preemptor's own queue (§8.1), TDM's VictimTasks ignores capacity (§6)."""


@dataclass(frozen=True)
class Violation:
    """One broken rule: its DESIGN §6 name, the objects involved and what is wrong, in numbers."""

    rule: str
    objects: tuple[str, ...]
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.message}"


def verify(instance: Instance, plan: Plan) -> list[Violation]:
    """Every violation of ``plan`` against ``instance``, rule by rule in :data:`RULES` order.

    Raises :class:`InputError` when the plan names a pod, node or GPU the instance does not have.
    """
    _check_references(instance, plan)
    ctx = _Context(instance, plan)
    return [v for check in _CHECKS for v in check(ctx)]


def format_violations(violations: Iterable[Violation]) -> str:
    """One line per violation, each starting with its rule name."""
    return "".join(f"{v}\n" for v in violations)


# -- the state after the plan -------------------------------------------------------------


@dataclass(frozen=True)
class _Member:
    """A pod with the job and task it belongs to."""

    pod: Pod
    job: Job
    task: Task


@dataclass(frozen=True)
class _Context:
    """Everything the rules read, derived once from the instance and the plan."""

    instance: Instance
    plan: Plan

    @cached_property
    def members(self) -> Mapping[str, _Member]:
        return {p.key: _Member(p, j, j.task(p.task)) for j in self.instance.jobs for p in j.pods}

    @cached_property
    def bound(self) -> Mapping[str, Bound]:
        return self.plan.bound_pods(self.instance)

    @cached_property
    def on_node(self) -> Mapping[str, list[Bound]]:
        out: dict[str, list[Bound]] = {}
        for b in self.bound.values():
            out.setdefault(b.node, []).append(b)
        return out

    @cached_property
    def placed_nodes(self) -> list[str]:
        """Nodes that receive a new placement, in instance order."""
        targets = {p.node for p in self.plan.placements}
        return [n.name for n in self.instance.nodes if n.name in targets]

    @cached_property
    def placed_jobs(self) -> list[Job]:
        """Jobs with at least one new placement, in instance order."""
        keys = {self.members[p.pod].job.key for p in self.plan.placements}
        return [j for j in self.instance.jobs if j.key in keys]

    @cached_property
    def valid_evictions(self) -> list[Eviction]:
        """Evictions of a running pod from the node it runs on, each pod once (the others are
        ``running-kept`` violations and are not judged further)."""
        seen: set[str] = set()
        out = []
        for e in self.plan.evictions:
            pod = self.members[e.pod].pod
            if pod.running and pod.node == e.node and e.pod not in seen:
                seen.add(e.pod)
                out.append(e)
        return out

    def node(self, name: str) -> Node:
        return self.instance.node_by_name[name]

    def resreq(self, pod: str) -> Resources:
        return self.members[pod].task.resources

    def bound_of_job(self, job: Job) -> list[str]:
        return [p.key for p in job.pods if p.key in self.bound]


def _check_references(instance: Instance, plan: Plan) -> None:
    problems: list[Problem] = []
    entries = [
        *((f"placements[{i}]", p.pod, p.node, p.gpus or ()) for i, p in enumerate(plan.placements)),
        *((f"evictions[{i}]", e.pod, e.node, ()) for i, e in enumerate(plan.evictions)),
        *((f"pipelined[{i}]", q.pod, q.node, ()) for i, q in enumerate(plan.pipelined)),
    ]
    for where, pod, node_name, gpus in entries:
        obj = f'Pod "{pod}"'
        if pod not in instance.pod_by_key:
            problems.append(Problem("no such pod in the instance", obj, f"{where}.pod"))
        node = instance.node_by_name.get(node_name)
        if node is None:
            problems.append(Problem(f"no such node {node_name!r}", obj, f"{where}.node"))
            continue
        for d, share in enumerate(gpus):
            if node.device(share.id) is None:
                problems.append(
                    Problem(
                        f"node {node_name} has no GPU {share.id!r}", obj, f"{where}.gpus[{d}].id"
                    )
                )
    if problems:
        raise InputError(problems)


def _amount(resource: str, amount: int) -> str:
    return format_amount(resource, amount)


# -- node resources -----------------------------------------------------------------------


def _check_node_capacity(ctx: _Context) -> Iterator[Violation]:
    """Σ Resreq of the pods bound to a node ≤ its allocatable, on every resource some bound pod
    requests (a resource the node lacks has 0), for every node that receives a placement.

    A node whose running pods already exceed it and that gets no placement is not the plan's
    fault and is skipped. ``pods`` is left to ``pod-count``. Volcano's per-task fit test uses
    ``InitResreq`` against the idle resources at the time of the placement, which depends on an
    order a plan does not have; the final steady state is what is judged here.
    """
    for name in ctx.placed_nodes:
        node = ctx.node(name)
        used = sum((ctx.resreq(b.pod) for b in ctx.on_node[name]), Resources())
        for resource in sorted(used.dims() - {PODS}):
            limit = node.allocatable.get(resource, 0)
            if used[resource] > limit:
                yield Violation(
                    "node-capacity",
                    (name,),
                    f"node {name}: {resource} {_amount(resource, used[resource])} > allocatable "
                    f"{_amount(resource, limit)}",
                )


def _check_pod_count(ctx: _Context) -> Iterator[Violation]:
    """Pods bound to a node ≤ its pod capacity, for every node that receives a placement."""
    for name in ctx.placed_nodes:
        count, capacity = len(ctx.on_node[name]), ctx.node(name).pod_capacity
        if count > capacity:
            yield Violation(
                "pod-count", (name,), f"node {name}: {count} pods > pod capacity {capacity}"
            )


# -- GPU devices (hami-gpu.md §3.4) -------------------------------------------------------


@dataclass(frozen=True)
class _Booking:
    """One container-device assignment on a device: one time-slice slot."""

    pod: str
    share: DeviceShare
    new: bool


def _is_exclusive(cores: int, device: GpuDevice) -> bool:
    """A whole-compute assignment; exclusive only when the device has 100 cores (pitfall 5)."""
    return cores == FULL_CORES and device.cores == FULL_CORES


def _bookings(ctx: _Context) -> dict[tuple[str, str], list[_Booking]]:
    """(node, device id) → every assignment on it after the plan, from pods with known devices."""
    out: dict[tuple[str, str], list[_Booking]] = {}
    for b in ctx.bound.values():
        for share in b.gpus or ():
            out.setdefault((b.node, share.id), []).append(_Booking(b.pod, share, not b.running))
    return out


def _judged_devices(ctx: _Context) -> Iterator[tuple[str, GpuDevice, list[_Booking]]]:
    """Devices that receive a new explicit assignment, in node then device order; a device
    over-committed by running pods alone is not the plan's fault."""
    bookings = _bookings(ctx)
    for name in ctx.placed_nodes:
        for device in ctx.node(name).gpus:
            booked = bookings.get((name, device.id), [])
            if any(x.new for x in booked):
                yield name, device, booked


def _containers(
    task: Task, gpus: Sequence[DeviceShare]
) -> list[tuple[GpuRequest, tuple[DeviceShare, ...]]] | None:
    """The flat device list of a placement cut into the task's GPU containers by their ``nums``;
    None when the length does not match."""
    if len(gpus) != sum(r.nums for r in task.gpu):
        return None
    out, start = [], 0
    for request in task.gpu:
        out.append((request, tuple(gpus[start : start + request.nums])))
        start += request.nums
    return out


def _check_gpu_capacity(ctx: _Context) -> Iterator[Violation]:
    """Device capacity after the plan (slots, memory, cores), requests booked as written, and,
    for placements that leave the devices open, an exact search for a valid assignment."""
    yield from _gpu_bookings_match_requests(ctx)
    yield from _gpu_device_sums(ctx)
    yield from _gpu_open_assignments(ctx)


def _gpu_bookings_match_requests(ctx: _Context) -> Iterator[Violation]:
    """Each explicit assignment books what HAMi would book for the request (§3.3 steps 8–9):
    ``nums`` devices, each with ``memory_on(device memory)`` MiB and the booked cores."""
    for p in ctx.plan.placements:
        if p.gpus is None:
            continue
        task, node = ctx.members[p.pod].task, ctx.node(p.node)
        if not task.gpu:
            if p.gpus:
                ids = ", ".join(d.id for d in p.gpus)
                yield Violation(
                    "gpu-capacity",
                    (p.pod, p.node),
                    f"pod {p.pod} requests no GPU but is given {ids} on node {p.node}",
                )
            continue
        containers = _containers(task, p.gpus)
        if containers is None:
            need = sum(r.nums for r in task.gpu)
            yield Violation(
                "gpu-capacity",
                (p.pod, p.node),
                f"pod {p.pod}: {len(p.gpus)} GPU(s) given on node {p.node}, its request needs "
                f"{need}",
            )
            continue
        for request, shares in containers:
            for share in shares:
                device = node.device(share.id)
                assert device is not None  # _check_references
                memory, cores = request.memory_on(device.memory), request.booked_cores
                if (share.memory, share.cores) != (memory, cores):
                    yield Violation(
                        "gpu-capacity",
                        (p.pod, p.node, share.id),
                        f"pod {p.pod} on GPU {share.id} (node {p.node}) books {share.memory} MiB "
                        f"and {share.cores} cores; its request books {memory} MiB and {cores} "
                        "cores",
                    )


def _gpu_device_sums(ctx: _Context) -> Iterator[Violation]:
    """Σ slots ≤ count, Σ memory ≤ device memory, Σ cores ≤ device cores, per device."""
    for name, device, booked in _judged_devices(ctx):
        sums = (
            ("slots", len(booked), device.count, ""),
            ("memory", sum(x.share.memory for x in booked), device.memory, " MiB"),
            ("cores", sum(x.share.cores for x in booked), device.cores, ""),
        )
        for what, used, limit, unit in sums:
            if used > limit:
                yield Violation(
                    "gpu-capacity",
                    (name, device.id),
                    f"GPU {device.id} on node {name}: {what} {used}{unit} > {limit}{unit}",
                )


def _gpu_open_assignments(ctx: _Context) -> Iterator[Violation]:
    """Placements without ``gpus`` mean "any valid devices": per node, all such GPU pods must
    fit together beside the assignments already known."""
    open_pods: dict[str, list[str]] = {}
    for p in ctx.plan.placements:
        if p.gpus is None and ctx.members[p.pod].task.gpu:
            open_pods.setdefault(p.node, []).append(p.pod)
    bookings = _bookings(ctx)
    for name in ctx.placed_nodes:
        pods = open_pods.get(name)
        if not pods:
            continue
        node = ctx.node(name)
        usage = [_Usage.of(d, [x.share for x in bookings.get((name, d.id), [])]) for d in node.gpus]
        tasks = {pod: ctx.members[pod].task for pod in pods}
        units = [
            _Unit(pod, request, _allowed(tasks[pod], node), tasks[pod].numa_bind)
            for pod in pods
            for request in tasks[pod].gpu
        ]
        if not _assignable(node.gpus, usage, units):
            yield Violation(
                "gpu-capacity",
                (name, *pods),
                f"node {name}: no assignment of its GPUs fits {', '.join(pods)} (placed without "
                "gpus) beside the devices already booked",
            )


@dataclass(frozen=True, order=True)
class _Usage:
    """What a device carries: slots, MiB, cores, and how many exclusive and zero-core shares."""

    slots: int = 0
    memory: int = 0
    cores: int = 0
    exclusive: int = 0
    zero_cores: int = 0

    @classmethod
    def of(cls, device: GpuDevice, shares: Iterable[DeviceShare]) -> _Usage:
        usage = cls()
        for share in shares:
            usage = usage.plus(device, share.memory, share.cores)
        return usage

    def plus(self, device: GpuDevice, memory: int, cores: int) -> _Usage:
        return _Usage(
            self.slots + 1,
            self.memory + memory,
            self.cores + cores,
            self.exclusive + _is_exclusive(cores, device),
            self.zero_cores + (cores == 0),
        )

    def accepts(self, device: GpuDevice, memory: int, cores: int) -> bool:
        """Whether one more assignment keeps every §3.4 rule on this device."""
        after = self.plus(device, memory, cores)
        if after.slots > device.count or after.memory > device.memory:
            return False
        if after.cores > device.cores:
            return False
        if after.exclusive and after.slots > 1:
            return False
        return not (after.zero_cores and device.cores and after.cores == device.cores)


@dataclass(frozen=True)
class _Unit:
    """One GPU container still to be given devices."""

    pod: str
    request: GpuRequest
    allowed: frozenset[int]
    """Indexes (in ``node.gpus``) of the devices its filters allow."""
    numa_bind: bool


def _allowed(task: Task, node: Node) -> frozenset[int]:
    return frozenset(i for i, d in enumerate(node.gpus) if _device_refusal(task, node, d) is None)


def _assignable(devices: Sequence[GpuDevice], usage: list[_Usage], units: list[_Unit]) -> bool:
    """Exact backtracking: can every unit get ``nums`` distinct allowed devices at once?

    Failed states are remembered in a canonical form (devices that look alike to every unit
    are interchangeable), so identical pods and identical devices are not searched twice.
    """
    units = sorted(units, key=lambda u: (-u.request.nums, -u.request.booked_cores))
    looks = [
        (d.memory, d.cores, d.count, d.numa, tuple(i in u.allowed for u in units))
        for i, d in enumerate(devices)
    ]
    failed: set[tuple[int, tuple]] = set()

    def search(k: int, state: list[_Usage]) -> bool:
        if k == len(units):
            return True
        key = (k, tuple(sorted(zip(looks, state, strict=True))))
        if key in failed:
            return False
        unit = units[k]
        for combo in itertools.combinations(sorted(unit.allowed), unit.request.nums):
            if unit.numa_bind and len({devices[i].numa for i in combo}) > 1:
                continue
            after = list(state)
            for i in combo:
                memory = unit.request.memory_on(devices[i].memory)
                cores = unit.request.booked_cores
                if not state[i].accepts(devices[i], memory, cores):
                    break
                after[i] = state[i].plus(devices[i], memory, cores)
            else:
                if search(k + 1, after):
                    return True
        failed.add(key)
        return False

    return search(0, usage)


def _check_gpu_distinct(ctx: _Context) -> Iterator[Violation]:
    """The devices of one container are distinct (§3.4, pitfall 11); MIG is not modelled."""
    for p in ctx.plan.placements:
        task = ctx.members[p.pod].task
        containers = _containers(task, p.gpus) if p.gpus and task.gpu else None
        for _, shares in containers or ():
            ids = [s.id for s in shares]
            for repeated in sorted({i for i in ids if ids.count(i) > 1}):
                yield Violation(
                    "gpu-distinct",
                    (p.pod, repeated),
                    f"pod {p.pod}: GPU {repeated} is given {ids.count(repeated)} times to one "
                    "container",
                )


def _check_gpu_exclusive(ctx: _Context) -> Iterator[Violation]:
    """A cores-100 assignment on a 100-core device is alone on it, and a zero-core assignment
    is not on a device whose other assignments use all its cores (§3.4). One violation per
    device, for devices that receive a new explicit assignment."""
    for name, device, booked in _judged_devices(ctx):
        holders = [x.pod for x in booked if _is_exclusive(x.share.cores, device)]
        others = [x.pod for x in booked if x.pod not in holders[:1]]
        total = sum(x.share.cores for x in booked)
        zero = [x.pod for x in booked if x.share.cores == 0]
        if holders and len(booked) > 1:
            yield Violation(
                "gpu-exclusive",
                (name, device.id, *dict.fromkeys(x.pod for x in booked)),
                f"GPU {device.id} on node {name}: pod {holders[0]} holds it exclusively "
                f"(cores {FULL_CORES}) but it also carries {', '.join(others)}",
            )
        elif zero and device.cores and total == device.cores:
            yield Violation(
                "gpu-exclusive",
                (name, device.id, *zero),
                f"GPU {device.id} on node {name}: pod {zero[0]} books 0 cores beside "
                f"assignments that use all {device.cores} cores",
            )


def _device_refusal(task: Task, node: Node, device: GpuDevice) -> str | None:
    """Why the pod may not use the device (§3.3 steps 1–5), or None."""
    if not device.health:
        return "the device is unhealthy"
    if device.id in node.cordoned_gpus:
        return f"the device is cordoned ({DEVICE_CORDON})"
    if "NVIDIA" not in device.type.upper():
        return f'type "{device.type}" is not an NVIDIA GPU'
    if task.gpu_filter is not None and not task.gpu_filter.allows(device):
        return "the pod's GPU type, UUID or mode annotations exclude it"
    return None


def _check_gpu_filter(ctx: _Context) -> Iterator[Violation]:
    """New explicit assignments go to healthy, uncordoned NVIDIA devices the pod's annotations
    allow, on one NUMA node per container when ``nvidia.com/numa-bind`` is true."""
    for p in ctx.plan.placements:
        task, node = ctx.members[p.pod].task, ctx.node(p.node)
        if not p.gpus or not task.gpu:
            continue
        for share in p.gpus:
            device = node.device(share.id)
            assert device is not None  # _check_references
            reason = _device_refusal(task, node, device)
            if reason is not None:
                yield Violation(
                    "gpu-filter",
                    (p.pod, p.node, share.id),
                    f"pod {p.pod} on GPU {share.id} (node {p.node}): {reason}",
                )
        if task.numa_bind:
            for _, shares in _containers(task, p.gpus) or ():
                numas = sorted({d.numa for s in shares if (d := node.device(s.id)) is not None})
                if len(numas) > 1:
                    yield Violation(
                        "gpu-filter",
                        (p.pod, p.node),
                        f"pod {p.pod} has {NUMA_BIND}=true but one container's GPUs "
                        f"span NUMA nodes {', '.join(map(str, numas))} on node {p.node}",
                    )


# -- node predicates ----------------------------------------------------------------------


def _check_selector(ctx: _Context) -> Iterator[Violation]:
    """nodeSelector labels and required node affinity hold on the node of each new placement.

    Affinity terms are ORed; as in Kubernetes, a term without expressions matches no node.
    """
    for p in ctx.plan.placements:
        task, labels = ctx.members[p.pod].task, ctx.node(p.node).labels
        wrong = [f"{k}={v}" for k, v in task.node_selector.items() if labels.get(k) != v]
        if wrong:
            yield Violation(
                "selector",
                (p.pod, p.node),
                f"pod {p.pod} on node {p.node}: nodeSelector {', '.join(wrong)} does not match",
            )
        terms = task.required_affinity
        if terms and not any(t.match_expressions and t.matches(labels) for t in terms):
            yield Violation(
                "selector",
                (p.pod, p.node),
                f"pod {p.pod} on node {p.node}: no required node affinity term "
                f"(of {len(terms)}) matches",
            )


def _check_taint(ctx: _Context) -> Iterator[Violation]:
    """NoSchedule and NoExecute taints are tolerated, and an unschedulable node takes a new pod
    only if it tolerates ``node.kubernetes.io/unschedulable:NoSchedule``."""
    for p in ctx.plan.placements:
        tolerations, node = ctx.members[p.pod].task.tolerations, ctx.node(p.node)
        hard = [(t.key, t.value, t.effect) for t in node.taints if t.effect != "PreferNoSchedule"]
        if node.unschedulable:
            hard.append((UNSCHEDULABLE_TAINT, "", "NoSchedule"))
        untolerated = [
            f"{k}={v}:{e}" if v else f"{k}:{e}"
            for k, v, e in hard
            if not any(t.tolerates(k, v, e) for t in tolerations)
        ]
        if untolerated:
            yield Violation(
                "taint",
                (p.pod, p.node),
                f"pod {p.pod} on node {p.node}: untolerated taint {', '.join(untolerated)}",
            )


# -- jobs ---------------------------------------------------------------------------------


def _check_gang(ctx: _Context) -> Iterator[Violation]:
    """A job the plan places pods of has ≥ minAvailable ready pods, and per role ≥ its
    minTaskMember (not checked when minAvailable < Σ minTaskMember, as Volcano does).

    Ready = bound after the plan, plus pending BestEffort pods, which gang counts as ready
    (volcano-scheduler.md §3, §9 item 17).
    """
    piped = {q.pod for q in ctx.plan.pipelined}
    for job in ctx.placed_jobs:
        ready = [
            ctx.members[p.key].task
            for p in job.pods
            if p.key in ctx.bound
            or (not p.running and ctx.members[p.key].task.best_effort and p.key not in piped)
        ]
        if len(ready) < job.min_available:
            yield Violation(
                "gang",
                (job.key,),
                f"job {job.key}: {len(ready)} pods ready < minAvailable {job.min_available}",
            )
        if job.min_available < sum(job.min_task_member.values()):
            continue
        for role, minimum in job.min_task_member.items():
            count = sum(1 for t in ready if t.role == role)
            if count < minimum:
                yield Violation(
                    "gang",
                    (job.key,),
                    f"job {job.key}: role {role or '(none)'} has {count} pods ready < "
                    f"minTaskMember {minimum}",
                )


def _check_topology_hard(ctx: _Context) -> Iterator[Violation]:
    """With ``network-topology-aware`` configured, a hard job (with a tier) that gets placements
    has all its bound pods inside one HyperNode of tier ≤ highestTierAllowed. Soft mode, and
    hard mode without the plugin or without a tier, constrain nothing (§4.2, §9 item 6)."""
    topology = ctx.instance.topology
    for job in ctx.placed_jobs:
        limit = ctx.instance.hard_topology_limit(job)
        if limit is None:
            continue
        nodes = sorted({ctx.bound[k].node for k in ctx.bound_of_job(job)})
        tier = topology.lca_tier(nodes)
        if tier > limit:
            common = topology.lowest_common(nodes)
            yield Violation(
                "topology-hard",
                (job.key, *nodes),
                f"job {job.key}: pods span {', '.join(nodes)} (lowest common HyperNode "
                f"{common}, tier {tier}) > highestTierAllowed {limit}",
            )


# -- queues -------------------------------------------------------------------------------


def _real_capability(instance: Instance) -> Mapping[str, Resources] | None:
    """capacity's realCapability per queue (proportion uses the same formula), or None when no
    quota plugin is configured."""
    conf = instance.scheduler
    if not (conf.has("capacity") or conf.has("proportion")):
        return None
    tree, total = instance.queue_tree, instance.total_allocatable
    if conf.hierarchy():
        attrs = capacity_hierarchical(tree, total)
    else:
        attrs = capacity_flat(tree, total, [j.queue for j in instance.jobs])
    return {name: a.real_capability for name, a in attrs.items()}


def _queue_jobs(ctx: _Context, queue: str) -> list[Job]:
    """Jobs whose quota ``queue`` carries: its subtree in hierarchical mode, itself otherwise."""
    if not ctx.instance.scheduler.hierarchy():
        return [j for j in ctx.instance.jobs if j.queue == queue]
    tree = ctx.instance.queue_tree
    return [j for j in ctx.instance.jobs if queue in tree.path(j.queue)]


def _check_queue_capability(ctx: _Context) -> Iterator[Violation]:
    """With capacity or proportion: a queue that gets new pods stays within its realCapability
    (and so do its ancestors, in hierarchical mode) on every resource a newly placed pod of it
    requests, strictly, a resource missing from realCapability counting as 0, ``pods`` ignored
    (Volcano ``Allocatable``, §5.4). A queue that is not Open accepts no new pods."""
    real = _real_capability(ctx.instance)
    if real is None:
        return
    tree = ctx.instance.queue_tree
    new_by_queue: dict[str, list[str]] = {}
    for p in ctx.plan.placements:
        new_by_queue.setdefault(ctx.members[p.pod].job.queue, []).append(p.pod)
    for queue, pods in new_by_queue.items():
        if not tree.queue(queue).is_open:
            yield Violation(
                "queue-capability",
                (queue, *pods),
                f"queue {queue} is {tree.queue(queue).state}: it accepts no new pods "
                f"({', '.join(pods)})",
            )
    judged = set(new_by_queue)
    if ctx.instance.scheduler.hierarchy():
        judged |= {a for q in new_by_queue for a in tree.ancestors(q)}
    for queue in (q for q in tree.names if q in judged):
        jobs = _queue_jobs(ctx, queue)
        keys = {j.key for j in jobs}
        new = [p.pod for p in ctx.plan.placements if ctx.members[p.pod].job.key in keys]
        request = sum((ctx.resreq(pod) for pod in new), Resources())
        allocated = sum((ctx.resreq(k) for j in jobs for k in ctx.bound_of_job(j)), Resources())
        for resource in sorted(allocated.exceeding(real[queue], request)):
            yield Violation(
                "queue-capability",
                (queue,),
                f"queue {queue}: {resource} {_amount(resource, allocated[resource])} > "
                f"realCapability {_amount(resource, real[queue].get(resource, 0))}",
            )


def _check_queue_leaf(ctx: _Context) -> Iterator[Violation]:
    """In hierarchical capacity only leaf queues' jobs get pods (§5.3, §5.4)."""
    if not ctx.instance.scheduler.hierarchy():
        return
    tree = ctx.instance.queue_tree
    for job in ctx.placed_jobs:
        if not tree.is_leaf(job.queue):
            yield Violation(
                "queue-leaf",
                (job.key, job.queue),
                f"job {job.key} gets pods but its queue {job.queue} is not a leaf (children: "
                f"{', '.join(tree.children(job.queue))})",
            )


# -- TDM ----------------------------------------------------------------------------------


def _tdm_placements(ctx: _Context) -> Iterator[tuple[Placement, str]]:
    """New placements on revocable nodes with their zone, when the tdm plugin is configured."""
    if ctx.instance.tdm is None:
        return
    for p in ctx.plan.placements:
        zone = node_zone(ctx.node(p.node).labels)
        if zone:
            yield p, zone


def _check_tdm_window(ctx: _Context) -> Iterator[Violation]:
    """A revocable node takes new pods only while its zone's window is active at ``now``
    (Volcano's own reading of the window, §6)."""
    tdm, now = ctx.instance.tdm, ctx.instance.now
    for p, zone in _tdm_placements(ctx):
        assert tdm is not None
        if not tdm.zone_active(zone, now, ctx.instance.tz):
            window = tdm.zones[zone].text if zone in tdm.zones else "not configured"
            yield Violation(
                "tdm-window",
                (p.pod, p.node, zone),
                f"pod {p.pod} on node {p.node}: revocable zone {zone} ({window}) is not active "
                f"at {now.isoformat()}",
            )


def _check_tdm_revocable_only(ctx: _Context) -> Iterator[Violation]:
    """Only revocable pods (zone annotation ``*``, or ``volcano.sh/preemptable`` true) go to
    revocable nodes (§6 predicate)."""
    for p, zone in _tdm_placements(ctx):
        if pod_revocable_zone(ctx.members[p.pod].task.annotations) != "*":
            yield Violation(
                "tdm-revocable-only",
                (p.pod, p.node, zone),
                f"pod {p.pod} on node {p.node} (revocable zone {zone}) is not revocable",
            )


# -- running pods and evictions -----------------------------------------------------------


def _check_running_kept(ctx: _Context) -> Iterator[Violation]:
    """The plan is consistent with what runs: a running pod is never placed (it would move,
    even when the plan also evicts it), a pod is placed or evicted at most once, an eviction
    names a running pod and the node it runs on, and a pipelined pod is pending and unplaced."""
    placed_once: set[str] = set()
    for p in ctx.plan.placements:
        pod = ctx.members[p.pod].pod
        if p.pod in placed_once:
            yield Violation("running-kept", (p.pod,), f"pod {p.pod} is placed twice")
        placed_once.add(p.pod)
        if pod.running and pod.node == p.node:
            yield Violation(
                "running-kept",
                (p.pod, p.node),
                f"pod {p.pod} already runs on node {p.node}; only pending pods are placed",
            )
        elif pod.running:
            yield Violation(
                "running-kept",
                (p.pod, p.node),
                f"pod {p.pod} runs on node {pod.node}; placing it on node {p.node} would move it",
            )
    evicted_once: set[str] = set()
    for e in ctx.plan.evictions:
        pod = ctx.members[e.pod].pod
        if e.pod in evicted_once:
            yield Violation("running-kept", (e.pod,), f"pod {e.pod} is evicted twice")
        evicted_once.add(e.pod)
        if not pod.running:
            yield Violation(
                "running-kept", (e.pod,), f"pod {e.pod} is evicted but it is not running"
            )
        elif pod.node != e.node:
            yield Violation(
                "running-kept",
                (e.pod, e.node),
                f"pod {e.pod} is evicted from node {e.node} but it runs on node {pod.node}",
            )
    for q in ctx.plan.pipelined:
        pod = ctx.members[q.pod].pod
        if pod.running:
            yield Violation(
                "running-kept", (q.pod,), f"pod {q.pod} is pipelined but it is already running"
            )
        elif q.pod in placed_once:
            yield Violation("running-kept", (q.pod,), f"pod {q.pod} is both placed and pipelined")


def _check_eviction_allowed(ctx: _Context) -> Iterator[Violation]:
    """Each eviction is one Volcano could make, as far as the victim alone decides (§6, §8):
    the pod is preemptable and not protected by conformance, an evicting action is configured
    (or TDM evicts it from a closed zone), the job's disruption budget holds, the queue is
    reclaimable for a reclaim, and with capacity the queue keeps its guarantee."""
    for e in ctx.valid_evictions:
        yield from _victim_problems(ctx, e)
    yield from _budget_problems(ctx)
    yield from _guarantee_problems(ctx)


def _victim_problems(ctx: _Context, e: Eviction) -> Iterator[Violation]:
    member = ctx.members[e.pod]
    task, job = member.task, member.job
    instance = ctx.instance

    def bad(message: str) -> Violation:
        return Violation("eviction-allowed", (e.pod, e.node), f"pod {e.pod}: {message}")

    if not pod_preemptable(task.annotations, task.labels):
        yield bad(f"it is not preemptable ({PREEMPTABLE})")
    if instance.scheduler.has("conformance"):
        if member.pod.namespace == SYSTEM_NAMESPACE:
            yield bad(f"conformance protects pods of namespace {SYSTEM_NAMESPACE}")
        if job.priority_class in CRITICAL_PRIORITY_CLASSES:
            yield bad(f"conformance protects priority class {job.priority_class}")
    if not any(a in instance.scheduler.actions for a in EVICTING_ACTIONS) and not _tdm_may_evict(
        ctx, e
    ):
        yield bad(
            "no preempt or reclaim action is configured, and it is not a TDM eviction from a "
            "closed revocable zone"
        )
    if e.reason == "reclaim" and not ctx.instance.queue_tree.queue(job.queue).reclaimable:
        yield bad(f"reclaimed from queue {job.queue}, which is not reclaimable")


def _tdm_may_evict(ctx: _Context, e: Eviction) -> bool:
    """TDM evicts without preempt/reclaim, from revocable zones whose window is closed."""
    tdm = ctx.instance.tdm
    zone = node_zone(ctx.node(e.node).labels)
    return (
        e.reason == TDM_REASON
        and tdm is not None
        and bool(zone)
        and not tdm.zone_active(zone, ctx.instance.now, ctx.instance.tz)
    )


def _has_budget(job: Job) -> bool:
    return any(job.annotations.get(k) for k in (*MAX_UNAVAILABLE_KEYS, *MIN_AVAILABLE_KEYS))


def _budget_problems(ctx: _Context) -> Iterator[Violation]:
    """Per job, evictions ≤ Volcano's ``getMaxPodEvictNum`` when TDM evicts or the PodGroup
    carries a disruption budget."""
    by_job: dict[str, list[Eviction]] = {}
    for e in ctx.valid_evictions:
        by_job.setdefault(ctx.members[e.pod].job.key, []).append(e)
    for key, evictions in by_job.items():
        job = ctx.instance.job_by_key[key]
        if not (_has_budget(job) or any(e.reason == TDM_REASON for e in evictions)):
            continue
        running = sum(1 for p in job.pods if p.running)
        allowed = job_eviction_budget(job.annotations, job.replicas, running, 0)
        if len(evictions) > allowed:
            yield Violation(
                "eviction-allowed",
                (key, *(e.pod for e in evictions)),
                f"job {key}: {len(evictions)} pods evicted > disruption budget {allowed}",
            )


_TIER_RECLAIMERS = ("gang", "conformance")
"""Plugins whose ``Reclaimable`` answer, when non-empty in an earlier tier, is final (§8.2)."""


def _capacity_decides_reclaim(conf: SchedulerConf) -> bool:
    """Volcano walks ``Reclaimable`` tier by tier and a non-empty tier answer is final (spec
    §8.2, §9.4): with gang or conformance reclaiming in a tier before capacity's, capacity's
    guarantee check may never be consulted, so Volcano itself can evict below a guarantee."""
    for tier in conf.tiers:
        names = {option.name: option for option in tier}
        if "capacity" in names:
            return True
        if any(n in names and names[n].enabled("Reclaimable") for n in _TIER_RECLAIMERS):
            return False
    return False


def _guarantee_problems(ctx: _Context) -> Iterator[Violation]:
    """With capacity deciding reclaim, a queue that loses pods keeps Σ Resreq of its bound pods
    ≥ its guarantee on every resource the guarantee names (capacity ``Reclaimable``, §5.4
    step 2)."""
    if not _capacity_decides_reclaim(ctx.instance.scheduler):
        return
    tree = ctx.instance.queue_tree
    losing = {
        ctx.members[e.pod].job.queue
        for e in ctx.valid_evictions
        if e.reason not in NO_GUARANTEE_REASONS
    }
    for queue in (q for q in tree.names if q in losing):
        guarantee = tree.queue(queue).guarantee
        jobs = [j for j in ctx.instance.jobs if j.queue == queue]
        allocated = sum((ctx.resreq(k) for j in jobs for k in ctx.bound_of_job(j)), Resources())
        for resource, amount in guarantee.items():
            if allocated.get(resource, 0) < amount:
                yield Violation(
                    "eviction-allowed",
                    (queue,),
                    f"queue {queue}: {resource} {_amount(resource, allocated.get(resource, 0))} "
                    f"left after evictions < guarantee {_amount(resource, amount)}",
                )


_CHECKS: tuple[Callable[[_Context], Iterator[Violation]], ...] = (
    _check_node_capacity,
    _check_pod_count,
    _check_gpu_capacity,
    _check_gpu_distinct,
    _check_gpu_exclusive,
    _check_gpu_filter,
    _check_selector,
    _check_taint,
    _check_gang,
    _check_topology_hard,
    _check_queue_capability,
    _check_queue_leaf,
    _check_tdm_window,
    _check_tdm_revocable_only,
    _check_running_kept,
    _check_eviction_allowed,
)
