"""What the CP-SAT model is built from: the instance compiled into dense, solver-ready tables.

Pending pods of one task are identical, so they form one :class:`Group` and the model counts
how many of them land on each *class* of interchangeable nodes (``classes.py``). Identical
single-pod jobs of one queue (thousands of them in a busy cluster) are interchangeable too, so
they share one admission :class:`Unit` whose count says how many of them start; the plan
admits them in the order Volcano would try them. Everything that does not depend on the
decision — which classes a group may use at all, what running pods hold, each queue's limit —
is worked out here once, so the model only contains decisions that can actually be taken.

Amounts are integers in *model units* (``units.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from models.cluster import Node
from models.instance import Instance
from models.queues import QueueAttrs, capacity_flat, capacity_hierarchical, proportion_deserved
from models.resources import Resources
from models.scheduler_conf import EVICTING_ACTIONS
from models.tdm import (
    closed_zones,
    has_disruption_budget,
    job_eviction_budget,
    node_zone,
    pod_preemptable,
    shuffle_rounds,
    shuffle_victims,
)
from models.workload import DeviceShare, Job, Pod, Task

from .candidates import candidate_key, device_pool, find_candidates
from .classes import EvictGroup, NodeClass, build_classes, topology_levels
from .records import Candidates, Group, RunningPod, Unit
from .units import model_units
from .view import View

if TYPE_CHECKING:
    from models.fragmentation import TypicalTask

    from ..model.frag_stage import NodeTerms


@dataclass
class Compiled:
    instance: Instance
    nodes: list[Node]
    groups: list[Group]
    units: list[Unit]
    running: list[RunningPod]
    jobs: list[Job]
    unit_of: dict[str, int]
    """Job key → its admission unit."""
    weights: dict[str, int]
    """Stage-1 priority weight of each job (1 + rank of its priority)."""
    resources: list[str]
    queue_limits: dict[str, dict[str, int]]
    """Per queue (model units, rounded down), the quota the pods of its subtree may not exceed."""
    queue_deserved: dict[str, dict[str, int]]
    queue_guarantee: dict[str, dict[str, int]]
    queue_members: dict[str, list[str]]
    """Queue → jobs whose pods its quota counts (the queue and, hierarchically, its subtree)."""
    leaf_ok: dict[str, bool]
    evictions_on: bool
    """preempt or reclaim is configured (TDM's evictions are :attr:`tdm_evictions`)."""
    topology_on: bool
    eviction_budget: dict[str, int]
    levels: list[int]
    """Topology levels: 0 (one node) and every real HyperNode tier (see ``topology_levels``)."""
    domains: list[list[str]]
    """``domains[l][n]``: the domain of node ``n`` at level ``l`` (level 0: the node)."""
    classes: list[NodeClass]
    node_class: list[int]
    """Per node, its class."""
    evict_groups: list[EvictGroup]
    typical: tuple[TypicalTask, ...] = ()
    """The typical-task mix the fragmentation stage reads (empty: the stage is off)."""
    tdm_zone: dict[int, str] = field(default_factory=dict)
    """Running pod → the closed zone it runs in, for the pods ``shuffle`` picks its victims
    from (Running, preemptable, on a node of a configured zone whose window is closed, with a
    round of ``VictimTasks`` in this cycle)."""
    tdm_evictions: dict[tuple[str, str], int] = field(default_factory=dict)
    """(closed zone, job key) → how many of those pods the cycle's rounds evict."""
    fragmentation_terms: list[NodeTerms] | None = field(default=None, repr=False)
    """Its per-node terms, made on first use (``frag_stage.node_terms``)."""
    groups_on: list[list[int]] = field(init=False)
    """Per class, the groups that may use it."""
    evict_group_of: dict[int, int] = field(init=False)
    """Evictable running pod → its eviction group."""
    device_class: dict[tuple[int, int], int] = field(init=False)
    """(node, device) → the device's class within the node's class."""

    def __post_init__(self) -> None:
        self._node_index = {n.name: i for i, n in enumerate(self.nodes)}
        self.groups_on = [[] for _ in self.classes]
        for g in self.groups:
            for c in g.classes:
                self.groups_on[c].append(g.index)
        self.evict_group_of = {i: eg.index for eg in self.evict_groups for i in eg.pods}
        self.device_class = {
            (n, d): dc.index
            for cls in self.classes
            for dc in cls.devices
            for position, n in enumerate(cls.nodes)
            for d in dc.members[position]
        }

    def node_index(self, name: str) -> int:
        return self._node_index[name]

    def unit_groups(self, unit: int) -> list[Group]:
        return [self.groups[g] for g in self.units[unit].groups]


def pod_value(task: Task, largest_gpu_memory: int, cpu_per_gpu: float) -> int:
    """Worth of admitting one pod, in thousandths of a GPU-equivalent.

    GPU pods are worth their GPU-equivalents (per device max(cores, memory) share, memory
    measured against the cluster's largest card so that the value does not depend on where the
    pod lands); CPU-only pods are worth their CPU measured in the cluster's CPU per GPU; every
    pod is worth at least 1, so admitting anything beats admitting nothing.
    """
    if task.gpu:
        total = 0.0
        for req in task.gpu:
            pct = req.percentage if req.percentage is not None else 0
            mem_share = max(pct / 100, req.memory / largest_gpu_memory)
            total += req.nums * max(req.booked_cores / 100, min(mem_share, 1.0))
        return max(1, round(1000 * total))
    return max(1, round(1000 * task.resources.get("cpu") / cpu_per_gpu))


def _mapping_key(mapping: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in mapping.items()))


