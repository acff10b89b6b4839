"""The validated, immutable snapshot every engine, the verifier and the metrics read.

An :class:`Instance` is what ``models.load`` returns for either input form. It holds the
objects as the user wrote them (after defaults) and computes the derived structures (HyperNode
tree, queue tree, indexes) once, on first use. Its cross-object rules live here too
(:func:`validate_instance`), so that every way of building one, a file of either form or a
what-if variant, is checked by the same code.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, tzinfo
from functools import cached_property
from zoneinfo import ZoneInfo

from .admission import EnqueueLimit, enqueue_limits
from .cluster import Node
from .errors import Diagnostics, Problem, obj_name, shown
from .gpu import GpuDevice, validate_device
from .limits import check_limits
from .queues import ROOT, Queue, QueueTree, children_in_tree, validate_queues
from .reach import warn_unplaceable
from .resources import Resources
from .scheduler_conf import HELM_DEFAULT, SchedulerConf
from .tdm import TDM_PLUGIN, ZONE_ARG_PREFIX, ZONE_LABEL, TdmConfig, configured_zones, node_zone
from .topology import HyperNode, Topology, tiers_by_name, validate_hypernodes
from .vocabulary import VOLCANO_SCHEDULER
from .workload import DeviceShare, Job, Pod, Task, validate_job, validate_timeline


@dataclass(frozen=True)
class Instance:
    name: str
    now: datetime
    timezone: str = "UTC"
    scheduler: SchedulerConf = HELM_DEFAULT
    priority_classes: Mapping[str, int] = field(default_factory=dict)
    nodes: tuple[Node, ...] = ()
    hypernodes: tuple[HyperNode, ...] = ()
    queues: tuple[Queue, ...] = ()
    jobs: tuple[Job, ...] = ()
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Namespace objects, name → labels: what a term's ``namespaceSelector`` reads (a namespace
    without an object has no labels)."""
    scheduler_names: tuple[str, ...] = (VOLCANO_SCHEDULER,)
    """The names Volcano answers to (its ``--scheduler-name`` flags): it schedules only pods
    whose ``schedulerName`` is one of them."""
    arrivals: tuple[Job, ...] = ()
    """Jobs whose ``arrival`` is after ``now``: not in the snapshot yet (the engines see only
    :attr:`jobs`), but part of the timeline a simulation plays."""
    foreign_jobs: tuple[Job, ...] = ()
    """Pods that other schedulers placed (a DaemonSet's, kube-scheduler's), each group as a
    job. Volcano's cache puts them on their nodes and in no job, so they are node usage only:
    their running pods hold resources, pod slots and GPU devices and count as existing pods
    for inter-pod terms, but they belong to no queue, are never evicted and are not jobs of
    any plan. Their pending pods are nobody's business here."""
    warnings: tuple[Problem, ...] = field(default=(), compare=False)
    source: str = field(default="", compare=False)

    def __getstate__(self) -> dict[str, object]:
        """Pickle only the fields: derived structures are rebuilt on first use, which keeps
        instances cheap to ship to sweep workers (and compiled regexes out of pickles)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __setstate__(self, state: dict[str, object]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)

    def replace(self, **changes: object) -> Instance:
        """A modified copy (derived structures are recomputed on the copy); not checked, see
        :meth:`validated`."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def validated(self, file: str = "") -> Instance:
        """This instance, if it keeps every rule of :func:`validate_instance`; otherwise raises
        :class:`~models.errors.InputError` with all the problems, attributed to ``file``."""
        validate_instance(self).raise_if_errors(file)
        return self

    @cached_property
    def tz(self) -> tzinfo:
        return ZoneInfo(self.timezone)

    @cached_property
    def topology(self) -> Topology:
        return Topology.build(self.hypernodes, {n.name: n.labels for n in self.nodes})

    @cached_property
    def queue_tree(self) -> QueueTree:
        return QueueTree.build(self.queues)

    @cached_property
    def tdm(self) -> TdmConfig | None:
        """The TDM configuration when the ``tdm`` plugin is configured."""
        plugin = self.scheduler.plugin(TDM_PLUGIN)
        if plugin is None:
            return None
        return TdmConfig.from_arguments(plugin.arguments, "scheduler", Diagnostics())

    @cached_property
    def enqueue_limits(self) -> tuple[EnqueueLimit, ...]:
        """Volcano's enqueue comparisons for this snapshot (``models.admission``): every
        large-neighbourhood round, the verifier and explain read them, and they depend on the
        snapshot alone."""
        return tuple(enqueue_limits(self))

    @cached_property
    def node_by_name(self) -> Mapping[str, Node]:
        return {n.name: n for n in self.nodes}

    @cached_property
    def job_by_key(self) -> Mapping[str, Job]:
        return {j.key: j for j in self.jobs}

    @cached_property
    def pods(self) -> tuple[Pod, ...]:
        """The pods of Volcano's jobs: the ones a plan may place or evict."""
        return tuple(p for j in self.jobs for p in j.pods)

    @cached_property
    def foreign_pods(self) -> tuple[tuple[Job, Pod], ...]:
        """The running pods of other schedulers, with their jobs: room nobody can take back."""
        return tuple((j, p) for j in self.foreign_jobs for p in j.pods if p.running)

    @cached_property
    def pod_by_key(self) -> Mapping[str, Pod]:
        return {p.key: p for p in self.pods}

    def why_not_plannable(self, pod: str) -> str:
        """Why a plan cannot name ``pod`` (a key that is not in :attr:`pod_by_key`)."""
        for job, other in self.foreign_pods:
            if other.key == pod:
                return (
                    f"a pod of another scheduler ({job.scheduler_name}): Volcano neither "
                    "places nor evicts it"
                )
        return "no such pod in the instance"

    def hard_topology_limit(self, job: Job) -> int | None:
        """The tier all of ``job``'s bound pods must stay within, or None when nothing limits
        them: a hard spec with a resolved tier, and the ``network-topology-aware`` plugin
        configured (§9.6)."""
        spec = job.network_topology
        if spec is None or not self.scheduler.enforces_topology:
            return None
        return spec.hard_tier

    @cached_property
    def total_allocatable(self) -> Resources:
        """Σ allocatable over all nodes (Volcano ``ssn.TotalResource``)."""
        total = Resources()
        for node in self.nodes:
            total = total + node.allocatable
        return total


