"""``vcopt compare``: the greedy (Volcano) plan and the CP-SAT plan side by side.

Two views answer "how much better than Volcano, and for whom". One row per metric, one column
per engine and a column saying which engine is better on that row; then the jobs whose outcome
differs (admitted by one engine only, another LCA tier, more or fewer nodes, evicted pods). The
same rows go to the terminal table, to CSV (numbers only, so a spreadsheet can sum them) and
to JSON; the figure reads the metric vocabulary (label, unit, better direction) from here too.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from models.instance import Instance

from .plan import ADMITTED, Plan

NONE = "-"
"""How the terminal table spells a value that does not exist (a greedy gap, no LCA tier)."""


@dataclass(frozen=True)
class MetricSpec:
    """What a compared metric means to a reader: its label, unit and better direction."""

    name: str
    label: str
    unit: str
    higher_is_better: bool
    percent: bool = False
    """A fraction in [0, 1] that people read as a percentage."""
    stage: str = ""
    """The CP-SAT objective stage that aims at this measure (empty: none does, the row is
    information only; CP-SAT may well do worse there while winning on its objective)."""

    @property
    def direction(self) -> str:
        return "↑ better" if self.higher_is_better else "↓ better"

    def shown(self, value: float) -> float:
        """The value in the unit :attr:`unit` names (percent for fractions)."""
        return 100 * value if self.percent else value


PRIMARY_SPECS = (
    MetricSpec("jobs_admitted", "jobs admitted", "jobs", True),
    MetricSpec("pods_placed", "pods placed", "pods", True, stage="work"),
    MetricSpec("gpu_allocated", "GPUs allocated", "GPU-equivalents", True, stage="work"),
    MetricSpec("gpu_allocation_ratio", "GPU allocation", "% of healthy GPUs", True, True, "work"),
    MetricSpec(
        "deserved_satisfaction",
        "deserved satisfaction",
        "% of deserved met",
        True,
        True,
        "fairness",
    ),
    MetricSpec("mean_lca_tier", "mean LCA tier", "tier (0 = one node)", False, stage="topology"),
    MetricSpec(
        "lowest_tier_share", "jobs at lowest tier", "% of multi-pod jobs", True, True, "topology"
    ),
    MetricSpec(
        "fragmentation", "fragmentation (FGD)", "GPU-equivalents", False, stage="fragmentation"
    ),
    MetricSpec("gpus_partially_used", "partly used GPUs", "GPUs", False, stage="packing"),
    MetricSpec("evictions", "evictions", "pods", False, stage="packing"),
    MetricSpec("pods_evicted_at_window_close", "evicted at TDM close", "pods", False),
    MetricSpec("soft_terms_satisfied", "soft terms satisfied", "terms", True, stage="topology"),
)
STAGE_OF = {s.name: s.stage for s in PRIMARY_SPECS}
INFO = "info"
"""The objective column of a row no stage aims at."""
PRIMARY = tuple((s.name, s.higher_is_better) for s in PRIMARY_SPECS)
CONTEXT = ("pods_on_revocable_nodes",)
"""Rows shown for context: neither more nor fewer is better in itself."""


@dataclass(frozen=True)
class Row:
    metric: str
    greedy: float | None
    cpsat: float | None
    higher_is_better: bool | None
    """None for rows that are context, not a score (time, gap)."""
    job: str = ""
    """The job a per-job row is about; empty for cluster-wide metrics."""

    @property
    def winner(self) -> str:
        if self.higher_is_better is None or self.greedy is None or self.cpsat is None:
            return ""
        if abs(self.greedy - self.cpsat) < 1e-9:
            return "="
        better = self.cpsat > self.greedy if self.higher_is_better else self.cpsat < self.greedy
        return "cpsat" if better else "greedy"


def rows(greedy: Plan, cpsat: Plan) -> list[Row]:
    g, c = greedy.metrics, cpsat.metrics
    out = [Row(name, _num(g.get(name)), _num(c.get(name)), better) for name, better in PRIMARY]
    for name in CONTEXT:
        out.append(Row(name, _num(g.get(name)), _num(c.get(name)), None))
    shares_g = {q["queue"]: q["share"] for q in g.get("queues", []) if q.get("leaf", True)}
    shares_c = {q["queue"]: q["share"] for q in c.get("queues", []) if q.get("leaf", True)}
    for queue in sorted(shares_g.keys() | shares_c.keys()):
        out.append(Row(f"share {queue}", shares_g.get(queue), shares_c.get(queue), None))
    gs, cs = greedy.solver, cpsat.solver
    out.append(
        Row("wall_seconds", gs.wall_seconds if gs else None, cs.wall_seconds if cs else None, None)
    )
    out.append(Row("gap", None, cs.gap if cs else None, None))
    for stage, gap in (cs.stage_gaps if cs else {}).items():
        out.append(Row(f"gap {stage}", None, gap, None))
    return out


# -- per job ---------------------------------------------------------------------------


@dataclass(frozen=True)
class JobOutcome:
    """Where one job stands after one plan."""

    status: str
    pods: int
    """Pods of the job bound after the plan (running and kept, or placed)."""
    nodes: int
    """Distinct nodes holding those pods."""
    lca_tier: int | None
    """Tier of the smallest HyperNode holding them, for jobs with ≥ 2 bound pods."""
    evictions: int
    """Pods of the job the plan evicts."""


JOB_ASPECTS = (
    ("admitted", True),
    ("pods", None),
    ("nodes", None),
    ("lca_tier", False),
    ("evictions", False),
)
"""What may differ for a job, and which direction is better for the job itself: being
admitted and staying close together (low tier) are; more nodes or pods are neither."""


@dataclass(frozen=True)
class JobDiff:
    job: str
    queue: str
    greedy: JobOutcome
    cpsat: JobOutcome

    def changes(self) -> list[Row]:
        """One row per aspect on which the two plans differ (admitted as 1 or 0)."""
        out = []
        for aspect, better in JOB_ASPECTS:
            g, c = _aspect(self.greedy, aspect), _aspect(self.cpsat, aspect)
            if g != c:
                out.append(Row(aspect, g, c, better, job=self.job))
        return out


def _aspect(outcome: JobOutcome, aspect: str) -> float | None:
    if aspect == "admitted":
        return 1 if outcome.status == ADMITTED else 0
    return getattr(outcome, aspect)


def job_outcomes(instance: Instance, plan: Plan) -> dict[str, JobOutcome]:
    """Every job's outcome under ``plan``; LCA tiers from the plan's metrics (the ruler both
    engines are judged by), statuses from its job decisions."""
    bound: dict[str, set[str]] = {}
    pods: dict[str, int] = {}
    for b in plan.bound_pods(instance).values():
        job = instance.pod_by_key[b.pod].job
        bound.setdefault(job, set()).add(b.node)
        pods[job] = pods.get(job, 0) + 1
    evicted: dict[str, int] = {}
    for e in plan.evictions:
        job = instance.pod_by_key[e.pod].job
        evicted[job] = evicted.get(job, 0) + 1
    tiers: Mapping[str, int] = plan.metrics.get("job_lca_tiers", {})
    out = {}
    for job in instance.jobs:
        decision = plan.job(job.key)
        out[job.key] = JobOutcome(
            status=decision.status if decision else "",
            pods=pods.get(job.key, 0),
            nodes=len(bound.get(job.key, ())),
            lca_tier=tiers.get(job.key),
            evictions=evicted.get(job.key, 0),
        )
    return out


def job_differences(instance: Instance, greedy: Plan, cpsat: Plan) -> list[JobDiff]:
    """The jobs whose outcome differs between the two plans, in instance order."""
    g, c = job_outcomes(instance, greedy), job_outcomes(instance, cpsat)
    diffs = (JobDiff(j.key, j.queue, g[j.key], c[j.key]) for j in instance.jobs)
    return [d for d in diffs if d.changes()]


# -- renderings ------------------------------------------------------------------------


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def format_value(value: float | None) -> str:
    """A table cell: integers as such, other numbers to three decimals, none as ``-``."""
    if value is None:
        return NONE
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3f}"


def _render(table: Table) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=120, color_system=None).print(table)
    return buffer.getvalue()


def _change(greedy: object, cpsat: object) -> str:
    g, c = (NONE if v is None else str(v) for v in (greedy, cpsat))
    return g if g == c else f"{g} → {c}"


def jobs_table(diffs: Sequence[JobDiff]) -> str:
    """One line per job that differs; a cell reads "greedy → cpsat" where the plans differ."""
    t = Table(title="Jobs whose outcome differs (greedy → cpsat)")
    for col in ("job", "queue", "status", "pods", "nodes", "LCA tier", "evicted"):
        t.add_column(col, justify="left" if col in ("job", "queue", "status") else "right")
    for d in diffs:
        g, c = d.greedy, d.cpsat
        t.add_row(
            d.job,
            d.queue,
            _change(g.status, c.status),
            _change(g.pods, c.pods),
            _change(g.nodes, c.nodes),
            _change(g.lca_tier, c.lca_tier),
            _change(g.evictions, c.evictions),
        )
    return _render(t)


def objective_line(cpsat: Plan) -> str:
    """What CP-SAT ranked plans by, in order, so that a row it lost reads as a trade and not
    as a failure."""
    stages = list(cpsat.solver.stages) if cpsat.solver else []
    if not stages:
        return ""
    return (
        f"cpsat ranks plans by {' > '.join(stages)}, in that order.\n"
        f"The objective column names the stage a row follows ({INFO}: measured, not ranked).\n"
    )


def table(instance: Instance, greedy: Plan, cpsat: Plan) -> str:
    t = Table(title=f"{instance.name}: greedy (Volcano) vs cpsat")
    ranked = set(cpsat.solver.stages) if cpsat.solver else set()
    columns = ("metric", "greedy", "cpsat", "better", *(("objective",) if ranked else ()))
    for col in columns:
        t.add_column(col, justify="right" if col in ("greedy", "cpsat") else "left")
    for row in rows(greedy, cpsat):
        cells = [row.metric, format_value(row.greedy), format_value(row.cpsat), row.winner]
        if ranked:
            stage = STAGE_OF.get(row.metric, "")
            scored = row.higher_is_better is not None
            cells.append((stage if stage in ranked else INFO) if scored else "")
        t.add_row(*cells)
    status = cpsat.solver.status if cpsat.solver else NONE
    diffs = job_differences(instance, greedy, cpsat)
    jobs = jobs_table(diffs) if diffs else "Every job has the same outcome under both engines.\n"
    return objective_line(cpsat) + _render(t) + f"cpsat status: {status}\n\n" + jobs


CSV_HEADER = ("section", "metric", "job", "greedy", "cpsat", "better")


def _cell(value: float | None) -> int | float | str:
    """A CSV cell: the number itself (no rounding), empty when there is none."""
    if value is None:
        return ""
    return int(value) if float(value).is_integer() else value


def to_csv(instance: Instance, greedy: Plan, cpsat: Plan) -> str:
    """Tidy CSV: ``metric`` rows for the cluster, then ``job`` rows, one per aspect on which
    a job differs (``admitted`` is 1 or 0). Cells hold numbers; an empty cell means none."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for row in rows(greedy, cpsat):
        writer.writerow(["metric", row.metric, "", _cell(row.greedy), _cell(row.cpsat), row.winner])
    for diff in job_differences(instance, greedy, cpsat):
        for row in diff.changes():
            writer.writerow(
                ["job", row.metric, row.job, _cell(row.greedy), _cell(row.cpsat), row.winner]
            )
    return buffer.getvalue()


def to_json(instance: Instance, greedy: Plan, cpsat: Plan) -> str:
    def number(value: float | None) -> int | float | None:
        return None if value is None else _cell(value)

    def row(r: Row) -> dict[str, Any]:
        return {
            "metric": r.metric,
            "greedy": number(r.greedy),
            "cpsat": number(r.cpsat),
            "better": r.winner,
        }

    data = {
        "rows": [row(r) for r in rows(greedy, cpsat)],
        "jobs": [
            {
                "job": d.job,
                "queue": d.queue,
                "greedy": asdict(d.greedy),
                "cpsat": asdict(d.cpsat),
                "changes": [row(r) for r in d.changes()],
            }
            for d in job_differences(instance, greedy, cpsat)
        ],
        "greedy": greedy.to_dict(),
        "cpsat": cpsat.to_dict(),
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
