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
from .words import describe

REASON_SECONDS = 5.0


def dominant_reason(instance: Instance, plan: Plan, job: str) -> str | None:
    """The first blocking rule of ``job`` against ``plan``, in plain words (None if the job
    fits in what the plan leaves, or nothing the model states blocks it)."""
    em = ExplainModel(instance, plan, [instance.job_by_key[job]])
    core = search.blocking_core(em, seconds=1.0).rules
    return describe(em, core[0]) if core else None


def annotate(
    instance: Instance, plan: Plan, *, reasons: bool, seconds: float = REASON_SECONDS
) -> Plan:
    """``plan`` with queue positions and, when ``reasons``, dominant reasons of pending jobs."""
    positions = queue_positions(instance)
    deadline = time.perf_counter() + seconds
    decisions = []
    for d in plan.jobs:
        d = replace(d, position=positions.get(d.job))
        if reasons and d.status == PENDING and time.perf_counter() < deadline:
            why = dominant_reason(instance, plan, d.job)
            if why:
                d = replace(d, reason=why)
        decisions.append(d)
    return plan.replace(jobs=tuple(decisions))
