"""What a simulation produces: one record per job, a time series, and the summaries that
compare engines (per queue: jobs, waits, GPU-hours, time starved and the share error against
deserved; for the cluster: evictions, restarts and the GPU time restarts threw away), with
their CSV, JSON and table forms.

Runs of ``vcopt simulate --what-if`` carry the variant they simulated, and every output then
leads with it (a ``variant`` column or key); a plain run's outputs have none.

Times are RFC 3339 in UTC, empty when a job never started or never ended. A job's wait is
from its arrival to its first start; the wait statistics of a queue are over the jobs that
started (the ones that never did are counted apart), with percentiles interpolated linearly
between the closest ranks (numpy's default).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np

from ..plan import Plan
from .fairness import QueueLevel, queue_times
from .state import JobRun


def stamp(when: datetime | None) -> str:
    return "" if when is None else when.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class JobRecord:
    job: str
    queue: str
    arrival: datetime
    start: datetime | None
    end: datetime | None
    evictions: int
    restarts: int
    gpu_s: float
    lost_gpu_s: float
    nodes: tuple[str, ...]

    @property
    def wait_s(self) -> float | None:
        return None if self.start is None else (self.start - self.arrival).total_seconds()

    @classmethod
    def of(cls, run: JobRun) -> JobRecord:
        return cls(
            run.job.key,
            run.job.queue,
            run.arrival,
            run.first_start,
            run.end,
            run.evictions,
            run.restarts,
            run.gpu_s,
            run.lost_gpu_s,
            tuple(sorted(run.nodes)),
        )

    def row(self, engine: str) -> dict[str, Any]:
        wait = self.wait_s
        return {
            "engine": engine,
            "job": self.job,
            "queue": self.queue,
            "arrival": stamp(self.arrival),
            "start": stamp(self.start),
            "end": stamp(self.end),
            "wait_s": "" if wait is None else round(wait, 3),
            "evictions": self.evictions,
            "restarts": self.restarts,
            "gpu_s": round(self.gpu_s, 3),
            "lost_gpu_s": round(self.lost_gpu_s, 3),
            "nodes": ";".join(self.nodes),
        }


class SeriesPoint(NamedTuple):
    time: datetime
    gpus_allocated: float
    pending_jobs: int
    running_jobs: int
    queues: tuple[QueueLevel, ...] = ()
    """Per queue, in the run's ``queue_names`` order."""


@dataclass(frozen=True)
class QueueSummary:
    queue: str
    jobs: int
    started: int
    mean_wait_s: float | None
    p50_wait_s: float | None
    p95_wait_s: float | None
    p99_wait_s: float | None
    gpu_hours: float
    starved_hours: float
    share_error: float | None


@dataclass(frozen=True)
class EngineRun:
    engine: str
    start: datetime
    end: datetime
    jobs: tuple[JobRecord, ...]
    series: tuple[SeriesPoint, ...]
    events: int
    cycles: int
    wall_seconds: float
    plans: tuple[tuple[datetime, Plan], ...] = ()
    """Each cycle's plan, when the run was asked to keep them."""
    queue_names: tuple[str, ...] = ()
    """The queues of the series points' per-queue levels, in order."""
    gpu_total: int = 0
    """The cluster's GPUs (healthy devices, and plain device-plugin GPUs)."""
    variant: str | None = None
    """The what-if variant of the timeline's cluster this run simulated; None for a run
    without variants."""

    def tagged(self, row: dict[str, Any]) -> dict[str, Any]:
        """``row`` led by the run's variant, when it has one."""
        return row if self.variant is None else {"variant": self.variant, **row}

    def queues(self) -> list[QueueSummary]:
        grouped: dict[str, list[JobRecord]] = {}
        for record in self.jobs:
            grouped.setdefault(record.queue, []).append(record)
        times = [p.time for p in self.series]
        out = []
        for queue, records in sorted(grouped.items()):
            waits = [r.wait_s for r in records if r.wait_s is not None]
            fair = queue_times(times, self.levels(queue), self.end)
            out.append(
                QueueSummary(
                    queue,
                    len(records),
                    len(waits),
                    float(np.mean(waits)) if waits else None,
                    *(float(np.percentile(waits, q)) if waits else None for q in (50, 95, 99)),
                    sum(r.gpu_s for r in records) / 3600,
                    fair.starved_s / 3600,
                    fair.share_error,
                )
            )
        return out

    def levels(self, queue: str) -> list[QueueLevel]:
        """The queue's level at each point of the series."""
        index = self.queue_names.index(queue)
        return [p.queues[index] for p in self.series]

    @property
    def evictions(self) -> int:
        return sum(r.evictions for r in self.jobs)

    @property
    def restarts(self) -> int:
        return sum(r.restarts for r in self.jobs)

    @property
    def lost_gpu_hours(self) -> float:
        return sum(r.lost_gpu_s for r in self.jobs) / 3600

    def summary(self) -> dict[str, Any]:
        return self.tagged(
            {
                "engine": self.engine,
                "start": stamp(self.start),
                "end": stamp(self.end),
                "events": self.events,
                "cycles": self.cycles,
                "wall_seconds": round(self.wall_seconds, 3),
                "evictions": self.evictions,
                "restarts": self.restarts,
                "lost_gpu_hours": round(self.lost_gpu_hours, 6),
                "queues": [{k: _rounded(v) for k, v in vars(q).items()} for q in self.queues()],
            }
        )


