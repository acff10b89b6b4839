"""What-if analysis: change one thing, re-solve with both engines, compare.

Every modifier returns a modified copy of an instance and leaves the original untouched, so a
notebook can build many variants from one snapshot. Every variant is validated with the rules
the loader applies (:func:`models.instance.validate_instance`: e.g. a queue's new deserved must
still fit its parent, a job must name an existing leaf queue), so a variant is never an
instance that Volcano would have rejected; a broken rule raises
:class:`~models.errors.InputError` naming the variant's object and field.

:func:`sweep` solves variants in parallel on Dask: a local cluster by default, or an existing
one given its scheduler address, so a large sweep outgrows one machine without code changes.
"""

from __future__ import annotations

import logging
import multiprocessing
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from models.cluster import Node, with_gpu_allocatable
from models.errors import InputError, Problem
from models.gpu import gpu_filter
from models.instance import Instance
from models.resources import Resources
from models.scheduler_conf import PluginOption, SchedulerConf
from models.tdm import TDM_PLUGIN, ZONE_ARG_PREFIX
from models.topology import Member, MemberSelector
from models.workload import Job, NetworkTopology, pod_name

from .metrics import measure
from .options import SolveOptions
from .solve import ENGINES, solve

if TYPE_CHECKING:
    from dask.distributed import Client

Variant = Callable[[Instance], Instance]
WHAT_IF = "what-if"
"""What problems of a variant name as their file."""


def _checked(variant: Instance) -> Instance:
    return variant.validated(WHAT_IF)


def at(instance: Instance, now: datetime | str) -> Instance:
    """The same snapshot read at another time (TDM windows move, nothing else does)."""
    when = datetime.fromisoformat(now.replace("Z", "+00:00")) if isinstance(now, str) else now
    if when.tzinfo is None:
        when = when.replace(tzinfo=instance.tz)
    return _checked(instance.replace(now=when))


def _with_plugin_arguments(
    instance: Instance, plugin: str, changes: Mapping[str, object]
) -> Instance:
    tiers = []
    found = False
    for tier in instance.scheduler.tiers:
        options = []
        for option in tier:
            if option.name == plugin:
                found = True
                option = PluginOption(
                    option.name, dict(option.flags), {**option.arguments, **changes}
                )
            options.append(option)
        tiers.append(tuple(options))
    if not found:
        raise InputError([_problem("scheduler", "tiers", f"plugin {plugin!r} is not configured")])
    conf = SchedulerConf(
        instance.scheduler.actions, tuple(tiers), instance.scheduler.configurations
    )
    return _checked(instance.replace(scheduler=conf))


def with_scheduler_arguments(instance: Instance, plugin: str, **arguments: object) -> Instance:
    """Set arguments of a configured plugin, e.g. ``ancestorReclaimLevel`` of capacity."""
    return _with_plugin_arguments(instance, plugin, arguments)


def with_tdm_window(instance: Instance, zone: str, window: str) -> Instance:
    """Zone ``zone`` revocable during ``window`` (``HH:MM-HH:MM``)."""
    return _with_plugin_arguments(instance, TDM_PLUGIN, {f"{ZONE_ARG_PREFIX}{zone}": window})


def with_queue(
    instance: Instance,
    name: str,
    *,
    deserved: Mapping[str, object] | None = None,
    capability: Mapping[str, object] | None = None,
    guarantee: Mapping[str, object] | None = None,
    weight: int | None = None,
) -> Instance:
    """Queue ``name`` with new quota values (Kubernetes quantities), checked like the webhook."""
    queues = []
    found = False
    for queue in instance.queues:
        if queue.name == name:
            found = True
            changes: dict[str, Any] = {}
            for field_name, raw in (
                ("deserved", deserved),
                ("capability", capability),
                ("guarantee", guarantee),
            ):
                if raw is not None:
                    changes[field_name] = Resources.parse(raw)
            if weight is not None:
                changes["weight"] = weight
            queue = replace(queue, **changes)
        queues.append(queue)
    if not found:
        raise InputError([_problem(f'Queue "{name}"', "name", "no such queue")])
    return _checked(instance.replace(queues=tuple(queues)))


