"""The GPU devices a running pod holds when nothing says which.

A bound pod that asks for GPUs on a node with a device inventory normally names its devices
(HAMi's ``hami.io/vgpu-devices-allocated``, Volcano's ``volcano.sh/vgpu-ids-new``, a compact
``running`` entry's ``gpus``). One that does not (a pod bound before HAMi ran, one whose
annotations were stripped, a hand-written entry) still uses GPUs: Volcano counts its request
against the node whatever its annotations say. Holding no device in vcopt's accounting would
let a plan give its cards to another pod, so vcopt assumes devices for it, deterministically
and as HAMi would have chosen them on what the other running pods leave
(``spec/hami-gpu.md`` §3.3):

- a request for whole GPUs (all of a device's compute, or all its memory) takes the emptiest
  devices first, ties by device index;
- a share takes HAMi's ``binpack`` order: the fullest device first (device score, §4.1), ties
  to the higher NUMA node, then to the device listed last (§3.2).

Pods are served in the order given. Those that cannot fit mean the node is over-committed:
nothing must be placed on its devices any more, so the first of them books what every device
has left. The caller says all of it in one warning per node (:attr:`NodeAssumption.message`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from .cluster import Node
from .errors import Diagnostics, obj_name
from .gpu import GpuDevice, GpuFilter, GpuRequest, exclusive_on
from .workload import DeviceShare, Job

Container = tuple[DeviceShare, ...]
"""The devices one GPU container holds."""


@dataclass(frozen=True)
class NeedsDevices:
    """A running pod that names no devices: its GPU containers' requests and device filter."""

    gpu: tuple[GpuRequest, ...]
    gpu_filter: GpuFilter | None = None


@dataclass(frozen=True)
class NodeAssumption:
    """What the pods of one node that name no devices are assumed to hold."""

    shares: tuple[tuple[Container, ...], ...]
    """Per pod, in the order given, per GPU container: the devices it holds."""
    assumed: tuple[str, ...]
    """Ids of the devices given to the pods that fit, in the node's order."""
    unfit: int
    """Pods that fit on no devices the others leave."""
    filled: tuple[str, ...]
    """Ids of the devices whose rest the first unfit pod books, in the node's order."""

    @property
    def message(self) -> str:
        """The one warning for the node: what was assumed and whether the node is full."""
        n = len(self.shares)
        parts = [f"{n} running pod{'' if n == 1 else 's'} name{'s' if n == 1 else ''} no devices"]
        if self.assumed:
            parts.append(f"assumed devices {', '.join(self.assumed)}")
        if self.unfit:
            who = "it does" if n == 1 else f"{self.unfit} of them {_do(self.unfit)}"
            where = ", ".join(self.filled) if self.filled else "its devices"
            parts.append(
                f"{who} not fit the devices left: the node is over-committed, and nothing is "
                f"placed on {where}"
            )
        return "; ".join(parts)


def assume_devices(
    node: Node, held: Sequence[DeviceShare], pods: Sequence[NeedsDevices]
) -> NodeAssumption:
    """The devices ``pods`` (running on ``node``, naming none) hold, given the shares ``held``
    by the node's other running pods. Shares of devices the node does not have are left out
    (the loader reports them)."""
    usage = {dev.id: _Use() for dev in node.gpus}
    for share in held:
        if share.id in usage:
            usage[share.id].book(share.memory, share.cores)
    shares: list[tuple[Container, ...]] = []
    unfit: list[int] = []
    for i, pod in enumerate(pods):
        trial = {key: replace(use) for key, use in usage.items()}
        placed = _place(node, pod, trial)
        if placed is None:
            unfit.append(i)
            shares.append(())
        else:
            usage = trial
            shares.append(placed)
    assumed = {share.id for pod in shares for container in pod for share in container}
    filled: Container = ()
    if unfit:
        filled = _fill(node, usage)
        shares[unfit[0]] = (filled,) if filled else ()
    return NodeAssumption(
        shares=tuple(shares),
        assumed=tuple(dev.id for dev in node.gpus if dev.id in assumed),
        unfit=len(unfit),
        filled=tuple(share.id for share in filled),
    )


PER_NODE_WARNINGS = 5
"""Up to this many nodes, each says what was assumed on it; beyond, one line says it of all
(an over-committed node always has its own), so a large dump's summary stays short."""


