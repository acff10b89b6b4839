"""Reading instance files into an :class:`~models.instance.Instance`.

Both input forms end here: the compact ``kind: Instance`` document is checked for shape by
``models.schema``, then every object is built and checked for meaning (quantities, references,
Volcano's CRD and webhook rules) while all problems are collected; the loader raises once with
all of them. A ``kubectl get -o yaml`` dump is first translated to the compact form by
``models.kube``, so the two forms cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, TypeAdapter, ValidationError

from . import schema as s
from .cluster import TAINT_EFFECTS, Node, Taint, with_gpu_allocatable
from .errors import Diagnostics, InputError, Problem, obj_name
from .gpu import (
    GPU_RESOURCE_NAMES,
    GpuDevice,
    container_gpu_request,
    gpu_filter,
    parse_hami_register,
    parse_volcano_register,
    shorthand_devices,
    validate_device,
)
from .instance import Instance
from .quantity import QuantityError
from .queues import Queue, validate_queues
from .resources import NVIDIA_GPU, Resources, parse_amount
from .scheduler_conf import parse_scheduler_conf
from .tdm import ZONE_LABEL, TdmConfig, node_zone, parse_go_duration
from .topology import (
    HyperNode,
    LabelRequirement,
    LabelSelector,
    Member,
    MemberSelector,
    validate_hypernodes,
    validate_label_selector,
)
from .workload import (
    JOB_PHASES,
    PENDING,
    RUNNING,
    TASK_SPEC,
    DeviceShare,
    Job,
    NetworkTopology,
    RunningPod,
    Task,
    Toleration,
)
from .yamlio import load_documents, read_text

API_VERSION = "vcopt/v1alpha1"
HAMI_REGISTER = "hami.io/node-nvidia-register"
VOLCANO_REGISTER = "volcano.sh/node-vgpu-register"
TOPOLOGY_MODE = "volcano.sh/network-topology-mode"
TOPOLOGY_TIER = "volcano.sh/network-topology-highest-tier"
DEFAULT_QUEUE = "default"
_DEVICE_ONLY = GPU_RESOURCE_NAMES - {
    NVIDIA_GPU,
    "volcano.sh/vgpu-number",
    "volcano.sh/vgpu-memory",
    "volcano.sh/vgpu-cores",
}
"""HAMi request names the device layer books; kube-scheduler never sees them as node resources."""

_KINDS = {
    "nodes": "Node",
    "nodeGroups": "NodeGroup",
    "hypernodes": "HyperNode",
    "queues": "Queue",
    "jobs": "Job",
    "priorityClasses": "PriorityClass",
}
_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "float_type": "a number",
    "datetime_type": "an RFC 3339 time",
    "datetime_parsing": "an RFC 3339 time",
}


def load(path: str | Path) -> Instance:
    """Load and validate one instance file (either form). Raises :class:`InputError`."""
    file = str(path)
    docs = load_documents(read_text(path), file)
    return from_documents(docs, file)


def loads(text: str, file: str = "<string>") -> Instance:
    return from_documents(load_documents(text, file), file)


def from_documents(docs: Sequence[object], file: str) -> Instance:
    """Pick the form from the documents' kinds and build the instance."""
    if not docs:
        raise InputError([Problem("empty file: expected a kind: Instance document", file=file)])
    first = docs[0]
    if len(docs) == 1 and isinstance(first, Mapping) and first.get("kind") == "Instance":
        return from_dict(first, file)
    from .kube import compact_from_objects

    compact, problems, warnings = compact_from_objects(docs, file)
    if problems:
        raise InputError([p.in_file(file) for p in problems])
    return from_dict(compact, file, warnings)


