"""A Volcano Job (vcjob) as its controller turns it into a PodGroup and pods
(``spec/volcano-job.md`` §5, §6), in the compact form.

The compact job *is* the PodGroup: ``minMember``, ``minTaskMember``, ``minResources``, queue,
priority class and network topology are computed as the controller computes them, and each
task's pods are the template's, named ``<job>-<task>-<index>``. The pods of the dump that
belong to the job (by owner reference, ``volcano.sh/job-name`` or the PodGroup name) are its
running pods; a PodGroup of the dump that belongs to the job gives its phase and is not read
as a job of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import obj_name, shown_value
from ...names import check_annotations, check_labels
from ...quantity import QuantityError
from ...resources import PODS, format_amount, parse_amount
from ...vocabulary import DEFAULT_NAMESPACE, JOB_NAME, TASK_INDEX, TASK_SPEC, VOLCANO_SCHEDULER
from . import admission
from .objects import KubeObject, PodView
from .provenance import Origin, Rest
from .tasks import INDEX, TaskReader

VCJOB_API = "batch.volcano.sh/"
_MODELLED = frozenset(
    {
        "minAvailable",
        "queue",
        "priorityClassName",
        "tasks",
        "networkTopology",
        "schedulerName",
        "maxRetry",
        "minSuccess",
        "ttlSecondsAfterFinished",
        "policies",
        "plugins",
        "volumes",
        "runningEstimate",
    }
)
"""Job spec fields vcopt reads, or that do not bear on placement (lifecycle, side objects)."""
_VCJOB_FIELDS = (
    ("name", "metadata.name"),
    ("namespace", "metadata.namespace"),
    ("labels", "metadata.labels"),
    ("annotations", "metadata.annotations"),
    ("creationTimestamp", "metadata.creationTimestamp"),
    ("queue", "spec.queue"),
    ("minAvailable", "spec.minAvailable"),
    ("priorityClassName", "spec.priorityClassName"),
    ("networkTopology", "spec.networkTopology"),
)
"""Where a vcjob's job fields are written in the vcjob."""
_TASK_COUNTED = ("name", "replicas", "minAvailable")
"""Task fields of the compact form written in the vcjob's task itself, not its template."""
_TASK_MODELLED = frozenset(
    {"name", "replicas", "minAvailable", "template", "policies", "maxRetry", "topologyPolicy"}
)
_TOPOLOGY_KEYS = ("mode", "highestTierAllowed", "highestTierName")
POD_SPEC_FIELDS = frozenset(
    {
        "activeDeadlineSeconds", "affinity", "automountServiceAccountToken", "containers",
        "dnsConfig", "dnsPolicy", "enableServiceLinks", "ephemeralContainers", "hostAliases",
        "hostIPC", "hostNetwork", "hostPID", "hostUsers", "hostname", "hostnameOverride",
        "imagePullSecrets", "initContainers", "nodeName", "nodeSelector", "os", "overhead",
        "preemptionPolicy", "priority", "priorityClassName", "readinessGates",
        "resourceClaims", "resources", "restartPolicy", "runtimeClassName", "schedulerName",
        "schedulingGates", "securityContext", "serviceAccount", "serviceAccountName",
        "setHostnameAsFQDN", "shareProcessNamespace", "subdomain",
        "terminationGracePeriodSeconds", "tolerations", "topologySpreadConstraints", "volumes",
    }
)  # fmt: skip
"""Kubernetes ``PodSpec`` fields: the API server prunes any other key of a template."""


@dataclass
class VcJobSeen:
    """A vcjob of the stream, its mutated spec, and what of the dump belongs to it."""

    o: KubeObject
    position: int
    spec: dict[str, Any]
    uid: str
    pods: list[PodView] = field(default_factory=list)
    podgroup: KubeObject | None = None

    @property
    def scheduler(self) -> str:
        """The scheduler its pods will name (``spec.schedulerName``, Volcano's by default)."""
        return self.spec.get("schedulerName") or VOLCANO_SCHEDULER

    @property
    def podgroup_names(self) -> tuple[str, ...]:
        """``<job>-<uid>`` as the controller names it, and the legacy ``<job>``."""
        names = [self.o.name]
        if self.uid:
            names.insert(0, f"{self.o.name}-{self.uid}")
        return tuple(names)


def is_vcjob(o: KubeObject) -> bool:
    return o.kind == "Job" and o.api_version.startswith(VCJOB_API)


def owner_job(metadata: Mapping[str, Any]) -> str | None:
    """The vcjob that controls an object, by its controller owner reference."""
    refs = metadata.get("ownerReferences")
    for ref in refs if isinstance(refs, list) else []:
        if (
            isinstance(ref, Mapping)
            and ref.get("kind") == "Job"
            and str(ref.get("apiVersion", "")).startswith(VCJOB_API)
            and ref.get("controller") is True
        ):
            name = ref.get("name")
            return name if isinstance(name, str) else None
    return None


