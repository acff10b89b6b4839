"""The objects of a ``kubectl get -o yaml`` dump, and typed access to their fields.

A dump is a stream of documents, each an object or a ``List`` of them; every object is read
with the same care: a field of the wrong type is reported on its path and read as empty, so
one bad field never hides the problems of the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import Diagnostics, obj_name
from ...names import (
    check_annotations,
    check_labels,
    key_type_problem,
    label_problem,
    subdomain_problem,
)
from ...vocabulary import DEFAULT_NAMESPACE
from .provenance import Provenance

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
SUBDOMAIN_NAMED = frozenset({"Pod", "PodGroup", "ConfigMap"})
"""Kinds whose names only the API server's DNS-1123 subdomain rule bounds, and which vcopt
does not keep as objects of their own (a pod is a task's, a PodGroup a job's)."""


@dataclass(frozen=True)
class KubeObject:
    """One object of the dump, wherever it sat (a document or a List's items)."""

    kind: str
    api_version: str
    doc: Mapping[str, Any]
    metadata: Mapping[str, Any]
    name: str
    namespace: str
    obj: str


@dataclass(frozen=True)
class PodView:
    """A pod that takes part in the snapshot, with its maps already checked."""

    o: KubeObject
    position: int
    spec: Mapping[str, Any]
    annotations: Mapping[str, str]
    """As written: the PodGroup, queue and GPU allocation are read from here."""
    task_annotations: Mapping[str, str]
    labels: Mapping[str, str]
    node: str | None
    containers: Sequence[Mapping[str, Any]]
    init_containers: Sequence[Mapping[str, Any]]
    path: str = "spec"
    """Where the pod spec sits in its object: ``spec`` for a Pod, a task's template spec for
    the pods a vcjob will have."""
    scheduler: str | None = None
    """``spec.schedulerName``; None when not written (only hand-written pods lack it, since the
    API server defaults it), which is read as Volcano's."""


class ObjectReader:
    """Reads objects of the stream and their fields, reporting problems into ``diag`` and
    where each compact path it writes came from into ``origins``."""

    def __init__(self, diag: Diagnostics, origins: Provenance | None = None) -> None:
        self.diag = diag
        self.origins = Provenance() if origins is None else origins

    def objects(self, docs: Sequence[object]) -> Iterator[KubeObject]:
        for n, doc in enumerate(docs, 1):
            yield from self._expand(doc, f"document {n}", None)

    def _expand(self, doc: object, where: str, item_kind: str | None) -> Iterator[KubeObject]:
        """The objects of one document; a ``List`` (or ``PodList``…) yields its items."""
        if not isinstance(doc, Mapping):
            self.diag.error(
                where,
                "",
                f"expected a Kubernetes object (a mapping with a kind), got {type_name(doc)}",
            )
            return
        kind = doc.get("kind", item_kind)
        if not isinstance(kind, str) or not kind:
            self.diag.error(where, "kind", "required: every object needs a kind")
            return
        if kind == "List" or (kind.endswith("List") and "items" in doc):
            items = doc.get("items") or []
            if not isinstance(items, list):
                self.diag.error(where, "items", f"expected a list, got {type_name(items)}")
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
        if kind in ("Pod", "PodGroup", "Job") and not namespace:
            namespace = DEFAULT_NAMESPACE
        api_version = doc.get("apiVersion")
        obj = obj_name(kind, name, namespace) if name else f"{kind} ({where})"
        if "spec" in metadata:
            self.diag.warn(
                obj,
                "metadata.spec",
                "a spec under metadata is no spec: the API server drops it, so the object is "
                "read without it (indent spec at the top level)",
            )
        yield KubeObject(
            kind=kind,
            api_version=api_version if isinstance(api_version, str) else "",
            doc=doc,
            metadata=metadata,
            name=name,
            namespace=namespace,
            obj=obj,
        )

    def _mapping(self, o: KubeObject, parent: Mapping[str, Any], key: str, field: str) -> Mapping:
        value = parent.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.diag.error(o.obj, field, f"expected a mapping, got {type_name(value)}")
            return {}
        return value

    def _list(self, o: KubeObject, parent: Mapping[str, Any], key: str, field: str) -> list[Any]:
        value = parent.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.diag.error(o.obj, field, f"expected a list, got {type_name(value)}")
            return []
        return value

    def _strings(
        self,
        o: KubeObject,
        parent: Mapping[str, Any],
        key: str,
        field: str,
        rule: Callable[[Mapping[object, object], str, str, Diagnostics], None] | None = None,
    ) -> dict[str, str]:
        """A map of strings; ``rule`` (labels or annotations, ``models.names``) reports what
        the API server refuses in it, a value that is no string among them. The entries that
        are no strings are left out (a key that is none is reported by
        :meth:`check_metadata`)."""
        values = self._mapping(o, parent, key, field)
        if rule is not None:
            rule(values, o.obj, field, self.diag)
        return {k: v for k, v in values.items() if isinstance(k, str) and isinstance(v, str)}

    def check_metadata(self, o: KubeObject) -> None:
        """What the API server checks in every object's metadata, once per object: its name
        as its kind requires (kinds vcopt keeps are checked again as the objects they
        become), its namespace, labels and annotations; and that every key of the object is
        a string, as in the JSON the API server stores."""
        self._string_keys(o, o.doc, ())
        if o.kind in SUBDOMAIN_NAMED and o.name and (problem := subdomain_problem(o.name)):
            self.diag.error(o.obj, "metadata.name", problem)
        if o.namespace and (problem := label_problem(o.namespace)):
            self.diag.error(o.obj, "metadata.namespace", problem)
        self._strings(o, o.metadata, "labels", "metadata.labels", check_labels)
        self._strings(o, o.metadata, "annotations", "metadata.annotations", check_annotations)

    def _string_keys(self, o: KubeObject, value: object, at: tuple[str | int, ...]) -> None:
        """Report each map key YAML did not read as a string (``on:`` is True, ``~:`` None)
        on the map that holds it."""
        if isinstance(value, Mapping):
            for key, item in value.items():
                if isinstance(key, str):
                    self._string_keys(o, item, (*at, key))
                else:
                    self.diag.error(o.obj, path_of(at), key_type_problem(key))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                self._string_keys(o, item, (*at, i))

    def _metadata_map(self, o: KubeObject, key: str) -> dict[str, str]:
        """Labels or annotations as strings; :meth:`check_metadata` reports their problems."""
        values = o.metadata.get(key)
        if not isinstance(values, Mapping):
            return {}
        return {
            k: v
            for k, v in values.items()
            if isinstance(k, str) and isinstance(v, str) and k != LAST_APPLIED
        }


def path_of(at: Sequence[str | int]) -> str:
    """``spec.containers[0].resources`` from its keys and indices."""
    out = ""
    for part in at:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def type_name(value: object) -> str:
    names = {
        type(None): "nothing",
        list: "a list",
        str: "a string",
        int: "a number",
        float: "a number",
        bool: "a boolean",
    }
    return names.get(type(value), type(value).__name__)
