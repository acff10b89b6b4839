"""Generated timelines (``vcopt generate --timeline``): the work that arrives at a generated
cluster over a span after ``now``, and the run times of the jobs already there.

``vcopt simulate`` needs every job's ``duration``, every running job's start and the jobs that
arrive later. The snapshot at ``now`` stays the generator's own (running and pending jobs, the
same draws); the timeline adds to it:

- each team queue submits jobs as a Poisson process whose rate follows a daily cycle (more in
  working hours), the queues' rates in proportion to their deserved GPUs;
- the rates are sized so that the *offered load* of the arrivals, Σ GPUs × duration over the
  jobs arriving in the span divided by (cluster GPUs × span), is ``load`` in expectation;
- a job is of one of four kinds (single pod, fractional-GPU pod, gang of whole 8-GPU workers,
  spot gang), with worker counts that are powers of two, a high-priority share, a spot
  (preemptable, revocable) share and some jobs pinned to one of the cluster's GPU models;
- durations are log-normal, capped; a job running at ``now`` gets the duration of a job seen
  mid-run (length-biased) and a ``startedAt`` uniformly within it, so it ends.

docs/SIMULATE.md ("Generated timelines") gives every parameter below and where its value comes
from. All draws come from one ``random.Random`` seeded from the generator's seed, separate from
the one that draws the snapshot, so the snapshot is the same with or without a timeline.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from models.golang import parse_go_duration
from models.limits import MAX_PODS

from .cluster import ClusterRoom
from .jobs import DrawnJob, PodSpec
from .mix import Team
from .params import CENTI, FRACTIONS, MAX_GANG

DAY_S = 86_400
MAX_SPAN = timedelta(days=366)
"""A year: the daily cycle has long repeated, and a longer file says nothing new."""
MAX_ARRIVING_PODS = MAX_PODS
"""As many pods as one instance may hold (``models.limits``); the expected count is checked
before anything is drawn, so a span that large is refused at once."""

DAILY_AMPLITUDE = 0.45
"""Relative amplitude A of the daily cycle 1 + A·cos(2π(h − peak)/24 h)."""
PEAK_HOUR = 14
"""Hour of the day (instance timezone) with the most arrivals: mid working day."""
MEDIAN_DURATION_S = 3_600
DURATION_SIGMA = 1.67
"""Standard deviation of the natural log of a duration."""
MAX_DURATION_S = 48 * 3_600
MIN_DURATION_S = 1
HIGH_SHARE = 0.2
"""Share of the jobs that are not spot given priority class ``high``."""
PINNED_SHARE = 0.2
"""Share of the jobs that select one GPU model (``nvidia.com/gpu.product``)."""
HARD_SHARE = 0.5
"""Share of the gangs whose network topology is ``hard`` (where one domain can hold them)."""
GANG_GPUS = 8
"""A gang worker takes a whole 8-GPU node, as distributed training does."""

Law = tuple[tuple[Any, float], ...]
"""A discrete distribution: (value, probability) pairs whose probabilities sum to 1."""


def _uniform(values: Sequence[Any]) -> Law:
    return tuple((v, 1 / len(values)) for v in values)


def _mean(law: Law, value: Callable[[Any], float] | None = None) -> float:
    return sum((v if value is None else value(v)) * p for v, p in law)


def _pick(rng: random.Random, law: Law) -> Any:
    values, weights = zip(*law, strict=True)
    return rng.choices(values, weights)[0]


@dataclass(frozen=True)
class Kind:
    """One kind of arriving job: a worker count and a per-worker pod, drawn independently."""

    name: str
    weight: float
    task: str
    workers: Law
    pods: Law
    """Of :class:`PodSpec`."""
    gang: bool
    """``minAvailable`` is the worker count (else 1)."""
    spot: bool = False

    @property
    def mean_gpus(self) -> float:
        """GPU-equivalents per job (a share counts its ``gpucores``)."""
        return _mean(self.workers) * _mean(self.pods, lambda p: p.centi) / CENTI

    @property
    def mean_pods(self) -> float:
        return _mean(self.workers)


SINGLE_GPUS: Law = ((PodSpec(1), 0.40), (PodSpec(2), 0.25), (PodSpec(4), 0.20), (PodSpec(8), 0.15))
"""Whole GPUs of a single pod: the snapshot generator's single-pod mix."""
KIND_WEIGHTS = {"single": 0.40, "fractional": 0.20, "gang": 0.25, "spot": 0.15}


