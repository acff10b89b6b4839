"""Reading instance files into an :class:`~models.instance.Instance`.

Both input forms end here: the compact ``kind: Instance`` document is checked for shape by
``models.schema``, then every object is built and checked for meaning (quantities, references,
Volcano's CRD and webhook rules) while all problems are collected; the loader raises once with
all of them. A ``kubectl get -o yaml`` dump is first translated to the compact form by
``models.kube``, so the two forms cannot drift apart.
"""

from __future__ import annotations

import re
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
    GpuRequest,
    container_gpu_request,
    gpu_filter,
    parse_hami_register,
    parse_volcano_register,
    shorthand_devices,
    validate_device,
)
from .instance import Instance
from .quantity import QuantityError
from .queues import DEFAULT_QUEUE, ROOT, Queue, validate_queues
from .resources import NVIDIA_GPU, Resources, parse_amount
from .scheduler_conf import SchedulerConf, parse_scheduler_conf
from .tdm import ZONE_ARG_PREFIX, ZONE_LABEL, TdmConfig, node_zone, parse_go_duration
from .topology import (
    HyperNode,
    LabelRequirement,
    LabelSelector,
    Member,
    MemberSelector,
    tiers_by_name,
    validate_hypernodes,
    validate_label_selector,
)
from .vocabulary import (
    API_GROUP,
    API_VERSION,
    DEFAULT_NAMESPACE,
    HAMI_REGISTER,
    TASK_SPEC,
    TOPOLOGY_HIGHEST_TIER,
    TOPOLOGY_MODE,
    VOLCANO_REGISTER,
)
from .workload import (
    JOB_PHASES,
    PENDING,
    RUNNING,
    DeviceShare,
    Job,
    NetworkTopology,
    RunningPod,
    Task,
    Toleration,
)
from .yamlio import load_documents, read_text

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
    """Pick the form from the documents and build the instance.

    A document of vcopt's own API group (or of kind Instance) makes a compact file, which holds
    exactly that one document; anything else is read as Kubernetes objects.
    """
    if not docs:
        raise InputError([Problem("empty file: expected a kind: Instance document", file=file)])
    for number, doc in enumerate(docs, 1):
        if not isinstance(doc, Mapping):
            where = f"document {number}: " if len(docs) > 1 else ""
            raise InputError(
                [
                    Problem(
                        f"{where}expected a mapping (a kind: Instance document or Kubernetes "
                        f"objects), got {_type_name(doc)}",
                        file=file,
                    )
                ]
            )
    compact = [doc for doc in docs if _is_compact(doc)]  # type: ignore[arg-type]
    if compact and len(docs) > 1:
        raise InputError(
            [
                Problem(
                    f"an instance file holds one kind: Instance document, found {len(docs)} "
                    "documents",
                    file=file,
                )
            ]
        )
    if compact:
        return from_dict(compact[0], file)  # type: ignore[arg-type]
    missing = [n for n, doc in enumerate(docs, 1) if "kind" not in doc]  # type: ignore[operator]
    if missing:
        where = f"document {missing[0]}: " if len(docs) > 1 else ""
        raise InputError(
            [Problem(f"{where}required field is missing (expected Instance)", "", "kind", file)]
        )
    from .kube import compact_from_objects

    compact_doc, problems, warnings = compact_from_objects(docs, file)
    if problems:
        raise InputError([p.in_file(file) for p in problems])
    return from_dict(compact_doc, file, warnings)


def _is_compact(doc: Mapping[str, Any]) -> bool:
    api_version = doc.get("apiVersion")
    return doc.get("kind") == "Instance" or (
        isinstance(api_version, str) and api_version.split("/")[0] == API_GROUP
    )


def _type_name(value: object) -> str:
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    if isinstance(value, list):
        return "a list"
    return f"the value {value!r}"