def _task_key(task: Task) -> tuple[object, ...]:
    return (
        task.name,
        _mapping_key(task.resources),
        _mapping_key(task.init_resources),
        task.gpu,
        repr(task.gpu_filter),
        task.priority,
        task.preemption_policy,
        task.role,
        task.min_available,
        _mapping_key(task.labels),
        _mapping_key(task.annotations),
        _mapping_key(task.node_selector),
        repr(task.required_affinity),
        task.tolerations,
        repr((task.pod_affinity, task.pod_anti_affinity, task.spread)),
        repr(task.preferred_node_affinity),
    )


def interchangeable_key(job: Job) -> tuple[object, ...] | None:
    """What a single-pod pending job is, up to its name: jobs with equal keys can be admitted
    in any combination with the same effect on every rule and stage. None for jobs that are
    decided one by one (gangs, jobs with running pods)."""
    if job.running or len(job.tasks) != 1 or job.tasks[0].replicas != 1 or job.min_available > 1:
        return None
    return (
        job.namespace,
        job.queue,
        job.priority,
        job.priority_class,
        job.min_available,
        _mapping_key(job.min_task_member),
        repr(job.min_resources),
        repr(job.network_topology),
        job.duration,
        job.phase,
        _mapping_key(job.labels),
        _mapping_key(job.annotations),
        _task_key(job.tasks[0]),
    )


def _units(jobs: Sequence[Job], merge: bool) -> list[Unit]:
    units: list[Unit] = []
    by_key: dict[tuple[object, ...], Unit] = {}
    for job in jobs:
        key = interchangeable_key(job) if merge else None
        if key is not None and key in by_key:
            by_key[key].jobs.append(job)
            continue
        unit = Unit(len(units), [job])
        units.append(unit)
        if key is not None:
            by_key[key] = unit
    for unit in units:
        unit.jobs.sort(key=lambda j: (-j.priority, j.order))
    return units


