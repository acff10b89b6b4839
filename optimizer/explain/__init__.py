"""Why a job is pending and what would make it fit (``vcopt explain``); the fewest nodes that
let a queue's pending jobs start (``vcopt capacity``); queue positions and CP-SAT pending
reasons for plans. One module per idea: the dedicated model, the searches over it, the words,
the remedies, the two answers."""

from ..reasons.position import queue_positions
from .capacity import Capacity, capacity
from .explanation import Blocker, Explanation, explain
from .remedies import Change

__all__ = [
    "Blocker",
    "Capacity",
    "Change",
    "Explanation",
    "capacity",
    "explain",
    "queue_positions",
]
