"""The exact search for a valid GPU assignment, for placements that leave their devices open.

A plan may say only "this pod goes to node n"; the verifier must then decide whether *some*
assignment of the node's devices fits all such pods at once beside what is already booked.
That is a small exact-cover search, kept apart from the rules that call it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from models.gpu import GpuDevice, GpuRequest, exclusive_on
from models.workload import DeviceShare


@dataclass(frozen=True, order=True)
class Usage:
    """What a device carries: slots, MiB, cores, and how many exclusive and zero-core shares."""

    slots: int = 0
    memory: int = 0
    cores: int = 0
    exclusive: int = 0
    zero_cores: int = 0

    @classmethod
    def of(cls, device: GpuDevice, shares: Iterable[DeviceShare]) -> Usage:
        usage = cls()
        for share in shares:
            usage = usage.plus(device, share.memory, share.cores)
        return usage

    def plus(self, device: GpuDevice, memory: int, cores: int) -> Usage:
        return Usage(
            self.slots + 1,
            self.memory + memory,
            self.cores + cores,
            self.exclusive + exclusive_on(cores, device),
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
class Unit:
    """One GPU container still to be given devices."""

    pod: str
    request: GpuRequest
    allowed: frozenset[int]
    """Indexes (in ``node.gpus``) of the devices its filters allow."""
    numa_bind: bool
    mutex: bool = False
    """HAMi's mutex policy: only devices carrying nothing yet."""


def assignable(devices: Sequence[GpuDevice], usage: list[Usage], units: list[Unit]) -> bool:
    """Exact backtracking: can every unit get ``nums`` distinct allowed devices at once?

    Failed states are remembered in a canonical form (devices that look alike to every unit
    are interchangeable), so identical pods and identical devices are not searched twice.
    """
    # Mutex units first: they need unused devices, and any plain unit may follow them there.
    units = sorted(units, key=lambda u: (not u.mutex, -u.request.nums, -u.request.booked_cores))
    looks = [
        (d.memory, d.cores, d.count, d.numa, tuple(i in u.allowed for u in units))
        for i, d in enumerate(devices)
    ]
    failed: set[tuple[int, tuple]] = set()

    def search(k: int, state: list[Usage]) -> bool:
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
                if unit.mutex and state[i].slots:
                    break
                if not state[i].accepts(devices[i], memory, cores):
                    break
                after[i] = state[i].plus(devices[i], memory, cores)
            else:
                if search(k + 1, after):
                    return True
        failed.add(key)
        return False

    return search(0, usage)
