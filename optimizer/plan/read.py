"""Reading plans: a plan file (YAML or JSON, or the Binding objects ``--format bindings``
writes) checked against the instance it is for.

Only ``placements`` are required, so plans can be written by hand; a pod, node or GPU the
instance does not have is bad input, reported with the entry's path. A plan without ``jobs``
gets each job's status from where its pods are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from models.errors import InputError, Problem, obj_name, shown_value
from models.instance import Instance
from models.vocabulary import DEFAULT_NAMESPACE, HAMI_ALLOCATED
from models.workload import DeviceShare
from models.yamlio import load_documents, read_text

from .. import __version__
from ..result import Status
from .bindings import EVICTION_REASON, is_bindings, plan_dict_from_bindings
from .records import (
    JOB_STATUSES,
    Eviction,
    JobDecision,
    Pipelined,
    Placement,
    Plan,
    SolverInfo,
)

Report = Callable[[str, str, str], None]
"""How the readers report a problem: (object, field, message)."""


def read_plan(path: str | Path, instance: Instance) -> Plan:
    """Read a plan file (YAML or JSON) and check its references against ``instance``."""
    file = str(path)
    docs = load_documents(read_text(path), file)
    if docs and all(isinstance(d, Mapping) and is_bindings(d) for d in docs):
        return _plan_from_bindings(docs, instance, file)
    if len(docs) != 1 or not isinstance(docs[0], Mapping):
        raise InputError([Problem("expected one mapping with kind: Plan", file=file)])
    return plan_from_dict(docs[0], instance, file)


def _plan_from_bindings(docs: Sequence[object], instance: Instance, file: str) -> Plan:
    """The plan a file of Binding and Eviction objects stands for. The objects are checked
    as the API server would take them first; the plan's own problems are then named on the
    object and field of the file (``Binding "ns/x": target.name``), not on the plan entry
    it became (``placements[3].node``)."""
    bindings, evictions = _binding_objects(docs, instance, file)
    doc = plan_dict_from_bindings(docs, instance, file)
    try:
        return plan_from_dict(doc, instance, file)
    except InputError as err:
        raise InputError(
            [_as_written(p, {"placements": bindings, "evictions": evictions}) for p in err.problems]
        ) from None


_WRITTEN = {
    "pod": "metadata.name",
    "node": "target.name",
    "gpus": f"metadata.annotations.{HAMI_ALLOCATED}",
    "reason": f"metadata.annotations.{EVICTION_REASON}",
}
"""Where a Binding or Eviction writes each field of the plan entry it becomes."""
_ENTRY = re.compile(r"(placements|evictions)\[(\d+)\]\.(\w+)(.*)\Z")


def _as_written(problem: Problem, objects: Mapping[str, Sequence[str]]) -> Problem:
    """``problem`` of plan entry ``placements[i]`` (``evictions[i]``), on the i-th Binding
    (Eviction) of the file and its field; the entry's inner path stays as a hint."""
    entry = _ENTRY.match(problem.field)
    if entry is None:
        return problem
    section, index, key, rest = entry.groups()
    written = objects[section][int(index)]
    field = _WRITTEN.get(key, "")
    message = problem.message
    if rest:
        message += f" (vcopt reads it as {section}[{index}].{key}{rest})"
    return Problem(message, written, field, problem.file)


def _binding_objects(
    docs: Sequence[object], instance: Instance, file: str
) -> tuple[list[str], list[str]]:
    """How problems name the Binding and the Eviction objects of the file, each in order;
    raises for what the API server refuses: an item that is no object, a Binding without a
    node to bind to (``target.kind`` is Node or empty, ``target.name`` set), an object
    without a name, and an Eviction of a pod that is not running, which nothing can evict."""
    problems: list[Problem] = []
    bindings: list[str] = []
    evictions: list[str] = []
    for where, item in _listed(docs, file, problems):
        kind = item.get("kind")
        if kind not in ("Binding", "Eviction"):
            problems.append(
                Problem(
                    f"expected Binding or Eviction, got {shown_value(kind)}", where, "kind", file
                )
            )
            continue
        metadata = item.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        name, namespace = metadata.get("name"), metadata.get("namespace") or DEFAULT_NAMESPACE
        if not isinstance(name, str) or not name or not isinstance(namespace, str):
            problems.append(
                Problem("required: the pod's name (and namespace)", where, "metadata.name", file)
            )
            continue
        obj = obj_name(str(kind), name, namespace)
        if kind == "Binding":
            bindings.append(obj)
            problems += _target_problems(item.get("target"), obj, file)
        else:
            evictions.append(obj)
            pod = instance.pod_by_key.get(f"{namespace}/{name}")
            if pod is None:
                why = instance.why_not_plannable(f"{namespace}/{name}")
                problems.append(Problem(why, obj, "metadata.name", file))
            elif not pod.running:
                problems.append(
                    Problem(
                        "the pod is not running: only a pod bound to a node can be evicted",
                        obj,
                        "metadata.name",
                        file,
                    )
                )
    if problems:
        raise InputError(problems)
    return bindings, evictions


