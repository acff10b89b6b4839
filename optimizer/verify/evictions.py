"""Running pods and evictions: the plan is consistent with what runs, and every eviction is one
Volcano could make (preemptable victims, conformance, an evicting action or TDM's shuffle,
disruption budgets, reclaimable queues, guarantees)."""

from __future__ import annotations

from collections.abc import Iterator

from models.resources import Resources, format_amount
from models.scheduler_conf import EVICTING_ACTIONS, SchedulerConf
from models.tdm import has_disruption_budget, job_eviction_budget, node_zone, pod_preemptable
from models.vocabulary import (
    PREEMPTABLE,
)

from ..plan import Eviction
from .context import Context, Violation
from .tdm import SHUFFLE_REASON, shuffle_evictions, tdm_evicted, tdm_problem

NO_GUARANTEE_REASONS = frozenset({"preempt", SHUFFLE_REASON})
"""Eviction reasons whose Volcano path never consults the victim queue's guarantee: preempt
takes victims inside the preemptor's own queue (§8.1), TDM's VictimTasks ignores capacity (§6)."""


def check_running_kept(ctx: Context) -> Iterator[Violation]:
    """The plan is consistent with what runs: a running pod is never placed (it would move,
    even when the plan also evicts it), a pod is placed or evicted at most once, an eviction
    names a running pod and the node it runs on, and a pipelined pod is pending and unplaced."""
    placed_once: set[str] = set()
    for p in ctx.plan.placements:
        pod = ctx.members[p.pod].pod
        if p.pod in placed_once:
            yield Violation("running-kept", (p.pod,), f"pod {p.pod} is placed twice")
        placed_once.add(p.pod)
        if pod.running and pod.node == p.node:
            yield Violation(
                "running-kept",
                (p.pod, p.node),
                f"pod {p.pod} already runs on node {p.node}; only pending pods are placed",
            )
        elif pod.running:
            yield Violation(
                "running-kept",
                (p.pod, p.node),
                f"pod {p.pod} runs on node {pod.node}; placing it on node {p.node} would move it",
            )
    evicted_once: set[str] = set()
    for e in ctx.plan.evictions:
        pod = ctx.members[e.pod].pod
        if e.pod in evicted_once:
            yield Violation("running-kept", (e.pod,), f"pod {e.pod} is evicted twice")
        evicted_once.add(e.pod)
        if not pod.running:
            yield Violation(
                "running-kept", (e.pod,), f"pod {e.pod} is evicted but it is not running"
            )
        elif pod.node != e.node:
            yield Violation(
                "running-kept",
                (e.pod, e.node),
                f"pod {e.pod} is evicted from node {e.node} but it runs on node {pod.node}",
            )
    for q in ctx.plan.pipelined:
        pod = ctx.members[q.pod].pod
        if pod.running:
            yield Violation(
                "running-kept", (q.pod,), f"pod {q.pod} is pipelined but it is already running"
            )
        elif q.pod in placed_once:
            yield Violation("running-kept", (q.pod,), f"pod {q.pod} is both placed and pipelined")


def check_eviction_allowed(ctx: Context) -> Iterator[Violation]:
    """Each eviction is one Volcano could make, as far as the victim alone decides (§6, §8):
    the pod is preemptable; a TDM eviction (reason ``tdm``) is one shuffle makes, from a closed
    zone, within the budget shuffle applies per zone and job; any other needs preempt or
    reclaim configured, a victim conformance does not protect, the job's disruption budget,
    a reclaimable queue for a reclaim, and with capacity the queue's guarantee."""
    for e in ctx.valid_evictions:
        yield from _victim_problems(ctx, e)
    yield from _budget_problems(ctx)
    yield from _guarantee_problems(ctx)


def _victim_problems(ctx: Context, e: Eviction) -> Iterator[Violation]:
    member = ctx.members[e.pod]
    task, job = member.task, member.job
    instance = ctx.instance

    def bad(message: str) -> Violation:
        return Violation("eviction-allowed", (e.pod, e.node), f"pod {e.pod}: {message}")

    if not pod_preemptable(task.annotations, task.labels):
        yield bad(f"it is not preemptable ({PREEMPTABLE})")
    if e.reason == SHUFFLE_REASON:
        # shuffle asks VictimTasks alone: conformance, a Preemptable and Reclaimable plugin,
        # has no say.
        problem = tdm_problem(ctx, e.node)
        if problem is not None:
            yield bad(f"not a TDM eviction: {problem}")
        return
    protection = job.conformance_protection
    if instance.scheduler.has("conformance") and protection is not None:
        yield bad(f"conformance protects {protection}")
    if not any(action in EVICTING_ACTIONS for action in instance.scheduler.actions):
        tdm = " (TDM's shuffle evicts from closed zones only, with reason tdm)"
        yield bad(
            "no preempt or reclaim action is configured"
            + (tdm if instance.scheduler.evicts else "")
        )
    if e.reason == "reclaim" and not ctx.instance.queue_tree.queue(job.queue).reclaimable:
        yield bad(f"reclaimed from queue {job.queue}, which is not reclaimable")


