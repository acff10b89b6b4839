"""Queue rules: what enqueue lets in, realCapability along the ancestor chain, closed queues,
and leaf-only jobs."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from models.admission import (
    OVERCOMMIT,
    EnqueueLimit,
    enqueue_minimum,
    judged_at_enqueue,
)
from models.instance import Instance
from models.queues import capacity_flat, capacity_hierarchical
from models.resources import Resources, format_amount
from models.workload import Job

from .context import Context, Violation


def _real_capability(instance: Instance) -> Mapping[str, Resources] | None:
    """capacity's realCapability per queue (proportion uses the same formula), or None when no
    quota plugin is configured."""
    conf = instance.scheduler
    if not (conf.has("capacity") or conf.has("proportion")):
        return None
    tree, total = instance.queue_tree, instance.total_allocatable
    if conf.hierarchy():
        attrs = capacity_hierarchical(tree, total)
    else:
        attrs = capacity_flat(tree, total, [j.queue for j in instance.jobs])
    return {name: a.real_capability for name, a in attrs.items()}


def _queue_jobs(ctx: Context, queue: str) -> list[Job]:
    """Jobs whose quota ``queue`` carries: its subtree in hierarchical mode, itself otherwise."""
    if not ctx.instance.scheduler.hierarchy():
        return [j for j in ctx.instance.jobs if j.queue == queue]
    tree = ctx.instance.queue_tree
    return [j for j in ctx.instance.jobs if queue in tree.path(j.queue)]


def check_queue_capability(ctx: Context) -> Iterator[Violation]:
    """With capacity or proportion: a queue that gets new pods stays within its realCapability
    (and so do its ancestors, in hierarchical mode) on every resource a newly placed pod of it
    requests, strictly, a resource missing from realCapability counting as 0, ``pods`` ignored
    (Volcano ``Allocatable``, §5.4). A queue that is not Open accepts no new pods."""
    real = _real_capability(ctx.instance)
    if real is None:
        return
    tree = ctx.instance.queue_tree
    new_by_queue: dict[str, list[str]] = {}
    for p in ctx.plan.placements:
        new_by_queue.setdefault(ctx.members[p.pod].job.queue, []).append(p.pod)
    for queue, pods in new_by_queue.items():
        if not tree.queue(queue).is_open:
            yield Violation(
                "queue-capability",
                (queue, *pods),
                f"queue {queue} is {tree.queue(queue).state}: it accepts no new pods "
                f"({', '.join(pods)})",
            )
    judged = set(new_by_queue)
    if ctx.instance.scheduler.hierarchy():
        judged |= {a for q in new_by_queue for a in tree.ancestors(q)}
    for queue in (q for q in tree.names if q in judged):
        jobs = _queue_jobs(ctx, queue)
        keys = {j.key for j in jobs}
        new = [p.pod for p in ctx.plan.placements if ctx.members[p.pod].job.key in keys]
        request = sum((ctx.resreq(pod) for pod in new), Resources())
        allocated = sum((ctx.resreq(k) for j in jobs for k in ctx.bound_of_job(j)), Resources())
        for resource in sorted(allocated.exceeding(real[queue], request)):
            yield Violation(
                "queue-capability",
                (queue,),
                f"queue {queue}: {resource} {format_amount(resource, allocated[resource])} > "
                f"realCapability {format_amount(resource, real[queue].get(resource, 0))}",
            )


def check_queue_enqueue(ctx: Context) -> Iterator[Violation]:
    """The Pending jobs with ``minResources`` the plan starts (places or pipelines pods of)
    pass Volcano's enqueue together: for each comparison the deciding plugins make, on each
    resource one of them asks for in its minimum, what is held back before the cycle plus
    their minimums stays within the limit, a resource the limit lacks counting as 0
    (``models.admission``, §1.3, §5.4, §5.5). Jobs already Inqueue or Running skip enqueue."""
    limits = ctx.instance.enqueue_limits
    if not limits:
        return
    started = {ctx.members[p.pod].job.key for p in (*ctx.plan.placements, *ctx.plan.pipelined)}
    judged = [j for j in ctx.instance.jobs if j.key in started and judged_at_enqueue(j)]
    for limit in limits:
        mine = [j for j in judged if j.key in limit.jobs]
        if not mine:
            continue
        minimums = [enqueue_minimum(j) for j in mine]
        need = sum(minimums, limit.held)
        asked = sorted(set().union(*(m.dims(ignore_pods=True) for m in minimums)))
        for resource in asked:
            if need.get(resource) > limit.limit.get(resource, 0):
                yield _enqueue_violation(limit, resource, need, [j.key for j in mine])


def _enqueue_violation(
    limit: EnqueueLimit, resource: str, need: Resources, jobs: list[str]
) -> Violation:
    def amount(value: int) -> str:
        return format_amount(resource, value)

    bound = amount(limit.limit.get(resource, 0))
    held = amount(limit.held.get(resource))
    if limit.queue is None:
        offered = "" if not limit.missing(resource) else f", and no node offers {resource}"
        return Violation(
            "queue-enqueue",
            tuple(jobs),
            f"cluster: {resource} {amount(need[resource])} > {bound} that {OVERCOMMIT} lets "
            f"into Inqueue (allocatable × factor − used{offered}): minResources of "
            f"{', '.join(jobs)} + Inqueue minResources {held}",
        )
    if limit.missing(resource):
        bound += f" (it has no {resource})"
    return Violation(
        "queue-enqueue",
        (limit.queue, *jobs),
        f"queue {limit.queue}: {resource} {amount(need[resource])} > realCapability {bound} at "
        f"enqueue ({', '.join(limit.gates)}): minResources of {', '.join(jobs)} + allocated "
        f"+ inqueue − elastic {held}",
    )


def check_queue_leaf(ctx: Context) -> Iterator[Violation]:
    """In hierarchical capacity only leaf queues' jobs get pods (§5.3, §5.4)."""
    if not ctx.instance.scheduler.hierarchy():
        return
    tree = ctx.instance.queue_tree
    for job in ctx.placed_jobs:
        if not tree.is_leaf(job.queue):
            yield Violation(
                "queue-leaf",
                (job.key, job.queue),
                f"job {job.key} gets pods but its queue {job.queue} is not a leaf (children: "
                f"{', '.join(tree.children(job.queue))})",
            )