def _listed(
    docs: Sequence[object], file: str, problems: list[Problem]
) -> list[tuple[str, Mapping[str, Any]]]:
    """The objects of the documents, a ``List``'s items in place of the List, with where
    each is; an item that is no mapping is reported."""
    out: list[tuple[str, Mapping[str, Any]]] = []
    for n, doc in enumerate(docs, 1):
        if not isinstance(doc, Mapping) or doc.get("kind") != "List":
            out.append((f"document {n}", doc))  # type: ignore[arg-type]
            continue
        items = doc.get("items")
        if not isinstance(items, list):
            problems.append(
                Problem(
                    f"expected a list of objects, got {shown_value(items)}",
                    f"document {n}",
                    "items",
                    file,
                )
            )
            continue
        for i, item in enumerate(items):
            where = f"document {n} items[{i}]"
            if isinstance(item, Mapping):
                out.append((where, item))
            else:
                problems.append(
                    Problem(
                        f"expected a Binding or Eviction object, got {shown_value(item)}",
                        where,
                        "",
                        file,
                    )
                )
    return out


def _target_problems(target: object, obj: str, file: str) -> list[Problem]:
    """``ValidatePodBinding``: a Binding targets a Node (``target.kind`` Node or empty) by
    its name."""
    if not isinstance(target, Mapping):
        return [
            Problem(
                "required: the node to bind the pod to ({kind: Node, name: …})", obj, "target", file
            )
        ]
    problems = []
    kind = target.get("kind")
    if kind not in (None, "", "Node"):
        problems.append(
            Problem(
                f"must be Node (a pod is bound to a node), got {shown_value(kind)}",
                obj,
                "target.kind",
                file,
            )
        )
    name = target.get("name")
    if not isinstance(name, str) or not name:
        problems.append(Problem("required: the node's name", obj, "target.name", file))
    return problems


def plan_from_dict(doc: Mapping[str, Any], instance: Instance, file: str = "<plan>") -> Plan:
    """Build a plan from its document; unknown pods, nodes and devices are bad input."""
    problems: list[Problem] = []

    def bad(obj: str, fld: str, message: str) -> None:
        problems.append(Problem(message, obj, fld, file))

    if doc.get("kind", "Plan") != "Plan":
        bad("", "kind", f"expected Plan, got {shown_value(doc.get('kind'))}")
    allowed = {
        "apiVersion",
        "kind",
        "metadata",
        "solver",
        "jobs",
        "placements",
        "evictions",
        "pipelined",
        "metrics",
    }
    for key in doc:
        if key not in allowed:
            bad("", str(key), "unknown field")
    if "placements" not in doc:
        bad("", "placements", "required field is missing")
    meta = _read_metadata(doc.get("metadata"), instance, bad)
    metrics = doc.get("metrics")
    if metrics is not None and not isinstance(metrics, Mapping):
        bad("", "metrics", "expected a mapping of metric names to values")
        metrics = None
    placements = tuple(_read_placements(doc.get("placements"), instance, bad))
    evictions = tuple(
        Eviction(str(e["pod"]), str(e["node"]), str(e.get("reason", "")))
        for _, e in _read_entries(
            doc.get("evictions"), "evictions", ("pod", "node"), ("reason",), instance, bad
        )
    )
    pipelined = tuple(
        Pipelined(str(e["pod"]), str(e["node"]))
        for _, e in _read_entries(
            doc.get("pipelined"), "pipelined", ("pod", "node"), (), instance, bad
        )
    )
    jobs = tuple(_read_jobs(doc.get("jobs"), instance, bad))
    solver = _read_solver(doc.get("solver"), bad)
    if problems:
        raise InputError(problems)
    plan = Plan(
        instance=str(meta.get("instance", instance.name)),
        engine=str(meta.get("engine", "manual")),
        seed=meta.get("seed", 0),
        placements=placements,
        evictions=evictions,
        pipelined=pipelined,
        jobs=jobs,
        solver=solver,
        metrics=dict(metrics or {}),
        version=str(meta.get("vcoptVersion", __version__)),
    )
    if not plan.jobs:
        plan = plan.replace(jobs=derive_job_statuses(instance, plan))
    return plan


