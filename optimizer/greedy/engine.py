"""Run one Volcano cycle on an instance and turn the session's decisions into a plan.

This is the answer to "what would Volcano do with this snapshot?": the configured actions in
their order, the configured plugins in their tiers, random ties broken by a seeded generator so
that the same seed always gives the same plan.

A pod is a placement only if the cycle bound it (its statement was committed). A pod the cycle
placed without binding — pipelined onto resources still being released, or allocated by a gang
that only reached "pipelined" (§9.1) — holds its node for the rest of the cycle and is listed
under ``pipelined``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from models.errors import InputError, Problem, obj_name
from models.instance import Instance
from models.workload import PENDING as PHASE_PENDING

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
from ..result import Status
from .actions import allocate, backfill, enqueue, preempt, reclaim, shuffle
from .api import JobInfo, TaskInfo, TaskStatus
from .plugins import REGISTRY
from .session import Session

ACTIONS: dict[str, Callable[[Session], None]] = {
    "enqueue": enqueue.execute,
    "allocate": allocate.execute,
    "backfill": backfill.execute,
    "preempt": preempt.execute,
    "reclaim": reclaim.execute,
    "shuffle": shuffle.execute,
}
"""Every action the configuration loader accepts (``KNOWN_ACTIONS``), by name."""

HELD = frozenset({TaskStatus.PIPELINED, TaskStatus.ALLOCATED})
"""Statuses of pods placed in the session but not bound: a commit turns Allocated into Binding."""
BOUND = frozenset({TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.RUNNING})
"""Pods on a node after the cycle: bound by it, or running before it (and not evicted)."""
ROLE_SKIPPED = "already failed in this job"


def open_session(instance: Instance, seed: int = 0) -> Session:
    """``OpenSession``: the snapshot with every configured plugin's hooks registered."""
    ssn = Session(instance, seed)
    ssn.open(REGISTRY)
    return ssn


def run_actions(ssn: Session) -> None:
    """The configured actions in order, then ``CloseSession``.

    An action without an implementation here is refused before any runs: skipping it would
    answer for a different configuration than the one given. The loader admits only
    ``KNOWN_ACTIONS``, so this is reached by a configuration built in code.
    """
    missing = [action for action in ssn.conf.actions if action not in ACTIONS]
    if missing:
        raise InputError(
            [
                Problem(
                    f"action {name!r} is not implemented by the greedy engine "
                    f"(implemented: {', '.join(ACTIONS)})",
                    obj_name("Instance", ssn.instance.name),
                    "scheduler.actions",
                )
                for name in dict.fromkeys(missing)
            ]
        )
    for action in ssn.conf.actions:
        ACTIONS[action](ssn)
    ssn.close()


def run_session(instance: Instance, seed: int = 0) -> Session:
    """Open a session, run the configured actions in order, close it."""
    ssn = open_session(instance, seed)
    run_actions(ssn)
    return ssn


def solve(instance: Instance, seed: int = 0) -> Plan:
    """The greedy plan for ``instance``."""
    started = time.perf_counter()
    ssn = run_session(instance, seed)
    return to_plan(ssn, time.perf_counter() - started)


def to_plan(ssn: Session, wall_seconds: float = 0.0) -> Plan:
    """The decisions of a finished session as a plan."""
    placements = tuple(
        Placement(
            t.uid, t.node, t.gpus if t.gpus is not None else (() if not t.gpu_requests else None)
        )
        for t in ssn.records.binds
    )
    pipelined = tuple(Pipelined(t.uid, t.node) for t in ssn.tasks() if t.status in HELD)
    evictions = tuple(Eviction(t.uid, t.node, t.evict_reason) for t in ssn.records.evictions)
    bound = {t.uid for t in ssn.records.binds}
    jobs = tuple(_decision(ssn, job, bound) for job in ssn.jobs.values())
    return Plan(
        instance=ssn.instance.name,
        engine="greedy",
        seed=ssn.seed,
        placements=placements,
        evictions=evictions,
        pipelined=pipelined,
        jobs=jobs,
        solver=SolverInfo(status=Status.HEURISTIC, wall_seconds=round(wall_seconds, 4)),
    )


def _decision(ssn: Session, job: JobInfo, bound: set[str]) -> JobDecision:
    """Admitted (bound pods this cycle), running (holds pods from before) or pending.

    The HyperNode and LCA tier describe where the job's pods are after the cycle: the lowest
    HyperNode holding them all and its tier (0 when they share a node). They are given for
    every job with more than one pod there, and for every network-topology job that has any.
    """
    holding = [t for t in job.tasks.values() if t.status in BOUND]
    nodes = {t.node for t in holding}
    hypernode, tier = None, None
    if nodes and (len(holding) > 1 or job.has_topology):
        hypernode = ssn.topology.lowest_common(nodes)
        tier = ssn.topology.lca_tier(nodes)
    if any(t.uid in bound for t in holding):
        return JobDecision(job.uid, ADMITTED, "", hypernode, tier)
    if holding:
        reason = _reason(ssn, job) if _has_pending(job) else ""
        return JobDecision(job.uid, RUNNING, reason, hypernode, tier)
    return JobDecision(job.uid, PENDING, _reason(ssn, job))


def _has_pending(job: JobInfo) -> bool:
    return any(t.status is TaskStatus.PENDING or t.status in HELD for t in job.tasks.values())


def _reason(ssn: Session, job: JobInfo) -> str:
    """Why the job (or the rest of it) did not start, most specific cause first.

    The action that stopped it (enqueue, validity, an overused queue) or the gang summary,
    then the HyperNode tiers the topology search tried, the pods held without being bound, and
    up to three distinct task fit errors (queue limits and per-node predicate counts).
    """
    parts = []
    if job.reason:
        parts.append(job.reason)
    elif job.phase in (PHASE_PENDING, "") and "enqueue" in ssn.conf.actions:
        parts.append("not enqueued")
    if job.topology_reason:
        parts.append(job.topology_reason)
    held = [t for t in job.tasks.values() if t.status in HELD]
    if held:
        parts.append(_held_note(ssn, job, held))
    errors = sorted(dict.fromkeys(job.fit_errors.values()), key=lambda e: ROLE_SKIPPED in e)
    if errors:
        parts.append("; ".join(errors[:3]))
    if not parts:
        missing = job.min_available - job.ready_task_num
        parts.append(f"{missing}/{job.min_available} tasks in gang unschedulable")
    return "; ".join(parts)


def _held_note(ssn: Session, job: JobInfo, held: list[TaskInfo]) -> str:
    """What the held pods wait for. Pipelining only says a pod fits a node's future idle
    resources; when nothing on those nodes is being released, nothing will free room for
    them, and the note says so instead of promising a release."""
    pipelined = [t for t in held if t.status is TaskStatus.PIPELINED]
    waiting = len(pipelined)
    nodes = sorted({t.node for t in pipelined})
    releasing = any(any(ssn.nodes[n].releasing) for n in nodes)
    on = f" on {', '.join(nodes[:3])}" + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
    if releasing:
        wait = f"{waiting} pod(s) pipelined{on}, waiting for resources being released"
    else:
        wait = f"{waiting} pod(s) pipelined{on}, where nothing is being released"
    if ssn.job_ready(job):
        return wait
    if not waiting:
        return f"{len(held)} pod(s) held in this cycle but not bound: the gang is not ready"
    return (
        f"{len(held)} pod(s) held in this cycle but not bound: the gang reached minAvailable "
        f"only with {wait}"
    )
