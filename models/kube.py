"""Reading a ``kubectl get -o yaml`` dump as an instance (DESIGN §3, the second input form).

A snapshot of a live cluster is a stream of Kubernetes objects. They are not built into domain
objects here: they are translated into the compact ``kind: Instance`` document and handed to
the same loader, so that the two forms cannot disagree on defaults or validation. This module
only knows how Kubernetes, Volcano and HAMi spell things in live objects: which fields are
bookkeeping, how a vcjob names its pods, where a bound pod's GPU devices are written.

Conventions for what kubectl objects cannot say by themselves:

- A pod without a PodGroup (or whose PodGroup is not in the dump) becomes a one-pod job named
  after the pod, with the single task ``main``: plans call the pod ``<name>-main-0``.
- ``now`` (and ``timezone``) are read from the data of a ConfigMap named ``vcopt-snapshot``;
  without it the loader reads TDM windows at the current time.
- A PodGroup without pods in the dump is dropped with a warning: Volcano creates a vcjob's
  pods only once its PodGroup is Inqueue, and vcopt cannot place a job whose pods it cannot see.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import Diagnostics, InputError, Problem, obj_name
from .gpu import GPU_RESOURCE_NAMES
from .quantity import QuantityError
from .queues import DEFAULT_QUEUE
from .resources import format_amount, parse_amount
from .vocabulary import (
    API_VERSION,
    DEFAULT_NAMESPACE,
    HAMI_ALLOCATED,
    HAMI_NODE,
    HAMI_TO_ALLOCATE,
    TASK_SPEC,
    VOLCANO_ALLOCATED,
)
from .yamlio import load_documents

GROUP_NAME_KEYS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
"""Pod annotations naming the PodGroup, Volcano's own first."""
QUEUE_NAME_KEYS = ("scheduling.volcano.sh/queue-name", "volcano.sh/queue-name")
SCHEDULER_CONF_KEY = "volcano-scheduler.conf"
SNAPSHOT_CONFIGMAP = "vcopt-snapshot"
LONE_TASK = "main"
VOLCANO_SCHEDULER = "volcano"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

_POD_BOOKKEEPING = frozenset(
    {
        *GROUP_NAME_KEYS,
        *QUEUE_NAME_KEYS,
        LAST_APPLIED,
        "volcano.sh/job-name",
        "volcano.sh/job-version",
        "volcano.sh/job-retry-count",
        "volcano.sh/template-uid",
        "volcano.sh/task-index",
        "batch.kubernetes.io/job-completion-index",
        HAMI_ALLOCATED,
        HAMI_TO_ALLOCATE,
        HAMI_NODE,
        "hami.io/vgpu-time",
        "hami.io/vgpu-mig-allocations",
        "hami.io/bind-phase",
        "hami.io/bind-time",
        VOLCANO_ALLOCATED,
        "volcano.sh/devices-to-allocate",
        "volcano.sh/vgpu-node",
        "volcano.sh/vgpu-time",
        "volcano.sh/bind-phase",
        "volcano.sh/bind-time",
    }
)
"""Pod annotations the job controller, the scheduler or HAMi write; they say nothing about what
the pod asks for, and several differ from pod to pod."""
_POD_INDEX_LABELS = frozenset(
    {
        "volcano.sh/task-index",
        "apps.kubernetes.io/pod-index",
        "statefulset.kubernetes.io/pod-name",
        "batch.kubernetes.io/job-completion-index",
    }
)
"""Pod labels that carry the pod's own index, so they always differ within a task."""
_READ_DOMAINS = ("volcano.sh", "nvidia.com", "hami.io")
"""Label and annotation domains vcopt reads: a difference there changes scheduling."""
_COMPARED_SPEC = (
    "priority",
    "priorityClassName",
    "preemptionPolicy",
    "nodeSelector",
    "affinity",
    "tolerations",
    "topologySpreadConstraints",
    "schedulerName",
)
_TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")
_NETWORK_TOPOLOGY_KEYS = ("mode", "highestTierAllowed", "highestTierName")
_PODGROUP_SPEC_KEYS = frozenset(
    {"minMember", "minTaskMember", "minResources", "queue", "priorityClassName", "networkTopology"}
)
_FINISHED = ("Succeeded", "Failed")
_INDEX = re.compile(r"[0-9]+")


