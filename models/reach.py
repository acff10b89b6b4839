"""Requests no node of the cluster can ever hold, found before any engine runs.

A pod that asks for 9 GPUs on a cluster of 8-GPU nodes, or for more GPU memory than any card
has, stays pending whatever the scheduler does; the user should hear it from ``validate``, with
the request and the largest offer, rather than read it off an empty plan. Each finding is a
warning (Volcano accepts such a job and leaves it pending). Only rules that need no decision
are used: a node's allocatable, its devices, and the pod's GPU type and mode filters (device
UUID lists are left out: they name devices, not kinds of device).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .cluster import Node
from .errors import Diagnostics, obj_name
from .gpu import GpuDevice, GpuFilter, GpuRequest
from .resources import PODS, format_amount
from .workload import Job, Task


def warn_unplaceable(jobs: Sequence[Job], nodes: Sequence[Node], diag: Diagnostics) -> None:
    """Warn, once per task, of each request that exceeds every node's offer."""
    if not nodes:
        return
    largest: dict[str, int] = {}
    for node in nodes:
        for name, amount in node.allocatable.items():
            largest[name] = max(largest.get(name, 0), amount)
    shapes = {_gpu_shape(node) for node in nodes if node.gpus}
    plain = max((n.allocatable.get("nvidia.com/gpu") for n in nodes if n.plain_gpus), default=0)
    for job in jobs:
        obj = obj_name("Job", job.name, job.namespace)
        for i, task in enumerate(job.tasks):
            field = f"tasks[{i}].resources"
            for name, amount in task.init_resources.items():
                if name == PODS or amount <= largest.get(name, 0):
                    continue
                if name == "nvidia.com/gpu" and task.gpu:
                    continue
                offer = format_amount(name, largest.get(name, 0))
                diag.warn(
                    obj,
                    f"{field}.{name}",
                    f"each pod asks for {format_amount(name, amount)} {name}, and the largest "
                    f"node offers {offer}: the task can never be placed",
                )
            for request in task.gpu:
                reason = _gpu_unreachable(task, request, shapes, plain)
                if reason is not None:
                    diag.warn(obj, field, reason)


_Shape = tuple[tuple[str, int, str, bool], ...]


def _gpu_shape(node: Node) -> _Shape:
    cordoned = node.cordoned_gpus
    return tuple(
        sorted(
            (d.type, d.memory, d.mode, d.health and d.id not in cordoned and d.count > 0)
            for d in node.gpus
        )
    )


def _gpu_unreachable(
    task: Task, request: GpuRequest, shapes: set[_Shape], plain: int
) -> str | None:
    """Why no node can take ``request``, naming the largest offer; None when one can."""
    if request.whole and request.nums * 1000 <= plain:
        return None
    flt = replace(task.gpu_filter or GpuFilter(), use_uuids=(), nouse_uuids=())
    most_devices = most_memory = 0
    for shape in shapes:
        usable = [
            GpuDevice("", 0, t, memory, mode=mode)
            for t, memory, mode, ok in shape
            if ok and "NVIDIA" in t.upper() and flt.allows(GpuDevice("", 0, t, memory, mode=mode))
        ]
        big_enough = [d for d in usable if request.memory_on(d.memory) <= d.memory]
        if len(big_enough) >= request.nums:
            return None
        most_devices = max(most_devices, len(usable))
        most_memory = max([most_memory, *(d.memory for d in usable)])
    if not shapes and not plain:
        return "requests GPUs, and no node has any: the task can never be placed"
    if most_devices == 0 and not plain:
        return (
            "requests GPUs of a type or mode no node has (its GPU filter allows no device): "
            "the task can never be placed"
        )
    if request.memory and request.memory > most_memory and most_devices:
        return (
            f"each GPU asks for {request.memory} MiB, and the largest card it may use has "
            f"{most_memory} MiB: the task can never be placed"
        )
    offer = max(most_devices, plain // 1000)
    return (
        f"each pod asks for {request.nums} GPUs, and the most one node offers is {offer}: "
        "the task can never be placed"
    )