# -- cross-object validation ------------------------------------------------------------------


def validate_instance(
    instance: Instance,
    *,
    written_as: Mapping[str, str] | None = None,
    unread_gpus: Collection[str] = (),
) -> Diagnostics:
    """Every rule that relates the objects of ``instance`` to each other, plus the per-object
    rules a modified copy can break, collected rather than raised.

    Whichever way an instance is built (either file form, or a what-if variant), these rules
    are checked here: references (jobs to queues,
    running pods to tasks, nodes and devices), duplicates, the HyperNode tree, the queue
    webhooks and leaf-only jobs, gang sizes and topology limits, what running pods hold on
    their GPUs, the TDM configuration and zones, and the work limits of the engines.

    A reader that knows more about how objects were written says so: ``written_as`` maps a node
    to the object that wrote it (a ``NodeGroup``), so a problem of the group is reported once;
    ``unread_gpus`` lists nodes whose device inventory is already reported as unreadable.
    """
    diag = Diagnostics()
    first_nodes: dict[str, Node] = {}
    for node in instance.nodes:
        if node.name in first_nodes:
            diag.error(obj_name("Node", node.name), "name", "duplicate node name")
        first_nodes.setdefault(node.name, node)
    _check_device_ids(first_nodes.values(), written_as or {}, diag)
    labels = {name: node.labels for name, node in first_nodes.items()}
    validate_hypernodes(instance.hypernodes, labels, diag)
    _check_jobs(instance, first_nodes, frozenset(unread_gpus), diag)
    warn_unplaceable(instance.jobs, instance.nodes, diag)
    _check_queues(instance, diag)
    _check_tdm(instance, written_as or {}, diag)
    check_limits(instance, diag)
    return diag


def _check_device_ids(
    nodes: Collection[Node], written_as: Mapping[str, str], diag: Diagnostics
) -> None:
    """A GPU UUID names one physical device: two nodes registering the same one describe no
    real cluster, and a plan could bind two pods on different nodes to "one" card."""
    owner: dict[str, str] = {}
    for node in nodes:
        for i, dev in enumerate(node.gpus):
            first = owner.setdefault(dev.id, node.name)
            if first != node.name:
                obj = written_as.get(node.name) or obj_name("Node", node.name)
                diag.error(
                    obj,
                    f"gpus[{i}].id",
                    f'GPU "{shown(dev.id)}" is also registered by node "{shown(first)}": '
                    "a device UUID names one physical GPU",
                )


