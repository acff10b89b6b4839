"""Object names as the Kubernetes API server accepts them.

A name the API server would refuse (``Train_Job``, ``-node``, 300 characters, ``team/a``, a
newline, a zero-width space) cannot exist in a real cluster, so a snapshot holding one is a
typing or generation mistake; it is reported on the object's ``name`` field, as the loader
reports every other rule. The loader checks names of files (both forms); instances built in
code (tests, what-if additions) may use any name. Each kind keeps the rule its API enforces:

- Node, Queue, PriorityClass: DNS-1123 subdomain, ≤ 253 characters (cluster-scoped objects);
- Namespace: DNS-1123 label, ≤ 63 characters;
- Volcano Job: DNS-1123 subdomain (its CRD), and ≤ 63 characters, the job webhook's
  qualified-name check (spec/volcano-job.md §4, rule 5).

HyperNode names are checked by ``models.topology`` with its CEL rules; task names by the job
rules of ``models.workload``. Messages show names escaped and cut short
(:func:`models.errors.shown`).

Labels and annotations follow the API server's metadata rules too (``ValidateLabels``,
``ValidateAnnotations``): a label key is a qualified name (``[prefix/]name``: a DNS-1123
subdomain of at most 253 characters, then at most 63 alphanumerics, ``-``, ``_`` or ``.``),
a label value at most 63 such characters, and the annotations of an object at most 256 KiB
together. Both input forms check them here, on the map as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .errors import Diagnostics, obj_name, shown, shown_value

if TYPE_CHECKING:
    from .instance import Instance

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(rf"{_LABEL}\Z")
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*\Z")
_QUALIFIED_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
LABEL_MAX = 63
SUBDOMAIN_MAX = 253
JOB_NAME_MAX = 63
ANNOTATIONS_MAX = 256 * 1024
"""``TotalAnnotationSizeLimitB``: the bytes of an object's annotation keys and values."""
_QUALIFIED_TEXT = (
    "alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric character"
)


def subdomain_problem(name: str, limit: int = SUBDOMAIN_MAX) -> str:
    """Why ``name`` is no DNS-1123 subdomain of at most ``limit`` characters ('' if it is)."""
    if len(name) > limit:
        return f"must be at most {limit} characters, got {len(name)}"
    if not _DNS1123_SUBDOMAIN.match(name):
        return (
            "not a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and "
            "ending with a letter or digit"
        )
    return ""


def label_problem(name: str) -> str:
    """Why ``name`` is no DNS-1123 label ('' if it is)."""
    if len(name) > LABEL_MAX:
        return f"must be at most {LABEL_MAX} characters, got {len(name)}"
    if not _DNS1123_LABEL.match(name):
        return (
            "not a DNS-1123 label: lowercase letters, digits and '-', starting and ending "
            "with a letter or digit"
        )
    return ""


def qualified_name_problem(key: str) -> str:
    """Why ``key`` is no qualified name (``IsQualifiedName``: label keys, annotation keys,
    taint and toleration keys, topology keys) ('' if it is)."""
    if not key:
        return "must not be empty"
    if key.count("/") > 1:
        return (
            f"has {key.count('/')} '/': a qualified name is one name with an optional "
            "prefix (example.com/my-name)"
        )
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return "prefix part must not be empty"
    if prefix and (problem := subdomain_problem(prefix)):
        return f"prefix part {'is ' if problem.startswith('not') else ''}{problem}"
    if not name:
        return "name part must not be empty"
    if len(name) > LABEL_MAX:
        return f"name part must be at most {LABEL_MAX} characters, got {len(name)}"
    if not _QUALIFIED_PART.match(name):
        return f"name part must consist of {_QUALIFIED_TEXT}"
    return ""


def label_value_problem(value: str) -> str:
    """Why ``value`` is no label value (``IsValidLabelValue``) ('' if it is): empty, or at
    most 63 characters of a qualified name's name part."""
    if len(value) > LABEL_MAX:
        return f"must be at most {LABEL_MAX} characters, got {len(value)}"
    if value and not _QUALIFIED_PART.match(value):
        return f"must be empty or consist of {_QUALIFIED_TEXT}"
    return ""


def key_type_problem(key: object) -> str:
    """Why a map key that YAML did not read as a string is refused: an unquoted ``on`` is a
    boolean and ``~`` is null, which no Kubernetes map can hold as a key."""
    return (
        f"key {shown_value(key)} is not a string: YAML reads unquoted yes, no, on, off, true "
        "and false as booleans and ~ or null as nothing; quote the key"
    )


def check_labels(labels: Mapping[object, object], obj: str, field: str, diag: Diagnostics) -> None:
    """``ValidateLabels`` (also a pod's ``nodeSelector``): every key a qualified name, every
    value a label value. A bad key is named in the message, cut short, not in the path; a key
    that is no string is the YAML reader's to report (:func:`key_type_problem`)."""
    for key, value in labels.items():
        if not isinstance(key, str):
            continue
        if problem := qualified_name_problem(key):
            diag.error(obj, field, f"key {shown_value(key)}: {problem}")
        elif not isinstance(value, str):
            diag.error(obj, f"{field}.{key}", f"expected a string, got {shown_value(value)}")
        elif problem := label_value_problem(value):
            diag.error(obj, f"{field}.{key}", f"value {shown_value(value)}: {problem}")


def check_annotations(
    annotations: Mapping[object, object], obj: str, field: str, diag: Diagnostics
) -> None:
    """``ValidateAnnotations``: every key a qualified name (compared in lowercase), values
    strings, and at most 256 KiB of keys and values together (a key that is no string is
    the YAML reader's to report)."""
    size = 0
    for key, value in annotations.items():
        if not isinstance(key, str):
            continue
        if problem := qualified_name_problem(key.lower()):
            diag.error(obj, field, f"key {shown_value(key)}: {problem}")
        if not isinstance(value, str):
            diag.error(obj, f"{field}.{shown(key)}", f"expected a string, got {shown_value(value)}")
            continue
        size += len(key.encode("utf-8", "replace")) + len(value.encode("utf-8", "replace"))
    if size > ANNOTATIONS_MAX:
        diag.error(
            obj,
            field,
            f"{size:,} bytes of keys and values: the API server takes at most "
            f"{ANNOTATIONS_MAX:,} (256 KiB)",
        )


def check_names(
    instance: Instance, diag: Diagnostics, written_as: Mapping[str, str] | None = None
) -> None:
    """Report every object whose name the API server would refuse. A node generated by a
    ``NodeGroup`` (``written_as``) is reported once, on the group."""
    written_as = written_as or {}
    groups: set[str] = set()
    for node in instance.nodes:
        problem = subdomain_problem(node.name)
        if not problem:
            continue
        group = written_as.get(node.name)
        if group is None:
            diag.error(obj_name("Node", node.name), "name", problem)
        elif group not in groups:
            groups.add(group)
            diag.error(group, "namePrefix", f"the node names it makes break the rule: {problem}")
    for queue in instance.queues:
        if problem := subdomain_problem(queue.name):
            diag.error(obj_name("Queue", queue.name), "name", problem)
    for name in instance.priority_classes:
        if problem := subdomain_problem(name):
            diag.error(obj_name("PriorityClass", name), "name", problem)
    namespaces: set[str] = set()
    for job in instance.jobs:
        obj = obj_name("Job", job.name, job.namespace)
        if problem := subdomain_problem(job.name, JOB_NAME_MAX):
            diag.error(obj, "name", problem)
        if job.namespace not in namespaces and (problem := label_problem(job.namespace)):
            diag.error(obj, "namespace", problem)
        namespaces.add(job.namespace)
