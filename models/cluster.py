"""Nodes: what a pod can land on.

A node carries what both the generic predicates read (labels, taints, ``unschedulable``,
allocatable) and the HAMi device inventory that GPU sharing is decided on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .gpu import GpuDevice
from .resources import EMPTY, NVIDIA_GPU, Resources
from .vocabulary import DEVICE_CORDON, UNSCHEDULABLE_TAINT

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
SCHEDULING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
"""Taint effects that keep a new pod off a node unless tolerated (``PreferNoSchedule`` only
lowers the node's score)."""


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


CORDON = Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule")
"""What a cordoned node (``spec.unschedulable``) asks a new pod to tolerate."""


@dataclass(frozen=True)
class Node:
    """One schedulable machine.

    ``allocatable`` already includes ``nvidia.com/gpu`` when the node has a device inventory
    and the input did not state it: HAMi's device plugin registers devices × time-slices.
    """

    name: str
    allocatable: Resources = EMPTY
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    gpus: tuple[GpuDevice, ...] = ()

    @property
    def hard_taints(self) -> tuple[Taint, ...]:
        """The taints a new pod must tolerate to land here (TaintToleration's filter)."""
        return tuple(t for t in self.taints if t.effect in SCHEDULING_EFFECTS)

    @property
    def scheduling_taints(self) -> tuple[Taint, ...]:
        """:attr:`hard_taints`, and a cordon read as the taint kube-scheduler's
        NodeUnschedulable filter checks (``node.kubernetes.io/unschedulable:NoSchedule``)."""
        return self.hard_taints + ((CORDON,) if self.unschedulable else ())

    @property
    def pod_capacity(self) -> int:
        """Maximum pods; Kubernetes' default of 110 when ``pods`` is not allocatable."""
        return self.allocatable.get("pods", 110)

    @property
    def cordoned_gpus(self) -> frozenset[str]:
        """Ids of the devices HAMi's ``hami.io/device-cordon`` annotation takes out of use."""
        tokens = self.annotations.get(DEVICE_CORDON, "").split(",")
        return frozenset(t.strip() for t in tokens if t.strip())

    @property
    def plain_gpus(self) -> bool:
        """Whether the node counts ``nvidia.com/gpu`` without a device inventory, as the plain
        NVIDIA device plugin registers it: GPUs are then a scalar resource of the node fit
        (Volcano and kube-scheduler alike), and only whole-GPU requests can use them."""
        return not self.gpus and self.allocatable.get(NVIDIA_GPU) > 0

    def device(self, device_id: str) -> GpuDevice | None:
        for dev in self.gpus:
            if dev.id == device_id:
                return dev
        return None


def with_gpu_allocatable(allocatable: Resources, gpus: tuple[GpuDevice, ...]) -> Resources:
    """Allocatable with ``nvidia.com/gpu`` derived from the devices when it was not given."""
    if not gpus or NVIDIA_GPU in allocatable:
        return allocatable
    return allocatable + {NVIDIA_GPU: 1000 * sum(d.count for d in gpus)}