def compact_from_objects(
    docs: Sequence[object], file: str
) -> tuple[dict[str, Any], list[Problem], list[Problem]]:
    """The compact instance for a dump of Kubernetes objects, with its errors and warnings.

    The instance is named after the file's stem. Problems name objects the way kubectl does
    (``Pod "default/x"``) and fields by their path in that object.
    """
    translator = _Translator()
    compact = translator.translate(docs, Path(file).stem)
    return compact, translator.diag.errors, translator.diag.warnings


@dataclass(frozen=True)
class _Object:
    """One object of the dump, wherever it sat (a document or a List's items)."""

    kind: str
    api_version: str
    doc: Mapping[str, Any]
    metadata: Mapping[str, Any]
    name: str
    namespace: str
    obj: str


@dataclass(frozen=True)
class _PodView:
    """A pod that takes part in the snapshot, with its maps already checked."""

    o: _Object
    position: int
    spec: Mapping[str, Any]
    annotations: Mapping[str, str]
    """As written: the PodGroup, queue and GPU allocation are read from here."""
    task_annotations: Mapping[str, str]
    labels: Mapping[str, str]
    node: str | None
    containers: Sequence[Mapping[str, Any]]
    init_containers: Sequence[Mapping[str, Any]]


class _Translator:
    """One pass over the stream collects every object; jobs are assembled afterwards, because
    a pod may come before its PodGroup and a PodGroup before its PriorityClass."""

    def __init__(self) -> None:
        self.diag = Diagnostics()
        self.nodes: list[dict[str, Any]] = []
        self.hypernodes: list[dict[str, Any]] = []
        self.queues: list[dict[str, Any]] = []
        self.priority_classes: list[dict[str, Any]] = []
        self.scheduler: object = None
        self.scheduler_source = ""
        self.snapshot: dict[str, Any] = {}
        self.podgroups: dict[tuple[str, str], tuple[int, _Object]] = {}
        self.pods: list[_PodView] = []

    def translate(self, docs: Sequence[object], name: str) -> dict[str, Any]:
        handlers = {
            "Node": self._node,
            "HyperNode": self._hypernode,
            "Queue": self._queue,
            "PriorityClass": self._priority_class,
            "ConfigMap": self._configmap,
        }
        seen_pods: set[tuple[str, str]] = set()
        for position, o in enumerate(self._objects(docs)):
            if o.kind in (*handlers, "PodGroup", "Pod") and not o.name:
                self.diag.error(o.obj, "metadata.name", "required field is missing")
            elif o.kind in handlers:
                handlers[o.kind](o)
            elif o.kind == "PodGroup":
                key = (o.namespace, o.name)
                if key in self.podgroups:
                    self.diag.error(o.obj, "metadata.name", "duplicate PodGroup in namespace")
                else:
                    self.podgroups[key] = (position, o)
            elif o.kind == "Pod":
                if (o.namespace, o.name) in seen_pods:
                    self.diag.error(o.obj, "metadata.name", "duplicate Pod in namespace")
                    continue
                seen_pods.add((o.namespace, o.name))
                view = self._pod_view(o, position)
                if view is not None:
                    self.pods.append(view)
            elif o.kind == "Job" and o.api_version.startswith("batch.volcano.sh/"):
                self.diag.warn(
                    o.obj,
                    "",
                    "a vcjob is not a snapshot object; ignored (dump its PodGroup and Pods, "
                    "or write it under jobs: in the compact form)",
                )
            else:
                self.diag.warn(o.obj, "", "not a snapshot object; ignored")
        return self._compact(name)

    def _compact(self, name: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": "Instance",
            "metadata": {"name": name},
            **self.snapshot,
        }
        if self.scheduler is not None:
            out["scheduler"] = self.scheduler
        sections = {
            "priorityClasses": self.priority_classes,
            "nodes": self.nodes,
            "hypernodes": self.hypernodes,
            "queues": self.queues,
            "jobs": self._jobs(),
        }
        out.update({key: items for key, items in sections.items() if items})
        return out

    # -- reading the stream ----------------------------------------------------------------

    def _objects(self, docs: Sequence[object]) -> Iterator[_Object]:
        for n, doc in enumerate(docs, 1):
            yield from self._expand(doc, f"document {n}", None)

    def _expand(self, doc: object, where: str, item_kind: str | None) -> Iterator[_Object]:
        """The objects of one document; a ``List`` (or ``PodList``…) yields its items."""
        if not isinstance(doc, Mapping):
            self.diag.error(
                where,
                "",
                f"expected a Kubernetes object (a mapping with a kind), got {_type_name(doc)}",
            )
            return
        kind = doc.get("kind", item_kind)
        if not isinstance(kind, str) or not kind:
            self.diag.error(where, "kind", "required: every object needs a kind")
            return
        if kind == "List" or (kind.endswith("List") and "items" in doc):
            items = doc.get("items") or []
            if not isinstance(items, list):
                self.diag.error(where, "items", f"expected a list, got {_type_name(items)}")
                return
            for i, item in enumerate(items):
                yield from self._expand(item, f"{where} items[{i}]", kind[:-4] or None)
            return
        metadata = doc.get("metadata")
        if not isinstance(metadata, Mapping):
            metadata = {}
        name = metadata.get("name")
        name = name if isinstance(name, str) else ""
        namespace = metadata.get("namespace")
        namespace = namespace if isinstance(namespace, str) and namespace else ""
        if kind in ("Pod", "PodGroup") and not namespace:
            namespace = DEFAULT_NAMESPACE
        api_version = doc.get("apiVersion")
        yield _Object(
            kind=kind,
            api_version=api_version if isinstance(api_version, str) else "",
            doc=doc,
            metadata=metadata,
            name=name,
            namespace=namespace,
            obj=obj_name(kind, name, namespace) if name else f"{kind} ({where})",
        )

    # -- typed access ----------------------------------------------------------------------

    def _mapping(self, o: _Object, parent: Mapping[str, Any], key: str, field: str) -> Mapping:
        value = parent.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.diag.error(o.obj, field, f"expected a mapping, got {_type_name(value)}")
            return {}
        return value

    def _list(self, o: _Object, parent: Mapping[str, Any], key: str, field: str) -> list[Any]:
        value = parent.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.diag.error(o.obj, field, f"expected a list, got {_type_name(value)}")
            return []
        return value

    def _strings(
        self, o: _Object, parent: Mapping[str, Any], key: str, field: str
    ) -> dict[str, str]:
        out = {}
        for k, v in self._mapping(o, parent, key, field).items():
            if isinstance(k, str) and isinstance(v, str):
                out[k] = v
            else:
                self.diag.error(o.obj, f"{field}.{k}", f"expected a string, got {v!r}")
        return out

    def _metadata_map(self, o: _Object, key: str) -> dict[str, str]:
        values = self._strings(o, o.metadata, key, f"metadata.{key}")
        values.pop(LAST_APPLIED, None)
        return values

    # -- cluster objects -------------------------------------------------------------------

    def _node(self, o: _Object) -> None:
        spec = self._mapping(o, o.doc, "spec", "spec")
        status = self._mapping(o, o.doc, "status", "status")
        node: dict[str, Any] = {"name": o.name}
        for key in ("labels", "annotations"):
            values = self._metadata_map(o, key)
            if values:
                node[key] = values
        taints = []
        for i, taint in enumerate(self._list(o, spec, "taints", "spec.taints")):
            if isinstance(taint, Mapping):
                taints.append({k: taint[k] for k in ("key", "value", "effect") if k in taint})
            else:
                self.diag.error(o.obj, f"spec.taints[{i}]", "expected a mapping")
        if taints:
            node["taints"] = taints
        allocatable = self._mapping(o, status, "allocatable", "status.allocatable")
        if allocatable:
            node["allocatable"] = dict(allocatable)
        unschedulable = spec.get("unschedulable", False)
        if not isinstance(unschedulable, bool):
            self.diag.error(o.obj, "spec.unschedulable", "expected true or false")
            unschedulable = False
        ready = _condition(self._list(o, status, "conditions", "status.conditions"), "Ready")
        if ready not in (None, "True") and not unschedulable:
            self.diag.warn(
                o.obj,
                "status.conditions",
                f"Ready is {ready}: read as unschedulable (Volcano places nothing on the node)",
            )
            unschedulable = True
        if unschedulable:
            node["unschedulable"] = True
        self.nodes.append(node)

    def _hypernode(self, o: _Object) -> None:
        spec = self._mapping(o, o.doc, "spec", "spec")
        self.hypernodes.append({"name": o.name, **spec})

    def _queue(self, o: _Object) -> None:
        spec = self._mapping(o, o.doc, "spec", "spec")
        queue = {"name": o.name, **spec}
        state = self._mapping(o, o.doc, "status", "status").get("state")
        if "state" not in queue and isinstance(state, str) and state:
            if state in ("Closing", "Unknown"):
                self.diag.warn(
                    o.obj,
                    "status.state",
                    f"{state}: read as Closed (Volcano admits new jobs only to Open queues)",
                )
                state = "Closed"
            queue["state"] = state
        self.queues.append(queue)

    def _priority_class(self, o: _Object) -> None:
        keys = ("value", "globalDefault", "description", "preemptionPolicy")
        self.priority_classes.append({"name": o.name, **{k: o.doc[k] for k in keys if k in o.doc}})

    def _configmap(self, o: _Object) -> None:
        data = self._mapping(o, o.doc, "data", "data")
        used = False
        if SCHEDULER_CONF_KEY in data:
            used = True
            self._scheduler_conf(o, data[SCHEDULER_CONF_KEY])
        if o.name == SNAPSHOT_CONFIGMAP:
            used = True
            for key, value in data.items():
                if key in self.snapshot:
                    self.diag.error(o.obj, f"data.{key}", "set by two vcopt-snapshot ConfigMaps")
                elif key in ("now", "timezone"):
                    self.snapshot[key] = value
                elif key != SCHEDULER_CONF_KEY:
                    self.diag.warn(o.obj, f"data.{key}", "unknown key (expected now, timezone)")
        if not used:
            self.diag.warn(o.obj, "", "not a snapshot object; ignored")

    def _scheduler_conf(self, o: _Object, text: object) -> None:
        field = f"data.{SCHEDULER_CONF_KEY}"
        if self.scheduler_source:
            self.diag.error(
                o.obj, field, f"a second scheduler configuration ({self.scheduler_source} has one)"
            )
            return
        self.scheduler_source = o.obj
        if not isinstance(text, str):
            self.diag.error(o.obj, field, f"expected a string, got {_type_name(text)}")
            return
        try:
            confs = load_documents(text, o.obj)
        except InputError as err:
            for problem in err.problems:
                self.diag.error(o.obj, field, problem.message)
            return
        if not confs:
            self.diag.warn(o.obj, field, "empty: the Helm chart's default configuration is used")
        elif len(confs) > 1:
            self.diag.error(o.obj, field, f"expected one YAML document, got {len(confs)}")
        elif not isinstance(confs[0], Mapping):
            self.diag.error(o.obj, field, "expected a mapping with actions and tiers")
        else:
            self.scheduler = confs[0]

    # -- pods ------------------------------------------------------------------------------

    def _pod_view(self, o: _Object, position: int) -> _PodView | None:
        """The pod as it enters the snapshot, or None when Volcano has nothing to do with it."""
        spec = self._mapping(o, o.doc, "spec", "spec")
        phase = self._mapping(o, o.doc, "status", "status").get("phase") or "Pending"
        if phase in _FINISHED:
            self.diag.warn(o.obj, "status.phase", f"{phase}: a finished pod is ignored")
            return None
        node = spec.get("nodeName")
        node = node if isinstance(node, str) and node else None
        scheduler = spec.get("schedulerName", VOLCANO_SCHEDULER)
        if scheduler != VOLCANO_SCHEDULER:
            if node is None:
                self.diag.warn(
                    o.obj, "spec.schedulerName", f"{scheduler!r}: not Volcano's pod; ignored"
                )
                return None
            self.diag.warn(
                o.obj,
                "spec.schedulerName",
                f"{scheduler!r}: kept as a running pod so that its node resources stay in use",
            )
        containers = self._list(o, spec, "containers", "spec.containers")
        init_containers = self._list(o, spec, "initContainers", "spec.initContainers")
        if not containers:
            if spec.get("containers") in (None, []):
                self.diag.error(o.obj, "spec.containers", "a pod needs at least one container")
            return None
        for key, items in (("containers", containers), ("initContainers", init_containers)):
            for i, container in enumerate(items):
                if not isinstance(container, Mapping):
                    self.diag.error(o.obj, f"spec.{key}[{i}]", "expected a mapping")
                    return None
        annotations = self._metadata_map(o, "annotations")
        labels = self._metadata_map(o, "labels")
        return _PodView(
            o=o,
            position=position,
            spec=spec,
            annotations=annotations,
            task_annotations={k: v for k, v in annotations.items() if k not in _POD_BOOKKEEPING},
            labels={k: v for k, v in labels.items() if k not in _POD_INDEX_LABELS},
            node=node,
            containers=containers,
            init_containers=init_containers,
        )

    # -- jobs ------------------------------------------------------------------------------

    def _jobs(self) -> list[dict[str, Any]]:
        """Jobs in the order their PodGroup (or lone pod) appeared: the loader's tie-break."""
        members: dict[tuple[str, str], list[_PodView]] = {key: [] for key in self.podgroups}
        positioned: list[tuple[int, dict[str, Any]]] = []
        for view in self.pods:
            key_name = next((k for k in GROUP_NAME_KEYS if view.annotations.get(k)), None)
            group = view.annotations[key_name] if key_name else ""
            if (view.o.namespace, group) in members:
                members[view.o.namespace, group].append(view)
                continue
            if key_name:
                self.diag.warn(
                    view.o.obj,
                    f"metadata.annotations.{key_name}",
                    f"PodGroup {group!r} is not in the snapshot; the pod is read as its own job",
                )
            job = self._lone_job(view)
            if job is not None:
                positioned.append((view.position, job))
        for key, (position, o) in self.podgroups.items():
            job = self._podgroup_job(o, members[key])
            if job is not None:
                positioned.append((position, job))
        positioned.sort(key=lambda item: item[0])
        return [job for _, job in positioned]

    def _podgroup_job(self, o: _Object, views: list[_PodView]) -> dict[str, Any] | None:
        if not views:
            self.diag.warn(
                o.obj,
                "",
                "no pods in the snapshot, so there is nothing to place; ignored (Volcano "
                "creates a vcjob's pods once its PodGroup is Inqueue)",
            )
            return None
        spec = self._mapping(o, o.doc, "spec", "spec")
        job: dict[str, Any] = {
            "name": o.name,
            "namespace": o.namespace,
            "queue": spec.get("queue") or DEFAULT_QUEUE,
        }
        for key, out in (("minMember", "minAvailable"), ("minTaskMember", "minTaskMember")):
            if key in spec:
                job[out] = spec[key]
        if "minResources" in spec:
            job["minResources"] = spec["minResources"]
        class_name = spec.get("priorityClassName")
        if class_name:
            job["priorityClassName"] = class_name
            known = {pc["name"] for pc in self.priority_classes}
            if isinstance(class_name, str) and class_name not in known:
                default = self._default_priority()
                self.diag.warn(
                    o.obj,
                    "spec.priorityClassName",
                    f"PriorityClass {class_name!r} is not in the snapshot; Volcano then uses "
                    f"the default priority ({default})",
                )
                job["priority"] = default
        topology = self._mapping(o, spec, "networkTopology", "spec.networkTopology")
        if topology:
            job["networkTopology"] = {
                k: topology[k] for k in _NETWORK_TOPOLOGY_KEYS if k in topology
            }
            for key in topology:
                if key not in _NETWORK_TOPOLOGY_KEYS:
                    self._not_modelled(o, f"spec.networkTopology.{key}")
        for key in spec:
            if key not in _PODGROUP_SPEC_KEYS:
                self._not_modelled(o, f"spec.{key}")
        phase = self._mapping(o, o.doc, "status", "status").get("phase")
        if phase:
            job["phase"] = phase
        self._job_metadata(o, job)
        tasks: dict[str, list[tuple[int, _PodView]]] = {}
        for view in views:
            named = self._task_and_index(view, o.name)
            if named is not None:
                tasks.setdefault(named[0], []).append((named[1], view))
        if not tasks:
            return None
        job["tasks"] = []
        running = []
        for task_name, indexed in tasks.items():
            job["tasks"].append(self._task(task_name, indexed))
            running.extend(self._running(task_name, indexed))
            self._warn_renamed(o.name, task_name, indexed)
        if running:
            job["running"] = running
        return job

    def _lone_job(self, view: _PodView) -> dict[str, Any] | None:
        o = view.o
        job: dict[str, Any] = {"name": o.name, "namespace": o.namespace}
        queue = next((view.annotations[k] for k in QUEUE_NAME_KEYS if k in view.annotations), "")
        job["queue"] = queue or DEFAULT_QUEUE
        priority = view.spec.get("priority")
        if priority is not None:
            job["priority"] = priority
        if view.spec.get("priorityClassName"):
            job["priorityClassName"] = view.spec["priorityClassName"]
        self._job_metadata(o, job, labels_and_annotations=False)
        job["tasks"] = [self._task(LONE_TASK, [(0, view)])]
        running = self._running(LONE_TASK, [(0, view)])
        if running:
            job["running"] = running
        self.diag.warn(
            o.obj,
            "",
            f"not in a PodGroup: read as a one-pod job whose pod plans call "
            f"{o.namespace}/{o.name}-{LONE_TASK}-0",
        )
        return job

    def _job_metadata(
        self, o: _Object, job: dict[str, Any], *, labels_and_annotations: bool = True
    ) -> None:
        if labels_and_annotations:
            for key in ("labels", "annotations"):
                values = self._metadata_map(o, key)
                if values:
                    job[key] = values
        if o.metadata.get("creationTimestamp") is not None:
            job["creationTimestamp"] = o.metadata["creationTimestamp"]

    def _default_priority(self) -> int:
        for pc in self.priority_classes:
            if pc.get("globalDefault") is True and isinstance(pc.get("value"), int):
                return pc["value"]
        return 0

    def _not_modelled(self, o: _Object, field: str) -> None:
        self.diag.warn(o.obj, field, "not modelled by vcopt; ignored")

    def _task_and_index(self, view: _PodView, podgroup: str) -> tuple[str, int] | None:
        """A vcjob pod is ``<job>-<task>-<index>``; ``volcano.sh/task-spec`` names the task
        when present (then only the index is read from the name)."""
        o = view.o
        stem, _, last = o.name.rpartition("-")
        if not stem or not _INDEX.fullmatch(last):
            self.diag.error(
                o.obj, "metadata.name", "expected <podgroup>-<task>-<index>: no -<index> suffix"
            )
            return None
        task = view.annotations.get(TASK_SPEC)
        if task:
            return task, int(last)
        prefix = f"{podgroup}-"
        if not stem.startswith(prefix) or len(stem) == len(prefix):
            self.diag.error(
                o.obj,
                "metadata.name",
                f"expected <podgroup>-<task>-<index> with PodGroup {podgroup!r}, "
                f"or a {TASK_SPEC} annotation naming the task",
            )
            return None
        return stem[len(prefix) :], int(last)

    def _warn_renamed(self, job: str, task: str, indexed: list[tuple[int, _PodView]]) -> None:
        for index, view in indexed:
            planned = f"{job}-{task}-{index}"
            if view.o.name != planned:
                self.diag.warn(
                    view.o.obj,
                    "metadata.name",
                    f"plans call the pods of task {task!r} <podgroup>-<task>-<index>, "
                    f"this one {view.o.namespace}/{planned}",
                )
                return

    # -- tasks -----------------------------------------------------------------------------

    def _task(self, name: str, indexed: list[tuple[int, _PodView]]) -> dict[str, Any]:
        """One task from its pods, which must be numbered 0..n-1 and identical."""
        ordered = sorted(indexed, key=lambda item: item[0])
        for expected, (index, view) in enumerate(ordered):
            if index != expected:
                self.diag.error(
                    view.o.obj,
                    "metadata.name",
                    f"index {index}: the {len(ordered)} pods of task {name!r} must be "
                    f"numbered 0..{len(ordered) - 1}",
                )
                break
        views = [view for _, view in indexed]
        ref = views[0]
        reference = _projection(ref.spec)
        for view in views[1:]:
            field = _first_difference(reference, _projection(view.spec), "spec")
            if field is not None:
                self.diag.error(
                    view.o.obj,
                    field,
                    f"differs from pod {ref.o.name!r}: the pods of one task must be identical",
                )
                break
        task: dict[str, Any] = {"name": name, "replicas": len(views)}
        resources, init = self._pod_resources(ref)
        if resources:
            task["resources"] = resources
        if init:
            task["initResources"] = init
        spec = ref.spec
        if spec.get("priority") is not None:
            task["priority"] = spec["priority"]
        for key in ("priorityClassName", "preemptionPolicy"):
            if spec.get(key):
                task[key] = spec[key]
        for key, values in (
            ("labels", self._common(name, views, "labels")),
            ("annotations", self._common(name, views, "task_annotations")),
        ):
            if values:
                task[key] = values
        o = ref.o
        node_selector = self._strings(o, spec, "nodeSelector", "spec.nodeSelector")
        if node_selector:
            task["nodeSelector"] = node_selector
        affinity = self._mapping(o, spec, "affinity", "spec.affinity")
        if affinity:
            task["affinity"] = dict(affinity)
        tolerations = []
        for i, tol in enumerate(self._list(o, spec, "tolerations", "spec.tolerations")):
            if isinstance(tol, Mapping):
                tolerations.append({k: tol[k] for k in _TOLERATION_KEYS if tol.get(k) is not None})
            else:
                self.diag.error(o.obj, f"spec.tolerations[{i}]", "expected a mapping")
        if tolerations:
            task["tolerations"] = tolerations
        spread = self._list(o, spec, "topologySpreadConstraints", "spec.topologySpreadConstraints")
        if spread:
            task["topologySpreadConstraints"] = spread
        return task

    def _common(self, task: str, views: list[_PodView], attr: str) -> dict[str, str]:
        """Labels or annotations shared by all pods of a task.

        Others are dropped with a warning (IPs and hashes written by controllers differ from pod
        to pod); a difference in a domain vcopt reads would change scheduling, so it is an error.
        """
        ref = views[0]
        field = "metadata.labels" if attr == "labels" else "metadata.annotations"
        maps = [getattr(v, attr) for v in views]
        keys = list(dict.fromkeys(k for m in maps for k in m))
        common, dropped = {}, []
        for key in keys:
            differing = next(
                (v for v, m in zip(views, maps, strict=True) if m.get(key) != maps[0].get(key)),
                None,
            )
            if differing is None:
                common[key] = maps[0][key]
            elif _read_by_vcopt(key):
                self.diag.error(
                    differing.o.obj,
                    f"{field}.{key}",
                    f"differs from pod {ref.o.name!r}: the pods of one task must be identical",
                )
            else:
                dropped.append(key)
        if dropped:
            self.diag.warn(
                ref.o.obj,
                field,
                f"differ between the pods of task {task!r} and are dropped: {', '.join(dropped)}",
            )
        return common

    def _pod_resources(self, view: _PodView) -> tuple[dict[str, Any], dict[str, str]]:
        """Container requests and limits summed over the app containers (a limit without a
        request sets the request, per container, as Kubernetes does), and the per-resource
        maximum over the init containers."""
        requests: dict[str, int] = {}
        limits: dict[str, int] = {}
        gpu_containers = 0
        for i, container in enumerate(view.containers):
            wanted, limited = self._container_amounts(view.o, container, f"spec.containers[{i}]")
            for name, amount in wanted.items():
                requests[name] = requests.get(name, 0) + amount
            for name, amount in limited.items():
                limits[name] = limits.get(name, 0) + amount
            gpu_containers += bool(GPU_RESOURCE_NAMES & set(wanted))
        if gpu_containers > 1:
            self.diag.warn(
                view.o.obj,
                "spec.containers",
                f"{gpu_containers} containers request GPUs: vcopt models one container per "
                "task, so their requests are summed (HAMi and Volcano fit each container apart)",
            )
        init: dict[str, int] = {}
        for i, container in enumerate(view.init_containers):
            wanted, _ = self._container_amounts(view.o, container, f"spec.initContainers[{i}]")
            for name, amount in wanted.items():
                init[name] = max(init.get(name, 0), amount)
        resources = {}
        if requests:
            resources["requests"] = _formatted(requests)
        if limits:
            resources["limits"] = _formatted(limits)
        return resources, _formatted(init)

    def _container_amounts(
        self, o: _Object, container: Mapping[str, Any], field: str
    ) -> tuple[dict[str, int], dict[str, int]]:
        resources = self._mapping(o, container, "resources", f"{field}.resources")
        amounts = []
        for key in ("requests", "limits"):
            path = f"{field}.resources.{key}"
            values: dict[str, int] = {}
            for name, value in self._mapping(o, resources, key, path).items():
                try:
                    values[str(name)] = parse_amount(str(name), value)
                except QuantityError as err:
                    self.diag.error(o.obj, f"{path}.{name}", str(err))
            amounts.append(values)
        requests, limits = amounts
        return {**limits, **requests}, limits

    # -- running pods ----------------------------------------------------------------------

    def _running(self, task: str, indexed: list[tuple[int, _PodView]]) -> list[dict[str, Any]]:
        out = []
        for index, view in sorted(indexed, key=lambda item: item[0]):
            if view.node is None:
                continue
            entry: dict[str, Any] = {"index": index, "node": view.node, "task": task}
            gpus = self._allocated_gpus(view)
            if gpus:
                entry["gpus"] = gpus[0] if len(gpus) == 1 else gpus
            out.append(entry)
        return out

    def _allocated_gpus(self, view: _PodView) -> list[list[dict[str, Any]]]:
        """Per GPU-holding app container, the devices of a bound pod (hami-gpu.md §6)."""
        o = view.o
        if HAMI_ALLOCATED in view.annotations:
            key = HAMI_ALLOCATED
            field = f"metadata.annotations.{key}"
            text = view.annotations[key].strip()
            if not text:
                return []
            parts = text.removesuffix(";").split(";")
            init, apps = len(view.init_containers), len(view.containers)
            if len(parts) != init + apps:
                self.diag.error(
                    o.obj,
                    field,
                    f"lists {len(parts)} containers, but the pod has {init} init and {apps} "
                    "app containers (each container ends with ';', init containers first)",
                )
                return []
            if any(p.strip() for p in parts[:init]):
                self.diag.warn(o.obj, field, "GPUs held by init containers are not modelled")
            parts = parts[init:]
        elif VOLCANO_ALLOCATED in view.annotations:
            key = VOLCANO_ALLOCATED
            field = f"metadata.annotations.{key}"
            parts = view.annotations[key].split(";")
        else:
            return []
        containers = [self._devices(o, field, part) for part in parts]
        return [c for c in containers if c]

    def _devices(self, o: _Object, field: str, part: str) -> list[dict[str, Any]]:
        devices = []
        for entry in (e.strip() for e in part.split(":")):
            if not entry:
                continue
            fields = entry.split(",")
            if len(fields) != 4 or not all(_INDEX.fullmatch(f.strip()) for f in fields[2:]):
                self.diag.error(
                    o.obj, field, f"device {entry!r}: expected UUID,NVIDIA,<memory MiB>,<cores>"
                )
                continue
            uuid, _, memory, cores = fields
            devices.append({"id": uuid.strip(), "memory": int(memory), "cores": int(cores)})
        return devices


