"""Writing plans: the plan document (DESIGN §4) as YAML or JSON (files are written by
:func:`optimizer.atomic.write_atomic`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from models.vocabulary import API_VERSION
from models.yamlio import dump_yaml

if TYPE_CHECKING:
    from .records import Placement, Plan, SolverInfo


def plan_document(plan: Plan) -> dict[str, Any]:
    """The YAML/JSON document (DESIGN §4); empty optional sections are left out."""
    doc: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "Plan",
        "metadata": {
            "instance": plan.instance,
            "engine": plan.engine,
            "seed": plan.seed,
            "vcoptVersion": plan.version,
        },
    }
    if plan.solver is not None:
        doc["solver"] = _solver_dict(plan.solver)
    if plan.jobs:
        doc["jobs"] = [_compact(asdict(j), keep=("job", "status")) for j in plan.jobs]
    doc["placements"] = [_placement_dict(p) for p in plan.placements]
    if plan.evictions:
        doc["evictions"] = [_compact(asdict(e), keep=("pod", "node")) for e in plan.evictions]
    if plan.pipelined:
        doc["pipelined"] = [asdict(p) for p in plan.pipelined]
    if plan.metrics:
        doc["metrics"] = _plain(plan.metrics)
    return doc


def plan_yaml(plan: Plan) -> str:
    return dump_yaml(plan_document(plan), sort_keys=False, allow_unicode=True, width=120)


def plan_json(plan: Plan) -> str:
    return json.dumps(plan_document(plan), indent=2, ensure_ascii=False) + "\n"


def _placement_dict(p: Placement) -> dict[str, Any]:
    out: dict[str, Any] = {"pod": p.pod, "node": p.node}
    if p.gpus is not None:
        out["gpus"] = [asdict(d) for d in p.gpus]
    return out


def _solver_dict(s: SolverInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"status": str(s.status)}
    for key, attr in (
        ("objective", "objective"),
        ("bound", "bound"),
        ("gap", "gap"),
        ("wallSeconds", "wall_seconds"),
        ("workers", "workers"),
        ("variables", "variables"),
        ("constraints", "constraints"),
        ("classes", "classes"),
        ("fallback", "fallback"),
        ("message", "message"),
    ):
        value = getattr(s, attr)
        if value not in (None, ""):
            out[key] = value
    if s.stages:
        out["stages"] = dict(s.stages)
    if s.stage_bounds:
        out["stageBounds"] = dict(s.stage_bounds)
    return out


def _compact(d: Mapping[str, Any], keep: Sequence[str]) -> dict[str, Any]:
    names = {"lca_tier": "lcaTier", "position": "queuePosition"}
    return {names.get(k, k): v for k, v in d.items() if k in keep or v not in (None, "")}


def _plain(value: Any) -> Any:
    """JSON-safe copy (tuples → lists, numpy scalars → Python numbers)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value
