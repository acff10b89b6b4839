"""The cluster objects of a dump: Nodes, HyperNodes, Queues, PriorityClasses, ConfigMaps.

Each is translated into its entry of the compact form as it comes; only the fields the
compact form has are kept. A Node that is not Ready, or that has not registered (no
``status.allocatable``), is read as unschedulable, as Volcano places nothing on it.

The ``vcopt-snapshot`` ConfigMap carries what a dump cannot say by itself: ``now``,
``timezone`` and ``schedulerNames`` (Volcano's ``--scheduler-name`` flags, comma-separated;
default ``volcano``), which decide whose pods Volcano schedules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import Diagnostics, InputError, obj_name
from ...vocabulary import VOLCANO_SCHEDULER
from ...yamlio import load_documents
from ..compact import REGISTER_ANNOTATIONS
from .objects import KubeObject, ObjectReader, type_name
from .provenance import INSTANCE, Origin, Provenance, Rest

SCHEDULER_CONF_KEY = "volcano-scheduler.conf"
QUEUE_HIERARCHY_ANNOTATIONS = ("volcano.sh/hierarchy", "volcano.sh/hierarchy-weights")
SNAPSHOT_CONFIGMAP = "vcopt-snapshot"
SCHEDULER_NAMES_KEY = "schedulerNames"
"""The snapshot ConfigMap key (and compact field) naming the schedulers Volcano answers to."""
_NAME = ("name", "metadata.name")
_NODE_FIELDS = (
    _NAME,
    ("labels", "metadata.labels"),
    ("annotations", "metadata.annotations"),
    ("taints", "spec.taints"),
    ("allocatable", "status.allocatable"),
    ("unschedulable", "spec.unschedulable"),
)
"""Where a Node's compact fields are written in the Node."""