def _check_jobs(
    instance: Instance, nodes: Mapping[str, Node], unread_gpus: frozenset[str], diag: Diagnostics
) -> None:
    tier_names = tiers_by_name(instance.hypernodes)
    devices = _DeviceUse(unread_gpus)
    seen: set[str] = set()
    pods: dict[str, str] = {}
    """Pod key → the key of its job: names given by ``podNames`` must not collide."""
    for job in (*instance.jobs, *instance.arrivals, *instance.foreign_jobs):
        obj = obj_name("Job", job.name, job.namespace)
        if job.key in seen:
            diag.error(obj, "name", "duplicate job name in namespace")
        else:
            _check_pod_names(job, obj, pods, diag)
        seen.add(job.key)
        validate_job(job, diag)
        validate_timeline(job, instance.now, diag)
        _check_running(job, obj, nodes, devices, diag)
        if job.scheduler_name not in instance.scheduler_names:
            continue
        spec = job.network_topology
        if (
            spec is not None
            and spec.hard_tier is not None
            and not instance.scheduler.enforces_topology
        ):
            diag.warn(
                obj,
                "networkTopology",
                "hard mode, but the network-topology-aware plugin is not configured: Volcano "
                "does not enforce the tier limit",
            )
        name = spec.highest_tier_name if spec is not None else None
        if name is not None and name not in tier_names:
            diag.warn(
                obj,
                "networkTopology.highestTierName",
                f'no HyperNode has tierName "{name}"; Volcano ignores the limit',
            )


def _check_pod_names(job: Job, obj: str, pods: dict[str, str], diag: Diagnostics) -> None:
    """No two pods share a name: ``podNames`` may name a pod as another job's would be. (A
    job with two tasks of one name is already refused for that.)"""
    if len({t.name for t in job.tasks}) < len(job.tasks):
        return
    for pod in job.pods:
        other = pods.get(pod.key)
        if other is not None:
            diag.error(obj, "tasks", f"two pods are named {pod.key} (one of them of {other})")
            return
        pods[pod.key] = job.key


def _check_running(
    job: Job, obj: str, nodes: Mapping[str, Node], devices: _DeviceUse, diag: Diagnostics
) -> None:
    """Each running pod names a task of the job, an index below its replicas (once), a node
    that exists and devices of that node it could hold."""
    tasks: dict[str, Task] = {}
    for task in job.tasks:
        tasks.setdefault(task.name, task)
    seen: set[tuple[str, int]] = set()
    for i, pod in enumerate(job.running):
        field = f"running[{i}]"
        task = tasks.get(pod.task)
        if task is None:
            if not pod.task and len(tasks) > 1:
                diag.error(obj, f"{field}.task", "required when the job has several tasks")
            else:
                diag.error(obj, f"{field}.task", f'task "{pod.task}" does not exist in this job')
            continue
        if pod.index >= task.replicas:
            diag.error(
                obj,
                f"{field}.index",
                f"{pod.index} is not below the task's {task.replicas} replicas",
            )
        if (pod.task, pod.index) in seen:
            diag.error(obj, f"{field}.index", f"pod {pod.task}[{pod.index}] is listed twice")
        seen.add((pod.task, pod.index))
        node = nodes.get(pod.node)
        if node is None:
            diag.error(obj, f"{field}.node", f'node "{pod.node}" does not exist')
            continue
        nested = len(pod.gpus) > 1
        for c, container in enumerate(pod.gpus):
            for d, share in enumerate(container):
                path = f"{field}.gpus[{c}][{d}]" if nested else f"{field}.gpus[{d}]"
                devices.book(node, share, obj, path, diag)