def from_dict(
    doc: Mapping[str, Any], file: str, extra_warnings: Sequence[Problem] = ()
) -> Instance:
    """Build an instance from a compact document (already parsed YAML)."""
    if not isinstance(doc, Mapping):
        raise InputError([Problem("expected a mapping with kind: Instance", file=file)])
    if doc.get("kind") != "Instance":
        raise InputError([Problem(f"expected Instance, got {doc.get('kind')!r}", "", "kind", file)])
    if doc.get("apiVersion") != API_VERSION:
        got = doc.get("apiVersion")
        raise InputError([Problem(f"expected {API_VERSION}, got {got!r}", "", "apiVersion", file)])
    name = _instance_name(doc, file)
    instance_obj = obj_name("Instance", name)
    normal = _unwrap_objects(doc)
    try:
        model = s.InstanceIn.model_validate(normal)
    except ValidationError as err:
        problems = _shape_problems(err, normal, doc, instance_obj)
        raise InputError([p.in_file(file) for p in problems]) from None
    diag = Diagnostics()
    diag.warnings.extend(extra_warnings)
    keys = list(normal)
    groups_first = "nodeGroups" in keys and (
        "nodes" not in keys or keys.index("nodeGroups") < keys.index("nodes")
    )
    instance = _Builder(model, diag, groups_first, name).build(file)
    diag.raise_if_errors(file)
    return instance.replace(warnings=tuple(w.in_file(file) for w in diag.warnings))


def _instance_name(doc: Mapping[str, Any], file: str) -> str:
    """``metadata.name``, or the file name without its suffix when there is none."""
    metadata = doc.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return name if isinstance(name, str) and name else Path(file).stem


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


def _shape_problems(
    err: ValidationError, doc: Mapping[str, Any], written: Mapping[str, Any], instance_obj: str
) -> list[Problem]:
    """Pydantic's errors on ``doc`` (objects unwrapped), named as ``written`` spells them."""
    problems = []
    for e in err.errors():
        loc = list(e["loc"])
        obj = instance_obj
        if len(loc) >= 2 and loc[0] in _KINDS and isinstance(loc[1], int):
            items = doc.get(str(loc[0])) or []
            item = items[loc[1]] if loc[1] < len(items) else {}
            name = ""
            if isinstance(item, Mapping):
                name = str(item.get("name") or item.get("namePrefix") or "")
                namespace = item.get("namespace", DEFAULT_NAMESPACE) if loc[0] == "jobs" else ""
                name = f"{namespace}/{name}" if namespace and name else name
            obj = f'{_KINDS[str(loc[0])]} "{name}"' if name else f"{loc[0]}[{loc[1]}]"
            original = (written.get(str(loc[0])) or [])[loc[1]]
            loc = _where_written(original, loc[2:])
        problems.append(Problem(_message(e), obj, _path(loc)))
    return problems


