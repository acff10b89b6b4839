"""Whether a task may use a node, and which feasible node it gets (spec §2.2, §2.4–§2.6).

The node check, the idle-fit / future-fit split and the random choice among equally scored
nodes are where Volcano's placement decisions are made (with the scan of :mod:`scan`), so they
live in one place that allocate, backfill and preempt use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence

import numpy as np

from models.gpu import PLAIN_GPU_SHARE

from .api import NodeInfo, NodeList, TaskInfo
from .device_arrays import DeviceVerdicts, vectorisable
from .devices import PLUGIN as DEVICE_PLUGIN
from .devices import PODGROUP_POLICY, SPREAD, DeviceFit, DeviceRules, fit
from .fit_cache import PASSES, Verdict, fit_table, insufficient, lookup, store
from .node_arrays import NodeArrays, representable
from .score_arrays import Versioned, positions
from .session import UNRESOLVABLE, UNSCHEDULABLE, FitFailure, Session

UNSET = object()


def resource_fit(ssn: Session, task: TaskInfo, node: NodeInfo) -> FitFailure | None:
    """Step 1 of the allocate predicate: ``InitResreq ≤ FutureIdle`` on every dimension
    (FutureIdle = Allocatable − Used + Releasing − Pipelined, summed here without building it)."""
    total, used, releasing, pipelined = node.allocatable, node.used, node.releasing, node.pipelined
    for i, need in task.init_needs:
        if need > total[i] - used[i] + releasing[i] - pipelined[i]:
            return insufficient(ssn.dims.names[i])
    return None


def fits_idle(task: TaskInfo, node: NodeInfo) -> bool:
    """``InitResreq ≤ Idle``: the task can be allocated now, not only pipelined (§2.4, §2.6)."""
    total, used = node.allocatable, node.used
    return all(need <= total[i] - used[i] for i, need in task.init_needs)


def device_fit(ssn: Session, task: TaskInfo, node: NodeInfo) -> DeviceFit | FitFailure | None:
    """GPU device choice for a GPU task; None for tasks without GPU requests.

    Pods with the same device request ask the same of a node, and the answer only changes when
    the node's device bookings do, so it is cached per (request signature, node) with the
    node's device version, and per (request signature, node, node version): either current
    means the same devices, and the node version also comes back when a dry run on the node
    is undone (the device version never does).
    """
    if not task.gpu_requests:
        return None
    if not node.gpus:
        if node.node.plain_gpus:
            if all(request.whole for request in task.gpu_requests):
                return DeviceFit((), 0.0)
            return FitFailure(UNRESOLVABLE, f"{node.name}: {PLAIN_GPU_SHARE}", DEVICE_PLUGIN)
        return FitFailure(UNSCHEDULABLE, f"{node.name}: no GPU devices", DEVICE_PLUGIN)
    rules = device_rules(ssn, task)
    key = (task.device_key, node.index)
    cached = ssn.device_fits.get(key)
    if cached is not None and cached[0] == node.gpu_version:
        return cached[1]
    by_version = ssn.device_fits_by_version
    found = by_version.get((task.device_key, node.index, node.version))
    if found is not None:
        return found
    result = fit(task, node, ssn.device_policy, rules=rules)
    ssn.device_fits[key] = (node.gpu_version, result)
    by_version[(task.device_key, node.index, node.version)] = result
    return result


def device_rules(ssn: Session, task: TaskInfo) -> DeviceRules:
    """The task's device rules, shared by the tasks of its device request signature (whose
    number becomes the task's ``device_key``). Rules with the same device filters share
    their per-node usable devices (``DeviceRules.usable``), which only the filters decide."""
    if task.device_key < 0:
        signatures = ssn.device_signatures
        task.device_key = signatures.setdefault(device_signature(task), len(signatures))
    rules = ssn.device_rules.get(task.device_key)
    if rules is None:
        rules = DeviceRules.of(task)
        filters = (rules.use_types, rules.nouse_types, rules.use_uuids, rules.nouse_uuids)
        usable = ssn.device_usable.setdefault(filters, rules.usable)
        if usable is not rules.usable:
            rules = dataclasses.replace(rules, usable=usable)
        ssn.device_rules[task.device_key] = rules
    return rules


def device_numbers(
    ssn: Session, task: TaskInfo, arrays: NodeArrays, indices: np.ndarray | None
) -> np.ndarray | None:
    """The device fit's failure number on the nodes at ``indices`` (all when None) at once
    (:mod:`device_arrays`), or None when the task's device fit must be checked node by
    node."""
    verdicts = _device_verdicts(ssn, task)
    if verdicts is None:
        return None
    return verdicts.numbers(arrays.devices, ssn.node_list, ssn.fit_cache, indices)


def _device_verdicts(ssn: Session, task: TaskInfo) -> DeviceVerdicts | None:
    """The task's :class:`device_arrays.DeviceVerdicts` (made at the first call for its device
    request signature), or None when its device fit is not decided by counts or the session
    has no node arrays."""
    rules = device_rules(ssn, task)
    known = ssn.fit_cache.device_arrays
    if task.device_key not in known:
        arrays = ssn.arrays() if vectorisable(task, rules) else None
        known[task.device_key] = (
            DeviceVerdicts.of(task, rules, ssn.node_list, arrays.devices, ssn.fit_cache)
            if arrays is not None
            else None
        )
    return known[task.device_key]


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


def device_failure(ssn: Session, task: TaskInfo, node: NodeInfo) -> FitFailure | None:
    """Why the device fit rejects ``node`` (None: it passes, or the task asks for no GPU):
    from the devices' counts when they decide (:mod:`device_arrays`), else from the fit."""
    if task.gpu_requests:
        verdicts = _device_verdicts(ssn, task)
        if verdicts is not None:
            cache = ssn.fit_cache
            number = verdicts.node_number(node, cache)
            return None if number == PASSES else cache.failures[number]
    devices = device_fit(ssn, task, node)
    return devices if isinstance(devices, FitFailure) else None