def with_topology_limit(
    instance: Instance, job: str, tier: int | None, mode: str | None = None
) -> Instance:
    """Job ``job`` (``namespace/name``, or ``"all"`` for every job that has a topology spec)
    limited to HyperNodes of tier ≤ ``tier``; ``mode`` switches hard/soft when given. The
    limit replaces a ``highestTierName``. Jobs of the timeline that have not arrived yet
    are limited alike, so that a simulation of the variant runs them under the same rule."""

    def chosen(j: Job) -> bool:
        return job == j.key or (job == "all" and j.network_topology is not None)

    def limited(j: Job) -> Job:
        if not chosen(j):
            return j
        current = j.network_topology or NetworkTopology()
        return replace(j, network_topology=NetworkTopology(mode or current.mode, tier, None))

    if not any(chosen(j) for j in (*instance.jobs, *instance.arrivals)):
        raise InputError(
            [_problem(f'Job "{job}"', "networkTopology", "no such job (or no job has a topology)")]
        )
    jobs = tuple(limited(j) for j in instance.jobs)
    arrivals = tuple(limited(j) for j in instance.arrivals)
    return _checked(instance.replace(jobs=jobs, arrivals=arrivals))


def with_nodes(
    instance: Instance, added: Iterable[Node] = (), removed: Iterable[str] = ()
) -> Instance:
    """Nodes added (``models.cluster.Node``) and removed by name; pods running on a removed
    node are dropped from their jobs, as if the node had failed."""
    gone = set(removed)
    unknown = gone - set(instance.node_by_name)
    if unknown:
        raise InputError(
            [_problem("what-if", "removed", f"no such node(s): {', '.join(sorted(unknown))}")]
        )
    nodes = [n for n in instance.nodes if n.name not in gone]
    nodes.extend(
        replace(node, allocatable=with_gpu_allocatable(node.allocatable, node.gpus))
        for node in added
    )
    jobs = tuple(
        replace(j, running=tuple(r for r in j.running if r.node not in gone)) for j in instance.jobs
    )
    return _checked(instance.replace(nodes=tuple(nodes), jobs=jobs))


def with_jobs(
    instance: Instance, added: Iterable[Job] = (), removed: Iterable[str] = ()
) -> Instance:
    """Jobs added (``models.workload.Job``) and removed by ``namespace/name``."""
    gone = set(removed)
    unknown = gone - set(instance.job_by_key)
    if unknown:
        raise InputError(
            [_problem("what-if", "removed", f"no such job(s): {', '.join(sorted(unknown))}")]
        )
    jobs = [j for j in instance.jobs if j.key not in gone]
    first = len(jobs)
    jobs.extend(replace(job, order=first + i) for i, job in enumerate(added))
    return _checked(instance.replace(jobs=tuple(jobs)))


def with_task(instance: Instance, job: str, task: str, **changes: Any) -> Instance:
    """Task ``task`` of job ``job`` (``namespace/name``) with fields of
    :class:`models.workload.Task` replaced, e.g. ``annotations``, ``tolerations``,
    ``node_selector``; new annotations also re-derive the task's GPU filter."""
    found = instance.job_by_key.get(job)
    if found is None or task not in {t.name for t in found.tasks}:
        raise InputError([_problem(f'Job "{job}"', "tasks", f"no task {task!r} in such a job")])
    tasks = []
    for t in found.tasks:
        if t.name == task:
            extra = dict(changes)
            if "annotations" in extra and t.gpu:
                extra.setdefault("gpu_filter", gpu_filter(extra["annotations"]))
            t = replace(t, **extra)
        tasks.append(t)
    changed = replace(found, tasks=tuple(tasks))
    jobs = tuple(changed if j.key == job else j for j in instance.jobs)
    return _checked(instance.replace(jobs=jobs))


def with_node_labels(instance: Instance, labels: Mapping[str, Mapping[str, str]]) -> Instance:
    """Nodes relabelled: per node name, labels to set (merged into the node's own)."""
    unknown = set(labels) - set(instance.node_by_name)
    if unknown:
        raise InputError([_problem("what-if", "labels", f"no such node(s): {sorted(unknown)}")])
    nodes = tuple(
        replace(n, labels={**n.labels, **labels[n.name]}) if n.name in labels else n
        for n in instance.nodes
    )
    return _checked(instance.replace(nodes=nodes))