def gang_workers(cluster: ClusterRoom) -> Law:
    """2, 4, 8, … workers, each doubling half as likely, up to the largest power of two
    within half the cluster's non-revocable 8-GPU nodes (and 64): a gang the shape holds."""
    most = min(MAX_GANG, cluster.largest(0, "", GANG_GPUS) // 2)
    sizes = [2**k for k in range(1, most.bit_length())]
    total = sum(1 / s for s in sizes)
    return tuple((s, (1 / s) / total) for s in sizes)


def kinds(cluster: ClusterRoom) -> tuple[Kind, ...]:
    """The kinds of arriving jobs on ``cluster`` (no gangs where it cannot hold two workers)."""
    out = [
        Kind("single", KIND_WEIGHTS["single"], "main", ((1, 1.0),), SINGLE_GPUS, gang=False),
        Kind(
            "fractional",
            KIND_WEIGHTS["fractional"],
            "replica",
            ((1, 1.0),),
            _uniform([PodSpec(1, memory, cores) for memory, cores in FRACTIONS]),
            gang=False,
        ),
    ]
    gangs = gang_workers(cluster)
    if gangs:
        pods = ((PodSpec(GANG_GPUS), 1.0),)
        out.append(Kind("gang", KIND_WEIGHTS["gang"], "worker", gangs, pods, gang=True))
    spot_pods = _uniform([PodSpec(1), PodSpec(2), PodSpec(4)])
    workers = _uniform([1, 2, 4])
    out.append(
        Kind("spot", KIND_WEIGHTS["spot"], "worker", workers, spot_pods, gang=True, spot=True)
    )
    total = sum(k.weight for k in out)
    return tuple(replace(k, weight=k.weight / total) for k in out)


def _phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def mean_duration_s() -> float:
    """E[min(D, cap)] of the log-normal D: e^(μ+σ²/2)·Φ((ln cap − μ − σ²)/σ) + cap·P(D > cap)."""
    mu, sigma, cap = math.log(MEDIAN_DURATION_S), DURATION_SIGMA, MAX_DURATION_S
    body = math.exp(mu + sigma**2 / 2) * _phi((math.log(cap) - mu - sigma**2) / sigma)
    return body + cap * (1 - _phi((math.log(cap) - mu) / sigma))


def draw_duration(rng: random.Random) -> int:
    """Whole seconds, log-normal, between 1 s and the cap."""
    seconds = rng.lognormvariate(math.log(MEDIAN_DURATION_S), DURATION_SIGMA)
    return min(MAX_DURATION_S, max(MIN_DURATION_S, round(seconds)))


def draw_running(rng: random.Random) -> tuple[int, int]:
    """(duration, seconds already run) of a job seen running at an instant: a long job is
    more likely to be running at any one time, so durations are drawn in proportion to their
    length (accepted with probability duration / cap), and the instant falls uniformly in the
    run; at least one second is left."""
    while True:
        duration = draw_duration(rng)
        if rng.random() * MAX_DURATION_S < duration:
            return duration, math.floor(rng.random() * duration)


def cycle(second_of_day: float) -> float:
    """The daily cycle's relative rate, 1 on average over a day."""
    phase = 2 * math.pi * (second_of_day - PEAK_HOUR * 3_600) / DAY_S
    return 1 + DAILY_AMPLITUDE * math.cos(phase)


def cycle_mean(start_s: int, span_s: int) -> float:
    """The cycle's mean over ``span_s`` seconds from second ``start_s`` of a day (exactly 1
    over whole days)."""
    w = 2 * math.pi / DAY_S
    peak = PEAK_HOUR * 3_600
    swing = math.sin(w * (start_s + span_s - peak)) - math.sin(w * (start_s - peak))
    return 1 + DAILY_AMPLITUDE * swing / (w * span_s)


def parse_span(text: str) -> timedelta:
    """A Go duration (``36h``), or days with a ``d`` suffix, 24 h each, optionally followed by
    a Go duration (``7d``, ``1.5d``, ``1d12h``)."""
    days = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)d([0-9.].*)?", text)
    try:
        if days is None:
            span = parse_go_duration(text)
        else:
            span = timedelta(days=float(days.group(1)))
            if days.group(2):
                span += parse_go_duration(days.group(2))
    except (ValueError, OverflowError):
        raise ValueError(
            f"{text!r} is not a span: a Go duration such as 36h, or days such as 7d or 1d12h"
        ) from None
    check_span(span, text)
    return span


