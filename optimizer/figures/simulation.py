"""The figure of ``vcopt simulate --plot``: how each engine ran the cluster over time.

Three rows answer the questions a simulation is run for. Did the engine keep the GPUs busy
and the queue short (GPUs allocated against the cluster's GPUs, and pending jobs, every
engine on the same axes)? Did each queue get what it deserves (one axis per engine, a line
per queue of its share, GPUs held / deserved, against the deserved level 1.0; a queue's line
is drawn only while it deserves GPUs and holds or waits for some, as the share error counts
it)? Who waited, and how long (per queue, the distribution of waits as the fraction of its
jobs started within each wait, a line per engine, minutes on a log scale: a distribution
whose bulk sits at 0 and whose tail runs to hours, as waits do, stays readable, and jobs
that never started show as a curve ending below 1)?

Values are steps: each holds from its instant to the next, up to the end of the run. Time is
in hours after the simulation's start, so runs of any length read the same way. Built on
``Figure`` directly, as every vcopt figure is (see ``optimizer.figures``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from matplotlib import colormaps
from matplotlib.figure import Figure, SubFigure
from matplotlib.ticker import ScalarFormatter

from . import ENGINE_COLOURS, ENGINE_LABELS, WIDTH

if TYPE_CHECKING:
    from ..simulate.results import EngineRun

ROW_HEIGHTS = (3.0, 3.2)
"""Inches: GPUs and pending jobs; queue shares."""
WAIT_ROW_HEIGHT = 2.4
"""Inches of each row of wait panels."""
WAIT_PANELS_PER_ROW = 5
SHARE_TOP = 4.0
"""The share axis stops here: a queue whose deserved is a sliver of what it borrows would
otherwise flatten every other line to the floor."""


def _label(engine: str) -> str:
    return ENGINE_LABELS.get(engine, engine)


def _colour(engine: str) -> str:
    """An engine run's colour: its engine's, for a periodic run (``cpsat@10m``) too."""
    return ENGINE_COLOURS.get(engine.split("@")[0], "tab:gray")


def _dashes(index: int) -> str:
    """The line style of the ``index``-th run: runs that decide alike draw the same line, and
    the later one's dashes let the earlier one show through."""
    return ("-", "--", ":")[index % 3]


def _queue_colours(count: int) -> list[tuple[float, float, float]]:
    """One colour per queue, the same in every engine's axis."""
    colours = colormaps["tab10" if count <= 10 else "tab20"].colors  # type: ignore[attr-defined]
    return [colours[i % len(colours)] for i in range(count)]


def _hours(run: EngineRun, when: datetime) -> float:
    return (when - run.start).total_seconds() / 3600


def _steps(run: EngineRun, values: Sequence[float]) -> tuple[list[float], list[float]]:
    """The series' times in hours with ``values``, the last value held to the run's end."""
    xs = [_hours(run, p.time) for p in run.series]
    ys = list(values)
    if run.series:
        xs.append(_hours(run, run.end))
        ys.append(ys[-1])
    return xs, ys