class _Builder:
    """Fills the pod tables of :class:`Compiled` job by job."""

    def __init__(self, instance: Instance, view: View | None) -> None:
        self.instance = instance
        self.view = view
        self.node_index = {n.name: i for i, n in enumerate(instance.nodes)}
        gpu_devices = [d for n in instance.nodes for d in n.gpus]
        self.largest = max((d.memory for d in gpu_devices), default=1) or 1
        total_cpu = instance.total_allocatable.get("cpu")
        self.cpu_per_gpu = total_cpu / len(gpu_devices) if gpu_devices and total_cpu else 1000
        conf = instance.scheduler
        self.evictions_on = any(action in EVICTING_ACTIONS for action in conf.actions)
        tdm = instance.tdm
        # A view decides no eviction: the plan it is cut from made shuffle's already.
        rounds = 0 if view is not None else shuffle_rounds(conf, tdm, instance.now)
        self.tdm_rounds = rounds
        self.closed = (
            frozenset(closed_zones(tdm, instance.now, instance.tz))
            if rounds and tdm is not None
            else frozenset()
        )
        self.tdm_zone: dict[int, str] = {}
        self.groups: list[Group] = []
        self.running: list[RunningPod] = []
        self.resources: set[str] = set()

    def unit(self, unit: Unit) -> None:
        job = unit.job
        frozen = self.view is not None and job.key not in self.view.free_jobs
        for task in job.tasks:
            if len(unit.jobs) == 1:
                pods = [p for p in job.pods if p.task == task.name]
                held = [(pod, h) for pod in pods if (h := self._held(pod)) is not None]
                pending = [] if frozen else [p for p in pods if not p.running]
            else:
                held, pending = [], [j.pods[0] for j in unit.jobs]
            if not held and not pending:
                # A frozen job's task with nothing on a node: the round's model never sees it.
                continue
            request = model_units(task.resources, round_up=True)
            request_floor = model_units(task.resources, round_up=False)
            self.resources.update(request)
            value = pod_value(task, self.largest, self.cpu_per_gpu)
            for pod, (node, shares, may_evict) in held:
                unit.running.append(len(self.running))
                self.running.append(
                    self._running(job, task, pod, node, shares, may_evict, request, value)
                )
            if not pending:
                continue
            numa_bind = task.numa_bind
            group = Group(
                len(self.groups),
                unit.index,
                task,
                pending,
                request,
                request_floor,
                value,
                numa_bind,
                job,
            )
            unit.groups.append(group.index)
            self.groups.append(group)

    def foreign(self) -> None:
        """Pods of other schedulers: running pods that no unit owns and nothing evicts, so
        they only take room (and count for inter-pod terms)."""
        for job, pod in self.instance.foreign_pods:
            task = job.task(pod.task)
            shares = tuple(s for c in pod.gpus for s in c)
            request = model_units(task.resources, round_up=True)
            self.resources.update(request)
            value = pod_value(task, self.largest, self.cpu_per_gpu)
            assert pod.node is not None
            self.running.append(
                self._running(job, task, pod, pod.node, shares, False, request, value)
            )

    def _held(self, pod: Pod) -> tuple[str, tuple[DeviceShare, ...], bool] | None:
        """(node, device shares, may be evicted) of a pod that holds room before the plan: a
        running pod, or in a view a pod the frozen part of the plan places; None otherwise
        (pending, or evicted by the frozen part)."""
        view = self.view
        if view is not None:
            if pod.key in view.evicted:
                return None
            placed = view.frozen.get(pod.key)
            if placed is not None:
                return placed.node, placed.gpus or (), False
        if pod.node is None:
            return None
        return pod.node, tuple(s for c in pod.gpus for s in c), view is None

    def _running(
        self,
        job: Job,
        task: Task,
        pod: Pod,
        node_name: str,
        shares: tuple[DeviceShare, ...],
        may_evict: bool,
        request: dict[str, int],
        value: int,
    ) -> RunningPod:
        node = self.instance.node_by_name[node_name]
        dev_index = {d.id: i for i, d in enumerate(node.gpus)}
        held = [(dev_index[s.id], s.memory, s.cores) for s in shares if s.id in dev_index]
        protected = job.conformance_protection is not None
        preemptable = pod_preemptable(task.annotations, task.labels)
        # shuffle's victims: conformance is no VictimTasks plugin, so it protects none of them.
        zone = node_zone(node.labels)
        if may_evict and preemptable and zone in self.closed:
            self.tdm_zone[len(self.running)] = zone  # the index the caller appends it at
        evictable = (
            may_evict
            and preemptable
            and ((self.evictions_on and not protected) or zone in self.closed)
        )
        return RunningPod(
            pod,
            job,
            task,
            self.node_index[node.name],
            request,
            model_units(task.resources, round_up=False),
            held,
            evictable,
            value,
        )