def _budget_problems(ctx: Context) -> Iterator[Violation]:
    """TDM's evictions per closed zone and job ≤ what shuffle's rounds take there (each round
    cuts each zone's candidates to ``getMaxPodEvictNum`` on its own, so a job spread over two
    closed zones may lose its budget in each); the other evictions of a job whose PodGroup
    carries a disruption budget ≤ ``getMaxPodEvictNum`` on the snapshot."""
    shuffle_takes = shuffle_evictions(ctx)
    for (zone, key), made in sorted(tdm_evicted(ctx).items()):
        # Without a round here every TDM eviction is already a victim problem.
        if (zone, key) in shuffle_takes and made > shuffle_takes[zone, key]:
            pods = sorted(
                e.pod
                for e in ctx.valid_evictions
                if e.reason == SHUFFLE_REASON
                and ctx.members[e.pod].job.key == key
                and node_zone(ctx.node(e.node).labels) == zone
            )
            yield Violation(
                "eviction-allowed",
                (key, zone, *pods),
                f"job {key}: {made} pods evicted by TDM from revocable zone {zone} > "
                f"{shuffle_takes[zone, key]}, what shuffle takes there "
                "(the disruption budget, once per zone and round)",
            )
    by_job: dict[str, list[Eviction]] = {}
    for e in ctx.valid_evictions:
        if e.reason != SHUFFLE_REASON:
            by_job.setdefault(ctx.members[e.pod].job.key, []).append(e)
    for key, evictions in by_job.items():
        job = ctx.instance.job_by_key[key]
        if not has_disruption_budget(job.annotations):
            continue
        running = sum(1 for p in job.pods if p.running)
        allowed = job_eviction_budget(job.annotations, job.replicas, running, 0)
        if len(evictions) > allowed:
            yield Violation(
                "eviction-allowed",
                (key, *(e.pod for e in evictions)),
                f"job {key}: {len(evictions)} pods evicted > disruption budget {allowed}",
            )


_TIER_RECLAIMERS = ("gang", "conformance")
"""Plugins whose ``Reclaimable`` answer, when non-empty in an earlier tier, is final (§8.2)."""


def _capacity_decides_reclaim(conf: SchedulerConf) -> bool:
    """Volcano walks ``Reclaimable`` tier by tier and a non-empty tier answer is final (spec
    §8.2, §9.4): with gang or conformance reclaiming in a tier before capacity's, capacity's
    guarantee check may never be consulted, so Volcano itself can evict below a guarantee."""
    for tier in conf.tiers:
        names = {option.name: option for option in tier}
        if "capacity" in names:
            return True
        if any(n in names and names[n].enabled("Reclaimable") for n in _TIER_RECLAIMERS):
            return False
    return False


def _guarantee_problems(ctx: Context) -> Iterator[Violation]:
    """With capacity deciding reclaim, a queue that loses pods keeps Σ Resreq of its bound pods
    ≥ its guarantee on every resource the guarantee names (capacity ``Reclaimable``, §5.4
    step 2)."""
    if not _capacity_decides_reclaim(ctx.instance.scheduler):
        return
    tree = ctx.instance.queue_tree
    losing = {
        ctx.members[e.pod].job.queue
        for e in ctx.valid_evictions
        if e.reason not in NO_GUARANTEE_REASONS
    }
    for queue in (q for q in tree.names if q in losing):
        guarantee = tree.queue(queue).guarantee
        jobs = [j for j in ctx.instance.jobs if j.queue == queue]
        allocated = sum((ctx.resreq(k) for j in jobs for k in ctx.bound_of_job(j)), Resources())
        for resource, amount in guarantee.items():
            if allocated.get(resource, 0) < amount:
                yield Violation(
                    "eviction-allowed",
                    (queue,),
                    f"queue {queue}: {resource} "
                    f"{format_amount(resource, allocated.get(resource, 0))} left after "
                    f"evictions < guarantee {format_amount(resource, amount)}",
                )