def with_assumed_devices(
    nodes: Sequence[Node], jobs: Sequence[Job], diag: Diagnostics
) -> tuple[Job, ...]:
    """``jobs`` (Volcano's and other schedulers', together: they share the devices) with
    devices assumed for every running GPU pod that names none on a node with a device
    inventory, and one warning per such node. Running pods on unknown nodes or of unknown
    tasks are left as they are (the loader reports them)."""
    by_name = {node.name: node for node in nodes}
    held: dict[str, list[DeviceShare]] = {}
    needs: dict[str, list[tuple[int, int, NeedsDevices]]] = {}
    for j, job in enumerate(jobs):
        tasks = {task.name: task for task in job.tasks}
        for r, pod in enumerate(job.running):
            node = by_name.get(pod.node)
            task = tasks.get(pod.task)
            if pod.gpus:
                held.setdefault(pod.node, []).extend(s for c in pod.gpus for s in c)
            elif node is not None and node.gpus and task is not None and task.gpu:
                wanted = NeedsDevices(task.gpu, task.gpu_filter)
                needs.setdefault(pod.node, []).append((j, r, wanted))
    given: dict[tuple[int, int], tuple[Container, ...]] = {}
    quiet: list[str] = []
    """Nodes where every such pod fit: said in one line when there are many."""
    results = {}
    for name, waiting in needs.items():
        node = by_name[name]
        result = results[name] = assume_devices(
            node, held.get(name, ()), [w for _, _, w in waiting]
        )
        if not result.unfit:
            quiet.append(name)
        for (j, r, _), shares in zip(waiting, result.shares, strict=True):
            given[j, r] = shares
    for name, result in results.items():
        if result.unfit or len(quiet) <= PER_NODE_WARNINGS:
            diag.warn(obj_name("Node", name), "", result.message)
    if len(quiet) > PER_NODE_WARNINGS:
        pods = sum(len(results[name].shares) for name in quiet)
        shown = ", ".join(quiet[:PER_NODE_WARNINGS])
        diag.warn(
            "",
            "nodes",
            f"{pods} running GPU pods on {len(quiet)} nodes ({shown} and "
            f"{len(quiet) - PER_NODE_WARNINGS} more) name no devices; each holds devices "
            "assumed for it (whole GPUs on the emptiest cards, shares by HAMi's binpack), and "
            "no plan places onto them",
        )
    out = []
    for j, job in enumerate(jobs):
        running = tuple(
            replace(pod, gpus=given[j, r]) if (j, r) in given else pod
            for r, pod in enumerate(job.running)
        )
        out.append(replace(job, running=running) if running != job.running else job)
    return tuple(out)


@dataclass
class _Use:
    """What the running pods hold on one device: time-slices, MiB and cores."""

    slots: int = 0
    memory: int = 0
    cores: int = 0

    def book(self, memory: int, cores: int) -> None:
        self.slots += 1
        self.memory += memory
        self.cores += cores


def _place(
    node: Node, pod: NeedsDevices, usage: Mapping[str, _Use]
) -> tuple[Container, ...] | None:
    """The pod's containers on the node's devices, booking them into ``usage``; None when
    one container finds too few devices."""
    out = []
    for request in pod.gpu:
        order = _whole_order(node, usage) if _whole(request) else _binpack_order(node, usage)
        chosen = [
            dev
            for dev in order
            if _usable(node, dev, pod.gpu_filter) and _fits(dev, request, usage[dev.id])
        ][: request.nums]
        if len(chosen) < request.nums:
            return None
        container = []
        for dev in chosen:
            memory, cores = request.memory_on(dev.memory), request.booked_cores
            usage[dev.id].book(memory, cores)
            container.append(DeviceShare(dev.id, memory, cores))
        out.append(tuple(container))
    return tuple(out)


def _whole(request: GpuRequest) -> bool:
    """Whether each device the request takes is all its own: HAMi's exclusive cores, or the
    whole memory (a percentage of 100 that no absolute amount overrides)."""
    whole_memory = request.percentage == 100 and (request.flavor == "volcano" or not request.memory)
    return request.exclusive or whole_memory


def _score(dev: GpuDevice, use: _Use) -> Fraction:
    """HAMi's device score without the request's terms (hami-gpu.md §4.1), exact: how full the
    device is in slots, cores and memory."""
    if dev.count == 0 or dev.cores == 0 or dev.memory == 0:
        return Fraction(0)
    return (
        Fraction(use.slots, dev.count)
        + Fraction(use.cores, dev.cores)
        + Fraction(use.memory, dev.memory)
    )


def _whole_order(node: Node, usage: Mapping[str, _Use]) -> list[GpuDevice]:
    return sorted(node.gpus, key=lambda dev: (_score(dev, usage[dev.id]), dev.index))


def _binpack_order(node: Node, usage: Mapping[str, _Use]) -> list[GpuDevice]:
    """Fullest first, then the higher NUMA node, then the device listed last (HAMi sorts
    stably and scans from the end)."""
    position = {dev.id: i for i, dev in enumerate(node.gpus)}
    return sorted(
        node.gpus,
        key=lambda dev: (-_score(dev, usage[dev.id]), -dev.numa, -position[dev.id]),
    )


def _usable(node: Node, dev: GpuDevice, gpu_filter: GpuFilter | None) -> bool:
    """Whether HAMi would give the device to a new pod at all (§3.3 steps 1–3, 5)."""
    if not dev.health or dev.id in node.cordoned_gpus:
        return False
    return gpu_filter is None or gpu_filter.allows(dev)


def _fits(dev: GpuDevice, request: GpuRequest, use: _Use) -> bool:
    """HAMi's per-device checks on what is left (§3.3 steps 6, 8, 9, 11–14)."""
    memory, cores = request.memory_on(dev.memory), request.booked_cores
    if use.slots >= dev.count:
        return False
    if dev.memory - use.memory < memory or dev.cores - use.cores < cores:
        return False
    if exclusive_on(cores, dev) and use.slots > 0:
        return False
    return not (dev.cores != 0 and use.cores >= dev.cores and cores == 0)


def _fill(node: Node, usage: Mapping[str, _Use]) -> Container:
    """One share of everything each device has left, so that nothing more fits on it."""
    out = []
    for dev in node.gpus:
        use = usage[dev.id]
        memory, cores = max(0, dev.memory - use.memory), max(0, dev.cores - use.cores)
        if use.slots < dev.count and (memory or cores):
            use.book(memory, cores)
            out.append(DeviceShare(dev.id, memory, cores))
    return tuple(out)


def _do(n: int) -> str:
    return "does" if n == 1 else "do"