def compile_instance(
    instance: Instance,
    *,
    tdm_lookahead: bool = False,
    aggregate: bool = True,
    split: frozenset[int] = frozenset(),
    view: View | None = None,
    typical: Sequence[TypicalTask] = (),
) -> Compiled:
    """Build the tables; ``tdm_lookahead`` also forbids revocable nodes to jobs that would
    outlive the zone's window (DESIGN §5, optional). ``aggregate`` False gives every node its
    own class and every job its own unit; ``split`` names nodes that get classes of their own
    (what an expansion could not fit is solved again at node level). A ``view`` compiles only
    the part of the snapshot a large-neighbourhood round decides (``view.py``); ``typical`` is
    the typical-task mix of the fragmentation stage (empty while the stage is off); with one,
    every node with devices gets a class of its own and each device a device class, which
    the stage needs to see how shares stack (``frag_stage.py``)."""
    jobs = list(instance.jobs)
    priorities = sorted({j.priority for j in jobs})
    rank = {p: i for i, p in enumerate(priorities)}
    if view is None:
        units = _units(jobs, aggregate)
    else:
        free = [j for j in jobs if j.key in view.free_jobs]
        units = _units(free, aggregate)
        units += [
            Unit(len(units) + i, [j])
            for i, j in enumerate(j for j in jobs if j.key not in view.free_jobs)
        ]
    builder = _Builder(instance, view)
    for unit in units:
        builder.unit(unit)
    builder.foreign()
    nodes = list(instance.nodes)
    levels, domains = topology_levels(instance)
    pools = [device_pool(n) for n in nodes]
    if typical:
        split = split | {i for i, n in enumerate(nodes) if n.gpus}
    classes, node_class, evict_groups = build_classes(
        instance,
        builder.groups,
        builder.running,
        domains,
        pools,
        aggregate=aggregate,
        split=split,
        nodes=None if view is None else view.open_nodes,
    )
    found: dict[tuple[object, ...], Candidates] = {}
    for g in builder.groups:
        key = candidate_key(g, tdm_lookahead)
        if key not in found:
            found[key] = find_candidates(instance, g, classes, tdm_lookahead)
        g.where = found[key]
    limits, deserved, guarantee, members, leaf_ok = queue_tables(instance)
    return Compiled(
        instance=instance,
        nodes=nodes,
        groups=builder.groups,
        units=units,
        running=builder.running,
        jobs=jobs,
        unit_of={j.key: u.index for u in units for j in u.jobs},
        weights={j.key: 1 + rank[j.priority] for j in jobs},
        resources=sorted(builder.resources),
        queue_limits=limits,
        queue_deserved=deserved,
        queue_guarantee=guarantee,
        queue_members=members,
        leaf_ok=leaf_ok,
        evictions_on=builder.evictions_on,
        topology_on=instance.scheduler.enforces_topology,
        eviction_budget=_budgets(jobs),
        levels=levels,
        domains=domains,
        classes=classes,
        node_class=node_class,
        evict_groups=evict_groups,
        typical=tuple(typical),
        tdm_zone=builder.tdm_zone,
        tdm_evictions=_shuffle_evictions(builder),
    )


def _shuffle_evictions(builder: _Builder) -> dict[tuple[str, str], int]:
    """Per (closed zone, job), how many pods the cycle's ``shuffle`` rounds evict: the model
    evicts exactly that many of the zone's candidates, any of them (Volcano picks by map
    order); a job whose budget allows none keeps them all."""
    candidates: dict[str, dict[str, int]] = {}
    for i, zone in builder.tdm_zone.items():
        per_zone = candidates.setdefault(builder.running[i].job.key, {})
        per_zone[zone] = per_zone.get(zone, 0) + 1
    out: dict[tuple[str, str], int] = {}
    for key, per_zone in candidates.items():
        job = builder.instance.job_by_key[key]
        running = sum(1 for p in job.pods if p.running)
        taken = shuffle_victims(
            job.annotations, len(job.pods), running, per_zone, builder.tdm_rounds
        )
        out.update(((zone, key), count) for zone, count in taken.items())
    return out


