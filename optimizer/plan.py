"""The plan: one answer to "where should everything go", whichever engine produced it.

Both engines return a :class:`Plan`, the verifier and the metrics judge one, and users write
them by hand to ask "is this placement valid?". So a plan read from a file needs only
``placements`` (and ``evictions``); every other section is derived or optional, and a
placement may leave its GPU devices to the verifier. Plans round-trip through YAML and JSON
without loss and render as a DataFrame, CSV, a human table and HAMi annotations.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from models.errors import InputError, Problem
from models.gpu import hami_allocation_annotation
from models.instance import Instance
from models.vocabulary import API_VERSION, HAMI_ALLOCATED, HAMI_NODE, HAMI_TO_ALLOCATE
from models.workload import DeviceShare
from models.yamlio import load_documents, read_text

from . import __version__

ADMITTED, PENDING, RUNNING = "admitted", "pending", "running"
JOB_STATUSES = (ADMITTED, PENDING, RUNNING)
FORMATS = ("table", "yaml", "json", "csv", "annotations")


@dataclass(frozen=True)
class Placement:
    """A pod newly bound to a node; ``gpus`` None means "any valid devices on that node"."""

    pod: str
    node: str
    gpus: tuple[DeviceShare, ...] | None = None


@dataclass(frozen=True)
class Bound:
    """A pod's position after a plan: its node and devices (None: devices not chosen)."""

    pod: str
    node: str
    gpus: tuple[DeviceShare, ...] | None
    running: bool
    """True for a pod that was already running before the plan."""


@dataclass(frozen=True)
class Eviction:
    pod: str
    node: str
    reason: str = ""


@dataclass(frozen=True)
class Pipelined:
    """A pod nominated to a node, waiting for resources being released (greedy only)."""

    pod: str
    node: str


@dataclass(frozen=True)
class JobDecision:
    job: str
    status: str
    reason: str = ""
    hypernode: str | None = None
    lca_tier: int | None = None


@dataclass(frozen=True)
class SolverInfo:
    """How an engine reached the plan. Greedy plans carry a status and time but no gap."""

    status: str
    wall_seconds: float = 0.0
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    workers: int | None = None
    stages: Mapping[str, float] = field(default_factory=dict)
    variables: int | None = None
    constraints: int | None = None
    message: str = ""


