"""Where a group of pods may go at all: the static predicates, evaluated once per class.

Node selectors and required node affinity (``selector``), taints and tolerations (``taint``),
TDM's revocable nodes and their windows (``tdm-revocable-only``, ``tdm-window``) and the GPU
type, UUID and mode filters (``gpu-filter``) depend on nothing the plan decides, so they are
not constraints of the model: they decide which variables exist. A class shares every node
attribute these rules read, so its first node answers for all of them.

On a node that counts ``nvidia.com/gpu`` without devices (the plain NVIDIA device plugin) a
whole-GPU group has no device choice: its GPUs are a scalar of the node's resources.

For each GPU container the same pass decides, per device class, whether the container takes
its devices *whole* there (its memory is the whole card, or it is exclusive on a 100-core
card): then the model only counts such devices, and nothing else may share them.
"""

from __future__ import annotations

from collections.abc import Sequence

from models.cluster import Node
from models.gpu import GpuFilter, GpuRequest, exclusive_on
from models.instance import Instance
from models.tdm import node_zone, pod_revocable_zone, window_closes_at

from .classes import DeviceClass, NodeClass
from .records import Candidates, Group

NO_FILTER = GpuFilter()


def device_pool(node: Node) -> list[int]:
    """HAMi's device checks that depend on neither the pod nor what else runs (§3.3)."""
    cordoned = node.cordoned_gpus
    return [
        d
        for d, dev in enumerate(node.gpus)
        if dev.health and "NVIDIA" in dev.type.upper() and dev.id not in cordoned
    ]


def tdm_ok(instance: Instance, group: Group, node: Node, lookahead: bool) -> bool:
    """Revocable nodes only for revocable pods, only inside the zone's window at ``now``, and
    with the look-ahead only for jobs that end before it closes."""
    tdm = instance.tdm
    zone = node_zone(node.labels)
    if not zone or tdm is None:
        return True
    if pod_revocable_zone(group.task.annotations) != "*":
        return False
    if not tdm.zone_active(zone, instance.now, instance.tz):
        return False
    duration = group.job.duration
    if lookahead and duration is not None:
        window = tdm.zones.get(zone)
        closes = window_closes_at(window, instance.now, instance.tz) if window else None
        if closes is not None and instance.now + duration > closes:
            return False
    return True


def takes_whole(request: GpuRequest, dc: DeviceClass) -> bool:
    """The container leaves nothing of such a device to anyone else: all its memory, or
    exclusive use of a 100-core device (the exclusive rule, hami-gpu §3.3 step 13)."""
    dev = dc.device
    full_memory = request.memory_on(dev.memory) >= dev.memory
    return full_memory or exclusive_on(request.booked_cores, dev)


def _could_use(request: GpuRequest, dc: DeviceClass, whole: bool) -> bool:
    """Whether a share of this kind could ever fit one device of ``dc`` (all evictable shares
    evicted): the bound below which a device class is not offered to the container."""
    dev = dc.device
    memory = request.memory_on(dev.memory)
    cores = request.booked_cores
    if whole:
        return (
            not dc.fixed
            and dc.evictable_shares <= 1
            and memory <= dev.memory
            and (cores <= dev.cores)
        )
    if dc.free_slots < 1 or memory > dc.free_memory or cores > dc.free_cores:
        return False
    return not (cores == 0 and dev.cores > 0 and dc.free_cores == 0)


def _numa_fits(widest: int, dcs: Sequence[DeviceClass]) -> bool:
    per_numa: dict[int, int] = {}
    for dc in dcs:
        per_numa[dc.device.numa] = per_numa.get(dc.device.numa, 0) + dc.per_node
    return max(per_numa.values(), default=0) >= widest


def _gpu_choice(group: Group, cls: NodeClass) -> list[list[tuple[int, bool]]] | None:
    """Per container, the usable device classes and whether it takes them whole; None when
    the class cannot hold one pod of the group by its devices."""
    task = group.task
    flt = task.gpu_filter if task.gpu_filter not in (None, NO_FILTER) else None
    allowed = [dc for dc in cls.devices if dc.pool and (flt is None or flt.allows(dc.device))]
    out: list[list[tuple[int, bool]]] = []
    for request in group.gpus:
        # HAMi's mutex policy: each device the pod gets is unused, as if it took it whole.
        row = [(dc, task.gpu_mutex or takes_whole(request, dc)) for dc in allowed]
        fits = [(dc, whole) for dc, whole in row if _could_use(request, dc, whole)]
        if sum(dc.per_node for dc, _ in fits) < request.nums:
            return None
        if (
            group.numa_bind
            and request.nums > 1
            and not _numa_fits(request.nums, [d for d, _ in fits])
        ):
            return None
        out.append([(dc.index, whole) for dc, whole in fits])
    return out


def candidate_key(group: Group, lookahead: bool) -> tuple[object, ...]:
    """Everything the static predicates read of a group: groups with equal keys have the
    same candidates."""
    task = group.task
    return (
        tuple(sorted(task.node_selector.items())),
        repr(task.required_affinity),
        task.tolerations,
        pod_revocable_zone(task.annotations),
        group.job.duration if lookahead else None,
        task.gpu,
        repr(task.gpu_filter),
        group.numa_bind,
        task.gpu_mutex,
    )


def find_candidates(
    instance: Instance, group: Group, classes: Sequence[NodeClass], lookahead: bool
) -> Candidates:
    out = Candidates()
    for cls in classes:
        node = instance.nodes[cls.rep]
        task = group.task
        if not task.node_affinity_matches(node.labels) or not task.tolerates_all(
            node.scheduling_taints
        ):
            continue
        if not tdm_ok(instance, group, node, lookahead):
            continue
        if group.gpus and node.plain_gpus:
            if not all(request.whole for request in group.gpus):
                continue
        elif group.gpus:
            choice = _gpu_choice(group, cls)
            if choice is None:
                continue
            out.containers[cls.index] = choice
        out.classes.append(cls.index)
    return out