def _budgets(jobs: Sequence[Job]) -> dict[str, int]:
    budget = {}
    for job in jobs:
        if has_disruption_budget(job.annotations):
            running_count = sum(1 for p in job.pods if p.running)
            budget[job.key] = job_eviction_budget(job.annotations, job.replicas, running_count, 0)
    return budget


QueueTables = tuple[
    dict[str, dict[str, int]],
    dict[str, dict[str, int]],
    dict[str, dict[str, int]],
    dict[str, list[str]],
    dict[str, bool],
]


def _queue_members(instance: Instance, hierarchical: bool) -> dict[str, list[str]]:
    tree = instance.queue_tree
    members: dict[str, list[str]] = {q: [] for q in tree.names}
    for job in instance.jobs:
        if job.queue not in members:
            continue
        members[job.queue].append(job.key)
        if hierarchical:
            for ancestor in tree.ancestors(job.queue):
                members[ancestor].append(job.key)
    return members


def _proportion_attrs(instance: Instance, with_jobs: set[str]) -> dict[str, QueueAttrs]:
    tree = instance.queue_tree
    total = instance.total_allocatable
    requests: dict[str, Resources] = {}
    for job in instance.jobs:
        req = Resources()
        for task in job.tasks:
            req = req + task.resources.scaled(task.replicas)
        requests[job.queue] = requests.get(job.queue, Resources()) + req
    queues = [tree.queue(q) for q in tree.names if q in with_jobs]
    real = capacity_flat(tree, total, [q.name for q in queues])
    deserved = proportion_deserved(
        queues, total, requests, {q: a.real_capability for q, a in real.items()}
    )
    return {
        q: QueueAttrs(d, real[q].capability, real[q].real_capability, real[q].guarantee)
        for q, d in deserved.items()
    }


def queue_tables(instance: Instance) -> QueueTables:
    """Queue limits as the configured quota plugin enforces them at allocation time."""
    conf = instance.scheduler
    tree = instance.queue_tree
    hierarchical = conf.hierarchy()
    with_jobs = {j.queue for j in instance.jobs}
    members = _queue_members(instance, hierarchical)
    leaf_ok = {q: (not hierarchical) or tree.is_leaf(q) for q in tree.names}
    attrs: Mapping[str, QueueAttrs] = {}
    limits: dict[str, dict[str, int]] = {}
    if conf.has("capacity"):
        total = instance.total_allocatable
        attrs = (
            capacity_hierarchical(tree, total)
            if hierarchical
            else capacity_flat(tree, total, [q for q in tree.names if q in with_jobs])
        )
        for q, a in attrs.items():
            if hierarchical or q in with_jobs:
                limits[q] = model_units(a.real_capability, round_up=False)
    if conf.has("proportion"):
        # With capacity too, both Allocatable hooks must pass (they AND): the tighter limit
        # holds, while capacity's deserved stays the fair-share target.
        shares = _proportion_attrs(instance, with_jobs)
        for q, a in shares.items():
            cap = limits.get(q, {})
            limit = model_units(a.deserved, round_up=False)
            limits[q] = {r: min(v, cap.get(r, v)) for r, v in limit.items()}
        attrs = attrs or shares
    if attrs:
        deserved = {q: model_units(a.deserved, round_up=True) for q, a in attrs.items()}
    else:
        deserved = {q: model_units(tree.queue(q).deserved, round_up=True) for q in tree.names}
    guarantee = {q: model_units(tree.queue(q).guarantee, round_up=True) for q in tree.names}
    return limits, deserved, guarantee, members, leaf_ok