@dataclass(frozen=True)
class Plan:
    instance: str = ""
    engine: str = "manual"
    seed: int = 0
    placements: tuple[Placement, ...] = ()
    evictions: tuple[Eviction, ...] = ()
    pipelined: tuple[Pipelined, ...] = ()
    jobs: tuple[JobDecision, ...] = ()
    solver: SolverInfo | None = None
    metrics: Mapping[str, Any] = field(default_factory=dict)
    version: str = __version__

    def replace(self, **changes: Any) -> Plan:
        return replace(self, **changes)

    def bound_pods(self, instance: Instance) -> dict[str, Bound]:
        """Where every pod is once the plan is applied: running pods that are not evicted,
        plus placements. Pipelined pods hold nothing yet and are not included."""
        evicted = {e.pod for e in self.evictions}
        out = {
            p.key: Bound(p.key, p.node, tuple(d for c in p.gpus for d in c), running=True)
            for p in instance.pods
            if p.node is not None and p.key not in evicted
        }
        for p in self.placements:
            out[p.pod] = Bound(p.pod, p.node, p.gpus, running=False)
        return out

    def job(self, key: str) -> JobDecision | None:
        for decision in self.jobs:
            if decision.job == key:
                return decision
        return None

    # -- serialisation -----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The YAML/JSON document (DESIGN §4); empty optional sections are left out."""
        doc: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": "Plan",
            "metadata": {
                "instance": self.instance,
                "engine": self.engine,
                "seed": self.seed,
                "vcoptVersion": self.version,
            },
        }
        if self.solver is not None:
            doc["solver"] = _solver_dict(self.solver)
        if self.jobs:
            doc["jobs"] = [_compact(asdict(j), keep=("job", "status")) for j in self.jobs]
        doc["placements"] = [_placement_dict(p) for p in self.placements]
        if self.evictions:
            doc["evictions"] = [_compact(asdict(e), keep=("pod", "node")) for e in self.evictions]
        if self.pipelined:
            doc["pipelined"] = [asdict(p) for p in self.pipelined]
        if self.metrics:
            doc["metrics"] = _plain(self.metrics)
        return doc

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True, width=120)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def to_frame(self, instance: Instance) -> Any:
        """One row per pod of the instance: where it is after the plan and why."""
        import pandas as pd

        placed = {p.pod: p for p in self.placements}
        evicted = {e.pod: e for e in self.evictions}
        piped = {p.pod: p for p in self.pipelined}
        decisions = {d.job: d for d in self.jobs}
        rows = []
        for job in instance.jobs:
            decision = decisions.get(job.key)
            for pod in job.pods:
                if pod.key in evicted:
                    state, node = "evicted", evicted[pod.key].node
                    devices = _device_text(pod.gpus)
                elif pod.key in placed:
                    state, node = "placed", placed[pod.key].node
                    devices = _device_text(placed[pod.key].gpus)
                elif pod.running:
                    state, node, devices = "running", pod.node, _device_text(pod.gpus)
                elif pod.key in piped:
                    state, node, devices = "pipelined", piped[pod.key].node, ""
                else:
                    state, node, devices = "pending", None, ""
                rows.append(
                    {
                        "pod": pod.key,
                        "job": job.key,
                        "task": pod.task,
                        "queue": job.queue,
                        "state": state,
                        "node": node,
                        "gpus": devices,
                        "job_status": decision.status if decision else "",
                        "reason": (evicted[pod.key].reason if pod.key in evicted else "")
                        or (decision.reason if decision and state == "pending" else ""),
                    }
                )
        return pd.DataFrame(
            rows,
            columns=[
                "pod",
                "job",
                "task",
                "queue",
                "state",
                "node",
                "gpus",
                "job_status",
                "reason",
            ],
        )

    def to_csv(self, instance: Instance) -> str:
        buffer = io.StringIO()
        self.to_frame(instance).to_csv(buffer, index=False)
        return buffer.getvalue()

    def annotations(self) -> dict[str, dict[str, str]]:
        """HAMi allocation annotations per placed pod that holds GPU devices (hami-gpu §6.1)."""
        out: dict[str, dict[str, str]] = {}
        for p in self.placements:
            if not p.gpus:
                continue
            value = hami_allocation_annotation([[(d.id, d.memory, d.cores) for d in p.gpus]])
            out[p.pod] = {
                HAMI_TO_ALLOCATE: value,
                HAMI_ALLOCATED: value,
                HAMI_NODE: p.node,
            }
        return out

    def render(self, fmt: str, instance: Instance) -> str:
        """The plan in one of :data:`FORMATS`."""
        if fmt == "yaml":
            return self.to_yaml()
        if fmt == "json":
            return self.to_json()
        if fmt == "csv":
            return self.to_csv(instance)
        if fmt == "annotations":
            return yaml.safe_dump(self.annotations(), sort_keys=False, width=200)
        if fmt == "table":
            from .report import plan_table

            return plan_table(self, instance)
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")

    def write(self, path: str | Path, fmt: str, instance: Instance) -> None:
        """Write atomically: a reader never sees a half-written plan."""
        write_atomic(path, self.render(fmt, instance))


def write_atomic(path: str | Path, text: str) -> None:
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- reading ---------------------------------------------------------------------------


