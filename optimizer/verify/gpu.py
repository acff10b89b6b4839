"""GPU device rules (hami-gpu.md §3.4): capacity, distinct devices per container, exclusive
use, and the devices a pod may use at all.

On a node that counts ``nvidia.com/gpu`` without devices (the plain NVIDIA device plugin) the
count is checked with the node's other resources; only whole-GPU requests may go there.

A placement may leave its devices open ("any valid assignment on this node"); whether one
exists is decided by the exact search of ``optimizer.verify.assignment``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from models.cluster import Node
from models.gpu import FULL_CORES, PLAIN_GPU_SHARE, GpuDevice, GpuRequest, exclusive_on
from models.vocabulary import (
    DEVICE_CORDON,
    GPU_SCHEDULER_POLICY,
    MUTEX_POLICY,
    NUMA_BIND,
)
from models.workload import DeviceShare, Task

from .assignment import Unit, Usage, assignable
from .context import Context, Violation


@dataclass(frozen=True)
class _Booking:
    """One container-device assignment on a device: one time-slice slot."""

    pod: str
    share: DeviceShare
    new: bool


def _bookings(ctx: Context) -> dict[tuple[str, str], list[_Booking]]:
    """(node, device id) → every assignment on it after the plan, from pods with known devices."""
    out: dict[tuple[str, str], list[_Booking]] = {}
    for b in ctx.held.values():
        for share in b.gpus or ():
            out.setdefault((b.node, share.id), []).append(_Booking(b.pod, share, not b.running))
    return out


def _judged_devices(ctx: Context) -> Iterator[tuple[str, GpuDevice, list[_Booking]]]:
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


def check_gpu_capacity(ctx: Context) -> Iterator[Violation]:
    """Device capacity after the plan (slots, memory, cores), requests booked as written, and,
    for placements that leave the devices open, an exact search for a valid assignment."""
    yield from _gpu_bookings_match_requests(ctx)
    yield from _gpu_device_sums(ctx)
    yield from _gpu_open_assignments(ctx)


def _gpu_bookings_match_requests(ctx: Context) -> Iterator[Violation]:
    """Each explicit assignment books what HAMi would book for the request (§3.3 steps 8–9):
    ``nums`` devices, each with ``memory_on(device memory)`` MiB and the booked cores."""
    for p in ctx.plan.placements:
        if p.gpus is None:
            continue
        task, node = ctx.members[p.pod].task, ctx.node(p.node)
        if task.gpu and node.plain_gpus:
            if not all(request.whole for request in task.gpu):
                yield Violation(
                    "gpu-capacity",
                    (p.pod, p.node),
                    f"pod {p.pod} requests a share of a GPU on node {p.node}: {PLAIN_GPU_SHARE}",
                )
            continue
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
                assert device is not None  # check_references
                memory, cores = request.memory_on(device.memory), request.booked_cores
                if (share.memory, share.cores) != (memory, cores):
                    yield Violation(
                        "gpu-capacity",
                        (p.pod, p.node, share.id),
                        f"pod {p.pod} on GPU {share.id} (node {p.node}) books {share.memory} MiB "
                        f"and {share.cores} cores; its request books {memory} MiB and {cores} "
                        "cores",
                    )


def _gpu_device_sums(ctx: Context) -> Iterator[Violation]:
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


def _gpu_open_assignments(ctx: Context) -> Iterator[Violation]:
    """Placements without ``gpus`` mean "any valid devices": per node, all such GPU pods must
    fit together beside the assignments already known."""
    open_pods: dict[str, list[str]] = {}
    for p in ctx.plan.placements:
        if p.gpus is None and ctx.members[p.pod].task.gpu and not ctx.node(p.node).plain_gpus:
            open_pods.setdefault(p.node, []).append(p.pod)
    bookings = _bookings(ctx)
    for name in ctx.placed_nodes:
        pods = open_pods.get(name)
        if not pods:
            continue
        node = ctx.node(name)
        usage = [Usage.of(d, [x.share for x in bookings.get((name, d.id), [])]) for d in node.gpus]
        tasks = {pod: ctx.members[pod].task for pod in pods}
        units = [
            Unit(
                pod,
                request,
                _allowed(tasks[pod], node),
                tasks[pod].numa_bind,
                tasks[pod].gpu_mutex,
            )
            for pod in pods
            for request in tasks[pod].gpu
        ]
        if not assignable(node.gpus, usage, units):
            yield Violation(
                "gpu-capacity",
                (name, *pods),
                f"node {name}: no assignment of its GPUs fits {', '.join(pods)} (placed without "
                "gpus) beside the devices already booked",
            )


def _allowed(task: Task, node: Node) -> frozenset[int]:
    return frozenset(i for i, d in enumerate(node.gpus) if _device_refusal(task, node, d) is None)


def check_gpu_distinct(ctx: Context) -> Iterator[Violation]:
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


def check_gpu_exclusive(ctx: Context) -> Iterator[Violation]:
    """A cores-100 assignment on a 100-core device is alone on it, and a zero-core assignment
    is not on a device whose other assignments use all its cores (§3.4). One violation per
    device, for devices that receive a new explicit assignment. Then HAMi's mutex policy."""
    yield from _mutex_breaches(ctx)
    for name, device, booked in _judged_devices(ctx):
        holders = [x.pod for x in booked if exclusive_on(x.share.cores, device)]
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


def _mutex_breaches(ctx: Context) -> Iterator[Violation]:
    """HAMi's ``mutex`` GPU policy (hami-gpu.md §3.3 step 7): a pod with it gets only devices
    unused when it is placed. Plans are unordered, so a new mutex assignment breaks the rule
    only where no order could satisfy it: on a device a running pod already uses, or beside
    another new assignment of a mutex pod (a plain pod may come after it)."""
    for name, device, booked in _judged_devices(ctx):
        mutex = [x for x in booked if x.new and ctx.members[x.pod].task.gpu_mutex]
        running = [x.pod for x in booked if not x.new]
        if mutex and (running or len(mutex) > 1):
            first = mutex[0].pod
            others = running or [x.pod for x in mutex[1:]]
            yield Violation(
                "gpu-exclusive",
                (name, device.id, *dict.fromkeys(x.pod for x in booked)),
                f"GPU {device.id} on node {name}: pod {first} has the {MUTEX_POLICY} GPU policy "
                f"({GPU_SCHEDULER_POLICY}) but the device is also used by {', '.join(others)}",
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


def check_gpu_filter(ctx: Context) -> Iterator[Violation]:
    """New explicit assignments go to healthy, uncordoned NVIDIA devices the pod's annotations
    allow, on one NUMA node per container when ``nvidia.com/numa-bind`` is true."""
    for p in ctx.plan.placements:
        task, node = ctx.members[p.pod].task, ctx.node(p.node)
        if not p.gpus or not task.gpu:
            continue
        for share in p.gpus:
            device = node.device(share.id)
            assert device is not None  # check_references
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
