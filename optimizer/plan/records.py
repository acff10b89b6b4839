"""The plan's records: one answer to "where should everything go", whichever engine produced it.

Both engines return a :class:`Plan`, the verifier and the metrics judge one, and users write
them by hand to ask "is this placement valid?". So a plan read from a file needs only
``placements`` (and ``evictions``); every other section is derived or optional, and a
placement may leave its GPU devices to the verifier. Reading is ``optimizer.plan.read``;
writing and rendering (YAML, JSON, CSV, a DataFrame, a table, HAMi annotations) are
``optimizer.plan.write`` and ``optimizer.plan.render``, which the methods below call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from models.instance import Instance
from models.workload import DeviceShare

from .. import __version__
from ..atomic import write_atomic
from ..result import Status
from . import render as rendering
from . import write as writing

ADMITTED, PENDING, RUNNING = "admitted", "pending", "running"
JOB_STATUSES = (ADMITTED, PENDING, RUNNING)


@dataclass(frozen=True)
class Placement:
    """A pod newly bound to a node; ``gpus`` None means "any valid devices on that node"."""

    pod: str
    node: str
    gpus: tuple[DeviceShare, ...] | None = None


@dataclass(frozen=True)
class Bound:
    """A pod's position after a plan: its node and devices (None: devices not chosen)."""

    pod: str
    node: str
    gpus: tuple[DeviceShare, ...] | None
    running: bool
    """True for a pod that was already running before the plan."""


@dataclass(frozen=True)
class Eviction:
    pod: str
    node: str
    reason: str = ""


@dataclass(frozen=True)
class Pipelined:
    """A pod nominated to a node, waiting for resources being released (greedy only)."""

    pod: str
    node: str


@dataclass(frozen=True)
class JobDecision:
    job: str
    status: str
    reason: str = ""
    hypernode: str | None = None
    lca_tier: int | None = None
    position: int | None = None
    """For a job with pending pods, its place (1 = first) in the order Volcano would try its
    queue's pending jobs, as Kueue's visibility API shows it."""


@dataclass(frozen=True)
class SolverInfo:
    """How an engine reached the plan. Greedy plans carry a status and time but no gap.

    ``fallback`` says why a CP-SAT run returned the greedy plan instead of its own (empty when
    the plan is CP-SAT's); ``classes`` is the number of node classes the model counted pods in.
    ``gap`` is taken on the first stage, or on the whole weighted sum; ``stage_bounds`` holds,
    per stage, the most it can reach among plans no worse on the stages before it, so that a
    stage left open behind a dominant one shows (``stage_gaps``).
    """

    status: Status
    wall_seconds: float = 0.0
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    workers: int | None = None
    stages: Mapping[str, float] = field(default_factory=dict)
    stage_bounds: Mapping[str, float] = field(default_factory=dict)
    variables: int | None = None
    constraints: int | None = None
    classes: int | None = None
    fallback: str = ""
    message: str = ""

    @property
    def greedy_kept(self) -> bool:
        return bool(self.fallback)

    @property
    def stage_gaps(self) -> dict[str, float]:
        """Each bounded stage's gap, relative to the stage's value as ``gap`` is."""
        return {
            s: round(max(0.0, bound - self.stages[s]) / max(1.0, abs(self.stages[s])), 6)
            for s, bound in self.stage_bounds.items()
            if s in self.stages
        }


@dataclass(frozen=True)
class Plan:
    instance: str = ""
    engine: str = "manual"
    seed: int = 0
    placements: tuple[Placement, ...] = ()
    evictions: tuple[Eviction, ...] = ()
    pipelined: tuple[Pipelined, ...] = ()
    jobs: tuple[JobDecision, ...] = ()
    solver: SolverInfo | None = None
    metrics: Mapping[str, Any] = field(default_factory=dict)
    version: str = __version__

    def replace(self, **changes: Any) -> Plan:
        return replace(self, **changes)

    def bound_pods(self, instance: Instance) -> dict[str, Bound]:
        """Where every pod is once the plan is applied: running pods that are not evicted,
        plus placements. Pipelined pods hold nothing yet and are not included."""
        evicted = {e.pod for e in self.evictions}
        out = {
            p.key: Bound(p.key, p.node, tuple(d for c in p.gpus for d in c), running=True)
            for p in instance.pods
            if p.node is not None and p.key not in evicted
        }
        for p in self.placements:
            out[p.pod] = Bound(p.pod, p.node, p.gpus, running=False)
        return out

    def job_statuses(
        self, instance: Instance, bound: Mapping[str, Bound] | None = None
    ) -> dict[str, str]:
        """Each job's state once the plan is applied, by where its pods are: **pending** when
        it has no pod on a node or fewer than ``minAvailable`` (a gang that does not hold is
        not running), else **admitted** when the plan places any of its pods, else
        **running**. ``bound``: :meth:`bound_pods`, when the caller has it already."""
        if bound is None:
            bound = self.bound_pods(instance)
        placed = {p.pod for p in self.placements}
        out = {}
        for job in instance.jobs:
            keys = [p.key for p in job.pods]
            held = sum(1 for k in keys if k in bound)
            if held == 0 or held < job.min_available:
                out[job.key] = PENDING
            elif any(k in placed for k in keys):
                out[job.key] = ADMITTED
            else:
                out[job.key] = RUNNING
        return out

    def held_pods(self, instance: Instance) -> dict[str, Bound]:
        """Every pod on a node once the plan is applied: :meth:`bound_pods`, and the running
        pods of other schedulers, which hold their room whatever a plan says."""
        out = self.bound_pods(instance)
        for _, pod in instance.foreign_pods:
            assert pod.node is not None
            out[pod.key] = Bound(pod.key, pod.node, tuple(d for c in pod.gpus for d in c), True)
        return out

    def job(self, key: str) -> JobDecision | None:
        for decision in self.jobs:
            if decision.job == key:
                return decision
        return None

    # -- output ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The YAML/JSON document (DESIGN §4); empty optional sections are left out."""
        return writing.plan_document(self)

    def to_yaml(self) -> str:
        return writing.plan_yaml(self)

    def to_json(self) -> str:
        return writing.plan_json(self)

    def to_frame(self, instance: Instance) -> Any:
        """One row per pod of the instance: where it is after the plan and why."""
        return rendering.plan_frame(self, instance)

    def to_csv(self, instance: Instance) -> str:
        return rendering.plan_csv(self, instance)

    def annotations(self) -> dict[str, dict[str, str]]:
        """HAMi allocation annotations per placed pod that holds GPU devices (hami-gpu §6.1)."""
        return rendering.plan_annotations(self)

    def render(self, fmt: str, instance: Instance) -> str:
        """The plan in one of :data:`~optimizer.plan.render.FORMATS`."""
        return rendering.render(self, fmt, instance)

    def write(self, path: str | Path, fmt: str, instance: Instance) -> None:
        """Write atomically: a reader never sees a half-written plan."""
        write_atomic(path, rendering.render(self, fmt, instance))
