"""Pydantic's complaints about a compact file, said the way the rest of vcopt says problems.

``models.io.schema`` checks the shape of the document; each of its errors is turned into a
:class:`~models.errors.Problem` that names the object (``Job "default/llm"``, not
``jobs[3]``) and the field as the user wrote it, also inside a full custom resource pasted from
kubectl, whose fields the reader lifts out of ``metadata`` and ``spec``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from ..errors import Problem, shown_value
from ..vocabulary import DEFAULT_NAMESPACE

KINDS = {
    "nodes": "Node",
    "nodeGroups": "NodeGroup",
    "hypernodes": "HyperNode",
    "queues": "Queue",
    "jobs": "Job",
    "priorityClasses": "PriorityClass",
    "namespaces": "Namespace",
}
"""The object kind each list of the compact form holds."""
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


def shape_problems(
    err: ValidationError, doc: Mapping[str, Any], written: Mapping[str, Any], instance_obj: str
) -> list[Problem]:
    """Pydantic's errors on ``doc`` (objects unwrapped), named as ``written`` spells them."""
    problems = []
    for e in err.errors():
        loc = list(e["loc"])
        obj = instance_obj
        if len(loc) >= 2 and loc[0] in KINDS and isinstance(loc[1], int):
            obj = _item_name(doc, str(loc[0]), loc[1])
            original = (written.get(str(loc[0])) or [])[loc[1]]
            loc = _where_written(original, loc[2:])
        problems.append(Problem(message(e), obj, path(loc)))
    return problems


def sub_problems(err: ValidationError, obj: str, prefix: str) -> list[Problem]:
    """Pydantic's errors on one part of an object, whose path is ``prefix``."""
    return [
        Problem(message(e), obj, path([prefix, *e["loc"]]) if prefix else path(e["loc"]))
        for e in err.errors()
    ]


def _item_name(doc: Mapping[str, Any], section: str, index: int) -> str:
    """How a message names item ``index`` of list ``section``: by its name when it has one."""
    items = doc.get(section) or []
    item = items[index] if index < len(items) else {}
    name = ""
    if isinstance(item, Mapping):
        name = str(item.get("name") or item.get("namePrefix") or "")
        namespace = item.get("namespace", DEFAULT_NAMESPACE) if section == "jobs" else ""
        name = f"{namespace}/{name}" if namespace and name else name
    return f'{KINDS[section]} "{name}"' if name else f"{section}[{index}]"


def _where_written(original: object, loc: list[Any]) -> list[Any]:
    """The location inside a full custom resource of a field that the reader lifted."""
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


def path(loc: Sequence[object]) -> str:
    """``tasks[0].resources.cpu`` from pydantic's location tuple."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def message(e: Mapping[str, Any]) -> str:
    kind = e["type"]
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {shown_value(e.get('input'))}"
    if kind == "value_error":
        # vcopt's own validators: their message is written for the user, keys as spelled.
        return str(e["msg"]).removeprefix("Value error, ")
    return str(e["msg"]).lower()
