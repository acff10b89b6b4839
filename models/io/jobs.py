"""The ``jobs`` of a compact document: PodGroups, their tasks and the pods already running.

Reading a job resolves what its fields only name (a PriorityClass, a tier by its name), splits
a task's resources into what the node fit counts and what HAMi's device layer books, and
normalises its GPU request. Problems of the job's own fields are reported here, on the path
they are written at; rules that relate the job to other objects are checked on the finished
instance (:func:`models.instance.validate_instance`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..errors import Diagnostics, obj_name, shown_value
from ..golang import parse_go_duration, parse_int64
from ..gpu import GPU_RESOURCE_NAMES, GpuRequest, container_gpu_request, gpu_filter
from ..names import check_annotations, check_labels
from ..quantity import requirement_problems
from ..resources import NVIDIA_GPU, Resources
from ..selectors import LabelRequirement, LabelSelector, validate_label_selector
from ..topology import HyperNode, tiers_by_name
from ..vocabulary import TASK_SPEC, TOPOLOGY_HIGHEST_TIER, TOPOLOGY_MODE
from ..workload import (
    HARD,
    PENDING,
    RUNNING,
    TOPOLOGY_MODES,
    DeviceShare,
    Job,
    NetworkTopology,
    RunningPod,
    Task,
    Toleration,
    copied_to_pods,
    validate_toleration,
)
from . import affinity as a
from . import schema as s
from .errors import sub_problems
from .values import as_utc, read_datetime, read_resources

_DEVICE_ONLY = GPU_RESOURCE_NAMES - {
    NVIDIA_GPU,
    "volcano.sh/vgpu-number",
    "volcano.sh/vgpu-memory",
    "volcano.sh/vgpu-cores",
}
"""HAMi request names the device layer books; kube-scheduler never sees them as node resources."""
_GPU_PROBLEM = re.compile(r"^(limits|requests)\[([^\]]+)\]: (.*)$", re.DOTALL)
"""How ``container_gpu_request`` names the resource it refuses."""
_LOOKS_LIKE_TIME = re.compile(r"[0-9]{4}-")
"""An arrival written as a date: read as a time, never as a duration."""
_MAX_SECONDS = 9.2e9
"""Seconds a Go duration can hold (int64 nanoseconds): the bound on a number of seconds."""
_SHARE_LIST = TypeAdapter(list[s.DeviceShareIn])
_EXPRESSIONS = TypeAdapter(list[s.LabelExpressionIn])
_REQUIRED_AFFINITY = "nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
_AFFINITY_KINDS = ("nodeAffinity", "podAffinity", "podAntiAffinity")


class _Parsed:
    """A resource list both as written (for GPU request parsing) and in vcopt units.

    ``split`` tells whether the task wrote ``{requests, limits}`` or one flat list, so that
    messages can spell the path the way the file does.
    """

    __slots__ = ("raw", "resources", "split")

    def __init__(self, raw: Mapping[str, Any], resources: Resources, split: bool) -> None:
        self.raw = raw
        self.resources = resources
        self.split = split


class JobReader:
    """Builds the jobs of one document; ``classes`` are its PriorityClasses by name."""

    def __init__(
        self,
        diag: Diagnostics,
        classes: Mapping[str, int],
        default_class: int | None,
        hypernodes: Sequence[HyperNode],
    ) -> None:
        self.diag = diag
        self.classes = classes
        self.default_class = default_class
        self.tier_names = tiers_by_name(hypernodes)

    def jobs(self, raws: Sequence[s.JobIn]) -> tuple[Job, ...]:
        """The jobs in file order, each with its creation rank (``creationTimestamp``, then
        file order): Volcano's ordering fallback."""
        keyed = []
        for index, raw in enumerate(raws):
            job = self._job(raw)
            stamp = None
            if raw.creationTimestamp is not None:
                stamp = read_datetime(raw.creationTimestamp)
                if stamp is None:
                    self.diag.error(job_obj(raw), "creationTimestamp", "expected an RFC 3339 time")
            created = as_utc(stamp) if stamp else datetime.min.replace(tzinfo=UTC)
            keyed.append((created, index, job))
        keyed.sort(key=lambda t: (t[0], t[1]))
        rank = {id(job): order for order, (_, _, job) in enumerate(keyed)}
        return tuple(
            replace(job, order=rank[id(job)]) for _, _, job in sorted(keyed, key=lambda t: t[1])
        )

    def _job(self, raw: s.JobIn) -> Job:
        obj = job_obj(raw)
        check_labels(raw.labels, obj, "labels", self.diag)
        check_annotations(raw.annotations, obj, "annotations", self.diag)
        priority = self._priority(raw.priority, raw.priorityClassName, self.default_class, obj)
        tasks = self._tasks(raw, obj)
        replicas = sum(t.replicas for t in tasks)
        min_task_member = dict(raw.minTaskMember)
        for task in tasks:
            if task.min_available is not None:
                min_task_member.setdefault(task.role, task.min_available)
        running = self._running(raw, tasks)
        duration = self._span(raw.duration, obj, "duration")
        remaining = self._span(raw.remaining, obj, "remaining")
        return Job(
            name=raw.name,
            namespace=raw.namespace,
            queue=raw.queue,
            priority=priority,
            priority_class=raw.priorityClassName,
            min_available=raw.minAvailable if raw.minAvailable is not None else replicas,
            min_task_member=min_task_member,
            min_resources=(
                read_resources(raw.minResources, obj, "minResources", self.diag)
                if raw.minResources is not None
                else None
            ),
            network_topology=self._network_topology(raw, obj),
            labels=dict(raw.labels),
            annotations=dict(raw.annotations),
            duration=duration,
            arrival=self._arrival(raw.arrival, obj),
            started_at=self._instant(raw.startedAt, obj, "startedAt"),
            remaining=remaining,
            phase=raw.phase or (RUNNING if running else PENDING),
            tasks=tasks,
            running=running,
            scheduler_name=raw.schedulerName,
        )

    def _span(self, raw: str | float | None, obj: str, field: str) -> timedelta | None:
        """A non-negative run time: a Go duration, or seconds as a number."""
        if raw is None:
            return None
        if isinstance(raw, str):
            try:
                span = parse_go_duration(raw)
            except ValueError as err:
                self.diag.error(obj, field, str(err))
                return None
        elif not math.isfinite(raw) or abs(raw) > _MAX_SECONDS:
            self.diag.error(obj, field, f"{shown_value(raw)} is not a number of seconds")
            return None
        else:
            span = timedelta(seconds=raw)
        if span < timedelta(0):
            self.diag.error(obj, field, f"must not be negative, got {shown_value(raw)}")
            return None
        return span

    def _arrival(self, raw: object, obj: str) -> datetime | timedelta | None:
        """An RFC 3339 time, or a Go duration after ``now`` (not before it)."""
        if raw is None:
            return None
        if isinstance(raw, str) and not _LOOKS_LIKE_TIME.match(raw):
            try:
                offset = parse_go_duration(raw)
            except ValueError:
                offset = None
            if offset is not None and offset < timedelta(0):
                self.diag.error(obj, "arrival", f"must not be before now, got {shown_value(raw)}")
                return None
            if offset is not None:
                return offset
        return self._instant(raw, obj, "arrival", "or a Go duration after now such as 90m")

    def _instant(self, raw: object, obj: str, field: str, also: str = "") -> datetime | None:
        """An RFC 3339 time with its UTC offset, as an instant in UTC."""
        if raw is None:
            return None
        when = read_datetime(raw)
        expected = "an RFC 3339 time such as 2026-11-30T14:00:00Z" + (f", {also}" if also else "")
        if when is None:
            self.diag.error(obj, field, f"expected {expected}, got {shown_value(raw)}")
            return None
        if when.tzinfo is None or when.utcoffset() is None:
            self.diag.error(obj, field, f"{shown_value(raw)} needs a UTC offset (Z or +08:00)")
            return None
        return as_utc(when)

    def _priority(
        self,
        value: int | None,
        class_name: str,
        default_class: int | None,
        obj: str,
        field: str = "priorityClassName",
    ) -> int:
        if value is not None:
            return value
        if class_name:
            if class_name not in self.classes:
                self.diag.error(obj, field, f'PriorityClass "{class_name}" does not exist')
                return 0
            return self.classes[class_name]
        return default_class or 0

    def _network_topology(self, raw: s.JobIn, obj: str) -> NetworkTopology | None:
        """``spec.networkTopology``, or the PodGroup annotations that stand for it."""
        spec = raw.networkTopology
        if spec is None:
            return self._annotated_topology(raw, obj)
        tier = spec.highestTierAllowed
        if spec.highestTierName is not None:
            if tier is not None:
                self.diag.error(
                    obj, "networkTopology", "set highestTierAllowed or highestTierName, not both"
                )
            else:
                tier = self.tier_names.get(spec.highestTierName)
        return NetworkTopology(spec.mode, tier, spec.highestTierName)

    def _annotated_topology(self, raw: s.JobIn, obj: str) -> NetworkTopology | None:
        """The annotation form; a value that cannot be read is reported on its annotation and
        left out."""
        annotations = raw.annotations
        if TOPOLOGY_MODE not in annotations and TOPOLOGY_HIGHEST_TIER not in annotations:
            return None
        mode = annotations.get(TOPOLOGY_MODE, HARD)
        if mode not in TOPOLOGY_MODES:
            self.diag.error(obj, f"annotations.{TOPOLOGY_MODE}", "must be hard or soft")
            mode = HARD
        tier = None
        text = annotations.get(TOPOLOGY_HIGHEST_TIER)
        field = f"annotations.{TOPOLOGY_HIGHEST_TIER}"
        if text is not None:
            tier = parse_int64(text)
            if tier is None:
                self.diag.error(obj, field, f"expected an integer tier, got {shown_value(text)}")
        if tier is not None and tier < 0:
            self.diag.error(obj, field, "must not be negative")
            tier = None
        return NetworkTopology(mode, tier)

    # -- tasks ---------------------------------------------------------------------------

    def _tasks(self, raw: s.JobIn, obj: str) -> tuple[Task, ...]:
        tasks = raw.tasks or ()
        return tuple(self._task(raw, t, obj, f"tasks[{i}]") for i, t in enumerate(tasks))

    def _pod_names(self, t: s.TaskIn, obj: str, field: str) -> tuple[str, ...]:
        names = tuple(t.podNames)
        if names and len(names) != t.replicas:
            self.diag.error(
                obj, f"{field}.podNames", f"lists {len(names)} names for {t.replicas} replicas"
            )
            return ()
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            self.diag.error(obj, f"{field}.podNames", f"names {', '.join(repeated)} twice")
        return names

    def _task(self, job: s.JobIn, t: s.TaskIn, obj: str, field: str) -> Task:
        check_labels(t.labels, obj, f"{field}.labels", self.diag)
        check_annotations(t.annotations, obj, f"{field}.annotations", self.diag)
        check_labels(t.nodeSelector, obj, f"{field}.nodeSelector", self.diag)
        tolerations = tuple(Toleration(x.key, x.operator, x.value, x.effect) for x in t.tolerations)
        for i, (x, toleration) in enumerate(zip(t.tolerations, tolerations, strict=True)):
            validate_toleration(
                toleration, x.tolerationSeconds, obj, f"{field}.tolerations[{i}]", self.diag
            )
        errors = len(self.diag.errors)
        requests, limits = self._container(t.resources, obj, f"{field}.resources")
        resources = Resources(
            {k: v for k, v in requests.resources.items() if k not in _DEVICE_ONLY}
        )
        init = resources
        if t.initResources is not None:
            init = resources.max_dim(
                read_resources(
                    t.initResources, obj, f"{field}.initResources", self.diag, whole=True
                )
            )
        gpu: tuple[GpuRequest, ...] = ()
        if len(self.diag.errors) == errors:
            gpu = self._gpu_request(requests, limits, obj, f"{field}.resources")
        annotations, labels = dict(t.annotations), dict(t.labels)
        if job.copyAnnotations:
            copied, copied_labels = copied_to_pods(job.annotations, job.labels)
            annotations.update(copied)
            labels.update(copied_labels)
        return Task(
            name=t.name,
            replicas=t.replicas,
            resources=resources,
            init_resources=init,
            gpu=gpu,
            gpu_filter=gpu_filter(annotations) if gpu else None,
            priority=self._priority(
                t.priority, t.priorityClassName, None, obj, f"{field}.priorityClassName"
            ),
            preemption_policy=t.preemptionPolicy,
            role=_role(job, t),
            min_available=t.minAvailable,
            labels=labels,
            annotations=annotations,
            node_selector=dict(t.nodeSelector),
            required_affinity=self._affinity(t.affinity, obj, f"{field}.affinity"),
            tolerations=tolerations,
            pod_names=self._pod_names(t, obj, field),
            preferred_node_affinity=a.preferred_node_terms(
                (t.affinity or {}).get("nodeAffinity"), obj, f"{field}.affinity", self.diag
            ),
            pod_affinity=a.pod_affinity(
                t.affinity, "podAffinity", obj, f"{field}.affinity", self.diag
            ),
            pod_anti_affinity=a.pod_affinity(
                t.affinity, "podAntiAffinity", obj, f"{field}.affinity", self.diag
            ),
            spread=a.spread_constraints(
                t.topologySpreadConstraints, obj, f"{field}.topologySpreadConstraints", self.diag
            ),
        )

    def _gpu_request(
        self, requests: _Parsed, limits: _Parsed, obj: str, field: str
    ) -> tuple[GpuRequest, ...]:
        """The container's GPU request; a refusal is reported on the resource it names."""
        try:
            request = container_gpu_request(limits.raw, requests.raw)
        except ValueError as err:
            message = str(err)
            named = _GPU_PROBLEM.match(message)
            if named is None:
                self.diag.error(obj, field, message)
            else:
                source, name, rest = named.groups()
                where = f"{field}.{source}" if requests.split else field
                self.diag.error(obj, f"{where}.{name}", rest)
            return ()
        return (request,) if request is not None else ()

    def _container(self, raw: Mapping[str, Any], obj: str, field: str) -> tuple[_Parsed, _Parsed]:
        """A task's ``resources``: a flat list (requests = limits) or ``{requests, limits}``;
        as in Kubernetes, a limit without a request sets the request."""
        split = bool(
            raw
            and set(raw) <= {"requests", "limits"}
            and all(isinstance(v, Mapping) for v in raw.values())
        )
        if not split:
            flat = dict(raw)
            resources = read_resources(flat, obj, field, self.diag, whole=True)
            return _Parsed(flat, resources, split), _Parsed(flat, resources, split)
        limits_raw = dict(raw.get("limits") or {})
        requests_raw = dict(raw.get("requests") or {})
        limits = read_resources(limits_raw, obj, f"{field}.limits", self.diag, whole=True)
        requests = read_resources(requests_raw, obj, f"{field}.requests", self.diag, whole=True)
        for section, name, message in requirement_problems(requests_raw, limits_raw):
            self.diag.error(obj, f"{field}.{section}.{name}", message)
        merged = {**limits_raw, **requests_raw}
        amounts = dict(limits) | {name: requests.get(name) for name in requests_raw}
        return _Parsed(merged, Resources(amounts), split), _Parsed(limits_raw, limits, split)

    def _affinity(
        self, raw: Mapping[str, Any] | None, obj: str, field: str
    ) -> tuple[LabelSelector, ...]:
        """Required node affinity: its nodeSelectorTerms (the other parts of ``affinity`` are
        read by ``models.io.affinity``)."""
        if not raw:
            return ()
        node_affinity = raw.get("nodeAffinity") or {}
        for key in raw:
            if key not in _AFFINITY_KINDS:
                self.diag.error(obj, f"{field}.{key}", "unknown field")
        required = (
            node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
            if isinstance(node_affinity, Mapping)
            else None
        )
        if not required:
            return ()
        terms_raw = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
        if not isinstance(terms_raw, list) or not terms_raw:
            self.diag.error(
                obj,
                f"{field}.{_REQUIRED_AFFINITY}",
                "nodeSelectorTerms must be a non-empty list",
            )
            return ()
        terms = (
            self._term(term, obj, f"{field}.{_REQUIRED_AFFINITY}.nodeSelectorTerms[{i}]")
            for i, term in enumerate(terms_raw)
        )
        return tuple(term for term in terms if term is not None)

    def _term(self, term: object, obj: str, path: str) -> LabelSelector | None:
        if not isinstance(term, Mapping):
            self.diag.error(obj, path, "must be a mapping")
            return None
        try:
            exprs = _EXPRESSIONS.validate_python(term.get("matchExpressions") or [])
        except ValidationError as err:
            self.diag.errors.extend(sub_problems(err, obj, f"{path}.matchExpressions"))
            return None
        selector = LabelSelector(
            (), tuple(LabelRequirement(e.key, e.operator, tuple(e.values)) for e in exprs)
        )
        validate_label_selector(selector, obj, path, self.diag)
        return selector

    # -- running pods --------------------------------------------------------------------

    def _running(self, raw: s.JobIn, tasks: Sequence[Task]) -> tuple[RunningPod, ...]:
        """The pods already bound; a pod of a one-task job may leave its task out."""
        obj = job_obj(raw)
        only = tasks[0].name if len({t.name for t in tasks}) == 1 else ""
        out = []
        for i, r in enumerate(raw.running):
            shares = self._running_gpus(r.gpus, obj, f"running[{i}]")
            out.append(RunningPod(r.index, r.node, r.task or only, shares))
        return tuple(out)

    def _running_gpus(
        self, raw: object, obj: str, field: str
    ) -> tuple[tuple[DeviceShare, ...], ...]:
        """A flat list is a one-container pod; a list of lists gives one list per container."""
        if not raw:
            return ()
        nested = isinstance(raw, list) and all(isinstance(x, list) for x in raw)
        try:
            if nested:
                containers = [_SHARE_LIST.validate_python(c) for c in raw]  # type: ignore[union-attr]
            else:
                containers = [_SHARE_LIST.validate_python(raw)]
        except ValidationError as err:
            self.diag.errors.extend(sub_problems(err, obj, f"{field}.gpus"))
            return ()
        return tuple(tuple(DeviceShare(x.id, x.memory, x.cores) for x in c) for c in containers)


def job_obj(raw: s.JobIn) -> str:
    return obj_name("Job", raw.name, raw.namespace)


def _role(job: s.JobIn, t: s.TaskIn) -> str:
    """The task's role for ``minTaskMember``: its ``volcano.sh/task-spec`` annotation, else its
    name, except that a job keying ``minTaskMember`` by ``''`` puts unnamed tasks there."""
    if TASK_SPEC in t.annotations:
        return t.annotations[TASK_SPEC]
    if "" in job.minTaskMember and t.name not in job.minTaskMember:
        return ""
    return t.name
