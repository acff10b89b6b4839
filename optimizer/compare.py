"""``vcopt compare``: the greedy (Volcano) plan and the CP-SAT plan side by side.

One row per metric, one column per engine and a column saying which engine is better on that
row, so the table answers "how much better than Volcano" at a glance. The same rows go to CSV,
JSON and a bar chart.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from models.instance import Instance

from .plan import Plan


@dataclass(frozen=True)
class Row:
    metric: str
    greedy: float | None
    cpsat: float | None
    higher_is_better: bool | None
    """None for rows that are context, not a score (time, gap)."""

    @property
    def winner(self) -> str:
        if self.higher_is_better is None or self.greedy is None or self.cpsat is None:
            return ""
        if abs(self.greedy - self.cpsat) < 1e-9:
            return "="
        better = self.cpsat > self.greedy if self.higher_is_better else self.cpsat < self.greedy
        return "cpsat" if better else "greedy"


PRIMARY = (
    ("jobs_admitted", True),
    ("pods_placed", True),
    ("gpu_allocated", True),
    ("gpu_allocation_ratio", True),
    ("deserved_satisfaction", True),
    ("mean_lca_tier", False),
    ("lowest_tier_share", True),
    ("fragmentation", False),
    ("gpus_partially_used", False),
    ("evictions", False),
    ("pods_evicted_at_window_close", False),
)
CONTEXT = ("pods_on_revocable_nodes",)
"""Rows shown for context: neither more nor fewer is better in itself."""


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
    return out


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3f}"


def table(instance: Instance, greedy: Plan, cpsat: Plan) -> str:
    t = Table(title=f"{instance.name}: greedy (Volcano) vs cpsat")
    for col in ("metric", "greedy", "cpsat", "better"):
        t.add_column(col, justify="right" if col in ("greedy", "cpsat") else "left")
    for row in rows(greedy, cpsat):
        t.add_row(row.metric, _fmt(row.greedy), _fmt(row.cpsat), row.winner)
    buffer = io.StringIO()
    Console(file=buffer, width=120, color_system=None).print(t)
    status = cpsat.solver.status if cpsat.solver else "-"
    return buffer.getvalue() + f"cpsat status: {status}\n"


def to_csv(greedy: Plan, cpsat: Plan) -> str:
    lines = ["metric,greedy,cpsat,better"]
    for row in rows(greedy, cpsat):
        lines.append(f"{row.metric},{_fmt(row.greedy)},{_fmt(row.cpsat)},{row.winner}")
    return "\n".join(lines) + "\n"


def to_json(greedy: Plan, cpsat: Plan) -> str:
    data = {
        "rows": [
            {"metric": r.metric, "greedy": r.greedy, "cpsat": r.cpsat, "better": r.winner}
            for r in rows(greedy, cpsat)
        ],
        "greedy": greedy.to_dict(),
        "cpsat": cpsat.to_dict(),
    }
    return json.dumps(data, indent=2) + "\n"


def plot(greedy: Plan, cpsat: Plan, path: str | Path, metrics: Sequence[str] | None = None) -> None:
    """A grouped bar chart of the primary metrics, written atomically as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen = [r for r in rows(greedy, cpsat) if r.higher_is_better is not None]
    if metrics:
        chosen = [r for r in chosen if r.metric in metrics]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    xs = range(len(chosen))
    ax.bar(
        [x - 0.2 for x in xs], [r.greedy or 0 for r in chosen], width=0.4, label="greedy (Volcano)"
    )
    ax.bar([x + 0.2 for x in xs], [r.cpsat or 0 for r in chosen], width=0.4, label="cpsat")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r.metric for r in chosen], rotation=30, ha="right")
    ax.set_ylabel("value (counts, GPUs or fractions; see metric name)")
    ax.set_title("greedy vs cpsat")
    ax.legend()
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_bytes(buffer.getvalue())
    tmp.replace(target)
