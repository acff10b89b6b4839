"""Human renderings of plans and metrics (rich tables, captured as text)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from models.instance import Instance

from .plan import Plan


def _render(table: Table) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=160, color_system=None, force_terminal=False).print(table)
    return buffer.getvalue()


def plan_table(plan: Plan, instance: Instance) -> str:
    """Jobs with their status, then every pod that the plan moves."""
    jobs = Table(title=f"Plan for {plan.instance or instance.name} ({plan.engine})")
    for col in ("job", "queue", "status", "hypernode", "LCA tier", "reason"):
        jobs.add_column(col)
    for d in plan.jobs:
        job = instance.job_by_key.get(d.job)
        jobs.add_row(
            d.job,
            job.queue if job else "",
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
        pods.add_row(p.pod, "place", p.node, gpus, "")
    for e in plan.evictions:
        pods.add_row(e.pod, "evict", e.node, "", e.reason)
    for q in plan.pipelined:
        pods.add_row(q.pod, "pipeline", q.node, "", "waiting for released resources")
    text = _render(jobs) + _render(pods)
    if plan.solver is not None:
        s = plan.solver
        text += f"solver: {s.status}, {s.wall_seconds:.2f}s"
        if s.objective is not None:
            text += f", objective {s.objective:g}"
        if s.gap is not None:
            text += f", gap {s.gap:.2%}"
        text += "\n"
    return text