def _utc(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M UTC")


def _draw_load(sub: SubFigure, runs: Sequence[EngineRun]) -> None:
    gpus, pending = sub.subplots(1, 2)
    for i, run in enumerate(runs):
        style = {
            "where": "post",
            "color": _colour(run.engine),
            "linestyle": _dashes(i),
            "label": _label(run.engine),
        }
        gpus.step(*_steps(run, [p.gpus_allocated for p in run.series]), **style)
        pending.step(*_steps(run, [p.pending_jobs for p in run.series]), **style)
    total = runs[0].gpu_total
    cluster = f"cluster: {total:,} GPU{'' if total == 1 else 's'}"
    gpus.axhline(total, color="0.5", linestyle="--", linewidth=1, label=cluster)
    gpus.set_ylim(0, max(total, 1) * 1.08)
    gpus.set_title("GPUs allocated (GPU-equivalents)", fontsize=9.5)
    pending.set_title("Pending jobs", fontsize=9.5)
    pending.set_ylim(bottom=0)
    for ax, gid in ((gpus, "gpus"), (pending, "pending")):
        ax.set_xlabel(f"hours after {_utc(runs[0].start)}", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.spines[["top", "right"]].set_visible(False)
        ax.legend(fontsize=7.5, frameon=False, loc="best")
        ax.set_gid(gid)


def _draw_shares(sub: SubFigure, runs: Sequence[EngineRun]) -> None:
    names = runs[0].queue_names
    colours = _queue_colours(len(names))
    axes = sub.subplots(1, len(runs), squeeze=False, sharey=True)[0]
    top = 1.0
    for ax, run in zip(axes, runs, strict=True):
        for i, queue in enumerate(names):
            shares = [math.nan if s is None else s for s in (lv.share for lv in run.levels(queue))]
            if all(math.isnan(s) for s in shares):
                continue
            top = max(top, *(s for s in shares if not math.isnan(s)))
            ax.step(
                *_steps(run, shares),
                where="post",
                color=colours[i],
                label=queue,
                linewidth=1.3,
            )
        ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label="deserved (1.0)")
        ax.set_title(f"{_label(run.engine)}: queue share = GPUs held / deserved", fontsize=9.5)
        ax.set_xlabel(f"hours after {_utc(run.start)}", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.spines[["top", "right"]].set_visible(False)
        ax.set_gid(f"share:{run.engine}")
    axes[0].set_ylabel("share" if top <= SHARE_TOP else f"share (cut at {SHARE_TOP:g})", fontsize=8)
    axes[0].set_ylim(0, min(top, SHARE_TOP) * 1.08)
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes[1:]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    sub.legend(handles, labels, loc="outside right center", fontsize=7.5, frameon=False)


def ecdf(waits: Sequence[float], jobs: int, longest: float) -> tuple[list[float], list[float]]:
    """The fraction of the ``jobs`` started within each wait, as steps from 0 to ``longest``:
    jobs that never started keep the curve below 1."""
    xs, ys = [0.0], [0.0]
    for n, wait in enumerate(sorted(waits), start=1):
        xs.append(wait)
        ys.append(n / jobs)
    xs.append(longest)
    ys.append(ys[-1])
    return xs, ys


def wait_rows(queues: int) -> int:
    """Rows of wait panels; one, left empty, for a timeline without jobs."""
    return max(1, math.ceil(queues / WAIT_PANELS_PER_ROW))


def _draw_waits(sub: SubFigure, runs: Sequence[EngineRun]) -> None:
    names = runs[0].queue_names
    longest = max((r.wait_s or 0.0 for run in runs for r in run.jobs), default=0.0) / 60
    axes = sub.subplots(wait_rows(len(names)), WAIT_PANELS_PER_ROW, squeeze=False, sharey=True)
    for ax in axes.flat[len(names) :]:
        ax.set_axis_off()
    for ax, queue in zip(axes.flat, names, strict=False):
        jobs = 0
        for i, run in enumerate(runs):
            records = [r for r in run.jobs if r.queue == queue]
            waits = [r.wait_s / 60 for r in records if r.wait_s is not None]
            jobs = len(records)
            ax.step(
                *ecdf(waits, jobs, max(longest * 1.2, 1.0)),
                where="post",
                color=_colour(run.engine),
                linestyle=_dashes(i),
                label=f"{_label(run.engine)}: {len(waits)} started",
                linewidth=1.4,
            )
        ax.set_xscale("symlog", linthresh=1)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.set_title(f"{queue} ({jobs} job{'' if jobs == 1 else 's'})", fontsize=8.5)
        ax.set_ylim(0, 1.04)
        ax.set_xlabel("wait, minutes", fontsize=7.5)
        ax.tick_params(labelsize=7.5)
        ax.spines[["top", "right"]].set_visible(False)
        ax.legend(fontsize=6.5, frameon=False, loc="lower right")
        ax.set_gid(f"waits:{queue}")
    for row in axes:
        row[0].set_ylabel("jobs started within", fontsize=7.5)
    sub.suptitle(
        "Wait from arrival to first start, per queue: the fraction of the queue's jobs started "
        "within each wait (minutes, log scale above 1; below 1 at the end: some never started)",
        fontsize=9.5,
    )


def simulation_figure(runs: Sequence[EngineRun], name: str) -> Figure:
    """Every engine run of one timeline (``name``: the instance's) in one figure."""
    heights = (*ROW_HEIGHTS, WAIT_ROW_HEIGHT * wait_rows(len(runs[0].queue_names)) + 0.4)
    fig = Figure(figsize=(WIDTH, sum(heights) + 0.5), layout="constrained")
    load, shares, waits = fig.subfigures(3, 1, height_ratios=heights)
    _draw_load(load, runs)
    _draw_shares(shares, runs)
    _draw_waits(waits, runs)
    engines = ", ".join(_label(r.engine) for r in runs)
    fig.suptitle(f"{name}: the cluster over time, {engines}", fontsize=11, fontweight="bold")
    return fig
