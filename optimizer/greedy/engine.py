"""Run one Volcano cycle on an instance and turn the session's decisions into a plan.

This is the answer to "what would Volcano do with this snapshot?": the configured actions in
their order, the configured plugins in their tiers, random ties broken by a seeded generator so
that the same seed always gives the same plan.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from models.instance import Instance

from ..plan import (
    ADMITTED,
    PENDING,
    RUNNING,
    Eviction,
    JobDecision,
    Pipelined,
    Placement,
    Plan,
    SolverInfo,
)
from .actions import allocate, backfill, enqueue, preempt, reclaim
from .api import JobInfo, Status
from .plugins import REGISTRY
from .session import Session

ACTIONS: dict[str, Callable[[Session], None]] = {
    "enqueue": enqueue.execute,
    "allocate": allocate.execute,
    "backfill": backfill.execute,
    "preempt": preempt.execute,
    "reclaim": reclaim.execute,
}


def run_session(instance: Instance, seed: int = 0) -> Session:
    """Open a session, run the configured actions in order, close it."""
    ssn = Session(instance, seed)
    ssn.open(REGISTRY)
    for action in instance.scheduler.actions:
        execute = ACTIONS.get(action)
        if execute is not None:
            execute(ssn)
    ssn.close()
    return ssn


def solve(instance: Instance, seed: int = 0) -> Plan:
    """The greedy plan for ``instance``."""
    started = time.perf_counter()
    ssn = run_session(instance, seed)
    placements = tuple(
        Placement(
            t.uid, t.node, t.gpus if t.gpus is not None else (() if not t.gpu_requests else None)
        )
        for t in ssn.records.binds
    )
    pipelined = tuple(Pipelined(t.uid, t.node) for t in ssn.tasks() if t.status is Status.PIPELINED)
    evictions = tuple(Eviction(t.uid, t.node, t.evict_reason) for t in ssn.records.evictions)
    bound = {t.uid for t in ssn.records.binds}
    jobs = tuple(_decision(ssn, job, bound) for job in ssn.jobs.values())
    wall = time.perf_counter() - started
    return Plan(
        instance=instance.name,
        engine="greedy",
        seed=seed,
        placements=placements,
        evictions=evictions,
        pipelined=pipelined,
        jobs=jobs,
        solver=SolverInfo(status="HEURISTIC", wall_seconds=round(wall, 4)),
    )


def _decision(ssn: Session, job: JobInfo, bound: set[str]) -> JobDecision:
    new = [t for t in job.tasks.values() if t.uid in bound]
    holding = [t for t in job.tasks.values() if t.node and t.status is not Status.PIPELINED]
    nodes = {t.node for t in holding}
    hypernode = ssn.hypernode_decisions.get(job.uid)
    tier = ssn.topology.lca_tier(nodes) if len(holding) > 1 and nodes else None
    if new:
        return JobDecision(job.uid, ADMITTED, "", hypernode, tier)
    if holding:
        return JobDecision(
            job.uid, RUNNING, _reason(ssn, job) if _has_pending(job) else "", hypernode, tier
        )
    return JobDecision(job.uid, PENDING, _reason(ssn, job))


def _has_pending(job: JobInfo) -> bool:
    return any(t.status in (Status.PENDING, Status.PIPELINED) for t in job.tasks.values())


def _reason(ssn: Session, job: JobInfo) -> str:
    """A pending reason in the spirit of Volcano's fit errors, but specific."""
    parts = []
    if job.phase == "Pending" and "enqueue" in ssn.conf.actions:
        parts.append(job.reason or "not enqueued")
    elif job.reason:
        parts.append(job.reason)
    waiting = [t for t in job.tasks.values() if t.status is Status.PIPELINED]
    if waiting:
        parts.append(f"{len(waiting)} pod(s) pipelined, waiting for resources to be released")
    if job.hard_tier is not None and not any(
        t.status is Status.BINDING for t in job.tasks.values()
    ):
        parts.append(f"no HyperNode of tier ≤ {job.hard_tier} could hold the gang")
    errors = list(dict.fromkeys(job.fit_errors.values()))
    if errors:
        parts.append("; ".join(errors[:3]))
    ready = job.ready_task_num
    if not parts:
        parts.append(f"{job.min_available - ready}/{job.min_available} tasks in gang unschedulable")
    return "; ".join(parts)
