"""The department/team queue tree and the seeded workload mix drawn against the cluster."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from models.resources import NVIDIA_GPU

from .cluster import ClusterRoom
from .jobs import DrawnJob, PodSpec
from .params import (
    DEPARTMENTS,
    FRACTIONS,
    MAX_GANG,
    RUNNING_FAILURES,
)


@dataclass(frozen=True)
class Team:
    name: str
    deserved: int


def _split(total: int, parts: int, rng: random.Random) -> list[int]:
    """``total`` in ``parts`` uneven whole shares whose sum is at most ``total``."""
    weights = [rng.uniform(1.0, 3.0) for _ in range(parts)]
    return [math.floor(total * w / sum(weights)) for w in weights]


def queue_tree(gpus: int, rng: random.Random) -> tuple[list[dict[str, Any]], list[Team]]:
    """root → 2–3 departments → 2–3 teams, on ``nvidia.com/gpu``.

    The numbers satisfy the webhook by construction: children's deserved are floors of shares of
    the parent's, guarantees are floors of a quarter of deserved (so siblings' guarantees sum
    within the parent's quarter), and each capability is at least its deserved and at most the
    department's.
    """
    departments = DEPARTMENTS[: rng.randint(2, 3)]
    queues: list[dict[str, Any]] = [{"name": "root"}]
    teams = []
    for (department, names), deserved in zip(
        departments, _split(gpus, len(departments), rng), strict=True
    ):
        capability = min(gpus, round(deserved * rng.uniform(1.3, 1.8)))
        queues.append(_queue(department, "root", deserved, capability, deserved // 4))
        members = names[: rng.randint(2, 3)]
        for team, share in zip(members, _split(deserved, len(members), rng), strict=True):
            cap = min(capability, round(share * rng.uniform(1.5, 2.5)))
            guarantee = share // 4 if rng.random() < 0.5 else 0
            queues.append(_queue(f"{department}-{team}", department, share, cap, guarantee))
            teams.append(Team(f"{department}-{team}", share))
    return queues, teams


def _queue(
    name: str, parent: str, deserved: int, capability: int, guarantee: int
) -> dict[str, Any]:
    q: dict[str, Any] = {
        "name": name,
        "parent": parent,
        "deserved": {NVIDIA_GPU: deserved},
        "capability": {NVIDIA_GPU: capability},
    }
    if guarantee:
        q["guarantee"] = {NVIDIA_GPU: guarantee}
    return q


KINDS = ("hard", "soft", "gang", "single", "fractional", "revocable")
KIND_WEIGHTS = (0.12, 0.12, 0.10, 0.30, 0.22, 0.14)
SMALL_KINDS = ("single", "fractional")
"""Drawn (with single pods of one GPU) when a pod-count target needs smaller pods."""
TASK_NAMES = {
    "hard": "worker",
    "soft": "worker",
    "gang": "worker",
    "single": "main",
    "fractional": "replica",
    "revocable": "worker",
}


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    """Small sizes are common and large ones rare, as in real gang-size mixes."""
    if high <= low:
        return low
    return min(high, max(low, round(2 ** rng.uniform(math.log2(low), math.log2(high)))))


class Mix:
    """Draws jobs of the workload mix, sized so that each could fit the cluster."""

    def __init__(self, cluster: ClusterRoom, teams: Sequence[Team], rng: random.Random) -> None:
        self.cluster = cluster
        self.teams = list(teams)
        self.team_weights = [max(1, t.deserved) for t in teams]
        self.rng = rng
        self.count = 0
        self.products = sorted({m.product for m in cluster.rack_models if m.count == 8})

    def draw(self, small: bool = False) -> DrawnJob:
        rng = self.rng
        kind = rng.choice(SMALL_KINDS) if small else rng.choices(KINDS, KIND_WEIGHTS)[0]
        self.count += 1
        team = rng.choices(self.teams, self.team_weights)[0].name
        job = DrawnJob(
            f"{kind}-{self.count:05d}", team, TASK_NAMES[kind], PodSpec(1), 1, 1, "normal"
        )
        getattr(self, f"_{kind}")(job, small)
        return job

    def _hard(self, job: DrawnJob, small: bool) -> None:
        rng = self.rng
        tier = 1 if rng.random() < 0.6 else 2
        product = rng.choice(self.products) if rng.random() < 0.5 else ""
        most = min(MAX_GANG, self.cluster.largest(tier, product, 8) // 2)
        if most < 2:  # no domain of the tier could hold even two pods: make it a soft gang
            job.name = f"soft-{self.count:05d}"
            self._soft(job, small)
            return
        job.pod = PodSpec(8)
        job.replicas = job.min_available = _log_uniform(rng, 2, most)
        job.topology = ("hard", tier)
        job.product = product
        job.priority = "high" if rng.random() < 0.4 else "normal"

    def _soft(self, job: DrawnJob, small: bool) -> None:
        rng = self.rng
        gpus = 8 if rng.random() < 0.6 else 4
        most = min(MAX_GANG, self.cluster.largest(0, "", gpus) // 4)
        job.pod = PodSpec(gpus)
        job.replicas = job.min_available = _log_uniform(rng, 2, max(2, most))
        job.topology = ("soft", 1 if rng.random() < 0.5 else 2)
        job.priority = "high" if rng.random() < 0.3 else "normal"

    def _gang(self, job: DrawnJob, small: bool) -> None:
        job.pod = PodSpec(4)
        job.replicas = job.min_available = self.rng.randint(2, 8)

    def _single(self, job: DrawnJob, small: bool) -> None:
        rng = self.rng
        gpus = 1 if small else rng.choices((1, 2, 4, 8), (0.4, 0.25, 0.2, 0.15))[0]
        job.pod = PodSpec(gpus)
        job.priority = "high" if rng.random() < 0.2 else "normal"
        job.preemptable = rng.random() < 0.3

    def _fractional(self, job: DrawnJob, small: bool) -> None:
        rng = self.rng
        memory, cores = rng.choice(FRACTIONS)
        job.pod = PodSpec(1, memory, cores)
        job.replicas = rng.randint(1, 8)
        job.priority = "high" if rng.random() < 0.3 else "normal"

    def _revocable(self, job: DrawnJob, small: bool) -> None:
        rng = self.rng
        job.pod = PodSpec(rng.choice((1, 2, 4)))
        job.replicas = job.min_available = rng.randint(1, 4)
        job.priority = "low"
        job.revocable = job.preemptable = True
        job.duration = rng.choice(("1h", "2h", "4h", "8h"))


def running_jobs(cluster: ClusterRoom, mix: Mix, target: int) -> list[DrawnJob]:
    """Jobs already bound, placed consistently on nodes and devices, until ``target``
    GPU-hundredths are busy (or the cluster stops taking more)."""
    jobs: list[DrawnJob] = []
    busy = failures = 0
    while busy < target and failures < RUNNING_FAILURES:
        job = mix.draw()
        job.shrink_to(target - busy)
        if cluster.place(job, mix.rng):
            jobs.append(job)
            busy += job.centi
        else:
            failures += 1
    return jobs


def pending_jobs(mix: Mix, budget: int, pods: int | None) -> list[DrawnJob]:
    """Jobs waiting, until the demand reaches ``budget``; with a ``pods`` target, until that
    many pods exist, drawing small pods whenever the mean demand per pod runs above
    ``budget / pods`` so that both targets are met together."""
    jobs: list[DrawnJob] = []
    demand = count = 0
    while (count < pods) if pods is not None else (demand < budget):
        if pods is not None:
            job = mix.draw(small=demand * pods > budget * count)
            job.replicas = min(job.replicas, pods - count)
            job.min_available = min(job.min_available, job.replicas)
        else:
            job = mix.draw()
            job.shrink_to(budget - demand)
        jobs.append(job)
        demand += job.centi
        count += job.replicas
    return jobs