def _read_metadata(raw: object, instance: Instance, bad: Report) -> Mapping[str, Any]:
    """The plan's metadata; a plan made for another instance is refused, since verifying it
    against this one would report violations that are only a mix-up of files."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        bad("", "metadata", "expected a mapping")
        return {}
    for key in raw:
        if key not in ("instance", "engine", "seed", "vcoptVersion"):
            bad("", f"metadata.{key}", "unknown field")
    for key in ("instance", "engine", "vcoptVersion"):
        if key in raw and not isinstance(raw[key], str):
            bad("", f"metadata.{key}", "expected a string")
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        bad("", "metadata.seed", "expected an integer")
    name = raw.get("instance")
    if isinstance(name, str) and name != instance.name:
        bad(
            "",
            "metadata.instance",
            f"the plan is for instance {shown_value(name)}, not for {shown_value(instance.name)}",
        )
    return raw


def derive_job_statuses(instance: Instance, plan: Plan) -> tuple[JobDecision, ...]:
    """The jobs' statuses from where their pods are (``Plan.job_statuses``), for a plan
    that does not state them."""
    return tuple(JobDecision(key, status) for key, status in plan.job_statuses(instance).items())


def _read_entries(
    raw: object,
    section: str,
    required: Sequence[str],
    optional: Sequence[str],
    instance: Instance,
    bad: Report,
) -> list[tuple[int, Mapping[str, Any]]]:
    """The entries of a list section that have the right keys and name a pod and a node of
    the instance, with their positions in the list (which problems name); the others are
    reported."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        bad("", section, "expected a list")
        return []
    return [
        (i, entry)
        for i, entry in enumerate(raw)
        if _entry_ok(entry, f"{section}[{i}]", required, optional, instance, bad)
    ]


def _entry_ok(
    entry: object,
    where: str,
    required: Sequence[str],
    optional: Sequence[str],
    instance: Instance,
    bad: Report,
) -> bool:
    if not isinstance(entry, Mapping):
        bad("", where, "expected a mapping")
        return False
    unknown = [key for key in entry if key not in (*required, *optional, "gpus")]
    for key in unknown:
        bad("", f"{where}.{key}", "unknown field")
    missing = [key for key in required if not isinstance(entry.get(key), str) or not entry[key]]
    for key in missing:
        bad("", f"{where}.{key}", "required: a non-empty string")
    if unknown or missing:
        return False
    known = True
    if "pod" in entry and entry["pod"] not in instance.pod_by_key:
        bad(_pod_obj(entry["pod"]), f"{where}.pod", instance.why_not_plannable(entry["pod"]))
        known = False
    if "node" in entry and entry["node"] not in instance.node_by_name:
        node = shown_value(entry["node"])
        bad(_pod_obj(entry.get("pod", "")), f"{where}.node", f"no such node {node}")
        known = False
    return known