def with_node(instance: Instance, name: str, **changes: Any) -> Instance:
    """Node ``name`` with fields of :class:`models.cluster.Node` replaced (e.g.
    ``unschedulable=False`` to uncordon it, ``taints``); its running pods stay."""
    if name not in instance.node_by_name:
        raise InputError([_problem(f'Node "{name}"', "name", "no such node")])
    nodes = tuple(replace(n, **changes) if n.name == name else n for n in instance.nodes)
    return _checked(instance.replace(nodes=nodes))


def with_evicted(instance: Instance, pods: Iterable[str], *, requeue: bool = False) -> Instance:
    """The named running pods (``namespace/name``) evicted. By default they are gone, as when
    a preemptor takes their room in the same cycle: their task has that many fewer replicas
    (the remaining running pods keep their nodes, renumbered in order) and the job's
    minAvailable is capped by what is left. With ``requeue`` they wait again as pending pods
    of their job, free to compete for any room."""
    gone = set(pods)
    unknown = gone - {p.key for p in instance.pods if p.running}
    if unknown:
        raise InputError(
            [_problem("what-if", "evicted", f"no such running pod(s): {sorted(unknown)}")]
        )
    jobs = []
    for j in instance.jobs:
        lost = {
            r for r in j.running if f"{j.namespace}/{pod_name(j.name, r.task, r.index)}" in gone
        }
        if not lost:
            jobs.append(j)
        elif requeue:
            jobs.append(replace(j, running=tuple(r for r in j.running if r not in lost)))
        else:
            jobs.append(_scaled_down(j, lost))
    return _checked(instance.replace(jobs=tuple(jobs)))


def _scaled_down(job: Job, lost: set[Any]) -> Job:
    tasks = []
    running = []
    for task in job.tasks:
        mine = sorted((r for r in job.running if r.task == task.name), key=lambda r: r.index)
        dropped = sum(1 for r in mine if r in lost)
        kept = [r for r in mine if r not in lost]
        running.extend(replace(r, index=i) for i, r in enumerate(kept))
        tasks.append(replace(task, replicas=task.replicas - dropped) if dropped else task)
    replicas = sum(t.replicas for t in tasks)
    return replace(
        job,
        tasks=tuple(t for t in tasks if t.replicas > 0),
        running=tuple(running),
        min_available=min(job.min_available, replicas),
    )


def with_nodes_like(
    instance: Instance, node: str, count: int, hypernode: str | None = None
) -> Instance:
    """``count`` new nodes shaped like ``node`` (labels, taints, allocatable, devices), named
    ``<node>-new-<i>``, in HyperNode ``hypernode`` (default: ``node``'s lowest one). A copy the
    HyperNode's selectors do not already take in (exact or regex names) is added to it as an
    exact member, as an operator adds a new machine to its rack."""
    template = instance.node_by_name.get(node)
    if template is None:
        raise InputError([_problem(f'Node "{node}"', "name", "no such node")])
    if hypernode is not None and hypernode not in instance.topology.names:
        raise InputError([_problem(f'HyperNode "{hypernode}"', "name", "no such HyperNode")])
    taken = set(instance.node_by_name)
    added = []
    i = 0
    while len(added) < count:
        i += 1
        name = f"{node}-new-{i}"
        if name in taken:
            continue
        gpus = tuple(replace(d, id=f"{d.id}-new-{i}") for d in template.gpus)
        added.append(replace(template, name=name, gpus=gpus))
    leaf = hypernode or instance.topology.leaf_of(node)
    grown = with_nodes(instance, added)
    if leaf is None or leaf == instance.topology.TOP:
        return grown
    missing = [n.name for n in added if n.name not in grown.topology.real_nodes(leaf)]
    if not missing:
        return grown
    hypernodes = tuple(
        replace(
            h,
            members=h.members
            + tuple(Member("Node", MemberSelector(exact_name=m)) for m in missing),
        )
        if h.name == leaf
        else h
        for h in grown.hypernodes
    )
    return _checked(grown.replace(hypernodes=hypernodes))