def _check(ssn: Session, task: TaskInfo, node: NodeInfo) -> FitFailure | None:
    failure = resource_fit(ssn, task, node)
    if failure is not None:
        return failure
    failure = ssn.predicate(task, node)
    if failure is not None:
        return failure
    return device_failure(ssn, task, node)


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
    broken uniformly at random (``SelectBestNodeAndScore``).

    For a task whose scores are cacheable (:func:`node_orders`) they are read as arrays
    over the group when every BatchNodeOrderFn can give one (``batch_node_order_array``); the
    per-node path otherwise. Both add the same values in the same order."""
    # Volcano quirk (§9.16): an idle-fit node beats any future-fit node, whatever the scores.
    group = idle_fit(ssn, task, feasible) or list(feasible)
    if len(group) == 1:
        return group[0]
    scores = _score_array(ssn, task, group)
    if scores is None:
        batch = ssn.batch_node_order(task, group)
        orders = node_orders(ssn, task, group)
        listed = [o + batch.get(n.name, 0.0) for n, o in zip(group, orders, strict=True)]
        top = max(listed)
        best = [n for n, s in zip(group, listed, strict=True) if s == top]
    else:
        best = [group[k] for k in (scores == scores.max()).nonzero()[0].tolist()]
    # Volcano quirk (§9.14): exact score ties are drawn at random (seeded here).
    return best[0] if len(best) == 1 else ssn.rng.choice(best)


def _score_array(ssn: Session, task: TaskInfo, group: Sequence[NodeInfo]) -> np.ndarray | None:
    """Σ NodeOrderFn + Σ BatchNodeOrderFn of each node of ``group`` as an array, or None when
    the scores must be read node by node."""
    key = _score_key(ssn, task)
    arrays = ssn.arrays() if key is not None else None
    if arrays is None:
        return None
    indices = group.indices if isinstance(group, NodeList) else positions(group)
    batch = ssn.batch_node_order_array(task, group, indices, arrays)
    if batch is None:
        return None
    table = _score_table(ssn, key)
    orders = table.at(arrays, indices, lambda node: ssn.node_order(task, node))
    return orders + batch


def _score_key(ssn: Session, task: TaskInfo) -> Hashable:
    """The task's ``node_order_key`` (computed once per task)."""
    key = ssn.score_keys.get(task.uid, UNSET)
    if key is UNSET:
        key = ssn.score_keys[task.uid] = ssn.node_order_key(task)
    return key


def _score_table(ssn: Session, key: Hashable) -> Versioned:
    table = ssn.score_tables.get(key)
    if table is None:
        table = ssn.score_tables[key] = Versioned(len(ssn.node_list), np.float64)
    return table


def idle_fit(ssn: Session, task: TaskInfo, feasible: Sequence[NodeInfo]) -> list[NodeInfo]:
    """The feasible nodes whose idle resources hold the task (``InitResreq ≤ Idle``), in
    order: read from the node arrays for a cacheable task, else from its node verdicts."""
    table = fit_table(ssn, task, device_key)
    arrays = ssn.arrays() if table is not None and len(feasible) > 1 else None
    if arrays is None or not representable(task.init_needs):
        return [
            n
            for n in feasible
            if ((table is not None and lookup(table, n)) or verdict(ssn, task, n)).idle_fit
        ]
    indices = feasible.indices if isinstance(feasible, NodeList) else positions(feasible)
    rows = arrays.idle[indices]
    fits = np.ones(len(feasible), dtype=bool)
    for i, need in task.init_needs:
        fits &= rows[:, i] >= need
    if fits.all():
        return feasible if isinstance(feasible, NodeList) else NodeList.of(list(feasible), indices)
    kept = fits.nonzero()[0]
    return NodeList.of([feasible[k] for k in kept.tolist()], indices[kept])


def node_orders(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> list[float]:
    """Σ NodeOrderFn per node (``Session.node_order``), kept per (task key, node version).

    A plugin registering a ``node_order`` also registers a ``node_order_key`` function giving
    what its score reads of a task, when the score reads nothing else but the node's own state
    (None otherwise, or no key function: the nodes are then scored afresh every time). The
    key of a task is computed once."""
    key = _score_key(ssn, task)
    arrays = ssn.arrays() if key is not None else None
    if key is None or arrays is None:
        return [ssn.node_order(task, n) for n in nodes]
    table = _score_table(ssn, key)
    orders = table.at(arrays, positions(nodes), lambda node: ssn.node_order(task, node))
    return orders.tolist()
