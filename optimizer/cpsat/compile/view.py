"""What one large-neighbourhood round decides, and how its answer joins the rest of the plan.

A :class:`View` opens some nodes and frees some jobs; every other decision of the current plan
is frozen: the frozen jobs' placements hold their room like running pods, and the plan's
evictions stay as they are. The model of a view is the model of the whole snapshot with those
decisions fixed, so a round's answer merged into the plan keeps every rule the plan kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from models.instance import Instance

from ...plan import Placement, Plan


@dataclass(frozen=True)
class View:
    free_jobs: frozenset[str]
    """Jobs the round decides (their pending pods go only to ``open_nodes``)."""
    open_nodes: frozenset[int]
    frozen: Mapping[str, Placement] = field(default_factory=dict)
    """Pod key → placement, for the pods of the other jobs the current plan places."""
    evicted: frozenset[str] = frozenset()
    """Running pods the current plan evicts (they stay evicted)."""


def view_of(
    plan: Plan, free_jobs: Iterable[str], open_nodes: Iterable[int], instance: Instance
) -> View:
    """The view that frees ``free_jobs`` on ``open_nodes`` and freezes the rest of ``plan``."""
    free = frozenset(free_jobs)
    frozen = {p.pod: p for p in plan.placements if instance.pod_by_key[p.pod].job not in free}
    return View(free, frozenset(open_nodes), frozen, frozenset(e.pod for e in plan.evictions))


def merge(plan: Plan, view: View, answer: Plan, instance: Instance) -> Plan:
    """``plan`` with the free jobs' placements replaced by the round's ``answer``."""
    kept = tuple(p for p in plan.placements if instance.pod_by_key[p.pod].job not in view.free_jobs)
    return plan.replace(placements=kept + answer.placements)
