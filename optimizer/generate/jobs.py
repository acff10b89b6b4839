"""Jobs and pods as the generator draws them, before they become instance documents."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from models.gpu import HAMI_CORES, HAMI_COUNT, HAMI_MEMORY
from models.vocabulary import PREEMPTABLE, REVOCABLE_ZONE

from .params import (
    CPU_PER_GPU,
    FRACTIONAL_CPU,
    FRACTIONAL_MEMORY_GI,
    MEMORY_GI_PER_GPU,
    PRODUCT_LABEL,
)


@dataclass(frozen=True)
class PodSpec:
    """What one pod asks for: ``gpus`` devices, each whole (``memory`` 0, ``cores`` 100) or a
    share of ``memory`` MiB and ``cores`` percent."""

    gpus: int
    memory: int = 0
    cores: int = 100

    @property
    def whole(self) -> bool:
        return self.memory == 0

    @property
    def centi(self) -> int:
        return self.gpus * self.cores

    @property
    def cpu(self) -> int:
        return CPU_PER_GPU * self.gpus if self.whole else FRACTIONAL_CPU

    @property
    def memory_gi(self) -> int:
        return MEMORY_GI_PER_GPU * self.gpus if self.whole else FRACTIONAL_MEMORY_GI

    def resources(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "cpu": str(self.cpu),
            "memory": f"{self.memory_gi}Gi",
            HAMI_COUNT: self.gpus,
        }
        if not self.whole:
            out[HAMI_MEMORY] = self.memory
            out[HAMI_CORES] = self.cores
        return out


@dataclass
class DrawnJob:
    """One job as drawn; mutable, because the budget trims it and running jobs get their
    placements after the draw."""

    name: str
    queue: str
    task: str
    pod: PodSpec
    replicas: int
    min_available: int
    priority: str
    topology: tuple[str, int] | None = None
    product: str = ""
    revocable: bool = False
    preemptable: bool = False
    duration: str = ""
    running: list[dict[str, Any]] = field(default_factory=list)

    @property
    def centi(self) -> int:
        return self.replicas * self.pod.centi

    def shrink_to(self, centi: int) -> None:
        """Fewer replicas, so that the job asks for about ``centi`` (at least one pod)."""
        self.replicas = max(1, min(self.replicas, math.ceil(centi / self.pod.centi)))
        self.min_available = min(self.min_available, self.replicas)

    def document(self) -> dict[str, Any]:
        task: dict[str, Any] = {
            "name": self.task,
            "replicas": self.replicas,
            "resources": self.pod.resources(),
        }
        if self.product:
            task["nodeSelector"] = {PRODUCT_LABEL: self.product}
        if self.revocable:
            task["annotations"] = {REVOCABLE_ZONE: "*", PREEMPTABLE: "true"}
        doc: dict[str, Any] = {
            "name": self.name,
            "namespace": self.queue,
            "queue": self.queue,
            "priorityClassName": self.priority,
            "minAvailable": self.min_available,
        }
        if self.topology is not None:
            mode, tier = self.topology
            doc["networkTopology"] = {"mode": mode, "highestTierAllowed": tier}
        if self.preemptable:
            doc["annotations"] = {PREEMPTABLE: "true"}
        if self.duration:
            doc["duration"] = self.duration
        doc["tasks"] = [task]
        if self.running:
            doc["running"] = self.running
        return doc
