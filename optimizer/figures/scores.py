"""Small multiples of the plans' scores: one axis per metric, each with its own scale.

Metrics range from fractions to thousands of GPUs, so a shared axis flattens most of them to
nothing. Each metric gets its own axis, titled with what it measures and which way is better,
its unit on the y axis and the value printed on every bar (which makes tick labels redundant,
so there are none); when two plans are compared the better value is bold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import SubFigure

from ..compare import PRIMARY_SPECS, MetricSpec

PANELS_PER_ROW = 6


@dataclass(frozen=True)
class Scored:
    """One plan as the panels show it."""

    label: str
    metrics: Mapping[str, Any]
    colour: str


def value_text(spec: MetricSpec, value: float) -> str:
    shown = spec.shown(value)
    if spec.percent:
        return f"{shown:.1f} %"
    if float(shown).is_integer():
        return f"{int(shown):,}"
    if abs(shown) >= 100:
        return f"{shown:,.0f}"
    return f"{shown:.2f}".rstrip("0").rstrip(".")


def better_index(spec: MetricSpec, values: Sequence[float]) -> int | None:
    """The plan with the better value, None on a tie or with a single plan."""
    if len(values) < 2 or max(values) - min(values) < 1e-9:
        return None
    best = max(values) if spec.higher_is_better else min(values)
    return values.index(best)


def panel_rows(count: int = len(PRIMARY_SPECS)) -> int:
    return math.ceil(count / PANELS_PER_ROW)


def draw_scores(sub: SubFigure, plans: Sequence[Scored], note: str = "") -> None:
    """One axis per primary metric, named ``score:<metric>`` so that tests and tools can
    find them; ``note`` goes in the first free cell of the grid (or under the panels)."""
    specs = [s for s in PRIMARY_SPECS if any(s.name in p.metrics for p in plans)]
    rows = panel_rows(len(specs))
    axes = sub.subplots(rows, PANELS_PER_ROW, squeeze=False)
    spare = list(axes.flat[len(specs) :])
    for ax in spare:
        ax.set_axis_off()
    if note and spare:
        spare[0].text(0.05, 0.5, note, fontsize=8.5, va="center", ha="left", linespacing=1.6)
    elif note:
        sub.supxlabel(note.replace("\n", " · "), fontsize=8.5)
    for ax, spec in zip(axes.flat, specs, strict=False):
        values = [float(p.metrics.get(spec.name, 0) or 0) for p in plans]
        shown = [spec.shown(v) for v in values]
        xs = range(len(plans))
        ax.bar(xs, shown, color=[p.colour for p in plans], width=0.6)
        top = max(max(shown), 100.0 if spec.percent else 1e-9)
        ax.set_ylim(0, top * 1.2 if top > 1e-9 else 1)
        if spec.percent:
            ax.axhline(100, color="0.6", linestyle=":", linewidth=1)
            ax.text(
                1.01,
                100,
                "100 %",
                transform=ax.get_yaxis_transform(),
                fontsize=6.5,
                color="0.45",
                va="center",
            )
        best = better_index(spec, values)
        for x, v, s in zip(xs, values, shown, strict=True):
            ax.text(
                x,
                s + top * 0.03,
                value_text(spec, v),
                ha="center",
                va="bottom",
                fontsize=8,
                fontweight="bold" if x == best else "normal",
            )
        ax.set_xticks(list(xs), [p.label for p in plans], fontsize=7.5)
        ax.set_title(f"{spec.label}\n{spec.direction}", fontsize=8.5)
        ax.set_ylabel(spec.unit, fontsize=7.5)
        ax.set_yticks([])
        ax.spines[["top", "right", "left"]].set_visible(False)
        ax.set_gid(f"score:{spec.name}")
