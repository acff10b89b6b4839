"""The user's caps on disruption: how many running pods a plan may evict, in all and per queue.

Volcano has no such cap, so the greedy engine (which follows Volcano) ignores them and its
breaches are reported; the CP-SAT engine honours them as constraints. What a breach is lives
here once, for both.
"""

from __future__ import annotations

from models.errors import InputError, Problem
from models.instance import Instance
from models.tdm import SHUFFLE_REASON

from .options import SolveOptions
from .plan import Plan


def carried_by(instance: Instance, queue: str, job_queue: str) -> bool:
    """Whether ``queue``'s budget counts a pod of a job in ``job_queue``: its own, and (the
    quota of a parent carries its subtree) its descendants'."""
    return job_queue == queue or queue in instance.queue_tree.ancestors(job_queue)


def check_budgets(instance: Instance, options: SolveOptions) -> None:
    """A per-queue budget naming no queue of the instance is bad input."""
    unknown = sorted(
        q for q in options.disruption.queue_eviction_budgets if q not in instance.queue_tree.names
    )
    if unknown:
        raise InputError(
            [
                Problem(f"no queue {q!r} in the instance", field="--queue-eviction-budget")
                for q in unknown
            ]
        )


def breaches(instance: Instance, plan: Plan, options: SolveOptions) -> list[str]:
    """One message per cap ``plan`` evicts more than. TDM's evictions at a window's close
    are not the plan's choice (``shuffle`` makes them whatever else the cycle does), so no cap
    counts them."""
    out = []
    caps = options.disruption
    chosen = [e for e in plan.evictions if e.reason != SHUFFLE_REASON]
    total = len(chosen)
    if caps.max_evictions is not None and total > caps.max_evictions:
        out.append(f"{total} evictions, more than --max-evictions {caps.max_evictions}")
    job_queue = {j.key: j.queue for j in instance.jobs}
    evicted = [job_queue[instance.pod_by_key[e.pod].job] for e in chosen]
    for queue, budget in sorted(caps.queue_eviction_budgets.items()):
        count = sum(1 for q in evicted if carried_by(instance, queue, q))
        if count > budget:
            out.append(f"queue {queue}: {count} evictions, more than its budget {budget}")
    return out
