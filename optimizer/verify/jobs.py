"""Rules of whole jobs: the gang (minAvailable, minTaskMember) and the hard topology limit."""

from __future__ import annotations

from collections.abc import Iterator

from .context import Context, Violation

_UNGUARDED = {"preempt": "Preemptable", "reclaim": "Reclaimable"}
"""Eviction reason → the gang hook that would have protected the victim's gang."""


def check_gang(ctx: Context) -> Iterator[Violation]:
    """A job the plan places pods of has ≥ minAvailable ready pods, and per role ≥ its
    minTaskMember (not checked when minAvailable < Σ minTaskMember, as Volcano does).

    Ready = bound after the plan, plus pending BestEffort pods, which gang counts as ready
    (volcano-scheduler.md §3, §9 item 17), plus pipelined pods: Volcano commits a statement
    once the job is pipelined (``gang.go:jobPipelinedFn``, waiting + ready ≥ minAvailable).
    A victim counts as kept when gang's own eviction hook for its action is off
    (``enablePreemptable`` / ``enableReclaimable: false``), or when a later tier holds another
    plugin of that hook: gang's tier then hands the choice on whenever it leaves no victim
    (§8.2), and that tier may evict what gang kept. Nothing then keeps the victim's gang
    whole, in Volcano either. Without the ``gang`` plugin no plugin registers JobReady,
    whose default is true (``session_plugins.go:JobReady``): Volcano commits a partial gang.
    """
    gang = ctx.instance.scheduler.plugin("gang")
    if gang is None:
        return
    piped = {q.pod for q in ctx.plan.pipelined}
    conf = ctx.instance.scheduler
    open_hooks = {
        hook
        for hook in _UNGUARDED.values()
        if not gang.enabled(hook) or conf.passed_on("gang", hook)
    }
    unguarded = {
        e.pod
        for e in ctx.plan.evictions
        if e.reason in _UNGUARDED and _UNGUARDED[e.reason] in open_hooks
    }
    for job in ctx.placed_jobs:
        ready = [
            ctx.members[p.key].task
            for p in job.pods
            if p.key in ctx.bound
            or p.key in piped
            or p.key in unguarded
            or (not p.running and ctx.members[p.key].task.best_effort)
        ]
        if len(ready) < job.min_available:
            yield Violation(
                "gang",
                (job.key,),
                f"job {job.key}: {len(ready)} pods ready < minAvailable {job.min_available}",
            )
        if job.min_available < sum(job.min_task_member.values()):
            continue
        for role, minimum in job.min_task_member.items():
            count = sum(1 for t in ready if t.role == role)
            if count < minimum:
                yield Violation(
                    "gang",
                    (job.key,),
                    f"job {job.key}: role {role or '(none)'} has {count} pods ready < "
                    f"minTaskMember {minimum}",
                )


def check_topology_hard(ctx: Context) -> Iterator[Violation]:
    """With ``network-topology-aware`` configured, a hard job (with a tier) that gets placements
    has all its bound pods inside one HyperNode of tier ≤ highestTierAllowed. Soft mode, and
    hard mode without the plugin or without a tier, constrain nothing (§4.2, §9 item 6)."""
    topology = ctx.instance.topology
    for job in ctx.placed_jobs:
        limit = ctx.instance.hard_topology_limit(job)
        if limit is None:
            continue
        nodes = sorted({ctx.bound[k].node for k in ctx.bound_of_job(job)})
        tier = topology.lca_tier(nodes)
        if tier > limit:
            common = topology.lowest_common(nodes)
            yield Violation(
                "topology-hard",
                (job.key, *nodes),
                f"job {job.key}: pods span {', '.join(nodes)} (lowest common HyperNode "
                f"{common}, tier {tier}) > highestTierAllowed {limit}",
            )