def from_dict(
    doc: Mapping[str, Any], file: str, extra_warnings: Sequence[Problem] = ()
) -> Instance:
    """Build an instance from a compact document (already parsed YAML)."""
    if not isinstance(doc, Mapping):
        raise InputError([Problem("expected a mapping with kind: Instance", file=file)])
    if doc.get("kind") != "Instance":
        raise InputError([Problem(f"kind: expected Instance, got {doc.get('kind')!r}", file=file)])
    if doc.get("apiVersion") != API_VERSION:
        got = doc.get("apiVersion")
        raise InputError([Problem(f"apiVersion: expected {API_VERSION}, got {got!r}", file=file)])
    normal = _unwrap_objects(doc)
    try:
        model = s.InstanceIn.model_validate(normal)
    except ValidationError as err:
        raise InputError([p.in_file(file) for p in _shape_problems(err, normal)]) from None
    diag = Diagnostics()
    diag.warnings.extend(extra_warnings)
    keys = list(normal)
    groups_first = "nodeGroups" in keys and (
        "nodes" not in keys or keys.index("nodeGroups") < keys.index("nodes")
    )
    instance = _Builder(model, diag, groups_first).build(file)
    diag.raise_if_errors(file)
    return instance.replace(warnings=tuple(w.in_file(file) for w in diag.warnings))


