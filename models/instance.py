"""The validated, immutable snapshot every engine, the verifier and the metrics read.

An :class:`Instance` is what ``models.load`` returns for either input form. It holds the
objects as the user wrote them (after defaults) and computes the derived structures (HyperNode
tree, queue tree, indexes) once, on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, tzinfo
from functools import cached_property
from zoneinfo import ZoneInfo

from .cluster import Node
from .errors import Diagnostics, Problem
from .queues import Queue, QueueTree
from .resources import Resources
from .scheduler_conf import HELM_DEFAULT, SchedulerConf
from .tdm import TdmConfig
from .topology import HyperNode, Topology
from .workload import Job, Pod


@dataclass(frozen=True)
class Instance:
    name: str
    now: datetime
    timezone: str = "UTC"
    scheduler: SchedulerConf = HELM_DEFAULT
    priority_classes: Mapping[str, int] = field(default_factory=dict)
    nodes: tuple[Node, ...] = ()
    hypernodes: tuple[HyperNode, ...] = ()
    queues: tuple[Queue, ...] = ()
    jobs: tuple[Job, ...] = ()
    warnings: tuple[Problem, ...] = field(default=(), compare=False)
    source: str = field(default="", compare=False)

    def __getstate__(self) -> dict[str, object]:
        """Pickle only the fields: derived structures are rebuilt on first use, which keeps
        instances cheap to ship to sweep workers (and compiled regexes out of pickles)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __setstate__(self, state: dict[str, object]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)

    def replace(self, **changes: object) -> Instance:
        """A modified copy (derived structures are recomputed on the copy)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    @cached_property
    def tz(self) -> tzinfo:
        return ZoneInfo(self.timezone)

    @cached_property
    def topology(self) -> Topology:
        return Topology.build(self.hypernodes, {n.name: n.labels for n in self.nodes})

    @cached_property
    def queue_tree(self) -> QueueTree:
        return QueueTree.build(self.queues)

    @cached_property
    def tdm(self) -> TdmConfig | None:
        """The TDM configuration when the ``tdm`` plugin is configured."""
        plugin = self.scheduler.plugin("tdm")
        if plugin is None:
            return None
        return TdmConfig.from_arguments(plugin.arguments, "scheduler", Diagnostics())

    @cached_property
    def node_by_name(self) -> Mapping[str, Node]:
        return {n.name: n for n in self.nodes}

    @cached_property
    def job_by_key(self) -> Mapping[str, Job]:
        return {j.key: j for j in self.jobs}

    @cached_property
    def pods(self) -> tuple[Pod, ...]:
        return tuple(p for j in self.jobs for p in j.pods)

    @cached_property
    def pod_by_key(self) -> Mapping[str, Pod]:
        return {p.key: p for p in self.pods}

    def hard_topology_limit(self, job: Job) -> int | None:
        """The tier all of ``job``'s bound pods must stay within, or None when nothing limits
        them: a hard spec with a resolved tier, and the ``network-topology-aware`` plugin
        configured (§9.6)."""
        spec = job.network_topology
        if spec is None or not self.scheduler.enforces_topology:
            return None
        return spec.hard_tier

    @cached_property
    def total_allocatable(self) -> Resources:
        """Σ allocatable over all nodes (Volcano ``ssn.TotalResource``)."""
        total = Resources()
        for node in self.nodes:
            total = total + node.allocatable
        return total