def pod_job(view: PodView) -> str | None:
    return owner_job(view.o.metadata) or view.annotations.get(JOB_NAME)


class VcJobReader(TaskReader):
    """Reads vcjobs; :meth:`vcjob_entry` builds one, once the whole dump is known."""

    def read_vcjob(self, o: KubeObject, position: int) -> VcJobSeen | None:
        """The job after the mutating webhook, or None when Volcano would refuse it (the
        refusals are recorded). Whether Volcano schedules its pods is decided once the dump's
        scheduler names are known (:attr:`VcJobSeen.scheduler`)."""
        if not admission.shape_refusals(o.doc.get("spec"), o.obj, self.diag):
            return None
        mutated = admission.mutate(o.doc["spec"])
        errors = len(self.diag.errors)
        admission.refusals(o.name, mutated, o.obj, self.diag)
        if len(self.diag.errors) > errors:
            return None
        uid = o.metadata.get("uid")
        return VcJobSeen(o, position, mutated, uid if isinstance(uid, str) else "")

    def vcjob_entry(
        self,
        job: VcJobSeen,
        queues: Sequence[Mapping[str, Any]],
        classes: Mapping[str, int],
        default_priority: int,
    ) -> dict[str, Any] | None:
        o, spec = job.o, job.spec
        errors = len(self.diag.errors)
        admission.queue_refusals(spec, queues, o.obj, self.diag)
        if len(self.diag.errors) > errors:
            return None
        self._warn_unmodelled(o, spec)
        tasks = spec["tasks"]
        compact = obj_name("Job", o.name, o.namespace or DEFAULT_NAMESPACE)
        self.origins.add_object(compact, o.obj, _VCJOB_FIELDS)
        for derived in ("minTaskMember", "minResources"):
            self.origins.add(compact, derived, Origin(o.obj, "spec.tasks", Rest.DERIVED))
        self.origins.add(compact, "priority", Origin(o.obj, "spec.priorityClassName", Rest.DERIVED))
        if job.podgroup is not None:
            self.origins.add(compact, "phase", Origin(job.podgroup.obj, "status.phase"))
        entry: dict[str, Any] = {
            "name": o.name,
            "namespace": o.namespace or DEFAULT_NAMESPACE,
            "queue": spec["queue"],
            "minAvailable": spec["minAvailable"],
            "minTaskMember": {t["name"]: _min_task_member(t) for t in tasks},
            "minResources": self._min_resources(o, tasks, spec["minAvailable"], classes),
        }
        job_class = spec.get("priorityClassName") or ""
        if job_class:
            entry["priorityClassName"] = job_class
            if job_class not in classes:
                self._missing_class(o, "spec.priorityClassName", job_class, default_priority)
                entry["priority"] = default_priority
        topology = spec.get("networkTopology")
        if isinstance(topology, Mapping):
            entry["networkTopology"] = {k: topology[k] for k in _TOPOLOGY_KEYS if k in topology}
        for key in ("labels", "annotations"):
            values = self._metadata_map(o, key)
            if values:
                entry[key] = values
        if o.metadata.get("creationTimestamp") is not None:
            entry["creationTimestamp"] = o.metadata["creationTimestamp"]
        entry["tasks"] = [
            self._template_task(o, compact, i, t, job_class, classes, default_priority)
            for i, t in enumerate(tasks)
        ]
        running = self._job_running(compact, job, {t["name"]: t for t in tasks})
        if running:
            entry["running"] = running
        phase = self._phase(job)
        if phase:
            entry["phase"] = phase
        return entry

    def _template_task(
        self,
        o: KubeObject,
        compact: str,
        i: int,
        task: Mapping[str, Any],
        job_class: str,
        classes: Mapping[str, int],
        default_priority: int,
    ) -> dict[str, Any]:
        """The task as its pods will be: the template, with the controller's priority class
        fallback and the requests Kubernetes defaults from limits."""
        path = f"spec.tasks[{i}].template"
        template = self._mapping(o, task, "template", path)
        pod_spec = self._mapping(o, template, "spec", f"{path}.spec")
        metadata = self._mapping(o, template, "metadata", f"{path}.metadata")
        annotations = self._strings(
            o, metadata, "annotations", f"{path}.metadata.annotations", check_annotations
        )
        labels = self._strings(o, metadata, "labels", f"{path}.metadata.labels", check_labels)
        view = PodView(
            o=o,
            position=0,
            spec=pod_spec,
            annotations=annotations,
            task_annotations=annotations,
            labels=labels,
            node=None,
            containers=self._list(o, pod_spec, "containers", f"{path}.spec.containers"),
            init_containers=self._list(
                o, pod_spec, "initContainers", f"{path}.spec.initContainers"
            ),
            path=f"{path}.spec",
        )
        for key in pod_spec:
            if key not in POD_SPEC_FIELDS:
                self.diag.warn(
                    o.obj,
                    f"{path}.spec.{key}",
                    "not a field of a pod spec: the API server drops it; ignored",
                )
        for key in ("resourceClaims", "schedulingGates"):
            if pod_spec.get(key):
                self.diag.warn(
                    o.obj,
                    f"{path}.spec.{key}",
                    "not modelled by vcopt; the pods are planned as if it were absent",
                )
        at = f"tasks[{i}]"
        self.origins.add_object(
            compact, o.obj, ((f"{at}.{k}", f"spec.{at}.{k}") for k in _TASK_COUNTED)
        )
        self.origins.add(compact, at, Origin(o.obj, f"spec.{at}", Rest.DERIVED))
        if not pod_spec.get("priorityClassName"):
            self.origins.add(
                compact, f"{at}.priorityClassName", Origin(o.obj, "spec.priorityClassName")
            )
        self.origins.add(
            compact, f"{at}.priority", Origin(o.obj, "spec.priorityClassName", Rest.DERIVED)
        )
        self.task_origins(compact, at, view)
        replicas = task.get("replicas") or 0
        entry = self.task(task["name"], [view])
        entry["replicas"] = replicas
        entry["minAvailable"] = task["minAvailable"]
        pod_class = pod_spec.get("priorityClassName") or job_class
        entry.pop("priority", None)
        if pod_class:
            entry["priorityClassName"] = pod_class
            if pod_class not in classes:
                where = (
                    f"{path}.spec.priorityClassName"
                    if pod_spec.get("priorityClassName")
                    else "spec.priorityClassName"
                )
                self._missing_class(o, where, pod_class, default_priority)
                entry["priority"] = default_priority
        elif default_priority:
            entry["priority"] = default_priority
        if task.get("topologyPolicy") not in (None, "", "none"):
            self.diag.warn(
                o.obj, f"spec.tasks[{i}].topologyPolicy", "NUMA-aware placement is not modelled"
            )
        return entry

    def _job_running(
        self, compact: str, job: VcJobSeen, tasks: Mapping[str, Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        """The job's bound pods, by the task and index the controller wrote on them."""
        out: list[dict[str, Any]] = []
        by_task: dict[str, list[tuple[int, PodView]]] = {}
        for view in job.pods:
            task = view.annotations.get(TASK_SPEC) or view.labels.get(TASK_SPEC, "")
            text = view.annotations.get(TASK_INDEX) or view.o.name.rpartition("-")[2]
            if task not in tasks or not INDEX.fullmatch(text):
                self.diag.warn(
                    view.o.obj,
                    f"metadata.annotations.{TASK_SPEC}",
                    f"task {shown_value(task)} is not a task of {job.o.obj}; the pod is ignored",
                )
                continue
            index = int(text)
            if index >= (tasks[task].get("replicas") or 0):
                self.diag.warn(
                    view.o.obj,
                    f"metadata.annotations.{TASK_INDEX}",
                    f"index {index} is not below the task's replicas: the job controller "
                    "deletes the pod; ignored",
                )
                continue
            by_task.setdefault(task, []).append((index, view))
        for task, indexed in by_task.items():
            out.extend(self.running(compact, task, indexed, len(out)))
        return out

    def _phase(self, job: VcJobSeen) -> str | None:
        """The PodGroup's phase when the dump has it; without a PodGroup the controller has
        not synced the job yet, and its PodGroup will start Pending."""
        if job.podgroup is None:
            return None
        status = self._mapping(job.podgroup, job.podgroup.doc, "status", "status")
        phase = status.get("phase")
        return phase if isinstance(phase, str) and phase else None

    def _min_resources(
        self,
        o: KubeObject,
        tasks: Sequence[Mapping[str, Any]],
        least: int,
        classes: Mapping[str, int],
    ) -> dict[str, str]:
        """``calcPGMinResources`` (§5.3): the first ``minMember`` pods in task priority order."""
        usages = [self._usage(o, i, t) for i, t in enumerate(tasks)]
        prios = [_template_priority(t, classes) for t in tasks]
        order = sorted(range(len(tasks)), key=lambda i: -prios[i])
        counts = _min_resource_counts(
            [(tasks[i].get("replicas") or 0, tasks[i]["minAvailable"]) for i in order], least
        )
        total: dict[str, int] = {}
        for i, n in zip(order, counts, strict=True):
            for name, amount in usages[i].items():
                total[name] = total.get(name, 0) + n * amount
        return {name: format_amount(name, amount) for name, amount in total.items() if amount}

    def _usage(self, o: KubeObject, i: int, task: Mapping[str, Any]) -> dict[str, int]:
        """One pod's quota usage from the template as written: requests only (no defaulting
        from limits here, unlike the pod Kubernetes creates), init containers by maximum."""
        template = task.get("template")
        spec = template.get("spec") if isinstance(template, Mapping) else None
        usage: dict[str, int] = {PODS: 1}

        def requests(container: object) -> dict[str, int]:
            res = container.get("resources") if isinstance(container, Mapping) else None
            req = res.get("requests") if isinstance(res, Mapping) else None
            out = {}
            for name, value in (req if isinstance(req, Mapping) else {}).items():
                if _quota_counted(str(name)):
                    try:
                        out[str(name)] = parse_amount(str(name), value)
                    except QuantityError:
                        continue
            return out

        spec = spec if isinstance(spec, Mapping) else {}
        for container in spec.get("containers") or []:
            for name, amount in requests(container).items():
                usage[name] = usage.get(name, 0) + amount
        for container in spec.get("initContainers") or []:
            for name, amount in requests(container).items():
                usage[name] = max(usage.get(name, 0), amount)
        return usage

    def _missing_class(self, o: KubeObject, field: str, name: str, default: int) -> None:
        self.diag.warn(
            o.obj,
            field,
            f"PriorityClass {shown_value(name)} is not in the input; read with the default "
            f"priority ({default}); Kubernetes refuses the pods until the class exists",
        )

    def _warn_unmodelled(self, o: KubeObject, spec: Mapping[str, Any]) -> None:
        for key in spec:
            if key not in _MODELLED:
                self.diag.warn(o.obj, f"spec.{key}", "not modelled by vcopt; ignored")
        for i, task in enumerate(spec["tasks"]):
            for key in task:
                if key == "partitionPolicy":
                    self.diag.warn(
                        o.obj,
                        f"spec.tasks[{i}].partitionPolicy",
                        "partitions (the PodGroup's subGroupPolicy) are not modelled: the "
                        "task is placed as one gang part, without the partition topology",
                    )
                elif key == "dependsOn":
                    self.diag.warn(
                        o.obj,
                        f"spec.tasks[{i}].dependsOn",
                        "the controller creates these pods only once their dependencies are "
                        "ready; vcopt plans them as if they existed",
                    )
                elif key not in _TASK_MODELLED:
                    self.diag.warn(
                        o.obj, f"spec.tasks[{i}].{key}", "not modelled by vcopt; ignored"
                    )


def _min_task_member(task: Mapping[str, Any]) -> int:
    return int(task["minAvailable"])


def _template_priority(task: Mapping[str, Any], classes: Mapping[str, int]) -> int:
    """The task's priority for ``minResources``: its template class only, 0 when unknown."""
    template = task.get("template")
    spec = template.get("spec") if isinstance(template, Mapping) else None
    name = spec.get("priorityClassName") if isinstance(spec, Mapping) else None
    return classes.get(name, 0) if isinstance(name, str) else 0


def _min_resource_counts(tasks: Sequence[tuple[int, int]], least: int) -> list[int]:
    """Pods of each (replicas, minAvailable) task, in priority order, that ``minResources``
    counts: Case A (``least`` below Σ minAvailable) takes whole tasks in order, Case B first
    each task's minAvailable, then the rest of its replicas."""
    counts = [0] * len(tasks)
    if least <= 0:
        return counts
    if least < sum(m for _, m in tasks):
        left = least
        for i, (replicas, _) in enumerate(tasks):
            counts[i] = min(left, replicas)
            left -= counts[i]
            if left <= 0:
                break
        return counts
    placed = 0
    for i, (_, minimum) in enumerate(tasks):
        counts[i] = min(minimum, least - placed)
        placed += counts[i]
        if placed >= least:
            return counts
    left = least - placed
    for i, (replicas, minimum) in enumerate(tasks):
        if minimum != replicas:
            extra = min(replicas - minimum, left)
            counts[i] += extra
            left -= extra
            if left <= 0:
                break
    return counts


def _quota_counted(name: str) -> bool:
    """Requests the quota usage counts and the scheduler reads back from ``minResources``:
    cpu, memory, ephemeral storage, huge pages and extended resources."""
    if name in ("cpu", "memory", "ephemeral-storage") or name.startswith("hugepages-"):
        return True
    return "/" in name and "kubernetes.io/" not in name
