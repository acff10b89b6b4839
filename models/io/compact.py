"""The compact ``kind: Instance`` document, built into an :class:`~models.instance.Instance`.

The document is checked for shape by ``models.io.schema``; then every object is built while
the problems of its own fields (quantities, enums, names, device inventories) are collected;
then the instance is checked for the rules that relate its objects to each other
(:func:`models.instance.validate_instance`). The reader raises once, with every problem.
A ``kubectl get -o yaml`` dump is first translated to this form by ``models.io.kube``, so the
two forms cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, TypeAdapter, ValidationError

from ..affinity import DNS_LABEL
from ..assumed_devices import with_assumed_devices
from ..cluster import TAINT_EFFECTS, Node, Taint, with_gpu_allocatable
from ..errors import Diagnostics, InputError, Problem, obj_name, shown_value
from ..gpu import (
    GpuDevice,
    parse_hami_register,
    parse_volcano_register,
    shorthand_devices,
    validate_device,
)
from ..instance import Instance, validate_instance
from ..names import (
    check_annotations,
    check_labels,
    check_names,
    label_value_problem,
    qualified_name_problem,
)
from ..queues import DEFAULT_QUEUE, Queue
from ..scheduler_conf import parse_scheduler_conf
from ..selectors import LabelRequirement, LabelSelector
from ..topology import HyperNode, Member, MemberSelector
from ..vocabulary import API_VERSION, HAMI_REGISTER, HOSTNAME_LABEL, VOLCANO_REGISTER
from ..workload import Job
from . import schema as s
from .errors import shape_problems, sub_problems
from .jobs import JobReader
from .values import read_datetime, read_resources

_DEVICE_LIST = TypeAdapter(list[s.GpuDeviceIn])
REGISTER_ANNOTATIONS = (HAMI_REGISTER, VOLCANO_REGISTER)
"""Node annotations that carry a device inventory, in the order they are read."""
_REGISTERS = tuple(
    zip(REGISTER_ANNOTATIONS, (parse_hami_register, parse_volcano_register), strict=True)
)


def from_dict(doc: Mapping[str, Any], file: str) -> Instance:
    """Build an instance from a compact document (already parsed YAML)."""
    if not isinstance(doc, Mapping):
        raise InputError([Problem("expected a mapping with kind: Instance", file=file)])
    if doc.get("kind") != "Instance":
        got = shown_value(doc.get("kind"))
        raise InputError([Problem(f"expected Instance, got {got}", "", "kind", file)])
    if doc.get("apiVersion") != API_VERSION:
        got = shown_value(doc.get("apiVersion"))
        raise InputError([Problem(f"expected {API_VERSION}, got {got}", "", "apiVersion", file)])
    name = instance_name(doc, file)
    normal = _unwrap_objects(doc)
    try:
        model = s.InstanceIn.model_validate(normal)
    except ValidationError as err:
        problems = shape_problems(err, normal, doc, obj_name("Instance", name))
        raise InputError([p.in_file(file) for p in problems]) from None
    diag = Diagnostics()
    keys = list(normal)
    groups_first = "nodeGroups" in keys and (
        "nodes" not in keys or keys.index("nodeGroups") < keys.index("nodes")
    )
    builder = _Builder(model, diag, groups_first, name)
    instance = builder.build(file)
    check_names(instance, diag, builder.written_as)
    checked = validate_instance(
        instance, written_as=builder.written_as, unread_gpus=builder.unread_gpus
    )
    for late in (checked, builder.clock):
        diag.errors.extend(late.errors)
        for w in late.warnings:
            diag.warn(w.obj, w.field, w.message)
    diag.raise_if_errors(file)
    return instance.replace(warnings=tuple(w.in_file(file) for w in diag.warnings))


def instance_name(doc: Mapping[str, Any], file: str) -> str:
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


class _Builder:
    """Turns the checked shape into domain objects, collecting problems of their fields."""

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
        self.unread_gpus: set[str] = set()
        """Nodes whose GPU inventory is already reported as unreadable."""
        self.written_as: dict[str, str] = {}
        """Node → the entry of the file that wrote it, for the nodes of a node group."""
        self.clock = Diagnostics()
        """Problems of ``now``, reported after those of the objects."""

    def build(self, file: str) -> Instance:
        m = self.m
        timezone = self._timezone()
        scheduler = parse_scheduler_conf(_plain(m.scheduler), self.obj, self.diag, "scheduler")
        classes, default_class = self._priority_classes()
        nodes = self._nodes()
        hypernodes = tuple(_hypernode(h) for h in m.hypernodes)
        every = JobReader(self.diag, classes, default_class, hypernodes).jobs(m.jobs)
        # Volcano's and other schedulers' running pods share devices: both hold what they
        # hold, even where no annotation says which cards.
        every = with_assumed_devices(nodes, every, self.diag)
        names = tuple(dict.fromkeys(m.schedulerNames))
        now = self._now(timezone)
        volcano = [j for j in every if j.scheduler_name in names]
        # The snapshot at ``now`` holds the jobs that have arrived; later ones wait for a
        # simulation's clock to reach them.
        jobs = tuple(j for j in volcano if j.arrives_at(now) <= now)
        arrivals = tuple(j for j in volcano if j.arrives_at(now) > now)
        foreign = tuple(j for j in every if j.scheduler_name not in names)
        self._warn_foreign_pending(foreign)
        queues = self._queues((*jobs, *arrivals))
        return Instance(
            name=self.name,
            now=now,
            timezone=timezone,
            scheduler=scheduler,
            priority_classes=classes,
            nodes=nodes,
            hypernodes=hypernodes,
            queues=queues,
            jobs=jobs,
            arrivals=arrivals,
            namespaces=self._namespaces(),
            scheduler_names=names,
            foreign_jobs=foreign,
            source=file,
        )

    def _warn_foreign_pending(self, foreign: Sequence[Job]) -> None:
        """Pending pods of other schedulers are not Volcano's to place: one line says so."""
        pending: dict[str, int] = {}
        for job in foreign:
            waiting = sum(1 for p in job.pods if not p.running)
            if waiting:
                pending[job.scheduler_name] = pending.get(job.scheduler_name, 0) + waiting
        if pending:
            count = sum(pending.values())
            by_name = ", ".join(f"{name}: {n}" for name, n in sorted(pending.items()))
            self.diag.warn(
                self.obj,
                "jobs",
                f"{count} pending pod(s) of other schedulers ({by_name}) are not Volcano's to "
                "place; they are ignored",
            )

    def _namespaces(self) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for ns in self.m.namespaces:
            obj = obj_name("Namespace", ns.name)
            if ns.name in out:
                self.diag.error(obj, "name", "duplicate Namespace")
            elif len(ns.name) > 63 or not DNS_LABEL.fullmatch(ns.name):
                self.diag.error(obj, "name", "must be a lowercase RFC 1123 label")
            check_labels(ns.labels, obj, "labels", self.diag)
            out[ns.name] = dict(ns.labels)
        return out

    def _timezone(self) -> str:
        try:
            ZoneInfo(self.m.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            self.diag.error(
                self.obj, "timezone", f"unknown IANA time zone {shown_value(self.m.timezone)}"
            )
            return "UTC"
        return self.m.timezone

    def _now(self, timezone: str) -> datetime:
        raw = self.m.now
        if raw is None:
            self.clock.warn(self.obj, "now", "not set: TDM windows are read at the current time")
            return datetime.now(UTC).replace(microsecond=0)
        when = read_datetime(raw)
        if when is None:
            self.clock.error(
                self.obj,
                "now",
                f"expected an RFC 3339 time such as 2026-11-30T14:00:00Z, got {shown_value(raw)}",
            )
            return datetime.now(UTC)
        if when.tzinfo is None:
            when = when.replace(tzinfo=ZoneInfo(timezone))
        return when

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
        listed = [self._node(raw.name, raw, raw.gpus) for raw in self.m.nodes]
        grouped = [node for group in self.m.nodeGroups for node in self._group(group)]
        return tuple([*grouped, *listed] if self.groups_first else [*listed, *grouped])

    def _group(self, group: s.NodeGroupIn) -> list[Node]:
        """The group's nodes; the group is checked once, as the one entry it is in the file."""
        width = max(3, len(str(group.start + group.count - 1)))
        names = [
            f"{group.namePrefix}{i:0{width}d}"
            for i in range(group.start, group.start + group.count)
        ]
        obj = obj_name("NodeGroup", group.namePrefix)
        first = self._node(names[0], group, group.gpus, obj)
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
            labels = first.labels
            if HOSTNAME_LABEL not in group.labels:
                labels = {**labels, HOSTNAME_LABEL: name}
            nodes.append(replace(first, name=name, labels=labels, gpus=gpus))
        self.written_as.update(dict.fromkeys(names, obj))
        return nodes

    def _node(
        self,
        name: str,
        raw: s.NodeIn | s.NodeGroupIn,
        gpus_raw: object,
        obj: str | None = None,
    ) -> Node:
        obj = obj or obj_name("Node", name)
        allocatable = read_resources(raw.allocatable, obj, "allocatable", self.diag, whole=True)
        check_labels(raw.labels, obj, "labels", self.diag)
        check_annotations(raw.annotations, obj, "annotations", self.diag)
        taints = self._taints(raw.taints, obj)
        gpus = self._gpus(name, obj, gpus_raw, raw.annotations)
        return Node(
            name=name,
            allocatable=with_gpu_allocatable(allocatable, gpus),
            # The kubelet labels every node with its hostname; pods' topology terms read it.
            labels={HOSTNAME_LABEL: name, **raw.labels},
            annotations=dict(raw.annotations),
            taints=taints,
            unschedulable=raw.unschedulable,
            gpus=gpus,
        )

    def _taints(self, raw: Sequence[s.TaintIn], obj: str) -> tuple[Taint, ...]:
        """``validateNodeTaints``: a qualified key, a label value, a known effect, and one
        taint per key and effect."""
        taints = []
        seen: set[tuple[str, str]] = set()
        for i, t in enumerate(raw):
            field = f"taints[{i}]"
            if problem := qualified_name_problem(t.key):
                self.diag.error(obj, f"{field}.key", f"{shown_value(t.key)}: {problem}")
            if problem := label_value_problem(t.value):
                self.diag.error(obj, f"{field}.value", f"{shown_value(t.value)}: {problem}")
            if t.effect not in TAINT_EFFECTS:
                self.diag.error(
                    obj, f"{field}.effect", f"must be one of {', '.join(TAINT_EFFECTS)}"
                )
            elif (t.key, t.effect) in seen:
                self.diag.error(
                    obj,
                    field,
                    f"a second taint with key {shown_value(t.key)} and effect {t.effect}: "
                    "taints must be unique by key and effect",
                )
            seen.add((t.key, t.effect))
            taints.append(Taint(t.key, t.value, t.effect))
        return tuple(taints)

    def _gpus(
        self, name: str, obj: str, raw: object, annotations: Mapping[str, str]
    ) -> tuple[GpuDevice, ...]:
        """The node's devices, each checked once; a shorthand is checked as the one entry it is."""
        errors = len(self.diag.errors)
        devices, shorthand = self._read_gpus(name, obj, raw, annotations)
        checked = devices[:1] if shorthand else devices
        ids: set[str] = set()
        for i, dev in enumerate(checked):
            validate_device(dev, obj, "gpus" if shorthand else f"gpus[{i}]", self.diag)
            if dev.id in ids:
                self.diag.error(obj, f"gpus[{i}].id", f'duplicate GPU id "{dev.id}"')
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
                self.diag.errors.extend(sub_problems(err, obj, "gpus"))
                return (), True
            devices = shorthand_devices(
                name, short.count, short.type, short.memory, split=short.split, cores=short.cores
            )
            return devices, True
        if isinstance(raw, list):
            try:
                listed = _DEVICE_LIST.validate_python(raw)
            except ValidationError as err:
                self.diag.errors.extend(sub_problems(err, obj, "gpus"))
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
        for key, parse in _REGISTERS:
            if key in annotations:
                try:
                    return parse(annotations[key]), False
                except ValueError as err:
                    self.diag.error(obj, f"annotations.{key}", str(err))
                    return (), False
        return (), False

    # -- queues --------------------------------------------------------------------------

    def _queues(self, jobs: Sequence[Job]) -> tuple[Queue, ...]:
        """The queues as written, and Volcano's ``default`` queue when a job uses it."""
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
                    deserved=read_resources(q.deserved, obj, "deserved", self.diag),
                    capability=read_resources(q.capability, obj, "capability", self.diag),
                    guarantee=read_resources(guarantee, obj, "guarantee", self.diag),
                    reclaimable=q.reclaimable,
                    state=q.state,
                    order=order,
                )
            )
        names = {q.name for q in queues}
        if DEFAULT_QUEUE not in names and any(job.queue == DEFAULT_QUEUE for job in jobs):
            queues.append(Queue(name=DEFAULT_QUEUE, order=len(queues)))
        return tuple(queues)


def _hypernode(h: s.HyperNodeIn) -> HyperNode:
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


def _label_selector(raw: s.LabelSelectorIn) -> LabelSelector:
    return LabelSelector(
        tuple(sorted(raw.matchLabels.items())),
        tuple(LabelRequirement(e.key, e.operator, tuple(e.values)) for e in raw.matchExpressions),
    )


def _plain(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump()
    return value
