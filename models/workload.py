"""Jobs, tasks and pods: the work waiting to be placed and the work already running.

A job is one PodGroup (a vcjob) with its tasks; each task has ``replicas`` identical pods named
``<job>-<task>-<index>`` (the vcjob convention), keyed ``<namespace>/<name>``. Pods already bound
are listed under the job's ``running`` with their node and GPU devices.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property

from .affinity import (
    PodAffinity,
    PreferredNodeTerm,
    SpreadConstraint,
    validate_affinity_term,
    validate_preferred_node_terms,
    validate_spread,
)
from .cluster import TAINT_EFFECTS, Taint
from .errors import Diagnostics, obj_name, shown_value
from .golang import parse_go_bool
from .gpu import FULL_CORES, HAMI_CORES, VOLCANO_CORES, GpuFilter, GpuRequest
from .names import label_value_problem, qualified_name_problem
from .queues import DEFAULT_QUEUE
from .resources import EMPTY, Resources
from .selectors import LabelSelector
from .tdm import MAX_UNAVAILABLE_KEYS, MIN_AVAILABLE_KEYS
from .vocabulary import (
    COOLDOWN_TIME,
    CRITICAL_PRIORITY_CLASSES,
    DEFAULT_NAMESPACE,
    GPU_SCHEDULER_POLICY,
    MUTEX_POLICY,
    NUMA_BIND,
    PREEMPTABLE,
    REVOCABLE_ZONE,
    SYSTEM_NAMESPACE,
    VOLCANO_SCHEDULER,
)

PENDING, INQUEUE, RUNNING = "Pending", "Inqueue", "Running"
JOB_PHASES = (PENDING, INQUEUE, RUNNING, "Unknown", "Completed")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
EXISTS = "Exists"
TOLERATION_OPERATORS = ("Equal", EXISTS)
NO_EXECUTE = "NoExecute"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, key: str, value: str, effect: str) -> bool:
        """Kubernetes ``Toleration.ToleratesTaint``."""
        if self.effect and self.effect != effect:
            return False
        if self.key and self.key != key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == value


HARD, SOFT = "hard", "soft"
TOPOLOGY_MODES = (HARD, SOFT)


@dataclass(frozen=True)
class NetworkTopology:
    """PodGroup ``spec.networkTopology``; ``highest_tier`` may come from ``highestTierName``."""

    mode: str = HARD
    highest_tier: int | None = None
    highest_tier_name: str | None = None

    def search_limit(self, top_tier: int) -> int | None:
        """The highest tier Volcano's HyperNode search may use for the job, or None when the
        job takes the plain path (volcano-scheduler.md §4.2).

        Volcano quirk (§9.6): soft mode is hard mode with the virtual top tier as the limit,
        and hard mode without a (resolved) tier is not hard at all.
        """
        return top_tier if self.mode == SOFT else self.highest_tier

    @property
    def hard_tier(self) -> int | None:
        """The tier every pod of the job must stay within: ``highestTierAllowed`` in hard mode.

        None in soft mode (its limit, the virtual top, holds every node) and for a hard spec
        without a resolved tier. Volcano enforces it only with the ``network-topology-aware``
        plugin; :meth:`models.instance.Instance.hard_topology_limit` says both.
        """
        return self.highest_tier if self.mode == HARD else None


@dataclass(frozen=True)
class DeviceShare:
    """What one container holds on one GPU device."""

    id: str
    memory: int
    cores: int


@dataclass(frozen=True)
class Task:
    """A group of identical pods of one job.

    ``resources`` is the steady-state request (Volcano ``Resreq``) used for accounting and
    scores; ``init_resources`` the node-fit request (``InitResreq``, init containers included).
    """

    name: str
    replicas: int
    resources: Resources = EMPTY
    init_resources: Resources = EMPTY
    gpu: tuple[GpuRequest, ...] = ()
    gpu_filter: GpuFilter | None = None
    priority: int = 0
    preemption_policy: str = "PreemptLowerPriority"
    role: str = ""
    min_available: int | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_affinity: tuple[LabelSelector, ...] = ()
    """Required node affinity: nodeSelectorTerms, ORed; each term's expressions ANDed."""
    tolerations: tuple[Toleration, ...] = ()
    pod_names: tuple[str, ...] = ()
    """The pods' names in the cluster, by index, when they are not ``<job>-<task>-<index>``
    (a bare pod, a PodGroup of another controller): plans must name pods as the cluster does."""

    def pod_name(self, job: str, index: int) -> str:
        """The name of the pod with this index: the cluster's, else the vcjob convention."""
        if index < len(self.pod_names):
            return self.pod_names[index]
        return pod_name(job, self.name, index)

    preferred_node_affinity: tuple[PreferredNodeTerm, ...] = ()
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None
    spread: tuple[SpreadConstraint, ...] = ()
    """``topologySpreadConstraints`` in the order written (the spread filter checks in order)."""

    def node_affinity_matches(self, labels: Mapping[str, str]) -> bool:
        """``nodeSelector`` holds and, when set, one required node-affinity term matches; an
        empty term matches no node (``NodeSelectorRequirementsAsSelector`` of nothing)."""
        if any(labels.get(k) != v for k, v in self.node_selector.items()):
            return False
        terms = self.required_affinity
        return not terms or any(
            (t.match_expressions or t.match_labels) and t.matches(labels) for t in terms
        )

    def tolerates_all(self, taints: Iterable[Taint]) -> bool:
        """Every taint in ``taints`` is tolerated by one of the pod's tolerations."""
        return all(
            any(tol.tolerates(t.key, t.value, t.effect) for tol in self.tolerations) for t in taints
        )

    @property
    def pod_terms(self) -> bool:
        """The pod carries inter-pod terms or spread constraints: where it may go depends on
        where other pods are, so no per-shape cache may reuse a placement answer for it."""
        return bool(self.pod_affinity or self.pod_anti_affinity or self.spread)

    @property
    def best_effort(self) -> bool:
        """Volcano BestEffort: an empty ``Resreq``; such pods are left to backfill."""
        return self.resources.is_empty()

    @property
    def numa_bind(self) -> bool:
        """Whether each GPU container's devices must share one NUMA node (``nvidia.com/numa-bind``
        parsed as Go's ``ParseBool``; anything else is false)."""
        return bool(parse_go_bool(self.annotations.get(NUMA_BIND, "")))

    @property
    def gpu_mutex(self) -> bool:
        """HAMi's ``mutex`` GPU policy: each of the pod's devices must be unused when it is
        placed (``NvidiaGPUDevices.Fit``: the policy *contains* ``mutex`` and ``Used > 0``)."""
        return MUTEX_POLICY in self.annotations.get(GPU_SCHEDULER_POLICY, "")