class ClusterReader(ObjectReader):
    """Collects the compact entries of the cluster objects, in stream order."""

    def __init__(self, diag: Diagnostics, origins: Provenance | None = None) -> None:
        super().__init__(diag, origins)
        self.nodes: list[dict[str, Any]] = []
        self.hypernodes: list[dict[str, Any]] = []
        self.queues: list[dict[str, Any]] = []
        self.priority_classes: list[dict[str, Any]] = []
        self.namespaces: list[dict[str, Any]] = []
        self.scheduler: object = None
        self.scheduler_source = ""
        self.snapshot: dict[str, Any] = {}

    def namespace(self, o: KubeObject) -> None:
        """A Namespace: its labels are what a pod term's ``namespaceSelector`` reads."""
        self.origins.add_object(
            obj_name("Namespace", o.name), o.obj, (_NAME, ("labels", "metadata.labels"))
        )
        entry: dict[str, Any] = {"name": o.name}
        labels = self._metadata_map(o, "labels")
        if labels:
            entry["labels"] = labels
        self.namespaces.append(entry)

    def node(self, o: KubeObject) -> None:
        spec = self._mapping(o, o.doc, "spec", "spec")
        status = self._mapping(o, o.doc, "status", "status")
        compact = obj_name("Node", o.name)
        self.origins.add_object(compact, o.obj, _NODE_FIELDS)
        register = next(
            (k for k in REGISTER_ANNOTATIONS if k in self._metadata_map(o, "annotations")), None
        )
        if register is not None:
            where = f"metadata.annotations.{register}"
            self.origins.add(compact, "gpus", Origin(o.obj, where, Rest.DERIVED))
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
        unschedulable = spec.get("unschedulable", False)
        if not isinstance(unschedulable, bool):
            self.diag.error(o.obj, "spec.unschedulable", "expected true or false")
            unschedulable = False
        if allocatable:
            node["allocatable"] = dict(allocatable)
        elif status.get("allocatable") in (None, {}):
            self.diag.warn(
                o.obj,
                "status.allocatable",
                "not reported: the node has not registered, so it is read as unschedulable "
                "(Volcano places nothing on it)",
            )
            unschedulable = True
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

    def hypernode(self, o: KubeObject) -> None:
        spec = self._mapping(o, o.doc, "spec", "spec")
        self._spec_origins(obj_name("HyperNode", o.name), o)
        self.hypernodes.append({**spec, "name": o.name})

    def queue(self, o: KubeObject) -> None:
        spec = self._mapping(o, o.doc, "spec", "spec")
        compact = obj_name("Queue", o.name)
        guarantee = spec.get("guarantee")
        if isinstance(guarantee, Mapping) and set(guarantee) == {"resource"}:
            self.origins.add(compact, "guarantee", Origin(o.obj, "spec.guarantee.resource"))
        self._spec_origins(compact, o)
        queue = {**spec, "name": o.name}
        for key in self._metadata_map(o, "annotations"):
            if key in QUEUE_HIERARCHY_ANNOTATIONS:
                self.diag.warn(
                    o.obj,
                    f"metadata.annotations.{key}",
                    "the annotation form of the queue hierarchy is not modelled (nor checked "
                    "by Volcano's job webhook); write spec.parent",
                )
        for section in ("deserved", "capability", "guarantee"):
            for name in self._mapping(o, spec, section, f"spec.{section}"):
                if "deviceclass" in str(name):
                    self.diag.warn(
                        o.obj,
                        f"spec.{section}.{name}",
                        "a DRA device-class quota: vcopt models no DRA claims, so no pod uses it",
                    )
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
            self.origins.add(compact, "state", Origin(o.obj, "status.state"))
        self.queues.append(queue)

    def _spec_origins(self, compact: str, o: KubeObject) -> None:
        """A custom resource whose compact entry is its name and its spec's fields: any
        field but the name is its spec's, written or not (``spec.tier`` is required)."""
        self.origins.add(compact, "", Origin(o.obj, "spec"))
        self.origins.add_object(compact, o.obj, (_NAME,))

    def priority_class(self, o: KubeObject) -> None:
        keys = ("value", "globalDefault", "description", "preemptionPolicy")
        self.origins.add_object(
            obj_name("PriorityClass", o.name), o.obj, (_NAME, *((k, k) for k in keys))
        )
        self.priority_classes.append({**{k: o.doc[k] for k in keys if k in o.doc}, "name": o.name})

    def configmap(self, o: KubeObject) -> None:
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
                    self.origins.add(INSTANCE, key, Origin(o.obj, f"data.{key}"))
                elif key == SCHEDULER_NAMES_KEY:
                    self._scheduler_names(o, value)
                    where = Origin(o.obj, f"data.{key}", Rest.DERIVED)
                    self.origins.add(INSTANCE, key, where)
                elif key != SCHEDULER_CONF_KEY:
                    self.diag.warn(
                        o.obj,
                        f"data.{key}",
                        f"unknown key (expected now, timezone, {SCHEDULER_NAMES_KEY})",
                    )
        if not used:
            self.diag.warn(o.obj, "", "not a snapshot object; ignored")

    @property
    def scheduler_names(self) -> tuple[str, ...]:
        """The names Volcano answers to: the snapshot ConfigMap's, else Volcano's default."""
        return tuple(self.snapshot.get(SCHEDULER_NAMES_KEY, (VOLCANO_SCHEDULER,)))

    def _scheduler_names(self, o: KubeObject, value: object) -> None:
        """Volcano's ``--scheduler-name`` flags, written as one comma-separated string."""
        field = f"data.{SCHEDULER_NAMES_KEY}"
        if not isinstance(value, str):
            self.diag.error(o.obj, field, f"expected a string, got {type_name(value)}")
            return
        names = list(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
        if not names:
            self.diag.error(o.obj, field, "expected comma-separated scheduler names, got none")
            return
        self.snapshot[SCHEDULER_NAMES_KEY] = names

    def _scheduler_conf(self, o: KubeObject, text: object) -> None:
        field = f"data.{SCHEDULER_CONF_KEY}"
        if self.scheduler_source:
            self.diag.error(
                o.obj, field, f"a second scheduler configuration ({self.scheduler_source} has one)"
            )
            return
        self.scheduler_source = o.obj
        if not isinstance(text, str):
            self.diag.error(o.obj, field, f"expected a string, got {type_name(text)}")
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
            self.origins.add(INSTANCE, "scheduler", Origin(o.obj, field, Rest.INSIDE))


def _condition(conditions: list[Any], kind: str) -> str | None:
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return str(condition.get("status"))
    return None