def _rounded(value: object) -> object:
    return round(value, 3) if isinstance(value, float) else value


JOB_COLUMNS = (
    "engine",
    "job",
    "queue",
    "arrival",
    "start",
    "end",
    "wait_s",
    "evictions",
    "restarts",
    "gpu_s",
    "lost_gpu_s",
    "nodes",
)
SERIES_COLUMNS = ("engine", "time", "gpus_allocated", "pending_jobs", "running_jobs")
QUEUE_COLUMNS = ("held_gpus", "deserved_gpus", "waiting_gpus")
"""Per queue, after :data:`SERIES_COLUMNS`: ``<column>:<queue>``."""


def _lead(runs: Sequence[EngineRun]) -> tuple[str, ...]:
    """The column before the documented ones: ``variant`` when the runs are variants'."""
    return ("variant",) if any(run.variant is not None for run in runs) else ()


def jobs_csv(runs: Sequence[EngineRun]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, (*_lead(runs), *JOB_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for run in runs:
        writer.writerows(run.tagged(record.row(run.engine)) for record in run.jobs)
    return out.getvalue()


def series_csv(runs: Sequence[EngineRun]) -> str:
    """The documented columns first; then, per queue, its GPUs held, deserved and waiting
    (every engine ran the same timeline, so every run has the same queues)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    names = runs[0].queue_names if runs else ()
    lead = _lead(runs)
    writer.writerow((*lead, *SERIES_COLUMNS, *(f"{c}:{q}" for q in names for c in QUEUE_COLUMNS)))
    for run in runs:
        variant = (run.variant,) if lead else ()
        for point in run.series:
            levels = (round(v, 6) for level in point.queues for v in level)
            writer.writerow((*variant, run.engine, stamp(point.time), *point[1:4], *levels))
    return out.getvalue()


def _point(run: EngineRun, point: SeriesPoint) -> dict[str, Any]:
    return {
        "time": stamp(point.time),
        "gpus_allocated": point.gpus_allocated,
        "pending_jobs": point.pending_jobs,
        "running_jobs": point.running_jobs,
        "queues": {
            name: dict(zip(QUEUE_COLUMNS, (round(v, 6) for v in level), strict=True))
            for name, level in zip(run.queue_names, point.queues, strict=True)
        },
    }


def to_json(runs: Sequence[EngineRun]) -> str:
    doc = {
        "engines": [
            {
                **run.summary(),
                "jobs": [run.tagged(record.row(run.engine)) for record in run.jobs],
                "series": [_point(run, p) for p in run.series],
            }
            for run in runs
        ]
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(runs: Sequence[EngineRun]) -> str:
    """Engines side by side: per queue, then for the cluster; each row led by its run's
    variant when the runs are variants'."""
    lead = _lead(runs)

    def led(run: EngineRun, *cells: str) -> tuple[str, ...]:
        return (run.variant or "", *cells) if lead else cells

    rows = [
        (
            *lead,
            "engine",
            "queue",
            "jobs",
            "started",
            "mean wait s",
            "p50 s",
            "p95 s",
            "p99 s",
            "GPU-h",
            "starved h",
            "share err",
        )
    ]
    for run in runs:
        for q in run.queues():
            rows.append(
                led(
                    run,
                    run.engine,
                    q.queue,
                    str(q.jobs),
                    str(q.started),
                    _seconds(q.mean_wait_s),
                    _seconds(q.p50_wait_s),
                    _seconds(q.p95_wait_s),
                    _seconds(q.p99_wait_s),
                    f"{q.gpu_hours:,.2f}",
                    f"{q.starved_hours:,.2f}",
                    _ratio(q.share_error),
                )
            )
    cluster = [
        (*lead, "engine", "cycles", "events", "evictions", "restarts", "lost GPU-h", "wall s")
    ]
    for run in runs:
        cluster.append(
            led(
                run,
                run.engine,
                str(run.cycles),
                str(run.events),
                str(run.evictions),
                str(run.restarts),
                f"{run.lost_gpu_hours:,.2f}",
                f"{run.wall_seconds:.1f}",
            )
        )
    names = len(lead) + 2
    return _aligned(rows, names) + "\n" + _aligned(cluster, names)


def _aligned(rows: list[tuple[str, ...]], names: int) -> str:
    """Columns padded to their widest cell: the first ``names`` (words) to the left, the
    numbers to the right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [
            c.ljust(w) if i < names else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"
