"""The pods of one task, read back into the task and running entries of the compact form.

A task's pods must agree on everything that makes up the task (requests, priority, node
selection, tolerations): :func:`likeness` is what they share, by which a PodGroup's pods are
grouped into tasks. Labels and annotations that controllers write per pod are dropped with a
warning, unless they are in a domain vcopt reads. A bound pod's GPU devices are read from the
allocation annotations HAMi or Volcano wrote on it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import shown_value
from ...golang import parse_int64
from ...gpu import GPU_RESOURCE_NAMES
from ...names import check_labels
from ...quantity import (
    QuantityError,
    container_resource_problem,
    extended_resource,
    requirement_problems,
    whole_amount_problem,
)
from ...resources import format_amount, parse_amount
from ...vocabulary import HAMI_ALLOCATED, VOLCANO_ALLOCATED
from .objects import KubeObject, ObjectReader, PodView
from .provenance import Origin, Rest

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
_SPEC_FIELDS = (
    "nodeSelector",
    "affinity",
    "tolerations",
    "topologySpreadConstraints",
    "priority",
    "priorityClassName",
    "preemptionPolicy",
)
"""Task fields of the compact form spelled as in a pod spec."""
INDEX = re.compile(r"[0-9]{1,9}")
"""A pod's index in its task, as its name or the ``volcano.sh/task-index`` annotation ends:
replicas are an int32, so more digits are no index (and are never converted)."""
_UNSET = (None, "", {}, [])
"""Values a task entry leaves out (a priority of 0 is kept)."""


class TaskReader(ObjectReader):
    """Turns the pods of one task into its compact task and running entries."""

    def task(self, name: str, views: Sequence[PodView]) -> dict[str, Any]:
        """One task from its pods, in order; they must be identical in what makes up a task."""
        self._check_alike(views)
        ref = views[0]
        spec = ref.spec
        resources, init = self._pod_resources(ref)
        task: dict[str, Any] = {
            "name": name,
            "replicas": len(views),
            "resources": resources,
            "initResources": init,
            "priority": spec.get("priority"),
            "priorityClassName": spec.get("priorityClassName"),
            "preemptionPolicy": spec.get("preemptionPolicy"),
            "labels": self._common(name, views, "labels"),
            "annotations": self._common(name, views, "task_annotations"),
            **self._placement_rules(ref),
        }
        return {key: value for key, value in task.items() if value not in _UNSET}

    def _check_alike(self, views: Sequence[PodView]) -> None:
        ref = views[0]
        reference = _projection(ref)
        for view in views[1:]:
            field = _first_difference(reference, _projection(view), "spec")
            if field is not None:
                self.diag.error(
                    view.o.obj,
                    field,
                    f"differs from pod {shown_value(ref.o.name)}: the pods of one task must be "
                    "identical",
                )
                break

    def _placement_rules(self, ref: PodView) -> dict[str, Any]:
        """What decides where the task's pods may go, as the pod spells it."""
        o, spec, at = ref.o, ref.spec, ref.path
        node_selector = self._strings(o, spec, "nodeSelector", f"{at}.nodeSelector", check_labels)
        affinity = dict(self._mapping(o, spec, "affinity", f"{at}.affinity"))
        tolerations = []
        for i, tol in enumerate(self._list(o, spec, "tolerations", f"{at}.tolerations")):
            if isinstance(tol, Mapping):
                tolerations.append({k: tol[k] for k in _TOLERATION_KEYS if tol.get(k) is not None})
            else:
                self.diag.error(o.obj, f"{at}.tolerations[{i}]", "expected a mapping")
        return {
            "nodeSelector": node_selector,
            "affinity": affinity,
            "tolerations": tolerations,
            "topologySpreadConstraints": self._list(
                o, spec, "topologySpreadConstraints", f"{at}.topologySpreadConstraints"
            ),
        }

    def _common(self, task: str, views: list[PodView], attr: str) -> dict[str, str]:
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
                    f"differs from pod {shown_value(ref.o.name)}: the pods of one task must be "
                    "identical",
                )
            else:
                dropped.append(key)
        if dropped:
            self.diag.warn(
                ref.o.obj,
                field,
                f"differ between the pods of task {shown_value(task)} and are dropped: "
                f"{', '.join(dropped)}",
            )
        return common

    def _pod_resources(self, view: PodView) -> tuple[dict[str, Any], dict[str, str]]:
        """Container requests and limits summed over the app containers (a limit without a
        request sets the request, per container, as Kubernetes does), and the per-resource
        maximum over the init containers.

        A limit is summed only where every app container has one, or where requests equal
        limits (extended resources, huge pages): a cpu limit on one container of two bounds
        that container, not the pod, so the sums stay a request within its limit."""
        requests: dict[str, int] = {}
        limits: dict[str, int] = {}
        limited: list[set[str]] = []
        gpu_containers = 0
        for i, container in enumerate(view.containers):
            wanted, capped = self._container_amounts(
                view.o, container, f"{view.path}.containers[{i}]"
            )
            for name, amount in wanted.items():
                requests[name] = requests.get(name, 0) + amount
            for name, amount in capped.items():
                limits[name] = limits.get(name, 0) + amount
            limited.append(set(capped))
            gpu_containers += bool(GPU_RESOURCE_NAMES & set(wanted))
        limits = {
            name: amount
            for name, amount in limits.items()
            if extended_resource(name)
            or name.startswith("hugepages-")
            or all(name in names for names in limited)
        }
        if gpu_containers > 1:
            self.diag.warn(
                view.o.obj,
                f"{view.path}.containers",
                f"{gpu_containers} containers request GPUs: vcopt models one container per "
                "task, so their requests are summed (HAMi and Volcano fit each container apart)",
            )
        init: dict[str, int] = {}
        for i, container in enumerate(view.init_containers):
            wanted, _ = self._container_amounts(
                view.o, container, f"{view.path}.initContainers[{i}]"
            )
            for name, amount in wanted.items():
                init[name] = max(init.get(name, 0), amount)
        resources = {}
        if requests:
            resources["requests"] = _formatted(requests)
        if limits:
            resources["limits"] = _formatted(limits)
        return resources, _formatted(init)

    def _container_amounts(
        self, o: KubeObject, container: Mapping[str, Any], field: str
    ) -> tuple[dict[str, int], dict[str, int]]:
        """One container's requests (limits standing in for missing requests) and limits,
        checked as the API server checks them: names a container can ask for, whole
        extended resources, and each request within its limit."""
        resources = self._mapping(o, container, "resources", f"{field}.resources")
        amounts = []
        written = []
        for key in ("requests", "limits"):
            path = f"{field}.resources.{key}"
            values: dict[str, int] = {}
            raw = self._mapping(o, resources, key, path)
            for name, value in raw.items():
                if not isinstance(name, str):
                    continue
                problem = container_resource_problem(name)
                try:
                    amount = parse_amount(name, value)
                except QuantityError as err:
                    problem = problem or str(err)
                else:
                    if amount < 0:
                        problem = problem or f"must not be negative, got {shown_value(value)}"
                    problem = problem or whole_amount_problem(name, value)
                if problem:
                    self.diag.error(o.obj, f"{path}.{name}", problem)
                else:
                    values[name] = amount
            amounts.append(values)
            written.append({k: raw[k] for k in values})
        for section, name, message in requirement_problems(*written):
            self.diag.error(o.obj, f"{field}.resources.{section}.{name}", message)
        requests, limits = amounts
        return {**limits, **requests}, limits

    def task_origins(self, job: str, at: str, view: PodView) -> None:
        """Record that the compact task at ``at`` of compact job ``job`` is written in the pod
        (or task template) of ``view``: its pod-spec fields path by path, its resources in
        its one container, or summed over its containers."""
        o, spec = view.o, view.path
        metadata = spec.removesuffix("spec") + "metadata"
        self.origins.add(job, at, Origin(o.obj, "", Rest.DERIVED))
        fields = [(f"{at}.{key}", f"{spec}.{key}") for key in _SPEC_FIELDS]
        fields += [(f"{at}.{key}", f"{metadata}.{key}") for key in ("labels", "annotations")]
        for key, items, kind, inside in (
            ("resources", view.containers, "containers", "resources"),
            ("initResources", view.init_containers, "initContainers", "resources.requests"),
        ):
            if len(items) == 1:
                fields.append((f"{at}.{key}", f"{spec}.{kind}[0].{inside}"))
            else:
                where = Origin(o.obj, f"{spec}.{kind}", Rest.DERIVED)
                self.origins.add(job, f"{at}.{key}", where)
        for compact, written in fields:
            self.origins.add(job, compact, Origin(o.obj, written))

    def running(
        self, job: str, task: str, indexed: list[tuple[int, PodView]], start: int
    ) -> list[dict[str, Any]]:
        """The running entries of the bound pods of ``indexed`` (index, pod), which become
        ``running[start]``… of compact job ``job``."""
        out = []
        for index, view in sorted(indexed, key=lambda item: item[0]):
            if view.node is None:
                continue
            entry: dict[str, Any] = {"index": index, "node": view.node, "task": task}
            at = f"running[{start + len(out)}]"
            self.origins.add(job, at, Origin(view.o.obj, "", Rest.DERIVED))
            self.origins.add(job, f"{at}.node", Origin(view.o.obj, "spec.nodeName"))
            gpus = self._allocated_gpus(view)
            if gpus:
                entry["gpus"] = gpus[0] if len(gpus) == 1 else gpus
                key = HAMI_ALLOCATED if HAMI_ALLOCATED in view.annotations else VOLCANO_ALLOCATED
                where = Origin(view.o.obj, f"metadata.annotations.{key}", Rest.DERIVED)
                self.origins.add(job, f"{at}.gpus", where)
            out.append(entry)
        return out

    def _allocated_gpus(self, view: PodView) -> list[list[dict[str, Any]]]:
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

    def _devices(self, o: KubeObject, field: str, part: str) -> list[dict[str, Any]]:
        """One container's ``UUID,Type,<memory MiB>,<cores>:`` entries; amounts are what
        HAMi's ``strconv.Atoi`` reads (non-negative here, at most 2^63-1), and a device is
        listed once."""
        devices = []
        seen: set[str] = set()
        for entry in (e.strip() for e in part.split(":")):
            if not entry:
                continue
            fields = [f.strip() for f in entry.split(",")]
            amounts = [parse_int64(f) for f in fields[2:]]
            if len(fields) != 4 or not fields[0] or any(a is None or a < 0 for a in amounts):
                self.diag.error(
                    o.obj,
                    field,
                    f"device {shown_value(entry)}: expected UUID,NVIDIA,<memory MiB>,<cores> "
                    "with whole, non-negative amounts (at most 2^63-1)",
                )
                continue
            if fields[0] in seen:
                self.diag.error(
                    o.obj, field, f"device {shown_value(fields[0])} is listed twice for a container"
                )
                continue
            seen.add(fields[0])
            devices.append({"id": fields[0], "memory": amounts[0], "cores": amounts[1]})
        return devices


def _projection(view: PodView) -> dict[str, Any]:
    """The parts of a pod spec that make up its task, spelled as in the pod; the container
    lists are the checked ones of the view (a malformed list is already reported)."""

    def resources(containers: Sequence[Mapping[str, Any]]) -> list[object]:
        return [{"resources": c.get("resources")} for c in containers]

    return {
        "containers": resources(view.containers),
        "initContainers": resources(view.init_containers),
        **{key: view.spec.get(key) for key in _COMPARED_SPEC},
    }


def likeness(view: PodView) -> str:
    """What a pod shares with the other pods of its task: its projection and the labels and
    annotations vcopt reads, as one comparable text."""
    read = {
        "labels": {k: v for k, v in view.labels.items() if _read_by_vcopt(k)},
        "annotations": {k: v for k, v in view.task_annotations.items() if _read_by_vcopt(k)},
    }
    return json.dumps([_projection(view), read], sort_keys=True, default=str)


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
