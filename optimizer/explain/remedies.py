"""From a given-up rule and the solution that gave it up to a change a user can make: the
words (with the amount) and the what-if variant that makes it (``optimizer.whatif``), so
that every suggestion can be applied and checked by solving again.

A change has no variant when vcopt cannot write it down as a snapshot edit (a derived
realCapability, a proportion share): the words still say what is short and by how much.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ortools.sat.python import cp_model

from models.admission import (
    FACTOR_ARGUMENT,
    OVERCOMMIT,
    EnqueueLimit,
    cluster_used,
    overcommit_factor,
    overcommit_room,
)
from models.instance import Instance
from models.resources import format_amount
from models.tdm import window_next_opens_at
from models.vocabulary import NOUSE_GPU_TYPE, UNSCHEDULABLE_TAINT, USE_GPU_TYPE
from models.workload import Toleration

from .. import whatif
from ..cpsat.compile.units import MIB, MIB_RESOURCES
from ..reasons import rules as kinds
from ..reasons.model import ExplainModel
from ..reasons.search import Correction, Relaxed

Variant = Callable[[Instance], Instance]
UUID_KEYS = (
    "nvidia.com/use-gpuuuid",
    "nvidia.com/nouse-gpuuuid",
    "volcano.sh/vgpu-use-gpuuuid",
    "volcano.sh/vgpu-nouse-gpuuuid",
)


@dataclass
class Change:
    """One edit of the snapshot that lifts one blocking rule instance."""

    kind: str
    rule: str
    text: str
    apply: Variant | None = None
    job: str = ""
    """For changes to other jobs (evictions, a planned job held back): that job."""
    pods: int = 0
    """For evictions: how many pods."""


def volcano_amount(name: str, amount: int) -> int:
    """A model-unit amount back in Volcano units (memory in bytes)."""
    return amount * MIB if name in MIB_RESOURCES else amount


def quantity(name: str, amount: int) -> str:
    """A Volcano-unit amount as people and ``Resources.parse`` read it."""
    return format_amount(name, amount)


def _queue(em: ExplainModel, relaxed: Relaxed) -> Change:
    facts = relaxed.rule.facts
    queue, name = str(facts["queue"]), str(facts["resource"])
    extra = volcano_amount(name, relaxed.amount)
    spec = em.instance.queue_tree.queue(queue)
    conf = em.instance.scheduler
    checks = {q: (limit, used) for q, limit, used in facts["checks"]}
    limit = checks.get(queue, next(iter(checks.values())))[0]
    current = spec.capability.get(name) if name in spec.capability else None
    key = relaxed.rule.key
    if current is not None and volcano_amount(name, limit) >= current:
        new = current + extra
        text = (
            f"queue {queue}: {name} capability +{quantity(name, extra)} "
            f"({quantity(name, current)} → {quantity(name, new)})"
        )

        def apply(instance: Instance) -> Instance:
            raw = {**instance.queue_tree.queue(queue).capability.to_k8s()}
            raw[name] = quantity(name, new)
            return whatif.with_queue(instance, queue, capability=raw)

        return Change(kinds.QUEUE, key, text, apply)
    field = "deserved" if conf.has("proportion") and not conf.has("capacity") else "realCapability"
    have = quantity(name, volcano_amount(name, limit))
    text = (
        f"queue {queue}: {name} {field} +{quantity(name, extra)} ({have} → "
        f"{quantity(name, volcano_amount(name, limit) + extra)}); it is derived (cluster total, "
        "weights and siblings' guarantees), not set on the queue"
    )
    return Change(kinds.QUEUE, key, text)


def _enqueue(em: ExplainModel, relaxed: Relaxed, solver: cp_model.CpSolver) -> Change:
    """What lets the minimums past enqueue: per resource the solution passes the limit on,
    by how much (Volcano units)."""
    limit: EnqueueLimit = relaxed.rule.facts["limit"]
    entries = relaxed.rule.facts["short"]
    short = [
        (name, need, volcano_amount(name, solver.value(slack)))
        for name, need, slack in entries
        if solver.value(slack) > 0
    ]
    if not short:
        # Lifted with nothing short (the planned jobs it gave up made the room): the change
        # that holds them all, as the limit stands.
        short = [
            (name, need, need - limit.limit.get(name, 0))
            for name, need, _ in entries
            if need > limit.limit.get(name, 0)
        ]
    if limit.queue is None:
        return _overcommit(em, relaxed.rule.key, limit, short)
    return _enqueue_quota(em, relaxed.rule.key, limit, short)


def _enqueue_quota(
    em: ExplainModel, key: str, limit: EnqueueLimit, short: list[tuple[str, int, int]]
) -> Change:
    """A queue's realCapability at enqueue. A resource no node offers is in it only as far as
    the queue's guarantee (realCapability = what is left of the total after every guarantee,
    plus the queue's own, clipped by its capability), so the guarantee grows, with deserved
    (≥ guarantee) and a capability that names it (≥ deserved); a capability that binds grows;
    a derived limit is only described. Hierarchical capacity also compares at every ancestor,
    and root's realCapability is its capability: there only a capability that binds is
    changed."""
    queue = str(limit.queue)
    spec = em.instance.queue_tree.queue(queue)
    offered = em.instance.total_allocatable
    flat = not em.instance.scheduler.hierarchy()
    guarantee: dict[str, int] = {}
    capability: dict[str, int] = {}
    texts: list[str] = []
    derived: list[str] = []
    for name, _, extra in short:
        room = limit.limit.get(name, 0)
        cap = spec.capability.get(name) if name in spec.capability else None
        if flat and offered.get(name) <= 0:
            guarantee[name] = spec.guarantee.get(name) + extra
            if cap is not None and cap < guarantee[name]:
                capability[name] = guarantee[name]
        elif cap is not None and room >= cap:
            capability[name] = cap + extra
            texts.append(
                f"{name} capability +{quantity(name, extra)} ({quantity(name, cap)} → "
                f"{quantity(name, cap + extra)})"
            )
        else:
            derived.append(
                f"{name} realCapability +{quantity(name, extra)} ({quantity(name, room)} → "
                f"{quantity(name, room + extra)})"
            )
    if guarantee:
        amounts = ", ".join(f"{n} {quantity(n, a)}" for n, a in sorted(guarantee.items()))
        fields = "guarantee, deserved and capability" if capability else "guarantee and deserved"
        texts.insert(
            0,
            f"add {amounts} to its {fields} (a realCapability holds a resource no node offers "
            "only as far as the queue's guarantee; its capability alone does not add it)",
        )
    if derived:
        texts.append(
            f"{', '.join(derived)}; it is derived (cluster total, guarantees, capability), not "
            "set on the queue"
        )
    text = f"queue {queue}: {'; '.join(texts)}"
    if derived:
        return Change(kinds.ENQUEUE, key, text)

    def apply(instance: Instance) -> Instance:
        current = instance.queue_tree.queue(queue)
        deserved = {n: max(current.deserved.get(n), a) for n, a in guarantee.items()}
        return whatif.with_queue(
            instance,
            queue,
            guarantee=_merged(current.guarantee.to_k8s(), guarantee),
            deserved=_merged(current.deserved.to_k8s(), deserved),
            capability=_merged(current.capability.to_k8s(), capability),
        )

    return Change(kinds.ENQUEUE, key, text, apply)


def _merged(raw: dict[str, str], changes: dict[str, int]) -> dict[str, str]:
    return {**raw, **{n: quantity(n, a) for n, a in changes.items()}}


def _overcommit(
    em: ExplainModel, key: str, limit: EnqueueLimit, short: list[tuple[str, int, int]]
) -> Change:
    """overcommit's room: a resource no node offers has none at any factor; otherwise the
    smallest factor (in hundredths) whose room holds the minimums."""
    instance = em.instance
    offered = instance.total_allocatable
    absent = [n for n, _, _ in short if offered.get(n) <= 0]
    if absent:
        them = "it" if len(absent) == 1 else "them"
        text = (
            f"no node offers {', '.join(absent)}: no overcommit-factor makes room for {them}; "
            f"only nodes that offer {them}, or minResources without {them}, get the job past "
            "overcommit"
        )
        return Change(kinds.ENQUEUE, key, text)
    option = instance.scheduler.plugin(OVERCOMMIT)
    factor = overcommit_factor(option.arguments if option is not None else {})
    used = cluster_used(instance)
    wanted = factor
    for name, need, _ in short:
        wanted = max(wanted, (need + used.get(name) - 0.1) / offered.get(name))
    new = max(factor, math.floor(wanted * 100 + 1) / 100)
    while any(need > overcommit_room(offered, used, new).get(n, 0) for n, need, _ in short):
        new = round(new + 0.01, 2)
    shown = ", ".join(f"{n} {quantity(n, need)}" for n, need, _ in short)
    text = f"overcommit-factor {factor:g} → {new:g} (the Inqueue minResources come to {shown})"
    return Change(
        kinds.ENQUEUE,
        key,
        text,
        lambda i: whatif.with_scheduler_arguments(i, OVERCOMMIT, **{FACTOR_ARGUMENT: new}),
    )


def _topology(em: ExplainModel, relaxed: Relaxed, solver: cp_model.CpSolver) -> Change:
    job = relaxed.rule.job
    target = next(t for t in em.targets if t.job.key == job)
    chosen = next(h for h, v in target.domain.items() if solver.boolean_value(v))
    tier = em.tier[chosen]
    limit = relaxed.rule.facts["limit"]
    if chosen == em.instance.topology.TOP:
        text = f"job {job}: networkTopology mode hard → soft (no HyperNode can hold it)"
        return Change(
            kinds.TOPOLOGY,
            relaxed.rule.key,
            text,
            lambda i: whatif.with_topology_limit(i, job, None, "soft"),
        )
    spec = target.job.network_topology
    if spec is not None and spec.highest_tier_name:
        name = em.instance.topology.tier_name(chosen) or f"tier {tier}"
        text = f"job {job}: highestTierName {spec.highest_tier_name} → {name} (it fits in {chosen})"
    else:
        text = f"job {job}: highestTierAllowed {limit} → {tier} (it fits in {chosen})"
    return Change(
        kinds.TOPOLOGY, relaxed.rule.key, text, lambda i: whatif.with_topology_limit(i, job, tier)
    )


def _window(em: ExplainModel, relaxed: Relaxed) -> Change:
    zone = str(relaxed.rule.facts["zone"])
    instance = em.instance
    tdm = instance.tdm
    window = tdm.zones.get(zone) if tdm is not None else None
    opens = window_next_opens_at(window, instance.now, instance.tz) if window else None
    if opens is None:
        text = f"zone {zone} has no TDM window: configure one (tdm.revocable-zone.{zone})"
        return Change(kinds.TDM_WINDOW, relaxed.rule.key, text)
    local = opens.astimezone(instance.tz)
    text = f"after {local:%H:%M}, when zone {zone} opens (window {window.text})"  # type: ignore[union-attr]
    return Change(kinds.TDM_WINDOW, relaxed.rule.key, text, lambda i: whatif.at(i, opens))


def _used_nodes(em: ExplainModel, relaxed: Relaxed, solver: cp_model.CpSolver) -> list[str]:
    places = relaxed.rule.facts.get("places", [])
    return sorted({em.places[p].name for p, x in places if solver.value(x) > 0})


def _revocable(em: ExplainModel, relaxed: Relaxed, solver: cp_model.CpSolver) -> Change:
    job, task = relaxed.rule.job, str(relaxed.rule.facts["task"])
    nodes = _used_nodes(em, relaxed, solver)
    text = (
        f'task {task} of {job}: annotate volcano.sh/revocable-zone: "*" so that its pods may '
        f"use revocable nodes ({', '.join(nodes)})"
    )

    def apply(instance: Instance) -> Instance:
        spec = instance.job_by_key[job].task(task)
        annotations = {**spec.annotations, "volcano.sh/revocable-zone": "*"}
        return whatif.with_task(instance, job, task, annotations=annotations)

    return Change(kinds.TDM_REVOCABLE, relaxed.rule.key, text, apply)


def _selector(em: ExplainModel, relaxed: Relaxed, solver: cp_model.CpSolver) -> Change:
    job, task = relaxed.rule.job, str(relaxed.rule.facts["task"])
    spec = em.instance.job_by_key[job].task(task)
    nodes = [n for n in _used_nodes(em, relaxed, solver) if n in em.instance.node_by_name]
    if spec.node_selector and not spec.required_affinity and nodes:
        labels = dict(spec.node_selector)
        shown = ", ".join(f"{k}={v}" for k, v in labels.items())
        text = (
            f"label {len(nodes)} node(s) ({', '.join(nodes)}) with {shown} (task {task} of {job})"
        )
        return Change(
            kinds.SELECTOR,
            relaxed.rule.key,
            text,
            lambda i: whatif.with_node_labels(i, {n: labels for n in nodes}),
        )
    text = f"task {task} of {job}: drop its required node affinity and nodeSelector"
    return Change(
        kinds.SELECTOR,
        relaxed.rule.key,
        text,
        lambda i: whatif.with_task(i, job, task, node_selector={}, required_affinity=()),
    )


def _taint(em: ExplainModel, relaxed: Relaxed, solver: cp_model.CpSolver) -> Change:
    job, task = relaxed.rule.job, str(relaxed.rule.facts["task"])
    key, value, effect = relaxed.rule.facts["taint"]  # type: ignore[misc]
    nodes = _used_nodes(em, relaxed, solver)
    real = [n for n in nodes if n in em.instance.node_by_name]
    if key == UNSCHEDULABLE_TAINT and real:

        def uncordon(instance: Instance) -> Instance:
            for node in real:
                instance = whatif.with_node(instance, node, unschedulable=False)
            return instance

        return Change(kinds.TAINT, relaxed.rule.key, f"uncordon {', '.join(real)}", uncordon)
    shown = f"{key}={value}:{effect}" if value else f"{key}:{effect}"
    text = f"task {task} of {job}: tolerate taint {shown} (on {', '.join(nodes)})"
    toleration = Toleration(key, "Equal", value, effect)

    def apply(instance: Instance) -> Instance:
        spec = instance.job_by_key[job].task(task)
        return whatif.with_task(instance, job, task, tolerations=(*spec.tolerations, toleration))

    return Change(kinds.TAINT, relaxed.rule.key, text, apply)


def _gpu_filter(em: ExplainModel, relaxed: Relaxed, solver: cp_model.CpSolver) -> Change:
    job, task = relaxed.rule.job, str(relaxed.rule.facts["task"])
    used = [
        em.places[p].devices[d].device
        for p, d, y in relaxed.rule.facts.get("devices", [])
        if solver.value(y) > 0
    ]
    types = sorted({d.type for d in used})
    spec = em.instance.job_by_key[job].task(task)
    flt = spec.gpu_filter
    if (
        flt is not None
        and (flt.use_uuids or flt.nouse_uuids)
        and all(
            flt.use_types == () or any(t.upper() in d.type.upper() for t in flt.use_types)
            for d in used
        )
    ):
        ids = sorted(d.id for d in used)
        keys = [k for k in UUID_KEYS if k in spec.annotations]
        text = f"task {task} of {job}: allow GPU {', '.join(ids)} (drop its {', '.join(keys)})"

        def allow(instance: Instance) -> Instance:
            current = instance.job_by_key[job].task(task).annotations
            kept = {k: v for k, v in current.items() if k not in UUID_KEYS}
            return whatif.with_task(instance, job, task, annotations=kept)

        return Change(kinds.GPU_FILTER, relaxed.rule.key, text, allow)
    asked = ", ".join(
        f"{k}: {spec.annotations[k]}"
        for k in (USE_GPU_TYPE, NOUSE_GPU_TYPE, *UUID_KEYS)
        if k in spec.annotations
    )
    text = (
        f"task {task} of {job}: allow GPU type {', '.join(types)} "
        f"(its {asked or 'GPU filter'} excludes it)"
    )

    def apply(instance: Instance) -> Instance:
        current = instance.job_by_key[job].task(task).annotations
        annotations = {k: v for k, v in current.items() if k not in (NOUSE_GPU_TYPE, *UUID_KEYS)}
        if USE_GPU_TYPE in annotations:
            annotations[USE_GPU_TYPE] = ",".join(types)
        return whatif.with_task(instance, job, task, annotations=annotations)

    return Change(kinds.GPU_FILTER, relaxed.rule.key, text, apply)


def _evict(relaxed: Relaxed, solver: cp_model.CpSolver) -> Change:
    job = relaxed.rule.job
    pods = [p for p, flag in relaxed.rule.facts["pods"] if solver.value(flag)]
    text = f"if {len(pods)} pod(s) of preemptable job {job} are evicted ({', '.join(pods)})"
    return Change(
        kinds.EVICT, relaxed.rule.key, text, lambda i: whatif.with_evicted(i, pods), job, len(pods)
    )


def _placed(relaxed: Relaxed) -> Change:
    job = relaxed.rule.job
    text = f"if job {job}, which the plan starts, stays pending"
    return Change(
        kinds.PLACED, relaxed.rule.key, text, lambda i: whatif.with_jobs(i, removed=[job]), job
    )


def _nodes(em: ExplainModel, solver: cp_model.CpSolver) -> list[Change]:
    counts: dict[tuple[str, str | None], int] = {}
    for place in em.new_places:
        if place.opened is not None and solver.boolean_value(place.opened):
            key = (place.node.name, place.leaf)
            counts[key] = counts.get(key, 0) + 1
    out = []
    for (node, leaf), count in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        where = f" in {leaf}" if leaf else ""
        text = f"with {count} more node(s) like {node}{where}"
        out.append(
            Change(
                kinds.NODES,
                "nodes",
                text,
                lambda i, n=node, c=count, h=leaf: whatif.with_nodes_like(i, n, c, h),
            )
        )
    return out


def changes(em: ExplainModel, found: Correction) -> list[Change]:
    """The changes of a correction, one per given-up rule (added nodes: one per leaf)."""
    solver = found.solver
    out: list[Change] = []
    tree = em.instance.queue_tree

    def order(relaxed: Relaxed) -> tuple[int, int]:
        """Queue limits parent first: a child's capability may not pass its parent's."""
        queue = relaxed.rule.facts.get("queue")
        depth = tree.depth(str(queue)) if relaxed.rule.kind == kinds.QUEUE else 0
        return relaxed.rule.rank, depth

    for relaxed in sorted(found.relaxed, key=order):
        kind = relaxed.rule.kind
        if kind == kinds.QUEUE:
            out.append(_queue(em, relaxed))
        elif kind == kinds.ENQUEUE:
            out.append(_enqueue(em, relaxed, solver))
        elif kind == kinds.TOPOLOGY:
            out.append(_topology(em, relaxed, solver))
        elif kind == kinds.TDM_WINDOW:
            out.append(_window(em, relaxed))
        else:
            out.extend(_other(em, relaxed, solver))
    return out


def _other(em: ExplainModel, relaxed: Relaxed, solver: cp_model.CpSolver) -> list[Change]:
    kind = relaxed.rule.kind
    if kind == kinds.TDM_REVOCABLE:
        return [_revocable(em, relaxed, solver)]
    if kind == kinds.SELECTOR:
        return [_selector(em, relaxed, solver)]
    if kind == kinds.TAINT:
        return [_taint(em, relaxed, solver)]
    if kind == kinds.GPU_FILTER:
        return [_gpu_filter(em, relaxed, solver)]
    if kind == kinds.EVICT:
        return [_evict(relaxed, solver)]
    if kind == kinds.PLACED:
        return [_placed(relaxed)]
    return _nodes(em, solver)


def compose(found: list[Change]) -> Variant | None:
    """One variant applying every change in order; None if one of them has no variant."""
    if any(c.apply is None for c in found):
        return None

    def apply(instance: Instance) -> Instance:
        for change in found:
            assert change.apply is not None
            instance = change.apply(instance)
        return instance

    return apply