def _condition(conditions: list[Any], kind: str) -> str | None:
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return str(condition.get("status"))
    return None


def _projection(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a pod spec that make up its task, spelled as in the pod."""

    def resources(key: str) -> list[object]:
        containers = spec.get(key) or []
        return [c.get("resources") if isinstance(c, Mapping) else c for c in containers]

    return {
        "containers": [{"resources": r} for r in resources("containers")],
        "initContainers": [{"resources": r} for r in resources("initContainers")],
        **{key: spec.get(key) for key in _COMPARED_SPEC},
    }


def _first_difference(a: object, b: object, path: str) -> str | None:
    """The path of the first leaf where ``a`` and ``b`` differ, or None when they are equal."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in [*a, *(k for k in b if k not in a)]:
            found = _first_difference(a.get(key), b.get(key), f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_difference(x, y, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    return None if a == b else path


def _read_by_vcopt(key: str) -> bool:
    domain = key.partition("/")[0] if "/" in key else ""
    return any(domain == d or domain.endswith(f".{d}") for d in _READ_DOMAINS)


def _formatted(amounts: Mapping[str, int]) -> dict[str, str]:
    return {name: format_amount(name, amount) for name, amount in amounts.items()}


def _type_name(value: object) -> str:
    names = {
        type(None): "nothing",
        list: "a list",
        str: "a string",
        int: "a number",
        float: "a number",
        bool: "a boolean",
    }
    return names.get(type(value), type(value).__name__)