def read_plan(path: str | Path, instance: Instance) -> Plan:
    """Read a plan file (YAML or JSON) and check its references against ``instance``."""
    file = str(path)
    docs = load_documents(read_text(path), file)
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
    meta = doc.get("metadata") or {}
    if not isinstance(meta, Mapping):
        bad("", "metadata", "expected a mapping")
        meta = {}
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
        seed=int(meta.get("seed", 0)) if str(meta.get("seed", 0)).lstrip("-").isdigit() else 0,
        placements=placements,
        evictions=evictions,
        pipelined=pipelined,
        jobs=jobs,
        solver=solver,
        metrics=dict(doc.get("metrics") or {}),
        version=str(meta.get("vcoptVersion", __version__)),
    )
    if not plan.jobs:
        plan = plan.replace(jobs=derive_job_statuses(instance, plan))
    return plan


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
    bad: Any,
) -> list[Mapping[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        bad("", section, "expected a list")
        return []
    out = []
    for i, entry in enumerate(raw):
        where = f"{section}[{i}]"
        if not isinstance(entry, Mapping):
            bad("", where, "expected a mapping")
            continue
        ok = True
        for key in entry:
            if key not in (*required, *optional, "gpus"):
                bad("", f"{where}.{key}", "unknown field")
                ok = False
        for key in required:
            if not isinstance(entry.get(key), str) or not entry.get(key):
                bad("", f"{where}.{key}", "required: a non-empty string")
                ok = False
        if not ok:
            continue
        if "pod" in entry and entry["pod"] not in instance.pod_by_key:
            bad(f'Pod "{entry["pod"]}"', f"{where}.pod", "no such pod in the instance")
            ok = False
        if "node" in entry and entry["node"] not in instance.node_by_name:
            bad(f'Pod "{entry.get("pod", "")}"', f"{where}.node", f"no such node {entry['node']!r}")
            ok = False
        if ok:
            out.append(entry)
    return out


def _read_placements(raw: object, instance: Instance, bad: Any) -> list[Placement]:
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


def _read_jobs(raw: object, instance: Instance, bad: Any) -> list[JobDecision]:
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
        out.append(
            JobDecision(
                entry["job"],
                status,
                str(entry.get("reason", "")),
                entry.get("hypernode"),
                tier if isinstance(tier, int) else None,
            )
        )
    return out


def _read_solver(raw: object, bad: Any) -> SolverInfo | None:
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
        "variables": "variables",
        "constraints": "constraints",
        "message": "message",
    }
    kwargs = {names[k]: v for k, v in raw.items() if k in names}
    return SolverInfo(**kwargs)


# -- helpers ---------------------------------------------------------------------------


def _placement_dict(p: Placement) -> dict[str, Any]:
    out: dict[str, Any] = {"pod": p.pod, "node": p.node}
    if p.gpus is not None:
        out["gpus"] = [asdict(d) for d in p.gpus]
    return out


def _solver_dict(s: SolverInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"status": s.status}
    for key, attr in (
        ("objective", "objective"),
        ("bound", "bound"),
        ("gap", "gap"),
        ("wallSeconds", "wall_seconds"),
        ("workers", "workers"),
        ("variables", "variables"),
        ("constraints", "constraints"),
        ("message", "message"),
    ):
        value = getattr(s, attr)
        if value not in (None, ""):
            out[key] = value
    if s.stages:
        out["stages"] = dict(s.stages)
    return out


def _compact(d: Mapping[str, Any], keep: Sequence[str]) -> dict[str, Any]:
    names = {"lca_tier": "lcaTier"}
    return {names.get(k, k): v for k, v in d.items() if k in keep or v not in (None, "")}


def _device_text(gpus: Sequence[Any] | None) -> str:
    if not gpus:
        return ""
    flat = []
    for g in gpus:
        flat.extend(g if isinstance(g, tuple) else [g])
    return " ".join(f"{d.id}({d.memory}MiB,{d.cores}%)" for d in flat)


def _plain(value: Any) -> Any:
    """JSON-safe copy (tuples → lists, numpy scalars → Python numbers)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value
