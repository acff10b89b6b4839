"""The plan a solution stands for: placements from the expansion, evictions with the action
that would make them, and a decision with its reason for every job."""

from __future__ import annotations

from models.instance import Instance
from models.tdm import SHUFFLE_REASON

from ...plan import ADMITTED, PENDING, RUNNING, Eviction, JobDecision, Plan
from ..compile.data import Compiled
from ..model.evictions import can_preempt, can_reclaim
from ..model.variables import Values, Variables
from .expand import Expansion
from .replay_order import order_placements

NO_CANDIDATE = "no node passes the static predicates (selector, taints, TDM, GPU filter)"
NO_PODS = "no pods in the input (a PodGroup whose pods do not exist yet): nothing to place"
NOT_ADMITTED = (
    "not admitted: no feasible placement, or admitting it lowers a higher objective stage"
)
NOT_PACKED = "not admitted: its pods did not pack into the nodes the model gave them"


def eviction_reason(v: Variables, values: Values, i: int) -> str:
    """TDM's for shuffle's candidates (the only action that may take them); else preempt when
    a higher-priority job of the victim's queue gets in, else reclaim when the queue can be
    reclaimed from, else preempt (Volcano's preempt also evicts before the preemptor can
    bind)."""
    data = v.data
    if i in data.tdm_zone:
        return SHUFFLE_REASON
    victim = data.running[i].job
    preemptor_in = any(
        values[v.admit[u.index].index]
        for u in data.units
        if u.job.queue == victim.queue and u.index in v.admit and u.job.priority > victim.priority
    )
    if can_preempt(data, i) and (preemptor_in or not can_reclaim(data, victim.queue)):
        return "preempt"
    return "reclaim"


def plan_from(
    v: Variables, values: Values, expansion: Expansion, instance: Instance, seed: int
) -> Plan:
    data = v.data
    evictions = tuple(
        Eviction(
            data.running[i].pod.key,
            data.nodes[data.running[i].node].name,
            eviction_reason(v, values, i),
        )
        for i in expansion.evicted
    )
    plan = Plan(
        instance=instance.name,
        engine="cpsat",
        seed=seed,
        placements=tuple(order_placements(data, expansion.placements, expansion.evicted)),
        evictions=evictions,
    )
    return plan.replace(jobs=decisions(data, plan, expansion))


def decisions(data: Compiled, plan: Plan, expansion: Expansion) -> tuple[JobDecision, ...]:
    instance = data.instance
    topology = instance.topology
    nodes_of: dict[str, list[str]] = {}
    for key, b in plan.bound_pods(instance).items():
        nodes_of.setdefault(instance.pod_by_key[key].job, []).append(b.node)
    placed_jobs = {instance.pod_by_key[p.pod].job for p in plan.placements}
    out = []
    for job in data.jobs:
        nodes = nodes_of.get(job.key, [])
        tier = topology.lca_tier(nodes) if len(nodes) > 1 else None
        hypernode = topology.lowest_common(nodes) if len(nodes) > 1 else None
        if job.key in placed_jobs:
            out.append(JobDecision(job.key, ADMITTED, "", hypernode, tier))
        elif nodes:
            out.append(JobDecision(job.key, RUNNING, "", hypernode, tier))
        else:
            out.append(JobDecision(job.key, PENDING, _pending_reason(data, job.key, expansion)))
    return tuple(out)


def _pending_reason(data: Compiled, job: str, expansion: Expansion) -> str:
    if not data.instance.job_by_key[job].tasks:
        return NO_PODS
    unit = data.unit_of[job]
    if unit in expansion.failed_units or job in expansion.failed_jobs:
        return NOT_PACKED
    groups = data.unit_groups(unit)
    if groups and all(not g.classes for g in groups):
        return NO_CANDIDATE
    return NOT_ADMITTED