def _problem(obj: str, field: str, message: str) -> Problem:
    return Problem(message, obj, field, WHAT_IF)


# -- sweeps ------------------------------------------------------------------------------------


def solve_variant(
    name: str, instance: Instance, engine: str, options: SolveOptions
) -> dict[str, Any]:
    """One row of a sweep: the variant, the engine and every scalar metric."""
    plan = solve(instance, engine, options)
    row: dict[str, Any] = {"variant": name, "engine": engine}
    row.update(measure(instance, plan, options.objective.typical_mix).scalars())
    solver = plan.solver
    row["status"] = solver.status if solver else ""
    row["wall_seconds"] = solver.wall_seconds if solver else None
    row["gap"] = solver.gap if solver else None
    return row


def _start_method() -> str:
    """How the local cluster starts its workers: forked where the platform forks safely
    (Linux), so that a sweep called from a plain script (no ``if __name__ == "__main__"``
    guard) does not make every worker run the script again; spawned elsewhere."""
    if sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


@contextmanager
def dask_client(
    scheduler_address: str | None = None, option: str = "scheduler_address"
) -> Iterator[Client]:
    """A Dask client of the running scheduler at ``scheduler_address``, or of a local
    cluster of two single-threaded worker processes started for the work and closed after
    it (sweeps and ``vcopt simulate --what-if`` run their variants this way). An address
    no scheduler answers at is an ``InputError`` on ``option``, the name it was given by."""
    import dask
    from dask.distributed import Client, LocalCluster

    cluster = None
    if scheduler_address is None:
        # Worker logs are Dask's, not the user's: an interrupted sweep would otherwise print
        # the workers' closed-connection tracebacks after ``interrupted``.
        with dask.config.set({"distributed.worker.multiprocessing-method": _start_method()}):
            cluster = LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.CRITICAL,
            )
        client = Client(cluster)
    else:
        try:
            client = Client(scheduler_address)
        except OSError as err:
            raise InputError(
                [Problem(f"no Dask scheduler answers at {scheduler_address}: {err}", field=option)]
            ) from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def sweep(
    instance: Instance,
    variants: Mapping[str, Instance | Variant] | Sequence[tuple[str, Instance | Variant]],
    engines: Sequence[str] = ("greedy", "cpsat"),
    time_limit: float = 10.0,
    *,
    workers: int = 1,
    seed: int = 0,
    scheduler_address: str | None = None,
    progress: bool = True,
    options: SolveOptions | None = None,
) -> pd.DataFrame:
    """Solve every variant with every engine; one row per (variant, engine).

    A variant is an instance or a function of the base instance. CP-SAT runs with ``workers``
    threads per solve (or with ``options`` when given, e.g. to switch on the TDM look-ahead);
    Dask runs solves side by side, on a local cluster unless ``scheduler_address`` names an
    existing one.
    """
    from dask.distributed import as_completed

    if isinstance(engines, str) or not all(e in ENGINES for e in engines):
        raise ValueError(f"engines must be a list of {', '.join(ENGINES)}, got {engines!r}")
    items = list(variants.items()) if isinstance(variants, Mapping) else list(variants)
    built = [(name, v(instance) if callable(v) else v) for name, v in items]
    if options is None:
        options = SolveOptions.of(time_limit=time_limit, workers=workers, seed=seed)
    with dask_client(scheduler_address, "--dask") as client:
        futures = [
            client.submit(solve_variant, name, variant, engine, options, pure=False)
            for name, variant in built
            for engine in engines
        ]
        rows = []
        finished = as_completed(futures)
        if progress:
            from rich.progress import track

            finished = track(finished, total=len(futures), description="what-if sweep")
        for future in finished:
            rows.append(future.result())
    order = {
        (name, engine): i
        for i, (name, engine) in enumerate((n, e) for n, _ in built for e in engines)
    }
    rows.sort(key=lambda r: order[r["variant"], r["engine"]])
    return pd.DataFrame(rows)
