"""Volcano's device fit (:func:`devices.fit`) decided for every node at once.

A GPU task's scan asks every candidate node whether its devices can take the task, and the
answer changes with every pod booked on the node. For a task with one GPU request — the
usual pod: one container asks for ``nums`` devices, each with the same share — whether a
node passes depends on how many of its devices could each take one share: a request walks
the devices in the policy's order and takes each that fits, once, until it has ``nums``, so
the order decides *which* devices, never *whether*. That count is array arithmetic over
every device of the cluster (:class:`node_arrays.DeviceState`), with the per-device tests of
:func:`devices._fits`. The devices the task gets on the chosen node are still chosen by
:func:`devices.fit`.

A failing node reports the message :func:`devices.fit` would give it, which names the node
and the number of devices that fit, so the failures are interned per (node, count) as they
first occur. Tasks with several GPU containers, or whose devices depend on other pods of the
job (``volcano.sh/vgpu-podgroup-policy: spread``), are checked node by node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from models.gpu import FULL_CORES, PLAIN_GPU_SHARE, GpuRequest

from .api import NodeInfo, TaskInfo
from .devices import PLUGIN, DeviceRules, node_mode, shortage
from .fit_cache import PASSES, FitCache
from .framework import UNRESOLVABLE, UNSCHEDULABLE, FitFailure
from .node_arrays import DeviceState, DeviceSubset

UNKNOWN = -2
"""A (node, count) failure not interned yet."""


@dataclass
class DeviceVerdicts:
    """What one device request signature needs of every device and node, fixed for the
    session, and the failures interned so far."""

    request: GpuRequest
    rules: DeviceRules
    mutex: bool
    need_memory: np.ndarray
    """Per device, the memory a share books on it (``GpuRequest.memory_on``)."""
    usable: np.ndarray
    """Per device, whether the pod's type, UUID and health filters allow it."""
    filtered: np.ndarray
    """Per node, how many of its devices the filters exclude."""
    fixed: np.ndarray
    """Per node, the failure number of a node that fails whatever its usage (no devices, a
    mode the pod does not ask for, fewer devices than ``nums``); ``PASSES`` otherwise."""
    shortage: np.ndarray
    """Per node and count of fitting devices (< ``nums``), the interned failure number."""
    _parts: dict[int, tuple[DeviceSubset, tuple[np.ndarray, ...]]] = field(default_factory=dict)
    """Per node set (:meth:`DeviceState.subset`), the fixed arrays on it (:meth:`_fixed_on`)."""

    @classmethod
    def of(
        cls,
        task: TaskInfo,
        rules: DeviceRules,
        nodes: Sequence[NodeInfo],
        devices: DeviceState,
        cache: FitCache,
    ) -> DeviceVerdicts:
        (request,) = task.gpu_requests
        usable = devices.usable(rules)
        values, inverse = np.unique(devices.memory, return_inverse=True)
        need_memory = np.array(
            [request.memory_on(int(m)) for m in values.tolist()], dtype=np.int64
        )[inverse]
        filtered = np.zeros(len(nodes), dtype=np.int64)
        having = devices.everything.having
        if len(having):
            excluded = (~usable).astype(np.int64)
            filtered[having] = np.add.reduceat(excluded, devices.offsets[having])
        fixed = np.full(len(nodes), PASSES, dtype=np.int32)
        # Only a node without devices, with fewer than ``nums`` or of another mode can fail
        # whatever its usage.
        if rules.mode is None:
            suspects = ((devices.sizes == 0) | (devices.sizes < request.nums)).nonzero()[0]
        else:
            suspects = np.arange(len(nodes))
        for i in suspects.tolist():
            fixed[i] = cache.number(_fixed_failure(task, request, rules, nodes[i]))
        shortage = np.full((len(nodes), max(request.nums, 1)), UNKNOWN, dtype=np.int32)
        return cls(
            request, rules, task.task.gpu_mutex, need_memory, usable, filtered, fixed, shortage
        )

    def numbers(
        self,
        devices: DeviceState,
        nodes: Sequence[NodeInfo],
        cache: FitCache,
        indices: np.ndarray | None,
    ) -> np.ndarray:
        """The failure number (``PASSES``: it fits) under the current usage of every node at
        ``indices`` (all nodes when None), in that order."""
        part = devices.subset(indices)
        usable, count, spare, fixed = self._fixed_on(part, devices, indices)
        cores = self.request.booked_cores
        used_num = part.take(devices.used_num)
        used_core = part.take(devices.used_core)
        fits = usable & (used_num < count) & (part.take(devices.used_mem) <= spare)
        fits &= used_core <= FULL_CORES - cores
        if self.mutex or cores == FULL_CORES:
            fits &= used_num == 0
        if cores == 0:
            fits &= used_core != FULL_CORES
        found = np.zeros(len(part.sizes), dtype=np.int64)
        if len(part.having):
            found[part.having] = np.add.reduceat(fits.astype(np.int64), part.starts[part.having])
        numbers = fixed.copy()
        # A node without devices that passes is a plain-GPU node taking whole cards.
        short = (numbers == PASSES) & (found < self.request.nums) & (part.sizes > 0)
        failing = short.nonzero()[0]
        if len(failing):
            at = failing if indices is None else indices[failing]
            counts = found[failing]
            known = self.shortage[at, counts]
            for k in (known == UNKNOWN).nonzero()[0].tolist():
                i, count = int(at[k]), int(counts[k])
                reason = shortage(nodes[i], self.request, count, int(self.filtered[i]))
                known[k] = self.shortage[i, count] = cache.number(
                    FitFailure(UNSCHEDULABLE, reason, PLUGIN)
                )
            numbers[failing] = known
        return numbers

    def node_number(self, node: NodeInfo, cache: FitCache) -> int:
        """:meth:`numbers` of one node, read from its devices' usage directly (a scan that
        re-checks the few nodes changed since it last ran)."""
        i = node.index
        fixed = int(self.fixed[i])
        if fixed != PASSES or not node.gpus:
            return fixed
        request = self.request
        cores = request.booked_cores
        exclusive = self.mutex or cores == FULL_CORES
        allowed = self.rules.usable_on(node, True)
        found = 0
        for j, state in enumerate(node.gpus):
            device = state.device
            if (
                not allowed[j]
                or state.used_num >= device.count
                or (exclusive and state.used_num > 0)
                or device.memory - state.used_mem < request.memory_on(device.memory)
                or state.used_core + cores > FULL_CORES
                or (cores == 0 and state.used_core == FULL_CORES)
            ):
                continue
            found += 1
        if found >= request.nums:
            return PASSES
        number = int(self.shortage[i, found])
        if number == UNKNOWN:
            reason = shortage(node, request, found, int(self.filtered[i]))
            number = self.shortage[i, found] = cache.number(
                FitFailure(UNSCHEDULABLE, reason, PLUGIN)
            )
        return number

    def _fixed_on(
        self, part: DeviceSubset, devices: DeviceState, indices: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The fixed arrays on the devices and nodes of ``part``: which devices the pod may
        use, their slots, the memory a device may already have booked for a share still to
        fit (its memory less the share's), and the nodes' fixed failures."""
        key = id(part)
        found = self._parts.get(key)
        if found is None or found[0] is not part:
            spare = part.take(devices.memory) - part.take(self.need_memory)
            fixed = self.fixed if indices is None else self.fixed[indices]
            arrays = (part.take(self.usable), part.take(devices.count), spare, fixed)
            found = self._parts[key] = (part, arrays)
        return found[1]


def _fixed_failure(
    task: TaskInfo, request: GpuRequest, rules: DeviceRules, node: NodeInfo
) -> FitFailure | None:
    """The failures of :func:`nodes.device_fit` and :func:`devices.fit` that do not depend
    on the node's usage, in their order."""
    if not node.gpus:
        if node.node.plain_gpus:
            if request.whole:
                return None
            return FitFailure(UNRESOLVABLE, f"{node.name}: {PLAIN_GPU_SHARE}", PLUGIN)
        return FitFailure(UNSCHEDULABLE, f"{node.name}: no GPU devices", PLUGIN)
    mode = node_mode(node.gpus)
    if rules.mode is not None and rules.mode != mode:
        return FitFailure(
            UNSCHEDULABLE, f"{node.name}: GPU mode is {mode}, the pod asks for {rules.mode}", PLUGIN
        )
    if request.nums > len(node.gpus):
        return FitFailure(
            UNSCHEDULABLE, f"{node.name}: needs {request.nums} GPUs, has {len(node.gpus)}", PLUGIN
        )
    return None


def vectorisable(task: TaskInfo, rules: DeviceRules) -> bool:
    """Whether the task's device fit is decided by counts alone: one GPU request, and no
    PodGroup spread (which reads the devices other pods of the job hold)."""
    return len(task.gpu_requests) == 1 and not rules.podgroup_spread
