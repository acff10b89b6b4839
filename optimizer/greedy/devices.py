"""Volcano's vGPU device fit: which physical GPUs of one node a pod's GPU containers get.

This is ``vgpu/utils.go:checkNodeGPUSharingPredicateAndScore`` (spec ``hami-gpu.md`` §3.5,
``volcano-scheduler.md`` §7.3–7.4). The greedy framework calls :func:`fit` for every GPU task on
every node with a device inventory, whether or not the ``deviceshare`` plugin is configured:
vcopt always places GPU pods on devices, and without the plugin the device order is Volcano's
default. The node state is never changed here; the framework books the returned shares when it
allocates the task.

Volcano's rules differ from HAMi's in several places (``hami-gpu.md`` §3.6), so none of HAMi's
matching is reused except the request normalisation of :class:`models.gpu.GpuRequest`. MIG
geometries (§5.2) are not modelled: a ``mig`` device accepts a share as a ``hami-core`` one does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from models.gpu import FULL_CORES, GpuRequest
from models.vocabulary import NOUSE_GPU_TYPE as NOUSE_TYPE
from models.vocabulary import USE_GPU_TYPE as USE_TYPE
from models.workload import DeviceShare

from .api import GpuState, NodeInfo, TaskInfo
from .session import UNSCHEDULABLE, FitFailure

PLUGIN = "deviceshare"
BINPACK = "binpack"
SPREAD = "spread"

PODGROUP_POLICY = "volcano.sh/vgpu-podgroup-policy"
VENDOR = "NVIDIA"
"""Volcano's request type: a device is only usable if its type contains this (case-sensitive)."""
MIG = "mig"
HAMI_CORE = "hami-core"


@dataclass(frozen=True)
class DeviceFit:
    """The devices chosen for a task, in container order, and Volcano's ``gs.Score`` for them."""

    gpus: tuple[DeviceShare, ...]
    score: float


@dataclass(frozen=True)
class DeviceRules:
    """A pod's device restrictions read with Volcano's rules (hami-gpu.md §3.5, §3.6).

    Pods with the same device request signature share one (``nodes.device_fit``), and with
    it the per-node list of devices they may use at all, which never changes in a session."""

    use_types: tuple[str, ...] | None
    """None when the annotation is absent: only then are ``nouse`` types applied."""
    nouse_types: tuple[str, ...]
    use_uuids: tuple[str, ...]
    nouse_uuids: tuple[str, ...]
    mode: str | None
    podgroup_spread: bool
    usable: dict[tuple[int, bool], tuple[bool, ...]] = field(
        default_factory=dict, compare=False, hash=False
    )
    """(node index, health checked) → per device of the node, whether the pod may use it."""

    @classmethod
    def of(cls, task: TaskInfo) -> DeviceRules:
        annotations = task.task.annotations
        flt = task.gpu_filter
        use = annotations.get(USE_TYPE)
        return cls(
            use_types=None if use is None else tuple(t.upper() for t in use.split(",")),
            nouse_types=tuple(t.upper() for t in annotations.get(NOUSE_TYPE, "").split(",") if t),
            use_uuids=flt.use_uuids if flt else (),
            nouse_uuids=flt.nouse_uuids if flt else (),
            mode=flt.mode if flt else None,
            podgroup_spread=annotations.get(PODGROUP_POLICY) == SPREAD,
        )

    def allows_type(self, dev_type: str) -> bool:
        """Volcano's ``checkGPUtype``: with a ``use`` annotation, ``nouse`` is not read at all,
        and a blank ``use`` token matches every card (Go's ``strings.Contains(x, "")``)."""
        if VENDOR not in dev_type:
            return False
        upper = dev_type.upper()
        if self.use_types is not None:
            return any(t in upper for t in self.use_types)
        return not any(t in upper for t in self.nouse_types)

    def allows_uuid(self, uuid: str) -> bool:
        if self.use_uuids:
            return uuid in self.use_uuids
        return uuid not in self.nouse_uuids

    def usable_on(self, node: NodeInfo, check_health: bool) -> tuple[bool, ...]:
        key = (node.index, check_health)
        found = self.usable.get(key)
        if found is None:
            found = self.usable[key] = tuple(
                _usable(self, g.device.id, g.device.type, check_health and not g.device.health)
                for g in node.gpus
            )
        return found


def node_mode(gpus: Sequence[GpuState]) -> str:
    """The node-level sharing mode: the last device's, with anything but ``mig`` (``mps``
    included) read as ``hami-core`` (``getSharingMode``, hami-gpu.md §2.3)."""
    return MIG if gpus[-1].device.mode == MIG else HAMI_CORE


def device_order(policy: str, used_num: Sequence[int], used_mem: Sequence[int]) -> list[int]:
    """``sortedDeviceIndicesByPolicy``; devices are identified by their position on the node,
    as Volcano identifies them by their position in the register annotation."""
    n = len(used_num)
    if policy == BINPACK:
        return sorted(range(n), key=lambda i: (-used_mem[i], i))
    if policy == SPREAD:
        return sorted(range(n), key=lambda i: (used_num[i], i))
    return list(range(n - 1, -1, -1))


def _gpu_score(policy: str, used_mem: int, memory: int) -> float:
    """``GPUScore`` after the tentative booking. Under spread Volcano scores 100 only for
    ``UsedNum == 0``, which cannot hold once the device is booked."""
    # Volcano quirk (§9.13): the spread device score is always 0.
    if policy == BINPACK:
        return 100 * used_mem / memory
    return 0.0


