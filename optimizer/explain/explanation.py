"""``vcopt explain``: why a job the plan leaves pending is pending, and what would let it start.

The answer has four parts, in the order people read them: the dominant reason in plain words;
the blocking rules (a minimal set the solver proves keeps the job out, ``search.py``); for
each, the smallest change that lets the job fit, with its amount (``remedies.py``); and what
that change costs others, found by applying it and solving again with the same engine — which
also checks that the change really admits the job (the round trip).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from models.instance import Instance
from models.resources import format_amount
from models.workload import Job

from ..options import SolveOptions
from ..plan import ADMITTED, PENDING, RUNNING, Plan
from ..reasons import rules as kinds
from ..reasons import search
from ..reasons.model import ExplainModel
from ..reasons.words import describe, dominant
from .plans import plan_of
from .remedies import Change, Variant, changes, compose
from .target import find_job

FITS = "it fits in the room the plan leaves"
RESOLVE_SECONDS = 10.0
ALTERNATIVE_SECONDS = 10.0
ALTERNATIVES = 6
"""Time, and how many of the first blockers, for finding each blocker's own change; blockers
not reached show none."""
SHOWN = 10
"""Blockers printed in the text form (all are in the document form)."""


@dataclass
class Blocker:
    kind: str
    rule: str
    text: str
    changes: list[Change] = field(default_factory=list)
    """The smallest change of this rule (with its amount) in a change that lets the job fit."""
    enough: bool = False
    """Whether changing this rule alone lets the job fit."""
    proven: bool = True
    """In the minimal set the solver proves blocks the job; False for a rule that only the
    smallest change shows must change too (another set blocks the job once the first is
    lifted)."""


@dataclass
class Explanation:
    job: str
    engine: str
    status: str
    position: int | None
    plan_reason: str
    dominant: str
    blockers: list[Blocker] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    """The smallest change overall: every rule it lifts, with its amount."""
    costs: list[str] = field(default_factory=list)
    admitted_after: bool | None = None
    """Whether solving again with ``changes`` applied admits the job (None: not checked)."""
    minimal: bool = True
    """The blocking rules the solver names are a proven minimal set (else: sufficient)."""
    taken_by: list[str] = field(default_factory=list)
    """Pending jobs that the plan solved again admits instead (when it does not admit this
    one): the change is sized against the plan, where they do not move."""

    @property
    def variant(self) -> Variant | None:
        return compose(self.changes) if self.changes else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "engine": self.engine,
            "status": self.status,
            "queuePosition": self.position,
            "planReason": self.plan_reason,
            "dominantReason": self.dominant,
            "blockers": [
                {
                    "rule": b.rule,
                    "kind": b.kind,
                    "reason": b.text,
                    "change": [c.text for c in b.changes],
                    "enoughAlone": b.enough,
                    "inMinimalCore": b.proven,
                }
                for b in self.blockers
            ],
            "changes": [{"rule": c.rule, "kind": c.kind, "change": c.text} for c in self.changes],
            "costs": list(self.costs),
            "admittedAfterChange": self.admitted_after,
            "minimalCore": self.minimal,
            "roomTakenBy": list(self.taken_by),
        }

    def to_text(self) -> str:
        lines = [f"{self.job} is {self.status} in the {self.engine} plan"]
        if self.position is not None:
            lines[0] += f" (position {self.position} in its queue)"
        lines.append(f"Why: {self.dominant}")
        if self.blockers:
            lines.append(
                "Blocking rules:"
                if self.minimal
                else "Blocking rules (sufficient, not proven minimal):"
            )
            for b in self.blockers[:SHOWN]:
                lines.append(f"  - [{b.kind}] {b.text}")
                alone = "enough alone" if b.enough else "with the other changes"
                lines.extend(f"      change: {c.text} ({alone})" for c in b.changes)
        if len(self.blockers) > SHOWN:
            rest = self.blockers[SHOWN:]
            counts: dict[str, int] = {}
            for b in rest:
                counts[b.kind] = counts.get(b.kind, 0) + 1
            shown = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
            lines.append(f"  … and {len(rest)} more ({shown})")
        if self.changes:
            lines.append("Smallest change that lets it start:")
            lines.extend(f"  - {c.text}" for c in self.changes)
        if self.admitted_after is not None:
            verdict = "admits it" if self.admitted_after else "still does not admit it"
            if self.taken_by:
                verdict += (
                    f": other pending jobs take the room first ({', '.join(self.taken_by[:5])}"
                    + (f" and {len(self.taken_by) - 5} more" if len(self.taken_by) > 5 else "")
                    + ")"
                )
            lines.append(f"Solving again with the change applied {verdict}.")
        if self.costs:
            lines.append("What the change costs others:")
            lines.extend(f"  - {c}" for c in self.costs)
        elif self.admitted_after:
            lines.append("What the change costs others: nothing (no other job loses its place).")
        return "\n".join(lines) + "\n"


def _static_reason(instance: Instance, job: Job) -> str | None:
    """Reasons no rule of the model can lift: the job asks for something no node has."""
    offered = {r for n in instance.nodes for r, v in n.allocatable.items() if v > 0}
    for task in job.tasks:
        for name, amount in task.resources.items():
            if amount > 0 and name not in offered:
                return f"no node offers {name}, which task {task.name} asks for"
            largest = max((n.allocatable.get(name) for n in instance.nodes), default=0)
            if amount > largest:
                return (
                    f"each pod of task {task.name} asks for {format_amount(name, amount)} {name}, "
                    f"more than any node has (largest: {format_amount(name, largest)}): it "
                    "needs larger nodes"
                )
        for request in task.gpu:
            devices = [d for n in instance.nodes for d in n.gpus]
            if devices and all(
                request.memory_on(d.memory) > d.memory or request.booked_cores > d.cores
                for d in devices
            ):
                return (
                    f"task {task.name} asks per GPU for more memory or cores than any GPU has "
                    f"(largest: {max(d.memory for d in devices)} MiB, "
                    f"{max(d.cores for d in devices)} cores): ask for at most that, or add "
                    "nodes with larger GPUs"
                )
    queue = instance.queue_tree.queue(job.queue) if job.queue in instance.queue_tree else None
    if queue is not None and not queue.is_open:
        return f"queue {job.queue} is not Open"
    return None


def _costs(
    instance: Instance, before: Plan, after: Plan, job: str, found: list[Change]
) -> list[str]:
    """Jobs that lose by the change: those it stops, and those the new plan keeps out."""
    out = [f"job {c.job} stays pending" for c in found if c.kind == kinds.PLACED]
    for c in found:
        if c.kind == kinds.EVICT:
            victim = instance.job_by_key[c.job]
            left = sum(1 for p in victim.pods if p.running) - c.pods
            stops = (
                " (below its minAvailable: the job stops)" if left < victim.min_available else ""
            )
            out.append(f"job {victim.key}: {c.pods} pod(s) evicted{stops}")
    old = {d.job: d.status for d in before.jobs}
    new = {d.job: d.status for d in after.jobs}
    named = {c.job for c in found if c.job}
    for key, status in old.items():
        if key == job or key in named:
            continue
        if status in (ADMITTED, RUNNING) and new.get(key) == PENDING:
            out.append(f"job {key} would stay pending")
    evicted_before = {e.pod for e in before.evictions}
    lost: dict[str, int] = {}
    for e in after.evictions:
        if e.pod not in evicted_before:
            pod = instance.pod_by_key.get(e.pod)
            if pod is not None and pod.job != job:
                lost[pod.job] = lost.get(pod.job, 0) + 1
    out += [f"job {j}: {n} pod(s) evicted by the new plan" for j, n in sorted(lost.items())]
    return out


def _plan_note(instance: Instance, plan: Plan, job: Job) -> str:
    """What the plan itself does to the job's pods: it evicts them, or pipelines them."""
    mine = {p.key for p in job.pods}
    evicted = [e for e in plan.evictions if e.pod in mine]
    pipelined = sorted({p.node for p in plan.pipelined if p.pod in mine})
    if evicted:
        why = ", ".join(sorted({e.reason for e in evicted if e.reason})) or "eviction"
        return f"the plan evicts {len(evicted)} of its running pod(s) ({why}) for other jobs"
    if pipelined:
        return (
            f"its pods are pipelined on {', '.join(pipelined)}: they start only when room there "
            "is released"
        )
    return ""