def _read_placements(raw: object, instance: Instance, bad: Report) -> list[Placement]:
    out = []
    seen: set[str] = set()
    entries = _read_entries(raw, "placements", ("pod", "node"), (), instance, bad)
    for i, entry in entries:
        pod, node_name = entry["pod"], entry["node"]
        obj = _pod_obj(pod)
        if pod in seen:
            bad(obj, f"placements[{i}].pod", "placed twice")
        seen.add(pod)
        gpus_raw = entry.get("gpus")
        if gpus_raw is None:
            out.append(Placement(pod, node_name, None))
            continue
        node = instance.node_by_name[node_name]
        gpus = []
        if not isinstance(gpus_raw, list):
            bad(obj, f"placements[{i}].gpus", "expected a list of {id, memory, cores}")
            continue
        for d, dev in enumerate(gpus_raw):
            where = f"placements[{i}].gpus[{d}]"
            if not isinstance(dev, Mapping) or not isinstance(dev.get("id"), str):
                bad(obj, where, "expected {id, memory, cores}")
                continue
            if node.device(dev["id"]) is None:
                bad(obj, f"{where}.id", f"node {node_name} has no GPU {shown_value(dev['id'])}")
                continue
            memory, cores = dev.get("memory", 0), dev.get("cores", 0)
            if not all(_is(v, "integer") and v >= 0 for v in (memory, cores)):
                bad(obj, where, "memory and cores must be non-negative integers")
                continue
            gpus.append(DeviceShare(dev["id"], memory, cores))
        out.append(Placement(pod, node_name, tuple(gpus)))
    return out


def _pod_obj(key: str) -> str:
    """How a problem names a plan entry's pod (``Pod "ns/x"``), escaped and cut short."""
    return obj_name("Pod", key)


def _read_jobs(raw: object, instance: Instance, bad: Report) -> list[JobDecision]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        bad("", "jobs", "expected a list")
        return []
    out = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("job"), str):
            bad("", f"jobs[{i}]", "expected {job, status}")
            continue
        if entry["job"] not in instance.job_by_key:
            bad(obj_name("Job", entry["job"]), f"jobs[{i}].job", "no such job in the instance")
            continue
        status = entry.get("status")
        if status not in JOB_STATUSES:
            bad(
                obj_name("Job", entry["job"]),
                f"jobs[{i}].status",
                f"must be one of {', '.join(JOB_STATUSES)}",
            )
            continue
        tier = entry.get("lcaTier")
        position = entry.get("queuePosition")
        out.append(
            JobDecision(
                entry["job"],
                status,
                str(entry.get("reason", "")),
                entry.get("hypernode"),
                tier if isinstance(tier, int) else None,
                position if isinstance(position, int) else None,
            )
        )
    return out


def _read_solver(raw: object, bad: Report) -> SolverInfo | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or "status" not in raw:
        bad("", "solver", "expected a mapping with a status")
        return None
    names = {
        "status": "status",
        "wallSeconds": "wall_seconds",
        "objective": "objective",
        "bound": "bound",
        "gap": "gap",
        "workers": "workers",
        "stages": "stages",
        "stageBounds": "stage_bounds",
        "variables": "variables",
        "constraints": "constraints",
        "classes": "classes",
        "fallback": "fallback",
        "message": "message",
    }
    ok = True
    for key, value in raw.items():
        kind = _SOLVER_TYPES.get(str(key))
        if kind is None:
            bad("", f"solver.{key}", "unknown field")
            ok = False
        elif not _is(value, kind):
            bad("", f"solver.{key}", f"expected {_KIND_NAMES[kind]}")
            ok = False
    for key in ("stages", "stageBounds"):
        stages = raw.get(key)
        if isinstance(stages, Mapping) and not all(_is(v, "number") for v in stages.values()):
            bad("", f"solver.{key}", "expected a mapping of stage names to numbers")
            ok = False
    if not ok:
        return None
    kwargs = {names[k]: v for k, v in raw.items() if k in names}
    kwargs["status"] = Status.parse(str(kwargs["status"]))
    return SolverInfo(**kwargs)


_SOLVER_TYPES = {
    "status": "string",
    "wallSeconds": "number",
    "objective": "number",
    "bound": "number",
    "gap": "number",
    "workers": "integer",
    "stages": "mapping",
    "stageBounds": "mapping",
    "variables": "integer",
    "constraints": "integer",
    "classes": "integer",
    "fallback": "string",
    "message": "string",
}
_KIND_NAMES = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "mapping": "a mapping",
}


def _is(value: object, kind: str) -> bool:
    if isinstance(value, bool):
        return False
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int)
    if kind == "number":
        return isinstance(value, int | float)
    return isinstance(value, Mapping)
