"""The rule instances a job can be blocked by, each switched by one enforcement literal.

Every rule the dedicated model states for the explained jobs is *enforced by* a literal
``keep``: with all literals true the model is the cluster as it is; a literal set false lifts
exactly that rule instance (one queue's limit on one resource, one taint, one TDM zone's
window, one other job's claim on its room …) and, where the rule has a size, lets its
``amount`` grow (how far the limit is passed, how many nodes are added, how many pods are
evicted). Sets of literals that cannot all hold are the blocking rules; the cheapest set of
literals to give up, with their amounts, is the smallest change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

QUEUE = "queue-capability"
ENQUEUE = "queue-enqueue"
TOPOLOGY = "topology-hard"
TDM_WINDOW = "tdm-window"
TDM_REVOCABLE = "tdm-revocable-only"
SELECTOR = "selector"
TAINT = "taint"
GPU_FILTER = "gpu-filter"
NODES = "node-capacity"
EVICT = "running-pods"
PLACED = "planned-pods"

KIND_ORDER = (
    QUEUE,
    ENQUEUE,
    TOPOLOGY,
    TDM_WINDOW,
    TDM_REVOCABLE,
    SELECTOR,
    TAINT,
    GPU_FILTER,
    EVICT,
    PLACED,
    NODES,
)
"""The order in which blockers are named, and in which changes are preferred: configuration
a user controls first, other people's pods next, new hardware last."""

KIND_COST = {kind: 10 * (i + 1) for i, kind in enumerate(k for k in KIND_ORDER if k != ENQUEUE)}
KIND_COST[ENQUEUE] = KIND_COST[QUEUE]
"""What giving up one rule instance of a kind costs in the correction search. A queue's quota
costs the same whether enqueue or allocate checks it: both are one queue setting."""


@dataclass
class Rule:
    """One rule instance. ``amount`` is None for rules that are simply lifted."""

    key: str
    kind: str
    job: str
    keep: cp_model.IntVar
    amount: cp_model.LinearExprT | None = None
    unit_cost: int = 0
    """Cost per unit of ``amount`` (tie-breaks between changes of one rule)."""
    facts: dict[str, Any] = field(default_factory=dict)
    """What remedies and plain-words reasons need: the queue, resource, limit, zone …"""

    @property
    def rank(self) -> int:
        return KIND_ORDER.index(self.kind)