def _admitted(plan: Plan, job: str, was: str) -> bool:
    decision = plan.job(job)
    if decision is None:
        return False
    if was == RUNNING:
        return decision.status in (ADMITTED, RUNNING) and not decision.reason
    return decision.status in (ADMITTED, RUNNING)


def explain(
    instance: Instance,
    job: str,
    engine: str = "cpsat",
    *,
    plan: Plan | None = None,
    options: SolveOptions | None = None,
    check: bool = True,
) -> Explanation:
    """Why ``job`` (``namespace/name`` or a unique name) is pending in ``engine``'s plan of
    ``instance`` (solved here unless ``plan`` is given), and what would let it start."""
    from ..reasons.position import queue_positions

    target = find_job(instance, job)
    options = options or SolveOptions.of(time_limit=RESOLVE_SECONDS)
    plan = plan or plan_of(instance, engine, options)
    decision = plan.job(target.key)
    status = decision.status if decision is not None else PENDING
    reason = decision.reason if decision is not None else ""
    position = queue_positions(instance).get(target.key)
    out = Explanation(target.key, engine, status, position, reason, "")
    if status == ADMITTED or (status == RUNNING and not reason):
        out.dominant = "it is not pending: the plan starts it"
        return out
    static = _static_reason(instance, target)
    em = ExplainModel(instance, plan, [target])
    note = _plan_note(instance, plan, target)
    nodes = search.where_it_fits(em)
    if nodes is not None:
        why = (
            "Volcano's cycle did not get to it"
            if engine == "greedy"
            else f"the {plan.solver.status if plan.solver else 'CP-SAT'} search did not admit it"
        )
        fits = f"{FITS} (on {', '.join(nodes[:3])}), but {why}"
        engine_says = f" ({reason})" if reason and not reason.startswith(FITS) else ""
        out.dominant = note or static or fits + engine_says
        return out
    proof = search.blocking_core(em)
    core = proof.rules
    out.minimal = proof.minimal
    best = search.correction(em)
    out.blockers = [Blocker(r.kind, r.key, describe(em, r)) for r in core]
    if best is None:
        out.dominant = static or "no change vcopt can model lets it fit"
        return out
    out.changes = changes(em, best)
    lifted = {r.rule.key for r in best.relaxed}
    first = next((r for r in core if r.key in lifted), core[0] if core else None)
    out.dominant = static or dominant(em, core, first)
    if note:
        out.dominant = f"{note}; and {out.dominant}"
    keys = [r.key for r in core]
    deadline = time.perf_counter() + ALTERNATIVE_SECONDS
    for blocker in out.blockers[:ALTERNATIVES]:
        if time.perf_counter() > deadline:
            break
        alone = search.correction(
            em, keep=[k for k in keys if k != blocker.rule], lift=[blocker.rule]
        )
        if alone is not None:
            blocker.changes = [c for c in changes(em, alone) if c.rule == blocker.rule]
            blocker.enough = {r.rule.key for r in alone.relaxed} == {blocker.rule}
    extra = [r.rule for r in best.relaxed if r.rule.key not in keys]
    for rule in extra:
        mine = [c for c in out.changes if c.rule == rule.key]
        out.blockers.append(Blocker(rule.kind, rule.key, describe(em, rule), mine, False, False))
    variant = out.variant
    if check and variant is not None:
        changed = variant(instance)
        after = plan_of(changed, engine, options)
        out.admitted_after = _admitted(after, target.key, status)
        out.costs = _costs(instance, plan, after, target.key, out.changes)
        if not out.admitted_after:
            before = {d.job: d.status for d in plan.jobs}
            out.taken_by = [
                d.job
                for d in after.jobs
                if d.job != target.key and d.status == ADMITTED and before.get(d.job) == PENDING
            ]
    return out