def check_span(span: timedelta, written: str = "") -> None:
    """A span of at least a second (arrivals are in whole seconds) and at most a year."""
    if not timedelta(seconds=1) <= span <= MAX_SPAN:
        shown = written or span_text(span)
        raise ValueError(f"must be between 1s and {MAX_SPAN.days}d, got {shown}")


def span_text(span: timedelta) -> str:
    """``7d`` for whole days, else a Go duration of whole seconds."""
    seconds = int(span.total_seconds())
    if seconds > 0 and seconds % DAY_S == 0:
        return f"{seconds // DAY_S}d"
    return go_duration(seconds)


def go_duration(seconds: int) -> str:
    """Whole seconds as a Go duration: ``2h5m``, ``90s`` as ``1m30s``, ``0s``."""
    hours, rest = divmod(seconds, 3_600)
    minutes, secs = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    return text + (f"{secs}s" if secs or not text else "")


def rfc3339(when: datetime) -> str:
    return f"{when:%Y-%m-%dT%H:%M:%SZ}"


@dataclass(frozen=True)
class Arrivals:
    """The arrival law of one cluster: its kinds, its GPUs and the target load."""

    kinds: tuple[Kind, ...]
    gpus: int
    load: float

    @property
    def mean_job_gpus(self) -> float:
        return sum(k.weight * k.mean_gpus for k in self.kinds)

    @property
    def mean_job_pods(self) -> float:
        return sum(k.weight * k.mean_pods for k in self.kinds)

    @property
    def rate(self) -> float:
        """Jobs per second over the cluster, averaged over the span: offered GPU-seconds
        per second (load × GPUs) over the mean GPU-seconds of a job."""
        return self.load * self.gpus / (self.mean_job_gpus * mean_duration_s())


