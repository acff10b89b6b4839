"""Queue rules: realCapability along the ancestor chain, closed queues, and leaf-only jobs."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

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
