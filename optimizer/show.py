"""``vcopt show``: an instance as a platform engineer reads a cluster.

HyperNodes print the way ``kubectl get hypernodes`` does (plain columns, no boxes) so the
output can be compared with a live cluster line by line; the queue tree shows the values the
capacity plugin derives (deserved, capability, realCapability), which are what decides
admission and which users rarely see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from models.instance import Instance
from models.queues import ROOT, QueueAttrs, capacity_flat, capacity_hierarchical
from models.resources import Resources
from models.tdm import node_zone


def columns(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """kubectl-style table: left-aligned columns separated by three spaces."""
    table = [list(header), *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    return "\n".join(lines) + "\n"


def _res(resources: Resources | None) -> str:
    if resources is None:
        return "-"
    return resources.format() if len(resources) else "-"


def queue_attrs(instance: Instance) -> Mapping[str, QueueAttrs]:
    """The capacity plugin's derived values for the configured mode."""
    tree = instance.queue_tree
    total = instance.total_allocatable
    if instance.scheduler.hierarchy():
        return capacity_hierarchical(tree, total)
    return capacity_flat(tree, total, [j.queue for j in instance.jobs])


def hypernode_table(instance: Instance) -> str:
    return columns(["NAME", "TIER", "TIERNAME", "NODECOUNT"], instance.topology.table())


def queue_table(instance: Instance) -> str:
    tree = instance.queue_tree
    attrs = queue_attrs(instance)
    jobs: dict[str, int] = {}
    for job in instance.jobs:
        jobs[job.queue] = jobs.get(job.queue, 0) + 1
    rows = []

    def visit(name: str, depth: int) -> None:
        a = attrs.get(name)
        queue = tree.queue(name)
        rows.append(
            [
                "  " * depth + name,
                queue.weight,
                _res(a.deserved if a else queue.deserved),
                _res(a.guarantee if a else queue.guarantee),
                _res(a.capability if a else queue.capability),
                _res(a.real_capability if a else None),
                jobs.get(name, 0),
            ]
        )
        for child in tree.children(name):
            visit(child, depth + 1)

    visit(ROOT, 0)
    header = ["QUEUE", "WEIGHT", "DESERVED", "GUARANTEE", "CAPABILITY", "REALCAPABILITY", "JOBS"]
    return columns(header, rows)


def node_table(instance: Instance) -> str:
    topology = instance.topology
    rows = []
    for node in instance.nodes:
        gpu_types = sorted({d.type for d in node.gpus})
        gpus = f"{len(node.gpus)}x {'/'.join(gpu_types)}" if node.gpus else "-"
        used = sum(1 for p in instance.pods if p.node == node.name)
        rows.append(
            [
                node.name,
                _res(
                    Resources({k: v for k, v in node.allocatable.items() if k in ("cpu", "memory")})
                ),
                gpus,
                f"{used}/{node.pod_capacity}",
                topology.leaf_of(node.name) or "-",
                node_zone(node.labels) or "-",
                "SchedulingDisabled" if node.unschedulable else "Ready",
            ]
        )
    return columns(["NODE", "ALLOCATABLE", "GPUS", "PODS", "HYPERNODE", "ZONE", "STATUS"], rows)


def job_table(instance: Instance) -> str:
    rows = []
    for job in instance.jobs:
        topo = job.network_topology
        topology = "-"
        if topo is not None:
            limit = topo.highest_tier if topo.highest_tier is not None else topo.highest_tier_name
            topology = f"{topo.mode}≤{limit}"
        running = sum(1 for p in job.pods if p.running)
        rows.append(
            [
                job.key,
                job.queue,
                job.priority,
                f"{running}/{job.replicas}",
                job.min_available,
                topology,
                job.phase,
            ]
        )
    return columns(
        ["JOB", "QUEUE", "PRIORITY", "RUNNING", "MINAVAILABLE", "TOPOLOGY", "PHASE"], rows
    )


def render(instance: Instance) -> str:
    """Every section, separated by blank lines."""
    sections = [
        f"Instance {instance.name} at {instance.now.isoformat()} ({instance.timezone})\n",
        hypernode_table(instance) if instance.hypernodes else "No HyperNodes.\n",
        queue_table(instance),
        node_table(instance),
        job_table(instance) if instance.jobs else "No jobs.\n",
    ]
    return "\n".join(sections)