class _DeviceUse:
    """What the running pods read so far hold on each device.

    HAMi never books more memory, cores or time-slices than a device has, so a snapshot that
    does describes no real cluster. Devices that are themselves invalid, and nodes whose
    inventory could not be read, are already reported and are not judged again.
    """

    def __init__(self, unread_gpus: frozenset[str]) -> None:
        self.unread_gpus = unread_gpus
        self.used: dict[tuple[str, str], list[int]] = {}
        """(node, GPU id) → [memory, cores, pods]."""
        self.valid: dict[tuple[str, str], bool] = {}

    def book(self, node: Node, share: DeviceShare, obj: str, path: str, diag: Diagnostics) -> None:
        if node.name in self.unread_gpus:
            return
        dev = node.device(share.id)
        if dev is None:
            diag.error(obj, f"{path}.id", f'node "{node.name}" has no GPU "{share.id}"')
            return
        if not self._valid(node.name, dev):
            return
        used = self.used.setdefault((node.name, dev.id), [0, 0, 0])
        limits = (
            ("memory", share.memory, dev.memory, " MiB"),
            ("cores", share.cores, dev.cores, ""),
        )
        for slot, (key, amount, limit, unit) in enumerate(limits):
            if amount < 0:
                diag.error(obj, f"{path}.{key}", f"must not be negative, got {amount}")
                continue
            if amount > limit:
                diag.error(
                    obj,
                    f"{path}.{key}",
                    f"{amount}{unit} exceeds the {limit}{unit} of GPU {dev.id} on {node.name}",
                )
                continue
            if used[slot] + amount > limit:
                diag.error(
                    obj,
                    f"{path}.{key}",
                    f"{amount}{unit} and the {used[slot]}{unit} that pods listed earlier hold "
                    f"on GPU {dev.id} ({node.name}) together exceed its {limit}{unit}",
                )
            used[slot] += amount
        used[2] += 1
        if used[2] > dev.count:
            diag.error(
                obj,
                f"{path}.id",
                f"GPU {dev.id} on {node.name} has {dev.count} time-slices, and this pod would "
                f"be number {used[2]} on it",
            )

    def _valid(self, node: str, dev: GpuDevice) -> bool:
        key = (node, dev.id)
        if key not in self.valid:
            probe = Diagnostics()
            validate_device(dev, "", "", probe)
            self.valid[key] = not probe.errors
        return self.valid[key]


def _check_queues(instance: Instance, diag: Diagnostics) -> None:
    """The queue webhooks' rules, and that every job sits in an existing leaf queue."""
    validate_queues(instance.queues, {}, diag)
    names = {q.name for q in instance.queues}
    children = children_in_tree(instance.queues)
    for job in (*instance.jobs, *instance.arrivals):
        obj = obj_name("Job", job.name, job.namespace)
        if job.queue not in names and job.queue != ROOT:
            diag.error(obj, "queue", f'queue "{job.queue}" does not exist')
        elif children.get(job.queue):
            diag.error(
                obj,
                "queue",
                f'queue "{job.queue}" is not a leaf queue (child queues: '
                f"{', '.join(children[job.queue])}); Volcano only schedules jobs of leaf "
                "queues",
            )


def _check_tdm(instance: Instance, written_as: Mapping[str, str], diag: Diagnostics) -> None:
    """The tdm plugin's arguments, and that every node's revocable zone has a window.

    A zone whose window is malformed counts as configured here: its argument is already
    reported, and the nodes in it are not wrong. Nodes written as one entry (a node group)
    are reported once.
    """
    position = instance.scheduler.plugin_position(TDM_PLUGIN)
    configured: set[str] = set()
    if position is not None:
        tier, index = position
        plugin = instance.scheduler.tiers[tier][index]
        path = f"scheduler.tiers[{tier}].plugins[{index}]"
        local = Diagnostics()
        TdmConfig.from_arguments(plugin.arguments, obj_name("Instance", instance.name), local)
        diag.errors.extend(Problem(p.message, p.obj, f"{path}.{p.field}") for p in local.errors)
        for w in local.warnings:
            diag.warn(w.obj, f"{path}.{w.field}", w.message)
        configured = set(configured_zones(plugin.arguments))
    reported: set[tuple[str, str]] = set()
    for node in instance.nodes:
        zone = node_zone(node.labels)
        obj = written_as.get(node.name) or obj_name("Node", node.name)
        if not zone or zone in configured or (obj, zone) in reported:
            continue
        reported.add((obj, zone))
        if position is not None:
            diag.error(
                obj,
                f"labels.{ZONE_LABEL}",
                f'revocable zone "{zone}" is not configured: the tdm plugin has no '
                f"{ZONE_ARG_PREFIX}{zone} argument",
            )
        else:
            diag.warn(
                obj,
                f"labels.{ZONE_LABEL}",
                "the tdm plugin is not configured, so this label has no effect",
            )
