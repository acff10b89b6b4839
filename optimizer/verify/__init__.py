"""The verifier: does a plan keep every rule Volcano, HAMi and Kubernetes would enforce?

It is the oracle every engine is tested against, so it is written from the specs alone and
shares no decision code with the engines: it reads only ``models`` and ``optimizer.plan``.
Each rule of DESIGN §6 is one small ``check_<rule>`` function, grouped by family in the
modules of this package, that judges the state after the plan (``context.Context``).

The plan is judged, not the cluster it starts from. Running pods are facts: capacity is only
judged where the plan adds something (a node or queue that gets new pods, a GPU that gets a new
assignment, a job that gets new pods), so an over-commitment that was there before and that the
plan does not touch is not reported; the filters (selectors, taints, GPU masks, TDM) apply to
new placements, and ``tdm-window`` also to what ``shuffle`` must evict at a window's close.

A plan naming a pod, node or GPU the instance lacks is bad input, not a violation:
:func:`verify` raises :class:`~models.errors.InputError` for it, like ``read_plan`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from models.instance import Instance

from ..plan import Plan
from .affinity import check_pod_affinity, check_pod_anti_affinity, check_topology_spread
from .context import Context, Violation, check_references
from .evictions import check_eviction_allowed, check_running_kept
from .gpu import check_gpu_capacity, check_gpu_distinct, check_gpu_exclusive, check_gpu_filter
from .jobs import check_gang, check_topology_hard
from .nodes import check_node_capacity, check_pod_count, check_selector, check_taint
from .queues import check_queue_capability, check_queue_enqueue, check_queue_leaf
from .tdm import check_tdm_revocable_only, check_tdm_window

__all__ = ["RULES", "Violation", "format_violations", "verify"]

RULES = (
    "node-capacity",
    "pod-count",
    "gpu-capacity",
    "gpu-distinct",
    "gpu-exclusive",
    "gpu-filter",
    "selector",
    "taint",
    "gang",
    "topology-hard",
    "queue-capability",
    "queue-leaf",
    "queue-enqueue",
    "tdm-window",
    "tdm-revocable-only",
    "running-kept",
    "eviction-allowed",
    "pod-affinity",
    "pod-anti-affinity",
    "topology-spread",
)

_CHECKS: tuple[Callable[[Context], Iterator[Violation]], ...] = (
    check_node_capacity,
    check_pod_count,
    check_gpu_capacity,
    check_gpu_distinct,
    check_gpu_exclusive,
    check_gpu_filter,
    check_selector,
    check_taint,
    check_gang,
    check_topology_hard,
    check_queue_capability,
    check_queue_leaf,
    check_queue_enqueue,
    check_tdm_window,
    check_tdm_revocable_only,
    check_running_kept,
    check_eviction_allowed,
    check_pod_affinity,
    check_pod_anti_affinity,
    check_topology_spread,
)
"""One function per rule, in :data:`RULES` order."""


def verify(instance: Instance, plan: Plan) -> list[Violation]:
    """Every violation of ``plan`` against ``instance``, rule by rule in :data:`RULES` order.

    Raises :class:`InputError` when the plan names a pod, node or GPU the instance does not have.
    """
    check_references(instance, plan)
    ctx = Context(instance, plan)
    return [v for check in _CHECKS for v in check(ctx)]


def format_violations(violations: Iterable[Violation]) -> str:
    """One line per violation, each starting with its rule name."""
    return "".join(f"{v}\n" for v in violations)