def _same_job_devices(task: TaskInfo, node: NodeInfo) -> set[int]:
    """Devices holding another pod of the task's PodGroup with a non-zero booking."""
    out = set()
    for i, state in enumerate(node.gpus):
        for uid, (memory, cores) in state.pods.items():
            other = node.tasks.get(uid)
            same_job = uid != task.uid and other is not None and other.job == task.job
            if same_job and (memory or cores):
                out.add(i)
                break
    return out


def _memory_text(request: GpuRequest) -> str:
    """The per-device memory a request needs, as the user wrote it (for fit messages)."""
    by_percentage = request.percentage is not None and (
        request.flavor == "volcano" or request.memory == 0
    )
    return f"{request.percentage}% memory" if by_percentage else f"{request.memory} MiB"


def fit(
    task: TaskInfo,
    node: NodeInfo,
    policy: str,
    *,
    check_health: bool = True,
    rules: DeviceRules | None = None,
) -> DeviceFit | FitFailure:
    """Choose devices for every GPU container of ``task`` on ``node`` (hami-gpu.md §3.5).

    Each container walks the devices in ``policy`` order, recomputed on the usage left by the
    containers before it, and takes the first ``nums`` that pass every test; a container that
    finds fewer fails the node.

    ``check_health`` skips unhealthy devices. Volcano never checks health (§9.13), but a plan
    putting a pod on an unhealthy GPU is rejected by vcopt's verifier, so the default departs
    from Volcano; pass False to reproduce it. ``rules`` are the task's :class:`DeviceRules`
    when the caller keeps them (read from the task otherwise).
    """
    gpus = node.gpus
    if not gpus:
        return FitFailure(UNSCHEDULABLE, f"{node.name}: no GPU devices", PLUGIN)
    rules = rules or DeviceRules.of(task)
    usable = rules.usable_on(node, check_health)
    mode = node_mode(gpus)
    if rules.mode is not None and rules.mode != mode:
        return FitFailure(
            UNSCHEDULABLE, f"{node.name}: GPU mode is {mode}, the pod asks for {rules.mode}", PLUGIN
        )
    used_num = [g.used_num for g in gpus]
    used_mem = [g.used_mem for g in gpus]
    used_core = [g.used_core for g in gpus]
    spread_blocked = _same_job_devices(task, node) if rules.podgroup_spread else set()
    # HAMi's mutex policy (hami-gpu.md §3.3 step 7), which Volcano's own vGPU code does not
    # read: vcopt places GPU pods as HAMi would, so a device in use is not given to the pod.
    mutex = task.task.gpu_mutex
    chosen: list[DeviceShare] = []
    score = 0.0
    for request in task.gpu_requests:
        if request.nums > len(gpus):
            return FitFailure(
                UNSCHEDULABLE,
                f"{node.name}: needs {request.nums} GPUs, has {len(gpus)}",
                PLUGIN,
            )
        cores = request.booked_cores
        found = 0
        filtered = 0
        for i in device_order(policy, used_num, used_mem):
            if not usable[i]:
                filtered += 1
                continue
            dev = gpus[i].device
            memory = request.memory_on(dev.memory)
            if used_num[i] >= dev.count or i in spread_blocked:
                continue
            if mutex and used_num[i] > 0:
                continue
            if not _fits(memory, cores, dev.memory - used_mem[i], used_core[i], used_num[i]):
                continue
            used_num[i] += 1
            used_mem[i] += memory
            used_core[i] += cores
            chosen.append(DeviceShare(dev.id, memory, cores))
            score += _gpu_score(policy, used_mem[i], dev.memory)
            found += 1
            if found == request.nums:
                break
        if found < request.nums:
            return FitFailure(UNSCHEDULABLE, shortage(node, request, found, filtered), PLUGIN)
    return DeviceFit(tuple(chosen), score)


def shortage(node: NodeInfo, request: GpuRequest, found: int, filtered: int) -> str:
    """Why a container found too few devices: the devices the pod's type, UUID or health
    filter rules out are not counted as "not free", so a node whose cards are all of the
    wrong type never reads as a node that is merely full."""
    gpus = node.gpus
    if filtered == len(gpus):
        types = ", ".join(sorted({g.device.type for g in gpus}))
        return (
            f"{node.name}: none of its {len(gpus)} GPUs ({types}) passes the pod's GPU type, "
            "UUID or health filter"
        )
    cores = request.booked_cores
    cores_text = f" and {cores} cores" if cores else ""
    excluded = f" ({filtered} excluded by the pod's GPU filter)" if filtered else ""
    return (
        f"{node.name}: {found}/{len(gpus)} GPUs with {_memory_text(request)}"
        f"{cores_text} free{excluded}, needs {request.nums}"
    )


def _usable(rules: DeviceRules, uuid: str, dev_type: str, unhealthy: bool) -> bool:
    return not unhealthy and rules.allows_uuid(uuid) and rules.allows_type(dev_type)


def _fits(memory: int, cores: int, free_memory: int, used_core: int, used_num: int) -> bool:
    """The capacity tests of §7.3 items 4–7; Volcano's compute capacity is a flat 100."""
    if free_memory < memory or used_core + cores > FULL_CORES:
        return False
    if cores == FULL_CORES and used_num > 0:
        return False
    return not (used_core == FULL_CORES and cores == 0)