@dataclass(frozen=True)
class RunningPod:
    index: int
    node: str
    task: str
    gpus: tuple[tuple[DeviceShare, ...], ...] = ()
    """Per GPU container, the devices it holds."""


@dataclass(frozen=True)
class Pod:
    """One pod, pending or running; derived from its job and task."""

    namespace: str
    name: str
    job: str
    task: str
    index: int
    node: str | None = None
    gpus: tuple[tuple[DeviceShare, ...], ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)
    """The pod's labels: its task's, which inter-pod terms and spread constraints match."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def running(self) -> bool:
        return self.node is not None


@dataclass(frozen=True)
class Job:
    """One PodGroup and its pods."""

    name: str
    namespace: str = DEFAULT_NAMESPACE
    queue: str = DEFAULT_QUEUE
    priority: int = 0
    priority_class: str = ""
    min_available: int = 1
    min_task_member: Mapping[str, int] = field(default_factory=dict)
    min_resources: Resources | None = None
    network_topology: NetworkTopology | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    duration: timedelta | None = None
    """Run time once the gang has started (None: the job runs until the end of time)."""
    arrival: datetime | timedelta | None = None
    """When the job is submitted: an instant, or an offset after the instance's ``now``
    (None: it is there at ``now``). Only ``vcopt simulate`` reads the timeline."""
    started_at: datetime | None = None
    """When a running job's gang started (``startedAt``): its remaining run time is
    ``duration - (now - started_at)``."""
    remaining: timedelta | None = None
    """A running job's remaining run time, given directly (``remaining``)."""
    phase: str = PENDING
    order: int = 0
    """Creation order (``creationTimestamp``, then file order): Volcano's ordering fallback."""
    tasks: tuple[Task, ...] = ()
    running: tuple[RunningPod, ...] = ()
    scheduler_name: str = VOLCANO_SCHEDULER
    """The pods' ``spec.schedulerName``: a job of another scheduler is only node usage."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def task(self, name: str) -> Task:
        for task in self.tasks:
            if task.name == name:
                return task
        raise KeyError(name)

    @property
    def conformance_protection(self) -> str | None:
        """Why Volcano's ``conformance`` plugin keeps preempt and reclaim off this job's pods
        (their namespace is ``kube-system``, or the job's priority class is a system-critical
        one), or None when it does not."""
        if self.namespace == SYSTEM_NAMESPACE:
            return f"pods of namespace {SYSTEM_NAMESPACE}"
        if self.priority_class in CRITICAL_PRIORITY_CLASSES:
            return f"priority class {self.priority_class}"
        return None

    @cached_property
    def pods(self) -> tuple[Pod, ...]:
        """Every pod of the job, in task order then index order."""
        bound = {(r.task, r.index): r for r in self.running}
        out = []
        for task in self.tasks:
            for index in range(task.replicas):
                run = bound.get((task.name, index))
                out.append(
                    Pod(
                        self.namespace,
                        task.pod_name(self.name, index),
                        self.key,
                        task.name,
                        index,
                        run.node if run else None,
                        run.gpus if run else (),
                        task.labels,
                    )
                )
        return tuple(out)

    @property
    def replicas(self) -> int:
        return sum(t.replicas for t in self.tasks)

    def arrives_at(self, now: datetime) -> datetime:
        """When the job is submitted, on the clock of an instance whose snapshot is ``now``."""
        if self.arrival is None:
            return now
        if isinstance(self.arrival, timedelta):
            return now + self.arrival
        return self.arrival

    def remaining_at(self, now: datetime) -> timedelta | None:
        """How long a running job still runs after ``now``: ``remaining``, else ``duration``
        less the time since ``startedAt``, else the whole ``duration`` (a job whose start is
        not given is taken to have started at ``now``); None when it has no duration."""
        if self.remaining is not None:
            return self.remaining
        if self.duration is None:
            return None
        if self.started_at is not None:
            return self.duration - (now - self.started_at)
        return self.duration


def pod_name(job: str, task: str, index: int) -> str:
    return f"{job}-{task}-{index}"


def copied_to_pods(
    annotations: Mapping[str, str], labels: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """The annotations and labels Volcano's job controller copies from a vcjob onto each of
    its pods, over the template's own (volcano-job.md §6.3): preemptable and cooldown time
    from the job's annotations to the pod's annotations and from its labels to its labels,
    the revocable zone from the annotations, and one disruption budget (min-available wins).

    Without the copy a job-level ``volcano.sh/preemptable: "false"`` would leave every pod
    preemptable, since a pod without the key is preemptable by default.
    """
    pod_annotations = {
        k: annotations[k] for k in (PREEMPTABLE, COOLDOWN_TIME, REVOCABLE_ZONE) if k in annotations
    }
    budget = next(
        (k for k in (MIN_AVAILABLE_KEYS[0], MAX_UNAVAILABLE_KEYS[0]) if k in annotations), None
    )
    if budget is not None:
        pod_annotations[budget] = annotations[budget]
    pod_labels = {k: labels[k] for k in (PREEMPTABLE, COOLDOWN_TIME) if k in labels}
    return pod_annotations, pod_labels


def validate_job(job: Job, diag: Diagnostics) -> None:
    """Record what Volcano's webhooks and the Kubernetes API would refuse in one job alone:
    gang sizes within the replicas, known enums, a topology mode and a non-negative tier.

    Rules that relate the job to other objects (its queue, its running pods' nodes and
    devices, other jobs) are :func:`models.instance.validate_instance`'s.
    """
    obj = obj_name("Job", job.name, job.namespace)
    _validate_tasks(job.tasks, obj, diag)
    replicas = job.replicas
    if job.min_available < 0:
        diag.error(obj, "minAvailable", "must not be negative")
    elif job.min_available > replicas and job.tasks:
        diag.error(
            obj, "minAvailable", f"{job.min_available} is more than the job's {replicas} replicas"
        )
    for role, count in job.min_task_member.items():
        if count < 0:
            diag.error(obj, f"minTaskMember.{role}", "must not be negative")
    if job.phase not in JOB_PHASES:
        diag.error(obj, "phase", f"must be one of {', '.join(JOB_PHASES)}")
    spec = job.network_topology
    if spec is not None:
        if spec.mode not in TOPOLOGY_MODES:
            diag.error(obj, "networkTopology.mode", "must be hard or soft")
        if spec.highest_tier is not None and spec.highest_tier < 0:
            diag.error(obj, "networkTopology.highestTierAllowed", "must not be negative")


def validate_timeline(job: Job, now: datetime, diag: Diagnostics) -> None:
    """Record what makes a job's timeline impossible at the snapshot time ``now``.

    A pending job submitted before ``now`` would already be there: its ``arrival`` says
    something the snapshot contradicts, so it is refused rather than read as "there at now".
    ``startedAt`` and ``remaining`` describe a run in progress, so they need running pods and a
    ``duration``, and must put the end of the run after ``now``.
    """
    obj = obj_name("Job", job.name, job.namespace)
    arrives = job.arrives_at(now)
    if job.running and arrives > now:
        diag.error(
            obj, "arrival", f"{arrives.isoformat()} is after now, but the job has running pods"
        )
    elif not job.running and arrives < now:
        diag.error(
            obj,
            "arrival",
            f"{arrives.isoformat()} is before now ({now.isoformat()}) for a pending job: leave "
            "arrival out for a job that is there at now",
        )
    for name, value in (("startedAt", job.started_at), ("remaining", job.remaining)):
        if value is None:
            continue
        if not job.running:
            diag.error(obj, name, "is for a running job, and this job has no running pods")
        elif job.duration is None:
            diag.error(obj, name, "needs the job's duration")
    if job.started_at is not None and job.remaining is not None:
        diag.error(obj, "remaining", "give startedAt or remaining, not both")
    if job.started_at is not None and job.started_at > now:
        diag.error(
            obj, "startedAt", f"{job.started_at.isoformat()} is after now ({now.isoformat()})"
        )
    elif job.started_at is not None and job.duration is not None and job.running:
        left = job.remaining_at(now)
        if left is not None and left < timedelta(0):
            diag.error(
                obj,
                "startedAt",
                f"with duration {job.duration} the run ended at "
                f"{(job.started_at + job.duration).isoformat()}, before now",
            )
    if job.remaining is not None and job.duration is not None and job.remaining > job.duration:
        diag.error(obj, "remaining", f"is more than the job's duration ({job.duration})")


def _validate_tasks(tasks: tuple[Task, ...], obj: str, diag: Diagnostics) -> None:
    names: set[str] = set()
    for i, task in enumerate(tasks):
        field = f"tasks[{i}]"
        if task.name in names:
            diag.error(obj, f"{field}.name", f'duplicate task name "{task.name}"')
        names.add(task.name)
        if task.min_available is not None and not 0 <= task.min_available <= task.replicas:
            diag.error(
                obj, f"{field}.minAvailable", f"must be between 0 and replicas ({task.replicas})"
            )
        if task.preemption_policy not in PREEMPTION_POLICIES:
            diag.error(obj, f"{field}.preemptionPolicy", "must be PreemptLowerPriority or Never")
        _validate_pod_rules(task, obj, field, diag)
        _warn_cores_over_100(task, f"{field}.resources", obj, diag)


def validate_toleration(
    toleration: Toleration, seconds: int | None, obj: str, field: str, diag: Diagnostics
) -> None:
    """``ValidateTolerations`` for one toleration at ``field`` (``seconds`` is its
    ``tolerationSeconds``, which vcopt does not model but the API server checks): a qualified
    key; without a key only ``Exists`` (it then tolerates every taint); ``Exists`` without a
    value, ``Equal`` with a label value; a known effect, and ``NoExecute`` when seconds are
    set."""
    key, operator, value, effect = (
        toleration.key,
        toleration.operator,
        toleration.value,
        toleration.effect,
    )
    if key and (problem := qualified_name_problem(key)):
        diag.error(obj, f"{field}.key", f"{shown_value(key)}: {problem}")
    if operator not in (*TOLERATION_OPERATORS, ""):
        diag.error(obj, f"{field}.operator", "must be Equal or Exists")
    elif not key and operator != EXISTS:
        diag.error(
            obj,
            f"{field}.operator",
            "must be Exists when key is empty (a toleration without a key tolerates every taint)",
        )
    elif operator == EXISTS and value:
        diag.error(obj, f"{field}.value", "must be empty when operator is Exists")
    elif operator != EXISTS and (problem := label_value_problem(value)):
        diag.error(obj, f"{field}.value", f"{shown_value(value)}: {problem}")
    if effect and effect not in TAINT_EFFECTS:
        diag.error(
            obj,
            f"{field}.effect",
            f"must be one of {', '.join(TAINT_EFFECTS)}, or empty for every effect",
        )
    elif seconds is not None and effect != NO_EXECUTE:
        diag.error(obj, f"{field}.effect", "must be NoExecute when tolerationSeconds is set")


_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _validate_pod_rules(task: Task, obj: str, field: str, diag: Diagnostics) -> None:
    """The API server's rules on the task's affinity and spread, at the paths written."""
    for name, rules in (
        ("podAffinity", task.pod_affinity),
        ("podAntiAffinity", task.pod_anti_affinity),
    ):
        if rules is None:
            continue
        at = f"{field}.affinity.{name}"
        for i, term in enumerate(rules.required):
            validate_affinity_term(term, False, task.labels, obj, f"{at}.{_REQUIRED}[{i}]", diag)
        for i, term in enumerate(rules.preferred):
            where = f"{at}.{_PREFERRED}[{i}].podAffinityTerm"
            validate_affinity_term(term, True, task.labels, obj, where, diag)
    validate_preferred_node_terms(
        task.preferred_node_affinity, obj, f"{field}.affinity.nodeAffinity.{_PREFERRED}", diag
    )
    validate_spread(task.spread, task.labels, obj, f"{field}.topologySpreadConstraints", diag)


def _warn_cores_over_100(task: Task, field: str, obj: str, diag: Diagnostics) -> None:
    """A GPU-cores request above 100 is admitted, and each scheduler only logs it: HAMi's Fit
    books 100 (the whole GPU's compute, exclusive), Volcano's filter never fits it on any GPU
    (hami-gpu.md §3.3 step 8, pitfall 6). A warning, because the pod is valid Kubernetes."""
    for request in task.gpu:
        if request.cores <= FULL_CORES:
            continue
        if request.flavor == "hami":
            name, consequence = HAMI_CORES, f"HAMi books {FULL_CORES}, the whole GPU's compute"
        else:
            name, consequence = VOLCANO_CORES, "Volcano's vGPU filter never fits it on any GPU"
        diag.warn(obj, f"{field}.{name}", f"{request.cores} is above {FULL_CORES}: {consequence}")
        return
