"""The records the compiled tables are made of: pod groups, admission units, running pods,
and where a group may go."""

from __future__ import annotations

from dataclasses import dataclass, field

from models.gpu import GpuRequest
from models.workload import Job, Pod, Task


@dataclass
class Candidates:
    classes: list[int] = field(default_factory=list)
    containers: dict[int, list[list[tuple[int, bool]]]] = field(default_factory=dict)
    """Per candidate class, per GPU container: (device class, takes it whole) for every device
    class the container may use there."""


@dataclass
class Group:
    """The pending pods of one task: of one job, or of the interchangeable jobs of a unit."""

    index: int
    unit: int
    task: Task
    pods: list[Pod]
    """In the order their jobs are admitted (a unit's jobs in Volcano's order)."""
    request: dict[str, int]
    """Per pod, rounded up (what it takes from a limit)."""
    request_floor: dict[str, int]
    """Per pod, rounded down (what it adds towards a floor such as a guarantee)."""
    value: int
    """Stage-1 worth of one pod (GPU-equivalents × 1000, see :func:`pod_value`)."""
    numa_bind: bool
    """Each multi-GPU container must take its devices from one NUMA node."""
    job: Job
    """The (first) job the pods belong to; a unit's jobs agree on everything but the name."""
    where: Candidates = field(default_factory=Candidates)
    """Classes and device classes the group may use (static predicates pass)."""

    @property
    def gpus(self) -> tuple[GpuRequest, ...]:
        """One request per GPU container (empty for a pod without GPUs)."""
        return self.task.gpu

    def gpus_on(self, cls: int) -> tuple[GpuRequest, ...]:
        """The requests the model gives devices for on class ``cls``: none on a class whose
        nodes count GPUs as a plain scalar (the node's resources take them there)."""
        return self.gpus if cls in self.where.containers else ()

    @property
    def size(self) -> int:
        return len(self.pods)

    @property
    def classes(self) -> list[int]:
        return self.where.classes


@dataclass
class Unit:
    """What is admitted as a whole: one job, or ``len(jobs)`` interchangeable single-pod jobs
    (then the model decides how many of them start, not which)."""

    index: int
    jobs: list[Job]
    groups: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.jobs[0].key

    @property
    def size(self) -> int:
        return len(self.jobs)

    @property
    def job(self) -> Job:
        return self.jobs[0]


@dataclass
class RunningPod:
    pod: Pod
    job: Job
    task: Task
    node: int
    request: dict[str, int]
    request_floor: dict[str, int]
    gpus: list[tuple[int, int, int]]
    """(device index on the node, memory, cores) per held device share."""
    evictable: bool
    value: int