def _unwrap_objects(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Accept full custom resources (apiVersion/kind/metadata/spec) wherever the compact form
    takes ``name`` + spec fields, so objects can be pasted from kubectl."""
    out = dict(doc)
    for key in ("hypernodes", "queues", "priorityClasses"):
        items = out.get(key)
        if isinstance(items, list):
            out[key] = [_flatten(item) for item in items]
    return out


def _flatten(item: object) -> object:
    if not isinstance(item, Mapping) or "metadata" not in item:
        return item
    flat = {
        k: v
        for k, v in item.items()
        if k not in ("apiVersion", "kind", "metadata", "spec", "status")
    }
    metadata = item.get("metadata") or {}
    if isinstance(metadata, Mapping) and "name" in metadata:
        flat["name"] = metadata["name"]
    spec = item.get("spec") or {}
    if isinstance(spec, Mapping):
        flat.update(spec)
    status = item.get("status")
    if isinstance(status, Mapping) and isinstance(status.get("state"), str) and "state" not in flat:
        flat["state"] = status["state"]
    return flat


def _shape_problems(err: ValidationError, doc: Mapping[str, Any]) -> list[Problem]:
    problems = []
    for e in err.errors():
        loc = list(e["loc"])
        obj = ""
        if len(loc) >= 2 and loc[0] in _KINDS and isinstance(loc[1], int):
            items = doc.get(str(loc[0])) or []
            item = items[loc[1]] if loc[1] < len(items) else {}
            name = ""
            if isinstance(item, Mapping):
                name = str(item.get("name") or item.get("namePrefix") or "")
                namespace = item.get("namespace", "default") if loc[0] == "jobs" else ""
                name = f"{namespace}/{name}" if namespace and name else name
            obj = f'{_KINDS[str(loc[0])]} "{name}"' if name else f"{loc[0]}[{loc[1]}]"
            loc = loc[2:]
        problems.append(Problem(_message(e), obj, _path(loc)))
    return problems


def _path(loc: Sequence[object]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _message(e: Mapping[str, Any]) -> str:
    kind = e["type"]
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {e.get('input')!r}"
    return str(e["msg"]).lower()


def _sub_problems(err: ValidationError, obj: str, prefix: str) -> list[Problem]:
    return [
        Problem(_message(e), obj, _path([prefix, *e["loc"]]) if prefix else _path(e["loc"]))
        for e in err.errors()
    ]


class _Builder:
    """Turns the checked shape into domain objects, collecting problems of meaning."""

    def __init__(self, model: s.InstanceIn, diag: Diagnostics, groups_first: bool) -> None:
        self.m = model
        self.diag = diag
        self.groups_first = groups_first
        """Nodes keep file order: Volcano walks nodes in the order its cache received them."""

    def build(self, file: str) -> Instance:
        m = self.m
        timezone = self._timezone()
        scheduler = parse_scheduler_conf(_plain(m.scheduler), "scheduler", self.diag)
        classes, default_class = self._priority_classes()
        nodes = self._nodes()
        node_labels = {n.name: n.labels for n in nodes}
        hypernodes = tuple(self._hypernode(h) for h in m.hypernodes)
        validate_hypernodes(hypernodes, node_labels, self.diag)
        jobs = self._jobs(classes, default_class, {n.name: n for n in nodes}, hypernodes)
        queues = self._queues(jobs)
        self._tdm(scheduler, nodes)
        return Instance(
            name=m.metadata.name or Path(file).stem,
            now=self._now(timezone),
            timezone=timezone,
            scheduler=scheduler,
            priority_classes=classes,
            nodes=nodes,
            hypernodes=hypernodes,
            queues=queues,
            jobs=jobs,
            source=file,
        )

    def _timezone(self) -> str:
        try:
            ZoneInfo(self.m.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            self.diag.error("", "timezone", f"unknown IANA time zone {self.m.timezone!r}")
            return "UTC"
        return self.m.timezone

    def _now(self, timezone: str) -> datetime:
        raw = self.m.now
        if raw is None:
            self.diag.warn("", "now", "not set: TDM windows are read at the current time")
            return datetime.now(UTC).replace(microsecond=0)
        when = _datetime(raw)
        if when is None:
            self.diag.error(
                "", "now", f"expected an RFC 3339 time such as 2026-11-30T14:00:00Z, got {raw!r}"
            )
            return datetime.now(UTC)
        if when.tzinfo is None:
            when = when.replace(tzinfo=ZoneInfo(timezone))
        return when

    def _resources(self, raw: Mapping[str, Any] | None, obj: str, field: str) -> Resources:
        out: dict[str, int] = {}
        for name, value in (raw or {}).items():
            try:
                amount = parse_amount(name, value)
            except QuantityError as err:
                self.diag.error(obj, f"{field}.{name}", str(err))
                continue
            if amount < 0:
                self.diag.error(obj, f"{field}.{name}", f"must not be negative, got {value!r}")
                continue
            out[name] = amount
        return Resources(out)

    def _priority_classes(self) -> tuple[dict[str, int], int | None]:
        classes: dict[str, int] = {}
        default: int | None = None
        for pc in self.m.priorityClasses:
            obj = obj_name("PriorityClass", pc.name)
            if pc.name in classes:
                self.diag.error(obj, "name", "duplicate PriorityClass name")
            classes[pc.name] = pc.value
            if pc.globalDefault:
                if default is not None:
                    self.diag.error(
                        obj, "globalDefault", "only one PriorityClass may be the global default"
                    )
                default = pc.value
        return classes, default

    # -- nodes ---------------------------------------------------------------------------

    def _nodes(self) -> tuple[Node, ...]:
        seen: set[str] = set()
        listed = [self._node(raw.name, raw, raw.gpus) for raw in self.m.nodes]
        grouped = []
        for group in self.m.nodeGroups:
            width = max(3, len(str(group.start + group.count - 1)))
            for i in range(group.start, group.start + group.count):
                grouped.append(self._node(f"{group.namePrefix}{i:0{width}d}", group, group.gpus))
        nodes = [*grouped, *listed] if self.groups_first else [*listed, *grouped]
        for node in nodes:
            if node.name in seen:
                self.diag.error(obj_name("Node", node.name), "name", "duplicate node name")
            seen.add(node.name)
        return tuple(nodes)

    def _node(self, name: str, raw: s.NodeIn | s.NodeGroupIn, gpus_raw: object) -> Node:
        obj = obj_name("Node", name)
        allocatable = self._resources(raw.allocatable, obj, "allocatable")
        taints = []
        for i, t in enumerate(raw.taints):
            if t.effect not in TAINT_EFFECTS:
                self.diag.error(
                    obj, f"taints[{i}].effect", f"must be one of {', '.join(TAINT_EFFECTS)}"
                )
            taints.append(Taint(t.key, t.value, t.effect))
        gpus = self._gpus(name, obj, gpus_raw, raw.annotations)
        return Node(
            name=name,
            allocatable=with_gpu_allocatable(allocatable, gpus),
            labels=dict(raw.labels),
            annotations=dict(raw.annotations),
            taints=tuple(taints),
            unschedulable=raw.unschedulable,
            gpus=gpus,
        )

    def _gpus(
        self, name: str, obj: str, raw: object, annotations: Mapping[str, str]
    ) -> tuple[GpuDevice, ...]:
        devices: tuple[GpuDevice, ...] = ()
        if isinstance(raw, Mapping | s.GpuShorthandIn):
            try:
                short = s.GpuShorthandIn.model_validate(raw)
            except ValidationError as err:
                self.diag.errors.extend(_sub_problems(err, obj, "gpus"))
                return ()
            devices = shorthand_devices(
                name, short.count, short.type, short.memory, split=short.split, cores=short.cores
            )
        elif isinstance(raw, list):
            try:
                listed = _DEVICE_LIST.validate_python(raw)
            except ValidationError as err:
                self.diag.errors.extend(_sub_problems(err, obj, "gpus"))
                return ()
            devices = tuple(
                GpuDevice(
                    d.id, d.index, d.type, d.memory, d.cores, d.count, d.numa, d.health, d.mode
                )
                for d in listed
            )
        elif raw is not None:
            self.diag.error(obj, "gpus", "expected a list of devices or {count, type, memory}")
        else:
            for key, parse in (
                (HAMI_REGISTER, parse_hami_register),
                (VOLCANO_REGISTER, parse_volcano_register),
            ):
                if key in annotations:
                    try:
                        devices = parse(annotations[key])
                    except ValueError as err:
                        self.diag.error(obj, f"annotations.{key}", str(err))
                    break
        ids: set[str] = set()
        for i, dev in enumerate(devices):
            validate_device(dev, obj, f"gpus[{i}]", self.diag)
            if dev.id in ids:
                self.diag.error(obj, f"gpus[{i}].id", f"duplicate GPU id {dev.id!r}")
            ids.add(dev.id)
        return devices

    # -- topology ------------------------------------------------------------------------

    def _hypernode(self, h: s.HyperNodeIn) -> HyperNode:
        members = []
        for m in h.members:
            sel = m.selector
            label = _label_selector(sel.labelMatch) if sel.labelMatch is not None else None
            members.append(
                Member(
                    m.type,
                    MemberSelector(
                        sel.exactMatch.name if sel.exactMatch is not None else None,
                        sel.regexMatch.pattern if sel.regexMatch is not None else None,
                        label,
                    ),
                )
            )
        return HyperNode(h.name, h.tier, h.tierName, tuple(members))

    # -- queues --------------------------------------------------------------------------

    def _queues(self, jobs: Sequence[Job]) -> tuple[Queue, ...]:
        queues = []
        for order, q in enumerate(self.m.queues):
            obj = obj_name("Queue", q.name)
            guarantee = q.guarantee
            if set(guarantee) == {"resource"} and isinstance(guarantee["resource"], Mapping):
                guarantee = guarantee["resource"]
            for key in ("affinity", "type", "extendClusters"):
                if getattr(q, key) is not None:
                    self.diag.warn(obj, key, "not modelled by vcopt; ignored")
            queues.append(
                Queue(
                    name=q.name,
                    parent=q.parent,
                    weight=q.weight,
                    priority=q.priority,
                    deserved=self._resources(q.deserved, obj, "deserved"),
                    capability=self._resources(q.capability, obj, "capability"),
                    guarantee=self._resources(guarantee, obj, "guarantee"),
                    reclaimable=q.reclaimable,
                    state=q.state,
                    order=order,
                )
            )
        names = {q.name for q in queues}
        job_queues: dict[str, int] = {}
        for job in jobs:
            job_queues[job.queue] = job_queues.get(job.queue, 0) + 1
        if DEFAULT_QUEUE in job_queues and DEFAULT_QUEUE not in names:
            queues.append(Queue(name=DEFAULT_QUEUE, order=len(queues)))
            names.add(DEFAULT_QUEUE)
        for job in jobs:
            if job.queue not in names and job.queue != "root":
                self.diag.error(
                    obj_name("Job", job.name, job.namespace),
                    "queue",
                    f"queue {job.queue!r} does not exist",
                )
        validate_queues(queues, job_queues, self.diag)
        return tuple(queues)

    # -- jobs ----------------------------------------------------------------------------

    def _jobs(
        self,
        classes: Mapping[str, int],
        default_class: int | None,
        nodes: Mapping[str, Node],
        hypernodes: Sequence[HyperNode],
    ) -> tuple[Job, ...]:
        tier_names = {h.tierName: h.tier for h in self.m.hypernodes if h.tierName}
        keyed = []
        seen: set[str] = set()
        for index, raw in enumerate(self.m.jobs):
            job = self._job(raw, classes, default_class, nodes, tier_names)
            if job.key in seen:
                self.diag.error(
                    obj_name("Job", raw.name, raw.namespace),
                    "name",
                    "duplicate job name in namespace",
                )
            seen.add(job.key)
            stamp = _datetime(raw.creationTimestamp) if raw.creationTimestamp is not None else None
            if raw.creationTimestamp is not None and stamp is None:
                self.diag.error(job_obj(raw), "creationTimestamp", "expected an RFC 3339 time")
            keyed.append(
                ((_as_utc(stamp) if stamp else datetime.min.replace(tzinfo=UTC)), index, job)
            )
        keyed.sort(key=lambda t: (t[0], t[1]))
        rank = {id(job): order for order, (_, _, job) in enumerate(keyed)}
        return tuple(
            _with_order(job, rank[id(job)]) for _, _, job in sorted(keyed, key=lambda t: t[1])
        )

    def _job(
        self,
        raw: s.JobIn,
        classes: Mapping[str, int],
        default_class: int | None,
        nodes: Mapping[str, Node],
        tier_names: Mapping[str, int],
    ) -> Job:
        obj = job_obj(raw)
        priority = self._priority(raw.priority, raw.priorityClassName, classes, default_class, obj)
        tasks = self._tasks(raw, obj, classes)
        replicas = sum(t.replicas for t in tasks)
        min_available = raw.minAvailable if raw.minAvailable is not None else replicas
        if min_available < 0:
            self.diag.error(obj, "minAvailable", "must not be negative")
        elif min_available > replicas:
            self.diag.error(
                obj, "minAvailable", f"{min_available} is more than the job's {replicas} replicas"
            )
        min_task_member = dict(raw.minTaskMember)
        for task in tasks:
            if task.min_available is not None:
                min_task_member.setdefault(task.role, task.min_available)
        for role, count in min_task_member.items():
            if count < 0:
                self.diag.error(obj, f"minTaskMember.{role}", "must not be negative")
        min_resources = (
            self._resources(raw.minResources, obj, "minResources")
            if raw.minResources is not None
            else None
        )
        running = self._running(raw, obj, tasks, nodes)
        phase = raw.phase or (RUNNING if running else PENDING)
        if phase not in JOB_PHASES:
            self.diag.error(obj, "phase", f"must be one of {', '.join(JOB_PHASES)}")
        duration = None
        if raw.duration is not None:
            try:
                duration = parse_go_duration(raw.duration)
            except ValueError as err:
                self.diag.error(obj, "duration", str(err))
        return Job(
            name=raw.name,
            namespace=raw.namespace,
            queue=raw.queue,
            priority=priority,
            priority_class=raw.priorityClassName,
            min_available=min_available,
            min_task_member=min_task_member,
            min_resources=min_resources,
            network_topology=self._network_topology(raw, obj, tier_names),
            labels=dict(raw.labels),
            annotations=dict(raw.annotations),
            duration=duration,
            phase=phase,
            tasks=tasks,
            running=running,
        )

    def _priority(
        self,
        value: int | None,
        class_name: str,
        classes: Mapping[str, int],
        default_class: int | None,
        obj: str,
        field: str = "priorityClassName",
    ) -> int:
        if value is not None:
            return value
        if class_name:
            if class_name not in classes:
                self.diag.error(obj, field, f"PriorityClass {class_name!r} does not exist")
                return 0
            return classes[class_name]
        return default_class or 0

    def _network_topology(
        self, raw: s.JobIn, obj: str, tier_names: Mapping[str, int]
    ) -> NetworkTopology | None:
        spec = raw.networkTopology
        mode, tier, tier_name = None, None, None
        if spec is not None:
            mode, tier, tier_name = spec.mode, spec.highestTierAllowed, spec.highestTierName
            field = "networkTopology"
        elif TOPOLOGY_MODE in raw.annotations or TOPOLOGY_TIER in raw.annotations:
            mode = raw.annotations.get(TOPOLOGY_MODE, "hard")
            field = f"annotations.{TOPOLOGY_TIER}"
            text = raw.annotations.get(TOPOLOGY_TIER)
            if text is not None:
                try:
                    tier = int(text)
                except ValueError:
                    self.diag.error(obj, field, f"expected an integer tier, got {text!r}")
        else:
            return None
        if mode not in ("hard", "soft"):
            self.diag.error(
                obj,
                f"{field}.mode" if spec else f"annotations.{TOPOLOGY_MODE}",
                "must be hard or soft",
            )
        if tier is not None and tier < 0:
            self.diag.error(obj, f"{field}.highestTierAllowed", "must not be negative")
        if tier_name is not None:
            if tier is not None:
                self.diag.error(obj, field, "set highestTierAllowed or highestTierName, not both")
            elif tier_name in tier_names:
                tier = tier_names[tier_name]
            else:
                self.diag.warn(
                    obj,
                    f"{field}.highestTierName",
                    f"no HyperNode has tierName {tier_name!r}; Volcano ignores the limit",
                )
        return NetworkTopology(mode or "hard", tier, tier_name)

    def _tasks(self, raw: s.JobIn, obj: str, classes: Mapping[str, int]) -> tuple[Task, ...]:
        tasks = []
        names: set[str] = set()
        for i, t in enumerate(raw.tasks):
            field = f"tasks[{i}]"
            if t.name in names:
                self.diag.error(obj, f"{field}.name", f"duplicate task name {t.name!r}")
            names.add(t.name)
            requests, limits = self._container(t.resources, obj, f"{field}.resources")
            resources = Resources(
                {k: v for k, v in requests.resources.items() if k not in _DEVICE_ONLY}
            )
            init = resources
            if t.initResources is not None:
                init = resources.max_dim(
                    self._resources(t.initResources, obj, f"{field}.initResources")
                )
            gpu = ()
            try:
                request = container_gpu_request(limits.raw, requests.raw)
                gpu = (request,) if request is not None else ()
            except ValueError as err:
                self.diag.error(obj, f"{field}.resources", str(err))
            if t.minAvailable is not None and not 0 <= t.minAvailable <= t.replicas:
                self.diag.error(
                    obj, f"{field}.minAvailable", f"must be between 0 and replicas ({t.replicas})"
                )
            role = t.annotations.get(TASK_SPEC, t.name)
            if (
                TASK_SPEC not in t.annotations
                and "" in raw.minTaskMember
                and t.name not in raw.minTaskMember
            ):
                role = ""
            tasks.append(
                Task(
                    name=t.name,
                    replicas=t.replicas,
                    resources=resources,
                    init_resources=init,
                    gpu=gpu,
                    gpu_filter=gpu_filter(t.annotations) if gpu else None,
                    priority=self._priority(
                        t.priority,
                        t.priorityClassName,
                        classes,
                        None,
                        obj,
                        f"{field}.priorityClassName",
                    ),
                    preemption_policy=t.preemptionPolicy,
                    role=role,
                    min_available=t.minAvailable,
                    labels=dict(t.labels),
                    annotations=dict(t.annotations),
                    node_selector=dict(t.nodeSelector),
                    required_affinity=self._affinity(t.affinity, obj, f"{field}.affinity"),
                    tolerations=tuple(
                        Toleration(x.key, x.operator, x.value, x.effect) for x in t.tolerations
                    ),
                )
            )
            if t.preemptionPolicy not in ("PreemptLowerPriority", "Never"):
                self.diag.error(
                    obj, f"{field}.preemptionPolicy", "must be PreemptLowerPriority or Never"
                )
            for j, tol in enumerate(t.tolerations):
                if tol.operator not in ("Equal", "Exists"):
                    self.diag.error(
                        obj, f"{field}.tolerations[{j}].operator", "must be Equal or Exists"
                    )
        return tuple(tasks)

    def _container(self, raw: Mapping[str, Any], obj: str, field: str) -> tuple[_Parsed, _Parsed]:
        """A task's ``resources``: a flat list (requests = limits) or ``{requests, limits}``;
        as in Kubernetes, a limit without a request sets the request."""
        if (
            raw
            and set(raw) <= {"requests", "limits"}
            and all(isinstance(v, Mapping) for v in raw.values())
        ):
            limits_raw = dict(raw.get("limits") or {})
            requests_raw = {**limits_raw, **dict(raw.get("requests") or {})}
        else:
            limits_raw = requests_raw = dict(raw)
        requests = _Parsed(requests_raw, self._resources(requests_raw, obj, field))
        return requests, _Parsed(limits_raw, Resources())

    def _affinity(
        self, raw: Mapping[str, Any] | None, obj: str, field: str
    ) -> tuple[LabelSelector, ...]:
        if not raw:
            return ()
        node_affinity = raw.get("nodeAffinity") or {}
        for key in raw:
            if key != "nodeAffinity":
                self.diag.warn(
                    obj, f"{field}.{key}", "pod (anti-)affinity is not modelled; ignored"
                )
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
                f"{field}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms must be a non-empty list",
            )
            return ()
        terms = []
        adapter = TypeAdapter(list[s.LabelExpressionIn])
        for i, term in enumerate(terms_raw):
            path = f"{field}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]"
            if not isinstance(term, Mapping):
                self.diag.error(obj, path, "must be a mapping")
                continue
            try:
                exprs = adapter.validate_python(term.get("matchExpressions") or [])
            except ValidationError as err:
                self.diag.errors.extend(_sub_problems(err, obj, f"{path}.matchExpressions"))
                continue
            selector = LabelSelector(
                (), tuple(LabelRequirement(e.key, e.operator, tuple(e.values)) for e in exprs)
            )
            validate_label_selector(selector, obj, path, self.diag)
            terms.append(selector)
        return tuple(terms)

    def _running(
        self, raw: s.JobIn, obj: str, tasks: Sequence[Task], nodes: Mapping[str, Node]
    ) -> tuple[RunningPod, ...]:
        out = []
        seen: set[tuple[str, int]] = set()
        by_name = {t.name: t for t in tasks}
        for i, r in enumerate(raw.running):
            field = f"running[{i}]"
            task_name = r.task
            if task_name is None:
                if len(tasks) > 1:
                    self.diag.error(obj, f"{field}.task", "required when the job has several tasks")
                    continue
                task_name = tasks[0].name
            task = by_name.get(task_name)
            if task is None:
                self.diag.error(
                    obj, f"{field}.task", f"task {task_name!r} does not exist in this job"
                )
                continue
            if r.index >= task.replicas:
                self.diag.error(
                    obj,
                    f"{field}.index",
                    f"{r.index} is not below the task's {task.replicas} replicas",
                )
            if (task_name, r.index) in seen:
                self.diag.error(
                    obj, f"{field}.index", f"pod {task_name}[{r.index}] is listed twice"
                )
            seen.add((task_name, r.index))
            node = nodes.get(r.node)
            if node is None:
                self.diag.error(obj, f"{field}.node", f"node {r.node!r} does not exist")
                continue
            containers = self._running_gpus(r.gpus, obj, field)
            shares = []
            for c, container in enumerate(containers):
                for d, share in enumerate(container):
                    path = f"{field}.gpus[{c}][{d}]"
                    dev = node.device(share.id)
                    if dev is None:
                        self.diag.error(
                            obj, f"{path}.id", f"node {node.name} has no GPU {share.id!r}"
                        )
                    elif (
                        share.memory > dev.memory
                        or share.cores > dev.cores
                        or min(share.memory, share.cores) < 0
                    ):
                        self.diag.error(
                            obj,
                            path,
                            f"memory {share.memory} / cores {share.cores} exceed GPU "
                            f"{dev.id} ({dev.memory} MiB, {dev.cores} cores)",
                        )
                shares.append(tuple(DeviceShare(x.id, x.memory, x.cores) for x in container))
            out.append(RunningPod(r.index, r.node, task_name, tuple(shares)))
        return tuple(out)

    def _running_gpus(self, raw: object, obj: str, field: str) -> list[list[s.DeviceShareIn]]:
        """A flat list is a one-container pod; a list of lists gives one list per container."""
        if not raw:
            return []
        nested = isinstance(raw, list) and all(isinstance(x, list) for x in raw)
        try:
            if nested:
                return [_SHARE_LIST.validate_python(c) for c in raw]  # type: ignore[union-attr]
            return [_SHARE_LIST.validate_python(raw)]
        except ValidationError as err:
            self.diag.errors.extend(_sub_problems(err, obj, f"{field}.gpus"))
            return []

    # -- TDM -----------------------------------------------------------------------------

    def _tdm(self, scheduler: object, nodes: Sequence[Node]) -> None:
        plugin = scheduler.plugin("tdm")  # type: ignore[attr-defined]
        zones = {}
        if plugin is not None:
            zones = TdmConfig.from_arguments(plugin.arguments, "scheduler", self.diag).zones
        for node in nodes:
            zone = node_zone(node.labels)
            if zone and zone not in zones:
                message = f"revocable zone {zone!r} is not configured (tdm.revocable-zone.{zone})"
                if plugin is not None:
                    self.diag.error(obj_name("Node", node.name), f"labels.{ZONE_LABEL}", message)
                else:
                    self.diag.warn(
                        obj_name("Node", node.name),
                        f"labels.{ZONE_LABEL}",
                        "the tdm plugin is not configured, so this label has no effect",
                    )


_DEVICE_LIST = TypeAdapter(list[s.GpuDeviceIn])
_SHARE_LIST = TypeAdapter(list[s.DeviceShareIn])


class _Parsed:
    """A resource list both as written (for GPU request parsing) and in vcopt units."""

    __slots__ = ("raw", "resources")

    def __init__(self, raw: Mapping[str, Any], resources: Resources) -> None:
        self.raw = raw
        self.resources = resources


def job_obj(raw: s.JobIn) -> str:
    return obj_name("Job", raw.name, raw.namespace)


def _label_selector(raw: s.LabelSelectorIn) -> LabelSelector:
    return LabelSelector(
        tuple(sorted(raw.matchLabels.items())),
        tuple(LabelRequirement(e.key, e.operator, tuple(e.values)) for e in raw.matchExpressions),
    )


def _datetime(raw: object) -> datetime | None:
    if isinstance(raw, datetime):
        return raw
    if isinstance(raw, str):
        try:
            return datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def _as_utc(when: datetime) -> datetime:
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)


def _with_order(job: Job, order: int) -> Job:
    return replace(job, order=order)


def _plain(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump()
    return value
