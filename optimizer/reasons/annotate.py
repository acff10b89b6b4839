"""What both engines' plans say about pending jobs beyond their own reasons: the queue
position of every job with pending pods, and for CP-SAT plans the dominant reason of each
pending job, named from the blocking rules the dedicated model proves (``search.py``).

The CP-SAT engine decides every job at once and can only say that a job was not admitted;
the reason comes from asking, job by job, which rules keep it out of the room the plan
leaves. That costs one small model per pending job, so it is done within a time allowance;
jobs not reached keep the engine's own sentence.
"""

from __future__ import annotations

import time
from dataclasses import replace

from models.instance import Instance

from ..plan import PENDING, Plan
from . import search
from .model import ExplainModel
from .position import queue_positions
from .words import dominant

REASON_SECONDS = 5.0
CORE_SECONDS = 0.5
"""Per job, for making its core minimal; past it the first rule of a sufficient set is named."""
REASON_SHARE = 0.1
"""At most this share of a solve's time limit goes to the reasons."""
MAX_NODES = 1000
"""Past this many nodes one job's model takes seconds to build: plans keep the engine's
sentence, and ``vcopt explain`` answers job by job."""
BUILD_PER_NODE = 1e-3
"""Seconds per node one job's model takes to build, which no deadline can cut short: a job is
only started with this much of the allowance left (measured 0.3–0.8 ms per node on the
594-node M instance, 0.5–0.6 ms on the 1,280-node L one)."""


def dominant_reason(
    instance: Instance, plan: Plan, job: str, seconds: float = search.SECONDS
) -> str | None:
    """The first blocking rule of ``job`` against ``plan``, in plain words (None if the job
    fits in what the plan leaves, nothing the model states blocks it, or no answer is found
    within ``seconds``)."""
    deadline = time.perf_counter() + seconds
    em = ExplainModel(instance, plan, [instance.job_by_key[job]])
    nodes = search.where_it_fits(em, max(deadline - time.perf_counter(), 0.001))
    if nodes is not None:
        status = plan.solver.status if plan.solver is not None else "its"
        if not nodes or status == "OPTIMAL":
            # Nothing to place (a job without pods), or a proven optimum that leaves out a job
            # the room would take: a rule this model does not state decides, so the engine's
            # own reason stands.
            return None
        return (
            f"it fits in the room the plan leaves (on {', '.join(nodes[:3])}), but the {status} "
            "search did not admit it"
        )
    left = max(deadline - time.perf_counter(), 0.001)
    core = search.blocking_core(em, seconds=min(CORE_SECONDS, left), first=left).rules
    return dominant(em, core) if core else None


def annotate(
    instance: Instance,
    plan: Plan,
    *,
    reasons: bool,
    seconds: float = REASON_SECONDS,
    positions: dict[str, int] | None = None,
) -> Plan:
    """``plan`` with queue positions (``positions`` when the caller has them: they depend on
    the instance alone) and, when ``reasons``, dominant reasons of pending jobs."""
    positions = queue_positions(instance) if positions is None else positions
    reasons = reasons and len(instance.nodes) <= MAX_NODES
    deadline = time.perf_counter() + seconds
    why: dict[str, str] = {}
    if reasons:
        # The head of every queue first: those are the jobs Volcano would try next.
        waiting = [d.job for d in plan.jobs if d.status == PENDING]
        build = BUILD_PER_NODE * len(instance.nodes)
        for job in sorted(waiting, key=lambda k: (positions.get(k, 0), k)):
            left = deadline - time.perf_counter()
            if left < build:
                break
            found = dominant_reason(instance, plan, job, left)
            if found:
                why[job] = found
    decisions = [
        replace(d, position=positions.get(d.job), reason=why.get(d.job, d.reason))
        for d in plan.jobs
    ]
    return plan.replace(jobs=tuple(decisions))
