"""Figures of plans for ``vcopt compare --plot`` and ``vcopt solve --plot``.

One PNG answers both questions a reader brings: where did every GPU go (the placement map,
one per plan, side by side) and how do the plans score (one small axis per metric). Figures
are built on matplotlib's ``Figure`` directly, never through pyplot, so nothing depends on
the display backend and no global figure state is left behind; PNG rendering is Agg's.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from models.instance import Instance

from ..atomic import write_atomic
from ..plan import Plan
from .placement import (
    Palette,
    band_count,
    differing_gpus,
    draw_bands,
    draw_detailed,
    is_detailed,
    legend_handles,
    pending_text,
    placement_map,
)
from .scores import Scored, draw_scores, panel_rows

ENGINE_LABELS = {"greedy": "greedy (Volcano)", "cpsat": "cpsat"}
ENGINE_COLOURS = {"greedy": "tab:orange", "cpsat": "tab:blue"}
WIDTH = 15.0
"""Inches; at the saved DPI the PNG is about 1,650 pixels wide."""
DPI = 110

__all__ = ["compare_figure", "plan_figure", "png_bytes", "write_png"]


def _label(plan: Plan) -> str:
    return ENGINE_LABELS.get(plan.engine, plan.engine)


def _map_title(instance: Instance, plan: Plan, pending: str) -> str:
    m = plan.metrics
    head = _label(plan)
    if m:
        admitted = m.get("jobs_admitted", 0)
        head += (
            f": {admitted} job{'' if admitted == 1 else 's'} admitted, "
            f"{m.get('gpu_allocated', 0):,.1f} of {m.get('gpu_total', 0):,} GPUs allocated"
        )
    lines = textwrap.wrap(pending, 95, break_on_hyphens=False, break_long_words=False)
    return head + "\n" + "\n".join(lines)


def _timing(plans: Sequence[Plan]) -> str:
    """How each engine got its plan, one line each."""
    lines = []
    for plan in plans:
        s = plan.solver
        if s is None:
            continue
        text = f"{_label(plan)}: {s.wall_seconds:.2f} s"
        if plan.engine != "greedy":
            text += f", {s.status}"
        if s.gap is not None:
            text += f", gap {s.gap:.1%}"
        lines.append(text)
    return "\n".join(lines)


def _figure(instance: Instance, plans: Sequence[Plan], title: str) -> Figure:
    maps = [placement_map(instance, p) for p in plans]
    jobs = list(dict.fromkeys(j for m in maps for j in m.jobs()))
    palette = Palette(instance, jobs)
    detailed = is_detailed(maps) if any(m.nodes for m in maps) else True
    if not any(m.nodes for m in maps):
        map_height = 1.2
    elif detailed:
        map_height = 1.9 + 0.28 * max(len(m.nodes) for m in maps)
    else:
        map_height = 2.0 + 0.2 * max(band_count(m) for m in maps)
    map_height = min(map_height, 11.0)
    score_height = 2.5 * panel_rows()
    fig = Figure(figsize=(WIDTH, map_height + score_height + 0.6), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[map_height, score_height])
    if any(m.nodes for m in maps):
        axes = top.subplots(1, len(plans), squeeze=False)[0]
        for i, (ax, plan, pmap) in enumerate(zip(axes, plans, maps, strict=True)):
            if detailed:
                draw_detailed(ax, pmap, palette, labels=i == 0)
            else:
                draw_bands(ax, pmap, palette, labels=i == 0)
            ax.set_title(_map_title(instance, plan, pending_text(instance, pmap)), fontsize=9)
            ax.set_gid(f"map:{plan.engine}")
        notes = []
        if palette.by_queue:
            notes.append("colour = queue, shades = jobs")
        undrawn = max(m.undrawn for m in maps)
        if undrawn:
            notes.append(f"{undrawn} pods hold GPUs the plan does not name (not drawn)")
        zones = sorted({n.zone for n in maps[0].nodes if n.zone})
        if zones and detailed:
            notes.append(f"[{zones[0]}] = the node's TDM revocable zone")
        if maps[0].cpu_only_nodes:
            notes.append(f"{maps[0].cpu_only_nodes} nodes without GPUs not drawn")
        top.legend(
            handles=legend_handles(palette, maps, detailed),
            loc="outside lower center",
            ncol=min(10, len(palette.legend()) + 4),
            fontsize=7.5,
            frameon=False,
            title="; ".join(notes) or None,
            title_fontsize=7.5,
        )
        if len(maps) > 1:
            differ = differing_gpus(maps)
            total = sum(len(n.gpus) for n in maps[0].nodes)
            title += (
                f"\nthe plans differ on {differ:,} of {total:,} GPUs"
                if differ
                else "\nboth plans put every pod on the same GPUs"
            )
        top.suptitle(title, fontsize=11, fontweight="bold")
    else:
        top.suptitle(f"{title}\n(no GPU nodes to draw)", fontsize=11, fontweight="bold")
    scored = [Scored(_label(p), p.metrics, ENGINE_COLOURS.get(p.engine, "tab:gray")) for p in plans]
    draw_scores(bottom, scored, _timing(plans))
    bottom.suptitle("Scores, one axis per metric (bold: the better plan)", fontsize=10)
    return fig


def compare_figure(instance: Instance, greedy: Plan, cpsat: Plan) -> Figure:
    """The greedy and CP-SAT plans side by side: placement maps and score panels."""
    return _figure(
        instance,
        [greedy, cpsat],
        f"{instance.name}: which job holds each GPU after the plan, greedy (Volcano) vs cpsat",
    )


def plan_figure(instance: Instance, plan: Plan) -> Figure:
    """One plan: its placement map and its scores."""
    return _figure(
        instance, [plan], f"{instance.name}: which job holds each GPU after the {_label(plan)} plan"
    )


def png_bytes(fig: Figure) -> bytes:
    """``fig`` rendered once as PNG (a notebook can show these bytes instead of letting its
    display hook lay the figure out twice for a tight bounding box)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def write_png(fig: Figure, path: str | Path) -> None:
    """Render ``fig`` as PNG and write it like every other output: a failed render leaves
    the old file."""
    write_atomic(path, png_bytes(fig))