class Timeline:
    """Draws the timeline of one generated instance."""

    def __init__(
        self,
        cluster: ClusterRoom,
        teams: Sequence[Team],
        load: float,
        span: timedelta,
        seed: int,
        now: datetime,
        first_number: int,
    ) -> None:
        check_span(span)
        self.cluster = cluster
        self.teams = list(teams)
        self.now = now
        self.span_s = int(span.total_seconds())
        self.law = Arrivals(kinds(cluster), cluster.capacity_centi // CENTI, load)
        pods = self.law.rate * self.span_s * self.law.mean_job_pods
        if pods > MAX_ARRIVING_PODS:
            raise ValueError(
                f"{span_text(span)} at load {load:g} brings about {pods:,.0f} pods, more than "
                f"the {MAX_ARRIVING_PODS:,} of one instance: shorten it or lower the load"
            )
        self.rng = random.Random(f"vcopt-timeline-{seed}")
        self.number = first_number
        self.products = sorted({m.product for m in cluster.rack_models})
        self._largest: dict[tuple[int, str, int], int] = {}

    def documents(
        self, running: Sequence[DrawnJob], pending: Sequence[DrawnJob]
    ) -> list[dict[str, Any]]:
        """Every job's document: the running jobs with ``duration`` and ``startedAt``, the
        pending ones with ``duration``, then the arrivals in time order."""
        docs = []
        for job in running:
            duration, age = draw_running(self.rng)
            job.duration = go_duration(duration)
            started = self.now - timedelta(seconds=age)
            docs.append(_with_timeline(job.document(), startedAt=rfc3339(started)))
        for job in pending:
            job.duration = go_duration(draw_duration(self.rng))
            docs.append(job.document())
        for at, team in self.arrival_times():
            job = self.draw(team)
            arrival = self.now + timedelta(seconds=at)
            docs.append(_with_timeline(job.document(), arrival=rfc3339(arrival)))
        return docs

    def arrival_times(self) -> list[tuple[int, str]]:
        """(whole seconds after now, in (0, span], team) of every arrival, in time order.

        Each team's process is drawn by thinning: candidates at the cycle's peak rate, each
        kept with probability cycle / peak. The cycle is divided by its mean over the span, so
        the expected count is rate × span for any span, not only whole days."""
        start = self.now.hour * 3_600 + self.now.minute * 60 + self.now.second
        scale = self.law.rate / cycle_mean(start, self.span_s)
        weights = [max(1, t.deserved) for t in self.teams]
        out = []
        for index, (team, weight) in enumerate(zip(self.teams, weights, strict=True)):
            peak = scale * weight / sum(weights) * (1 + DAILY_AMPLITUDE)
            t = 0.0
            while True:
                t += self.rng.expovariate(peak)
                if t >= self.span_s:
                    break
                if self.rng.random() * (1 + DAILY_AMPLITUDE) < cycle((start + t) % DAY_S):
                    out.append((max(1, math.ceil(t)), index, team.name))
        out.sort()
        return [(at, team) for at, _, team in out]

    def draw(self, team: str) -> DrawnJob:
        """One arriving job of ``team``: kind, workers, pod, priority, GPU model, topology and
        duration, drawn in that order."""
        rng = self.rng
        kind = _pick(rng, tuple((k, k.weight) for k in self.law.kinds))
        workers = _pick(rng, kind.workers)
        pod = _pick(rng, kind.pods)
        priority = "low" if kind.spot else "high" if rng.random() < HIGH_SHARE else "normal"
        job = DrawnJob(
            f"{kind.name}-{self.number:05d}",
            team,
            kind.task,
            pod,
            workers,
            workers if kind.gang else 1,
            priority,
            revocable=kind.spot,
            preemptable=kind.spot,
        )
        self.number += 1
        if rng.random() < PINNED_SHARE:
            models = [p for p in self.products if self.largest(0, p, pod.gpus) >= workers]
            job.product = rng.choice(models) if models else ""
        if kind.name == "gang":
            job.topology = self.topology(workers, job.product, rng.random() < HARD_SHARE)
        job.duration = go_duration(draw_duration(rng))
        return job

    def topology(self, workers: int, product: str, hard: bool) -> tuple[str, int]:
        """``hard`` up to the lowest tier (1 rack, 2 group) one of whose domains holds the
        workers, if one does; otherwise ``soft``, preferring a rack where one is big enough."""
        tiers = [t for t in (1, 2) if self.largest(t, product, GANG_GPUS) >= workers]
        if hard and tiers:
            return ("hard", tiers[0])
        return ("soft", tiers[0] if tiers else 2)

    def largest(self, tier: int, product: str, gpus: int) -> int:
        key = (tier, product, gpus)
        if key not in self._largest:
            self._largest[key] = self.cluster.largest(tier, product, gpus)
        return self._largest[key]


def _with_timeline(doc: dict[str, Any], **fields: str) -> dict[str, Any]:
    """``doc`` with ``fields`` right after its ``duration``, where a reader looks for them."""
    out: dict[str, Any] = {}
    for key, value in doc.items():
        out[key] = value
        if key == "duration":
            out.update(fields)
    return out
