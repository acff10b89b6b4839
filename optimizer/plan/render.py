"""Plans as people and other tools read them: a DataFrame and CSV with one row per pod, HAMi
allocation annotations, and a human table; :func:`render` picks one of :data:`FORMATS`."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from models.gpu import hami_allocation_annotation
from models.instance import Instance
from models.vocabulary import HAMI_ALLOCATED, HAMI_NODE, HAMI_TO_ALLOCATE
from models.yamlio import dump_yaml

from .bindings import plan_bindings
from .write import plan_json, plan_yaml

if TYPE_CHECKING:
    from .records import Plan

FORMATS = ("table", "yaml", "json", "csv", "annotations", "bindings")
BY_SUFFIX = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".csv": "csv"}


def format_for(output: str | None, fmt: str | None) -> str:
    """The format asked for; else the one the output file's suffix names (``-o plan.yaml``
    writes YAML, not a table that no tool can read back); else the table."""
    if fmt is not None:
        return fmt
    if output is not None:
        return BY_SUFFIX.get(Path(output).suffix.lower(), "table")
    return "table"


def render(plan: Plan, fmt: str, instance: Instance) -> str:
    """The plan in one of :data:`FORMATS`."""
    if fmt == "yaml":
        return plan_yaml(plan)
    if fmt == "json":
        return plan_json(plan)
    if fmt == "csv":
        return plan_csv(plan, instance)
    if fmt == "annotations":
        return dump_yaml(plan_annotations(plan), sort_keys=False, width=200)
    if fmt == "table":
        return plan_table(plan, instance)
    if fmt == "bindings":
        return plan_bindings(plan)
    raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")


def plan_frame(plan: Plan, instance: Instance) -> Any:
    """One row per pod of the instance: where it is after the plan and why."""
    import pandas as pd

    placed = {p.pod: p for p in plan.placements}
    evicted = {e.pod: e for e in plan.evictions}
    piped = {p.pod: p for p in plan.pipelined}
    decisions = {d.job: d for d in plan.jobs}
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


def plan_csv(plan: Plan, instance: Instance) -> str:
    buffer = io.StringIO()
    plan_frame(plan, instance).to_csv(buffer, index=False)
    return buffer.getvalue()


def plan_annotations(plan: Plan) -> dict[str, dict[str, str]]:
    """HAMi allocation annotations per placed pod that holds GPU devices (hami-gpu §6.1)."""
    out: dict[str, dict[str, str]] = {}
    for p in plan.placements:
        if not p.gpus:
            continue
        value = hami_allocation_annotation([[(d.id, d.memory, d.cores) for d in p.gpus]])
        out[p.pod] = {
            HAMI_TO_ALLOCATE: value,
            HAMI_ALLOCATED: value,
            HAMI_NODE: p.node,
        }
    return out


def _render(table: Table) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=160, color_system=None, force_terminal=False).print(table)
    return buffer.getvalue()


def plan_table(plan: Plan, instance: Instance) -> str:
    """Jobs with their status, then every pod that the plan moves."""
    jobs = Table(title=f"Plan for {plan.instance or instance.name} ({plan.engine})")
    for col in ("job", "queue", "position", "status", "hypernode", "LCA tier", "reason"):
        jobs.add_column(col)
    for d in plan.jobs:
        job = instance.job_by_key.get(d.job)
        jobs.add_row(
            short_name(d.job),
            job.queue if job else "",
            "" if d.position is None else str(d.position),
            d.status,
            d.hypernode or "",
            "" if d.lca_tier is None else str(d.lca_tier),
            d.reason,
        )
    pods = Table(title="Pods")
    for col in ("pod", "action", "node", "gpus", "reason"):
        pods.add_column(col)
    for p in plan.placements:
        gpus = " ".join(f"{g.id}:{g.memory}MiB/{g.cores}%" for g in p.gpus or ())
        pods.add_row(short_name(p.pod), "place", p.node, gpus, "")
    for e in plan.evictions:
        pods.add_row(short_name(e.pod), "evict", e.node, "", e.reason)
    for q in plan.pipelined:
        pods.add_row(short_name(q.pod), "pipeline", q.node, "", "waiting for released resources")
    text = _render(jobs) + _render(pods)
    if plan.solver is not None:
        s = plan.solver
        text += f"solver: {s.status}, {s.wall_seconds:.2f}s"
        if s.objective is not None:
            text += f", objective {s.objective:g}"
        if s.gap is not None:
            text += f", gap {s.gap:.2%}"
        open_stages = {stage: gap for stage, gap in s.stage_gaps.items() if gap > 0}
        if open_stages:
            text += "; stage gaps " + ", ".join(f"{k} {g:.2%}" for k, g in open_stages.items())
        text += "\n"
        if s.message:
            text += f"  {s.message}\n"
    return text


TABLE_NAME_WIDTH = 48


def short_name(name: str, width: int = TABLE_NAME_WIDTH) -> str:
    """A long generated name (``podgroup-<uid>``, ``<job>-<uid>``) cut in the middle, for the
    human table only: its start says what it is and its end tells pods apart. Every other
    format keeps the cluster's name whole."""
    if len(name) <= width:
        return name
    tail = width // 3
    return f"{name[: width - tail - 1]}…{name[-tail:]}"


def _device_text(gpus: Sequence[Any] | None) -> str:
    if not gpus:
        return ""
    flat = []
    for g in gpus:
        flat.extend(g if isinstance(g, tuple) else [g])
    return " ".join(f"{d.id}({d.memory}MiB,{d.cores}%)" for d in flat)
