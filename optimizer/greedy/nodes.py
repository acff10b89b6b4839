"""Which nodes a task may use, and which one it gets (spec §2.2–§2.6).

The feasible-node scan, the idle-fit / future-fit split and the random choice among equally
scored nodes are where Volcano's placement decisions are actually made, so they live in one
place that both allocate and backfill use.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from .api import NodeInfo, TaskInfo
from .devices import PLUGIN as DEVICE_PLUGIN
from .devices import PODGROUP_POLICY, SPREAD, DeviceFit, fit
from .fit_cache import Verdict, fit_table, lookup, store
from .session import UNRESOLVABLE, UNSCHEDULABLE, FitFailure, Session

MIN_FEASIBLE_NODES = 100
MIN_PERCENTAGE = 5


def nodes_to_find(total: int) -> int:
    """``numNodesToFind`` (§2.3) with Volcano's default arguments."""
    if total <= MIN_FEASIBLE_NODES:
        return total
    percentage = max(MIN_PERCENTAGE, 50 - total // 125)
    return max(MIN_FEASIBLE_NODES, total * percentage // 100)


DEVICE_SHORTAGE = "node(s) without the free GPU devices requested"


@dataclass
class FitReport:
    """Why nodes failed, aggregated for a pending reason (like Volcano's FitErrors)."""

    failures: dict[str, FitFailure] = field(default_factory=dict)

    def summary(self, total: int) -> str:
        """``0/N nodes are available: <count> <reason>, …``, most frequent first.

        Device-fit messages name their node and its free devices, so they are counted under
        one heading, with the first one as an example.
        """
        counts: dict[str, int] = {}
        example = ""
        for failure in self.failures.values():
            reason = failure.reason
            if failure.plugin == DEVICE_PLUGIN:
                example = example or reason
                reason = DEVICE_SHORTAGE
            counts[reason] = counts.get(reason, 0) + 1
        parts = [
            f"{n} {reason}" + (f" (e.g. {example})" if reason == DEVICE_SHORTAGE else "")
            for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        return (
            f"0/{total} nodes are available: " + ", ".join(parts) if parts else f"0/{total} nodes"
        )


def resource_fit(ssn: Session, task: TaskInfo, node: NodeInfo) -> FitFailure | None:
    """Step 1 of the allocate predicate: ``InitResreq ≤ FutureIdle`` on every dimension
    (FutureIdle = Allocatable − Used + Releasing − Pipelined, summed here without building it)."""
    total, used, releasing, pipelined = node.allocatable, node.used, node.releasing, node.pipelined
    for i, need in task.init_needs:
        if need > total[i] - used[i] + releasing[i] - pipelined[i]:
            return FitFailure(UNSCHEDULABLE, f"Insufficient {ssn.dims.names[i]}", "allocate")
    return None


def fits_idle(task: TaskInfo, node: NodeInfo) -> bool:
    """``InitResreq ≤ Idle``: the task can be allocated now, not only pipelined (§2.4, §2.6)."""
    total, used = node.allocatable, node.used
    return all(need <= total[i] - used[i] for i, need in task.init_needs)


def device_fit(ssn: Session, task: TaskInfo, node: NodeInfo) -> DeviceFit | FitFailure | None:
    """GPU device choice for a GPU task; None for tasks without GPU requests.

    Pods with the same device request ask the same of a node, and the answer only changes when
    the node's device bookings do, so it is cached per (request signature, node) and node
    version.
    """
    if not task.gpu_requests:
        return None
    if not node.gpus:
        return FitFailure(UNSCHEDULABLE, f"{node.name}: no GPU devices", DEVICE_PLUGIN)
    if task.device_key < 0:
        signatures = ssn.device_signatures
        task.device_key = signatures.setdefault(device_signature(task), len(signatures))
    key = (task.device_key, node.index)
    cached = ssn.device_fits.get(key)
    if cached is not None and cached[0] == node.gpu_version:
        return cached[1]
    result = fit(task, node, ssn.device_policy)
    ssn.device_fits[key] = (node.gpu_version, result)
    return result


def device_signature(task: TaskInfo) -> Hashable:
    """Everything :func:`devices.fit` reads of a task: its requests, its device filter and
    annotations, and its job when the PodGroup-spread policy makes other pods of the job
    matter."""
    annotations = task.task.annotations
    spread = annotations.get(PODGROUP_POLICY) == SPREAD
    return (
        task.gpu_requests,
        task.gpu_filter,
        frozenset(annotations.items()),
        task.job if spread else "",
    )


def device_key(task: TaskInfo) -> Hashable:
    """What the device fit reads of a task (its part of the fit shape, see :mod:`fit_cache`)."""
    return device_signature(task) if task.gpu_requests else None


def _check(ssn: Session, task: TaskInfo, node: NodeInfo) -> FitFailure | None:
    failure = resource_fit(ssn, task, node)
    if failure is not None:
        return failure
    failure = ssn.predicate(task, node)
    if failure is not None:
        return failure
    devices = device_fit(ssn, task, node)
    return devices if isinstance(devices, FitFailure) else None


def verdict(ssn: Session, task: TaskInfo, node: NodeInfo) -> Verdict:
    """The allocate action's predicate on ``node`` — resource fit, every PredicateFn, then
    device fit — and whether the task fits the node's idle resources; reused from the fit
    cache while the node is unchanged."""
    table = fit_table(ssn, task, device_key)
    if table is not None:
        found = lookup(table, node)
        if found is not None:
            return found
    failure = _check(ssn, task, node)
    result = Verdict(failure, failure is None and fits_idle(task, node))
    return store(table, node, result) if table is not None else result


def check_node(ssn: Session, task: TaskInfo, node: NodeInfo) -> FitFailure | None:
    """The allocate action's predicate: resource fit, every PredicateFn, then device fit."""
    return verdict(ssn, task, node).failure


def predicate_nodes(
    ssn: Session,
    task: TaskInfo,
    nodes: Sequence[NodeInfo],
    report: FitReport,
    role_cache: dict[str, FitFailure] | None = None,
) -> list[NodeInfo]:
    """``PredicateNodes``: scan from the global rotating offset, stop after K feasible nodes.

    The offset is taken modulo the size of the node set being scanned and advanced by the nodes
    checked, whatever that set is (all nodes, one HyperNode's, a nominated node), as Volcano's
    ``lastProcessedNodeIndex`` is. Volcano scans with 16 parallel workers, so which K nodes it
    finds in a large cluster depends on timing; vcopt scans sequentially from the same offset (a
    deterministic stand-in, see docs/FIDELITY.md). ``role_cache`` holds nodes that already
    failed for a task of the same job and role within this placement call (the predicate
    helper's error cache).
    """
    total = len(nodes)
    if total == 0:
        return []
    want = nodes_to_find(total)
    start = ssn.last_processed_node % total
    feasible: list[NodeInfo] = []
    processed = 0
    table = fit_table(ssn, task, device_key)
    for node in (*nodes[start:], *nodes[:start]):
        processed += 1
        cached = role_cache.get(node.name) if role_cache is not None else None
        if cached is not None:
            failure: FitFailure | None = cached
        elif table is not None and table.versions[node.index] == node.version:
            failure = table.verdicts[node.index].failure  # type: ignore[union-attr]
        else:
            failure = verdict(ssn, task, node).failure
        if failure is None:
            feasible.append(node)
            if len(feasible) >= want:
                break
        else:
            report.failures[node.name] = failure
            if role_cache is not None and task.role:
                role_cache[node.name] = failure
    ssn.last_processed_node = (start + processed) % total
    return feasible


def best_node(ssn: Session, task: TaskInfo, feasible: Sequence[NodeInfo]) -> NodeInfo:
    """``prioritizeNodes``: idle-fit nodes before future-fit ones; within the first non-empty
    group a single node is taken unscored, otherwise the top score wins and exact ties are
    broken uniformly at random (``SelectBestNodeAndScore``)."""
    # Volcano quirk (§9.16): an idle-fit node beats any future-fit node, whatever the scores.
    idle_fit = [n for n in feasible if verdict(ssn, task, n).idle_fit]
    group = idle_fit or list(feasible)
    if len(group) == 1:
        return group[0]
    batch = ssn.batch_node_order(task, group)
    scores = [ssn.node_order(task, n) + batch.get(n.name, 0.0) for n in group]
    top = max(scores)
    best = [n for n, s in zip(group, scores, strict=True) if s == top]
    # Volcano quirk (§9.14): exact score ties are drawn at random (seeded here).
    return best[0] if len(best) == 1 else ssn.rng.choice(best)


def unresolvable(report: FitReport) -> set[str]:
    """Nodes that failed with UnschedulableAndUnresolvable (preempt skips them)."""
    return {name for name, f in report.failures.items() if f.code == UNRESOLVABLE}
