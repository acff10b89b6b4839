"""Whether a task may use a node, and which feasible node it gets (spec §2.2, §2.4–§2.6).

The node check, the idle-fit / future-fit split and the random choice among equally scored
nodes are where Volcano's placement decisions are made (with the scan of :mod:`scan`), so they
live in one place that allocate, backfill and preempt use.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from models.gpu import PLAIN_GPU_SHARE

from .api import NodeInfo, TaskInfo
from .devices import PLUGIN as DEVICE_PLUGIN
from .devices import PODGROUP_POLICY, SPREAD, DeviceFit, DeviceRules, fit
from .fit_cache import Verdict, fit_table, lookup, store
from .session import UNRESOLVABLE, UNSCHEDULABLE, FitFailure, Session

UNSET = object()


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
        if node.node.plain_gpus:
            if all(request.whole for request in task.gpu_requests):
                return DeviceFit((), 0.0)
            return FitFailure(UNRESOLVABLE, f"{node.name}: {PLAIN_GPU_SHARE}", DEVICE_PLUGIN)
        return FitFailure(UNSCHEDULABLE, f"{node.name}: no GPU devices", DEVICE_PLUGIN)
    if task.device_key < 0:
        signatures = ssn.device_signatures
        task.device_key = signatures.setdefault(device_signature(task), len(signatures))
    key = (task.device_key, node.index)
    cached = ssn.device_fits.get(key)
    if cached is not None and cached[0] == node.gpu_version:
        return cached[1]
    rules = ssn.device_rules.get(task.device_key)
    if rules is None:
        rules = ssn.device_rules[task.device_key] = DeviceRules.of(task)
    result = fit(task, node, ssn.device_policy, rules=rules)
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


def best_node(ssn: Session, task: TaskInfo, feasible: Sequence[NodeInfo]) -> NodeInfo:
    """``prioritizeNodes``: idle-fit nodes before future-fit ones; within the first non-empty
    group a single node is taken unscored, otherwise the top score wins and exact ties are
    broken uniformly at random (``SelectBestNodeAndScore``)."""
    # Volcano quirk (§9.16): an idle-fit node beats any future-fit node, whatever the scores.
    table = fit_table(ssn, task, device_key)
    idle_fit = [
        n
        for n in feasible
        if ((table is not None and lookup(table, n)) or verdict(ssn, task, n)).idle_fit
    ]
    group = idle_fit or list(feasible)
    if len(group) == 1:
        return group[0]
    batch = ssn.batch_node_order(task, group)
    orders = node_orders(ssn, task, group)
    scores = [o + batch.get(n.name, 0.0) for n, o in zip(group, orders, strict=True)]
    top = max(scores)
    best = [n for n, s in zip(group, scores, strict=True) if s == top]
    # Volcano quirk (§9.14): exact score ties are drawn at random (seeded here).
    return best[0] if len(best) == 1 else ssn.rng.choice(best)


def node_orders(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> list[float]:
    """Σ NodeOrderFn per node (``Session.node_order``), kept per (task key, node version).

    A plugin registering a ``node_order`` also registers a ``node_order_key`` function giving
    what its score reads of a task, when the score reads nothing else but the node's own state
    (None otherwise, or no key function: the nodes are then scored afresh every time). The
    key of a task is computed once."""
    key = ssn.score_keys.get(task.uid, UNSET)
    if key is UNSET:
        key = ssn.score_keys[task.uid] = ssn.node_order_key(task)
    if key is None:
        return [ssn.node_order(task, n) for n in nodes]
    table = ssn.score_tables.get(key)
    if table is None:
        table = ssn.score_tables[key] = {}
    out = []
    for node in nodes:
        entry = table.get(node.index)
        if entry is None or entry[0] != node.version:
            entry = table[node.index] = (node.version, ssn.node_order(task, node))
        out.append(entry[1])
    return out