def _where_written(original: object, loc: list[Any]) -> list[Any]:
    """The location inside a full custom resource of a field that ``_flatten`` lifted."""
    if not loc or not isinstance(original, Mapping) or "metadata" not in original:
        return loc
    spec = original.get("spec")
    if loc[0] == "name":
        return ["metadata", *loc]
    if isinstance(spec, Mapping) and loc[0] in spec:
        return ["spec", *loc]
    if loc[0] == "state" and loc[0] not in original:
        return ["status", *loc]
    return loc


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

    def __init__(
        self, model: s.InstanceIn, diag: Diagnostics, groups_first: bool, name: str
    ) -> None:
        self.m = model
        self.diag = diag
        self.groups_first = groups_first
        """Nodes keep file order: Volcano walks nodes in the order its cache received them."""
        self.name = name
        self.obj = obj_name("Instance", name)
        """How messages name the instance itself, for its top-level fields."""
        self.bad_devices: set[tuple[str, str]] = set()
        """(node, GPU id) of devices already reported, so pods on them are not reported again."""
        self.unread_gpus: set[str] = set()
        """Nodes whose GPU inventory is already reported as unreadable."""
        self.device_use: dict[tuple[str, str], list[int]] = {}
        self.hypernodes: tuple[HyperNode, ...] = ()
        """(node, GPU id) → [memory, cores, pods] held by the running pods read so far."""

    def build(self, file: str) -> Instance:
        m = self.m
        timezone = self._timezone()
        scheduler = parse_scheduler_conf(_plain(m.scheduler), self.obj, self.diag, "scheduler")
        classes, default_class = self._priority_classes()
        nodes = self._nodes()
        by_name: dict[str, Node] = {}
        for node in nodes:
            by_name.setdefault(node.name, node)
        hypernodes = tuple(self._hypernode(h) for h in m.hypernodes)
        self.hypernodes = hypernodes
        validate_hypernodes(hypernodes, {n.name: n.labels for n in by_name.values()}, self.diag)
        jobs = self._jobs(classes, default_class, by_name)
        queues = self._queues(jobs)
        self._tdm(scheduler)
        return Instance(
            name=self.name,
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
            self.diag.error(self.obj, "timezone", f"unknown IANA time zone {self.m.timezone!r}")
            return "UTC"
        return self.m.timezone

    def _now(self, timezone: str) -> datetime:
        raw = self.m.now
        if raw is None:
            self.diag.warn(self.obj, "now", "not set: TDM windows are read at the current time")
            return datetime.now(UTC).replace(microsecond=0)
        when = _datetime(raw)
        if when is None:
            self.diag.error(
                self.obj,
                "now",
                f"expected an RFC 3339 time such as 2026-11-30T14:00:00Z, got {str(raw)!r}",
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
        grouped = [node for group in self.m.nodeGroups for node in self._group(group)]
        nodes = [*grouped, *listed] if self.groups_first else [*listed, *grouped]
        for node in nodes:
            if node.name in seen:
                self.diag.error(obj_name("Node", node.name), "name", "duplicate node name")
            seen.add(node.name)
        return tuple(nodes)

    def _group(self, group: s.NodeGroupIn) -> list[Node]:
        """The group's nodes; the group is checked once, as the one entry it is in the file."""
        width = max(3, len(str(group.start + group.count - 1)))
        names = [
            f"{group.namePrefix}{i:0{width}d}"
            for i in range(group.start, group.start + group.count)
        ]
        first = self._node(names[0], group, group.gpus, obj_name("NodeGroup", group.namePrefix))
        nodes = [first]
        unread = names[0] in self.unread_gpus
        for name in names[1:]:
            gpus: tuple[GpuDevice, ...] = ()
            if unread:
                self.unread_gpus.add(name)
            elif group.gpus is not None:
                g = group.gpus
                gpus = shorthand_devices(
                    name, g.count, g.type, g.memory, split=g.split, cores=g.cores
                )
            nodes.append(replace(first, name=name, gpus=gpus))
        return nodes

    def _node(
        self,
        name: str,
        raw: s.NodeIn | s.NodeGroupIn,
        gpus_raw: object,
        obj: str | None = None,
    ) -> Node:
        obj = obj or obj_name("Node", name)
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
        """The node's devices, each checked once; a shorthand is checked as the one entry it is."""
        errors = len(self.diag.errors)
        devices, shorthand = self._read_gpus(name, obj, raw, annotations)
        checked = devices[:1] if shorthand else devices
        ids: set[str] = set()
        for i, dev in enumerate(checked):
            before = len(self.diag.errors)
            validate_device(dev, obj, "gpus" if shorthand else f"gpus[{i}]", self.diag)
            if dev.id in ids:
                self.diag.error(obj, f"gpus[{i}].id", f'duplicate GPU id "{dev.id}"')
            elif len(self.diag.errors) > before:
                self.bad_devices.add((name, dev.id))
            ids.add(dev.id)
        if len(self.diag.errors) > errors and (shorthand or not devices):
            self.unread_gpus.add(name)
        return devices

    def _read_gpus(
        self, name: str, obj: str, raw: object, annotations: Mapping[str, str]
    ) -> tuple[tuple[GpuDevice, ...], bool]:
        """The devices as written, and whether they came from the ``{count, …}`` shorthand."""
        if isinstance(raw, Mapping | s.GpuShorthandIn):
            try:
                short = s.GpuShorthandIn.model_validate(raw)
            except ValidationError as err:
                self.diag.errors.extend(_sub_problems(err, obj, "gpus"))
                return (), True
            devices = shorthand_devices(
                name, short.count, short.type, short.memory, split=short.split, cores=short.cores
            )
            return devices, True
        if isinstance(raw, list):
            try:
                listed = _DEVICE_LIST.validate_python(raw)
            except ValidationError as err:
                self.diag.errors.extend(_sub_problems(err, obj, "gpus"))
                return (), False
            devices = tuple(
                GpuDevice(
                    d.id, d.index, d.type, d.memory, d.cores, d.count, d.numa, d.health, d.mode
                )
                for d in listed
            )
            return devices, False
        if raw is not None:
            self.diag.error(obj, "gpus", "expected a list of devices or {count, type, memory}")
            return (), False
        for key, parse in (
            (HAMI_REGISTER, parse_hami_register),
            (VOLCANO_REGISTER, parse_volcano_register),
        ):
            if key in annotations:
                try:
                    return parse(annotations[key]), False
                except ValueError as err:
                    self.diag.error(obj, f"annotations.{key}", str(err))
                    return (), False
        return (), False

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
        if DEFAULT_QUEUE not in names and any(job.queue == DEFAULT_QUEUE for job in jobs):
            queues.append(Queue(name=DEFAULT_QUEUE, order=len(queues)))
            names.add(DEFAULT_QUEUE)
        validate_queues(queues, {}, self.diag)
        children = _children_in_tree(queues)
        for job in jobs:
            obj = obj_name("Job", job.name, job.namespace)
            if job.queue not in names and job.queue != ROOT:
                self.diag.error(obj, "queue", f'queue "{job.queue}" does not exist')
            elif children.get(job.queue):
                self.diag.error(
                    obj,
                    "queue",
                    f'queue "{job.queue}" is not a leaf queue (child queues: '
                    f"{', '.join(children[job.queue])}); Volcano only schedules jobs of leaf "
                    "queues",
                )
        return tuple(queues)

    # -- jobs ----------------------------------------------------------------------------

    def _jobs(
        self,
        classes: Mapping[str, int],
        default_class: int | None,
        nodes: Mapping[str, Node],
    ) -> tuple[Job, ...]:
        tier_names = tiers_by_name(self.hypernodes)
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
                self.diag.error(obj, field, f'PriorityClass "{class_name}" does not exist')
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
        elif TOPOLOGY_MODE in raw.annotations or TOPOLOGY_HIGHEST_TIER in raw.annotations:
            mode = raw.annotations.get(TOPOLOGY_MODE, "hard")
            field = f"annotations.{TOPOLOGY_HIGHEST_TIER}"
            text = raw.annotations.get(TOPOLOGY_HIGHEST_TIER)
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
                    f'no HyperNode has tierName "{tier_name}"; Volcano ignores the limit',
                )
        return NetworkTopology(mode or "hard", tier, tier_name)

    def _tasks(self, raw: s.JobIn, obj: str, classes: Mapping[str, int]) -> tuple[Task, ...]:
        tasks = []
        names: set[str] = set()
        for i, t in enumerate(raw.tasks):
            field = f"tasks[{i}]"
            if t.name in names:
                self.diag.error(obj, f"{field}.name", f'duplicate task name "{t.name}"')
            names.add(t.name)
            errors = len(self.diag.errors)
            requests, limits = self._container(t.resources, obj, f"{field}.resources")
            resources = Resources(
                {k: v for k, v in requests.resources.items() if k not in _DEVICE_ONLY}
            )
            init = resources
            if t.initResources is not None:
                init = resources.max_dim(
                    self._resources(t.initResources, obj, f"{field}.initResources")
                )
            gpu: tuple[GpuRequest, ...] = ()
            if len(self.diag.errors) == errors:
                gpu = self._gpu_request(requests, limits, obj, f"{field}.resources")
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
        if split:
            limits_raw = dict(raw.get("limits") or {})
            requests_raw = dict(raw.get("requests") or {})
            limits = self._resources(limits_raw, obj, f"{field}.limits")
            requests = self._resources(requests_raw, obj, f"{field}.requests")
            merged = {**limits_raw, **requests_raw}
            amounts = dict(limits) | {name: requests.get(name) for name in requests_raw}
            return (
                _Parsed(merged, Resources(amounts), split),
                _Parsed(limits_raw, limits, split),
            )
        flat = dict(raw)
        resources = self._resources(flat, obj, field)
        return _Parsed(flat, resources, split), _Parsed(flat, resources, split)

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
            path = (
                f"{field}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                f".nodeSelectorTerms[{i}]"
            )
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
        by_name: dict[str, Task] = {}
        for task in tasks:
            by_name.setdefault(task.name, task)
        for i, r in enumerate(raw.running):
            field = f"running[{i}]"
            task_name = r.task
            if task_name is None:
                if len(by_name) > 1:
                    self.diag.error(obj, f"{field}.task", "required when the job has several tasks")
                    continue
                task_name = tasks[0].name
            task = by_name.get(task_name)
            if task is None:
                self.diag.error(
                    obj, f"{field}.task", f'task "{task_name}" does not exist in this job'
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
                self.diag.error(obj, f"{field}.node", f'node "{r.node}" does not exist')
                continue
            containers, nested = self._running_gpus(r.gpus, obj, field)
            shares = []
            for c, container in enumerate(containers):
                for d, share in enumerate(container):
                    path = f"{field}.gpus[{c}][{d}]" if nested else f"{field}.gpus[{d}]"
                    self._device_share(node, share, obj, path)
                shares.append(tuple(DeviceShare(x.id, x.memory, x.cores) for x in container))
            if task.gpu and not shares and node.gpus:
                self.diag.warn(
                    obj,
                    f"{field}.gpus",
                    "a running GPU pod without devices holds none of its node's GPUs in vcopt's "
                    "accounting; list the devices it uses",
                )
            out.append(RunningPod(r.index, r.node, task_name, tuple(shares)))
        return tuple(out)

    def _device_share(self, node: Node, share: s.DeviceShareIn, obj: str, path: str) -> None:
        """Check one device a running pod holds, alone and together with the pods before it.

        HAMi never books more memory, cores or time-slices than a device has, so a snapshot
        that does describes no real cluster.
        """
        if node.name in self.unread_gpus:
            return
        dev = node.device(share.id)
        if dev is None:
            self.diag.error(obj, f"{path}.id", f'node "{node.name}" has no GPU "{share.id}"')
            return
        if (node.name, dev.id) in self.bad_devices:
            return
        used = self.device_use.setdefault((node.name, dev.id), [0, 0, 0])
        for slot, (key, amount, limit, unit) in enumerate(
            (("memory", share.memory, dev.memory, " MiB"), ("cores", share.cores, dev.cores, ""))
        ):
            if amount < 0:
                self.diag.error(obj, f"{path}.{key}", f"must not be negative, got {amount}")
                continue
            if amount > limit:
                self.diag.error(
                    obj,
                    f"{path}.{key}",
                    f"{amount}{unit} exceeds the {limit}{unit} of GPU {dev.id} on {node.name}",
                )
                continue
            if used[slot] + amount > limit:
                self.diag.error(
                    obj,
                    f"{path}.{key}",
                    f"{amount}{unit} and the {used[slot]}{unit} that pods listed earlier hold "
                    f"on GPU {dev.id} ({node.name}) together exceed its {limit}{unit}",
                )
            used[slot] += amount
        used[2] += 1
        if used[2] > dev.count:
            self.diag.error(
                obj,
                f"{path}.id",
                f"GPU {dev.id} on {node.name} has {dev.count} time-slices, and this pod would "
                f"be number {used[2]} on it",
            )

    def _running_gpus(
        self, raw: object, obj: str, field: str
    ) -> tuple[list[list[s.DeviceShareIn]], bool]:
        """A flat list is a one-container pod; a list of lists gives one list per container.

        Also says which form was used, so paths can be spelled as in the file.
        """
        if not raw:
            return [], False
        nested = isinstance(raw, list) and all(isinstance(x, list) for x in raw)
        try:
            if nested:
                return [_SHARE_LIST.validate_python(c) for c in raw], True  # type: ignore[union-attr]
            return [_SHARE_LIST.validate_python(raw)], False
        except ValidationError as err:
            self.diag.errors.extend(_sub_problems(err, obj, f"{field}.gpus"))
            return [], nested

    # -- TDM -----------------------------------------------------------------------------

    def _tdm(self, scheduler: SchedulerConf) -> None:
        """Check the tdm plugin's arguments and that every node's revocable zone has a window.

        A zone whose window is malformed counts as configured here: its argument is already
        reported, and the nodes in it are not wrong. A node group is one entry of the file,
        so it is reported once.
        """
        plugin = scheduler.plugin("tdm")
        configured: set[str] = set()
        if plugin is not None:
            path = _plugin_path(self.m.scheduler, "tdm")
            local = Diagnostics()
            TdmConfig.from_arguments(plugin.arguments, self.obj, local)
            self.diag.errors.extend(_under(path, p) for p in local.errors)
            for w in local.warnings:
                self.diag.warn(w.obj, f"{path}.{w.field}", w.message)
            configured = {
                key.removeprefix(ZONE_ARG_PREFIX)
                for key in plugin.arguments
                if key.startswith(ZONE_ARG_PREFIX)
            }
        entries = [(obj_name("Node", n.name), n.labels) for n in self.m.nodes] + [
            (obj_name("NodeGroup", g.namePrefix), g.labels) for g in self.m.nodeGroups
        ]
        for obj, labels in entries:
            zone = node_zone(labels)
            if not zone or zone in configured:
                continue
            if plugin is not None:
                self.diag.error(
                    obj,
                    f"labels.{ZONE_LABEL}",
                    f'revocable zone "{zone}" is not configured: the tdm plugin has no '
                    f"{ZONE_ARG_PREFIX}{zone} argument",
                )
            else:
                self.diag.warn(
                    obj,
                    f"labels.{ZONE_LABEL}",
                    "the tdm plugin is not configured, so this label has no effect",
                )


def _plugin_path(raw: object, name: str) -> str:
    """Where the first entry of plugin ``name`` is written under ``scheduler``."""
    tiers = raw.get("tiers") if isinstance(raw, Mapping) else None
    for t, tier in enumerate(tiers if isinstance(tiers, list) else []):
        plugins = tier.get("plugins") if isinstance(tier, Mapping) else None
        for p, entry in enumerate(plugins if isinstance(plugins, list) else []):
            if isinstance(entry, Mapping) and entry.get("name") == name:
                return f"scheduler.tiers[{t}].plugins[{p}]"
    return "scheduler"


def _under(path: str, problem: Problem) -> Problem:
    return Problem(problem.message, problem.obj, f"{path}.{problem.field}", problem.file)


_GPU_PROBLEM = re.compile(r"^(limits|requests)\[([^\]]+)\]: (.*)$", re.DOTALL)
"""How ``container_gpu_request`` names the resource it refuses."""
_DEVICE_LIST = TypeAdapter(list[s.GpuDeviceIn])
_SHARE_LIST = TypeAdapter(list[s.DeviceShareIn])


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


def _children_in_tree(queues: Sequence[Queue]) -> dict[str, list[str]]:
    """Each queue's children, counting only queues whose parent chain reaches root.

    A queue cut off by a missing parent or a cycle is already reported by ``validate_queues``;
    leaving it out keeps one broken link from also making its parent look like a non-leaf.
    """
    parent: dict[str, str] = {}
    for q in queues:
        if q.name != ROOT:
            parent.setdefault(q.name, q.parent or ROOT)
    reaches: dict[str, bool] = {ROOT: True}
    for name in parent:
        chain: list[str] = []
        current = name
        while current not in reaches and current in parent and current not in chain:
            chain.append(current)
            current = parent[current]
        verdict = reaches.get(current, False)
        for member in chain:
            reaches[member] = verdict
    children: dict[str, list[str]] = {}
    for name, up in parent.items():
        if reaches[name]:
            children.setdefault(up, []).append(name)
    return children


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
