"""Reading plans: a plan file (YAML or JSON, or the Binding objects ``--format bindings``
writes) checked against the instance it is for.

Only ``placements`` are required, so plans can be written by hand; a pod, node or GPU the
instance does not have is bad input, reported with the entry's path. A plan without ``jobs``
gets each job's status from where its pods are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from models.errors import InputError, Problem
from models.instance import Instance
from models.workload import DeviceShare
from models.yamlio import load_documents, read_text

from .. import __version__
from ..result import Status
from .bindings import is_bindings, plan_dict_from_bindings
from .records import (
    ADMITTED,
    JOB_STATUSES,
    PENDING,
    RUNNING,
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
        return plan_from_dict(plan_dict_from_bindings(docs, instance, file), instance, file)
    if len(docs) != 1 or not isinstance(docs[0], Mapping):
        raise InputError([Problem("expected one mapping with kind: Plan", file=file)])
    return plan_from_dict(docs[0], instance, file)


def plan_from_dict(doc: Mapping[str, Any], instance: Instance, file: str = "<plan>") -> Plan:
    """Build a plan from its document; unknown pods, nodes and devices are bad input."""
    problems: list[Problem] = []

    def bad(obj: str, fld: str, message: str) -> None:
        problems.append(Problem(message, obj, fld, file))

    if doc.get("kind", "Plan") != "Plan":
        bad("", "kind", f"expected Plan, got {doc.get('kind')!r}")
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
        for e in _read_entries(
            doc.get("evictions"), "evictions", ("pod", "node"), ("reason",), instance, bad
        )
    )
    pipelined = tuple(
        Pipelined(str(e["pod"]), str(e["node"]))
        for e in _read_entries(
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
            f"the plan is for instance {name!r}, not for {instance.name!r}",
        )
    return raw


def derive_job_statuses(instance: Instance, plan: Plan) -> tuple[JobDecision, ...]:
    """Job status from pod positions: admitted when the plan places pods of the job, running
    when its pods were already running and nothing was added, pending otherwise."""
    placed = {p.pod for p in plan.placements}
    evicted = {e.pod for e in plan.evictions}
    out = []
    for job in instance.jobs:
        pods = job.pods
        new = sum(1 for p in pods if p.key in placed)
        kept = sum(1 for p in pods if p.running and p.key not in evicted)
        if new:
            status = ADMITTED
        elif kept:
            status = RUNNING
        else:
            status = PENDING
        out.append(JobDecision(job.key, status))
    return tuple(out)


def _read_entries(
    raw: object,
    section: str,
    required: Sequence[str],
    optional: Sequence[str],
    instance: Instance,
    bad: Report,
) -> list[Mapping[str, Any]]:
    """The entries of a list section that have the right keys and name a pod and a node of
    the instance; the others are reported."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        bad("", section, "expected a list")
        return []
    return [
        entry
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
        bad(f'Pod "{entry["pod"]}"', f"{where}.pod", instance.why_not_plannable(entry["pod"]))
        known = False
    if "node" in entry and entry["node"] not in instance.node_by_name:
        bad(f'Pod "{entry.get("pod", "")}"', f"{where}.node", f"no such node {entry['node']!r}")
        known = False
    return known


def _read_placements(raw: object, instance: Instance, bad: Report) -> list[Placement]:
    out = []
    seen: set[str] = set()
    entries = _read_entries(raw, "placements", ("pod", "node"), (), instance, bad)
    for i, entry in enumerate(entries):
        pod, node_name = entry["pod"], entry["node"]
        obj = f'Pod "{pod}"'
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
                bad(obj, f"{where}.id", f"node {node_name} has no GPU {dev['id']!r}")
                continue
            memory, cores = dev.get("memory", 0), dev.get("cores", 0)
            if not isinstance(memory, int) or not isinstance(cores, int) or memory < 0 or cores < 0:
                bad(obj, where, "memory and cores must be non-negative integers")
                continue
            gpus.append(DeviceShare(dev["id"], memory, cores))
        out.append(Placement(pod, node_name, tuple(gpus)))
    return out


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
            bad(f'Job "{entry["job"]}"', f"jobs[{i}].job", "no such job in the instance")
            continue
        status = entry.get("status")
        if status not in JOB_STATUSES:
            bad(
                f'Job "{entry["job"]}"',
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
