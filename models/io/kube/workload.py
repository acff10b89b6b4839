"""The workload of a dump: PodGroups and Pods, assembled into the jobs of the compact form.

Jobs are assembled only once the whole stream is read, because a pod may come before its
PodGroup, a PodGroup before its PriorityClass, and any of them before the ``vcopt-snapshot``
ConfigMap that says which scheduler names are Volcano's. What becomes of a pod:

- Succeeded and Failed pods hold nothing (Volcano's cache drops them): ignored, with one
  warning for all of them.
- A terminating pod (``deletionTimestamp`` set) that is bound is Releasing in Volcano's cache:
  it holds its node's resources until it is gone, so it is read as running; one that is not
  bound is ignored. One warning says so for all of them.
- A pod whose ``spec.schedulerName`` is not one of Volcano's names is another scheduler's
  (a DaemonSet's, kube-scheduler's), even when it names a PodGroup: Volcano's cache adds it to
  its node and to no job. A bound one becomes a job with ``schedulerName`` set and no queue,
  node usage only; pending ones are ignored, with one warning for all of them.
- Volcano's pods join their vcjob, else their PodGroup, whose tasks they become by what makes
  them alike (``members.py``); a pod that belongs to no PodGroup of the dump is a one-pod job
  of its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal

from ...errors import Diagnostics, obj_name, shown_value
from ...names import subdomain_problem
from ...queues import DEFAULT_QUEUE
from ...vocabulary import (
    GROUP_NAME,
    HAMI_ALLOCATED,
    HAMI_NODE,
    HAMI_TO_ALLOCATE,
    JOB_NAME,
    TASK_INDEX,
    VOLCANO_ALLOCATED,
)
from .members import LONE_TASK, member_tasks
from .objects import LAST_APPLIED, KubeObject, PodView, type_name
from .provenance import Origin, Provenance, Rest
from .vcjob import VcJobReader, VcJobSeen, owner_job, pod_job

GROUP_NAME_KEYS = (GROUP_NAME, "scheduling.volcano.sh/group-name")
"""Pod annotations naming the PodGroup, Volcano's own first."""
QUEUE_NAME_KEYS = ("scheduling.volcano.sh/queue-name", "volcano.sh/queue-name")

_POD_BOOKKEEPING = frozenset(
    {
        *GROUP_NAME_KEYS,
        *QUEUE_NAME_KEYS,
        LAST_APPLIED,
        JOB_NAME,
        "volcano.sh/job-version",
        "volcano.sh/job-retry-count",
        "volcano.sh/template-uid",
        TASK_INDEX,
        "batch.kubernetes.io/job-completion-index",
        HAMI_ALLOCATED,
        HAMI_TO_ALLOCATE,
        HAMI_NODE,
        "hami.io/vgpu-time",
        "hami.io/vgpu-mig-allocations",
        "hami.io/bind-phase",
        "hami.io/bind-time",
        VOLCANO_ALLOCATED,
        "volcano.sh/devices-to-allocate",
        "volcano.sh/vgpu-node",
        "volcano.sh/vgpu-time",
        "volcano.sh/bind-phase",
        "volcano.sh/bind-time",
    }
)
"""Pod annotations the job controller, the scheduler or HAMi write; they say nothing about what
the pod asks for, and several differ from pod to pod."""
_PODINDEX_LABELS = frozenset(
    {
        TASK_INDEX,
        "apps.kubernetes.io/pod-index",
        "statefulset.kubernetes.io/pod-name",
        "batch.kubernetes.io/job-completion-index",
        "spark-exec-id",
        "training.kubeflow.org/replica-index",
        "replica-index",
        "tf-replica-index",
        "pytorch-replica-index",
    }
)
"""Pod labels that carry the pod's own index or id (the workload controllers', Spark's and
the Kubeflow training operator's), so they always differ within a task."""
_NETWORK_TOPOLOGY_KEYS = ("mode", "highestTierAllowed", "highestTierName")
_PODGROUP_SPEC_KEYS = frozenset(
    {"minMember", "minTaskMember", "minResources", "queue", "priorityClassName", "networkTopology"}
)
_PODGROUP_FIELDS = (
    ("name", "metadata.name"),
    ("namespace", "metadata.namespace"),
    ("labels", "metadata.labels"),
    ("annotations", "metadata.annotations"),
    ("creationTimestamp", "metadata.creationTimestamp"),
    ("phase", "status.phase"),
    ("queue", "spec.queue"),
    ("minAvailable", "spec.minMember"),
    ("minTaskMember", "spec.minTaskMember"),
    ("minResources", "spec.minResources"),
    ("priorityClassName", "spec.priorityClassName"),
    ("networkTopology", "spec.networkTopology"),
)
"""Where a PodGroup's job fields are written in the PodGroup."""
_POD_JOB_FIELDS = (
    ("name", "metadata.name"),
    ("namespace", "metadata.namespace"),
    ("creationTimestamp", "metadata.creationTimestamp"),
    ("priority", "spec.priority"),
    ("priorityClassName", "spec.priorityClassName"),
    ("schedulerName", "spec.schedulerName"),
)
"""Where the job fields of a pod that is a job of its own are written in the pod."""
_FINISHED = ("Succeeded", "Failed")
_FOREIGN_DROPPED = (
    "priority",
    "priorityClassName",
    "preemptionPolicy",
    "nodeSelector",
    "tolerations",
    "topologySpreadConstraints",
)
"""Task fields that bear only on placing or evicting a pod, which Volcano never does to
another scheduler's: its node affinity goes too, its pod terms stay."""


class WorkloadReader(VcJobReader):
    """Collects PodGroups and pods as they come; :meth:`jobs` assembles them at the end."""

    def __init__(
        self,
        diag: Diagnostics,
        priority_classes: list[dict[str, Any]],
        origins: Provenance | None = None,
    ) -> None:
        super().__init__(diag, origins)
        self.priority_classes = priority_classes
        """The PriorityClass entries read so far (the cluster reader's list, shared)."""
        self.podgroups: dict[tuple[str, str], tuple[int, KubeObject]] = {}
        self.pods: list[PodView] = []
        self.seen_pods: set[tuple[str, str]] = set()
        self.vcjobs: dict[tuple[str, str], VcJobSeen] = {}
        self.owners: set[tuple[str, str, str]] = set()
        """(namespace, kind, name) of every pod's owners: which controllers' pods are here."""
        self.finished: Counter[str] = Counter()
        """Finished pods by phase: they hold nothing."""
        self.terminating = Counter({"bound": 0, "pending": 0})
        """Terminating pods, bound (read as running) or not (ignored)."""

    def add_vcjob(self, o: KubeObject, position: int) -> None:
        key = (o.namespace, o.name)
        if key in self.vcjobs:
            self.diag.error(o.obj, "metadata.name", "duplicate Job in namespace")
            return
        job = self.read_vcjob(o, position)
        if job is not None:
            self.vcjobs[key] = job

    def add_podgroup(self, o: KubeObject, position: int) -> None:
        key = (o.namespace, o.name)
        if key in self.podgroups:
            self.diag.error(o.obj, "metadata.name", "duplicate PodGroup in namespace")
        else:
            self.podgroups[key] = (position, o)

    def add_pod(self, o: KubeObject, position: int) -> None:
        if (o.namespace, o.name) in self.seen_pods:
            self.diag.error(o.obj, "metadata.name", "duplicate Pod in namespace")
            return
        self.seen_pods.add((o.namespace, o.name))
        refs = o.metadata.get("ownerReferences")
        for ref in refs if isinstance(refs, list) else []:
            if isinstance(ref, Mapping):
                self.owners.add((o.namespace, str(ref.get("kind", "")), str(ref.get("name", ""))))
        view = self._pod_view(o, position)
        if view is not None:
            self.pods.append(view)

    def _pod_view(self, o: KubeObject, position: int) -> PodView | None:
        """The pod as it enters the snapshot, or None when it holds nothing (finished, or
        deleted before it was bound) or cannot be read (reported)."""
        spec = self._mapping(o, o.doc, "spec", "spec")
        phase = self._mapping(o, o.doc, "status", "status").get("phase") or "Pending"
        if not isinstance(phase, str):
            self.diag.error(o.obj, "status.phase", f"expected a string, got {type_name(phase)}")
            return None
        if phase in _FINISHED:
            self.finished[phase] += 1
            return None
        node = self._node_name(o, spec)
        if node is False:
            return None
        if o.metadata.get("deletionTimestamp") is not None:
            self.terminating["bound" if node else "pending"] += 1
            if node is None:
                return None
        scheduler = spec.get("schedulerName")
        if scheduler is not None and not isinstance(scheduler, str):
            self.diag.error(
                o.obj, "spec.schedulerName", f"expected a string, got {type_name(scheduler)}"
            )
            return None
        lists = self._containers(o, spec)
        if lists is None:
            return None
        containers, init_containers = lists
        annotations = self._metadata_map(o, "annotations")
        labels = self._metadata_map(o, "labels")
        if spec.get("resourceClaims"):
            self.diag.warn(
                o.obj,
                "spec.resourceClaims",
                "DRA claims are not modelled: the pod is planned without the devices it claims",
            )
        return PodView(
            o=o,
            position=position,
            spec=spec,
            annotations=annotations,
            task_annotations={k: v for k, v in annotations.items() if k not in _POD_BOOKKEEPING},
            labels={k: v for k, v in labels.items() if k not in _PODINDEX_LABELS},
            node=node,
            containers=containers,
            init_containers=init_containers,
            scheduler=scheduler or None,
        )

    def _containers(
        self, o: KubeObject, spec: Mapping[str, Any]
    ) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]] | None:
        """The app and init containers, or None when the pod has none or one is no mapping
        (reported)."""
        containers = self._list(o, spec, "containers", "spec.containers")
        init_containers = self._list(o, spec, "initContainers", "spec.initContainers")
        if not containers:
            if spec.get("containers") in (None, []):
                self.diag.error(o.obj, "spec.containers", "a pod needs at least one container")
            return None
        for key, items in (("containers", containers), ("initContainers", init_containers)):
            for i, container in enumerate(items):
                if not isinstance(container, Mapping):
                    self.diag.error(o.obj, f"spec.{key}[{i}]", "expected a mapping")
                    return None
        return containers, init_containers

    def _node_name(self, o: KubeObject, spec: Mapping[str, Any]) -> str | Literal[False] | None:
        """``spec.nodeName``: the node, None when the pod is not bound, False when it cannot
        be read (reported): such a pod would otherwise be planned again, freeing what it
        holds."""
        node = spec.get("nodeName")
        if node is not None and not isinstance(node, str):
            self.diag.error(o.obj, "spec.nodeName", f"expected a string, got {type_name(node)}")
            return False
        if node and (problem := subdomain_problem(node)):
            self.diag.error(o.obj, "spec.nodeName", f"not a node name: {problem}")
            return False
        return node or None

    def jobs(
        self, queues: Sequence[Mapping[str, Any]], scheduler_names: Collection[str]
    ) -> list[dict[str, Any]]:
        """Jobs in the order their vcjob, PodGroup (or lone pod) appeared: the loader's
        tie-break. ``queues`` are the dump's, which a vcjob's admission checks;
        ``scheduler_names`` are the names Volcano answers to."""
        vcjobs = self._volcano_vcjobs(scheduler_names)
        by_podgroup = self._claim_podgroups(vcjobs)
        members: dict[tuple[str, str], list[PodView]] = {key: [] for key in self.podgroups}
        positioned: list[tuple[int, dict[str, Any]]] = []
        pending_foreign: Counter[str] = Counter()
        for view in self.pods:
            if view.scheduler is not None and view.scheduler not in scheduler_names:
                if view.node is None:
                    pending_foreign[view.scheduler] += 1
                else:
                    positioned.append((view.position, self._foreign_job(view)))
                continue
            key_name = next((k for k in GROUP_NAME_KEYS if view.annotations.get(k)), None)
            group = view.annotations[key_name] if key_name else ""
            owner = vcjobs.get((view.o.namespace, pod_job(view) or ""))
            owner = owner or by_podgroup.get((view.o.namespace, group))
            if owner is not None:
                owner.pods.append(view)
                continue
            if (view.o.namespace, group) in members:
                members[view.o.namespace, group].append(view)
                continue
            if key_name:
                self.diag.warn(
                    view.o.obj,
                    f"metadata.annotations.{key_name}",
                    f"PodGroup {shown_value(group)} is not in the snapshot; the pod is read as "
                    "its own job",
                )
            positioned.append((view.position, self._lone_job(view)))
        for key, (position, o) in self.podgroups.items():
            positioned.append((position, self._podgroup_job(o, members[key])))
        classes = {pc["name"]: pc["value"] for pc in self.priority_classes if "value" in pc}
        for vcjob in vcjobs.values():
            job = self.vcjob_entry(vcjob, queues, classes, self._default_priority())
            if job is not None:
                positioned.append((vcjob.position, job))
        self._summaries(pending_foreign)
        positioned.sort(key=lambda item: item[0])
        return [job for _, job in positioned]

    def _volcano_vcjobs(self, scheduler_names: Collection[str]) -> dict[tuple[str, str], VcJobSeen]:
        """The vcjobs whose pods Volcano schedules; the others are ignored, and their pods,
        which carry the job's scheduler name, are another scheduler's."""
        out = {}
        for key, job in self.vcjobs.items():
            if job.scheduler in scheduler_names:
                out[key] = job
            else:
                self.diag.warn(
                    job.o.obj,
                    "spec.schedulerName",
                    f"{shown_value(job.scheduler)}: not Volcano's; ignored",
                )
        return out

    def _summaries(self, pending_foreign: Counter[str]) -> None:
        """One warning for each kind of pod the snapshot leaves out or reads differently,
        however many pods there are: a dump of a production cluster holds hundreds."""
        if self.finished:
            n = sum(self.finished.values())
            self.diag.warn(
                "",
                "",
                f"{_pods(n, 'finished pod')} ({_breakdown(self.finished)}) "
                f"{_be(n)} ignored: a finished pod holds nothing",
            )
        if pending_foreign:
            n = sum(pending_foreign.values())
            whose = "another scheduler" if n == 1 else "other schedulers"
            self.diag.warn(
                "",
                "",
                f"{_pods(n, 'pending pod')} of {whose} ({_breakdown(pending_foreign)}) "
                f"{_be(n)} not Volcano's and {_be(n)} ignored",
            )
        bound, pending = self.terminating["bound"], self.terminating["pending"]
        if bound or pending:
            parts = []
            if bound:
                parts.append(
                    f"{bound} bound {_be(bound)} read as running, since Volcano counts a "
                    "Releasing pod on its node until it is gone (vcopt also counts it for "
                    "topology spread, which Volcano does not)"
                )
            if pending:
                parts.append(f"{pending} not bound {_be(pending)} ignored")
            self.diag.warn(
                "",
                "",
                f"{_pods(bound + pending, 'terminating pod')} (deletionTimestamp set): "
                + "; ".join(parts),
            )

    def _claim_podgroups(
        self, vcjobs: Mapping[tuple[str, str], VcJobSeen]
    ) -> dict[tuple[str, str], VcJobSeen]:
        """Give each vcjob its PodGroup (by owner reference or by name) and take it out of the
        PodGroups read as jobs; the result maps PodGroup names to their vcjob."""
        claimed: dict[tuple[str, str], VcJobSeen] = {}
        names = {
            (job.o.namespace, name): job for job in vcjobs.values() for name in job.podgroup_names
        }
        for key, (_, o) in list(self.podgroups.items()):
            owner = vcjobs.get((o.namespace, owner_job(o.metadata) or "")) or names.get(key)
            if owner is not None:
                owner.podgroup = o
                claimed[key] = owner
                del self.podgroups[key]
        for key, job in names.items():
            claimed.setdefault(key, job)
        return claimed

    def _podgroup_job(self, o: KubeObject, views: list[PodView]) -> dict[str, Any]:
        spec = self._mapping(o, o.doc, "spec", "spec")
        compact = obj_name("Job", o.name, o.namespace)
        self.origins.add_object(compact, o.obj, _PODGROUP_FIELDS)
        self.origins.add(compact, "priority", Origin(o.obj, "spec.priorityClassName", Rest.DERIVED))
        job: dict[str, Any] = {
            "name": o.name,
            "namespace": o.namespace,
            "queue": spec.get("queue") or DEFAULT_QUEUE,
            "copyAnnotations": False,
            **self._podgroup_spec(o, spec),
        }
        phase = self._mapping(o, o.doc, "status", "status").get("phase")
        if phase:
            job["phase"] = phase
        self._job_metadata(o, job)
        if not views:
            self.diag.warn(
                o.obj,
                "",
                "no pods in the input: kept as a job that enqueue decides on (minMember, "
                "minResources); its pods cannot be placed, since vcopt cannot see them",
            )
            return job
        job["tasks"] = []
        running = []
        for member in member_tasks(o.name, views):
            task = self.task(member.name, member.views)
            names = [view.o.name for view in member.views]
            if names != [f"{o.name}-{member.name}-{i}" for i in range(len(names))]:
                task["podNames"] = names
            self.task_origins(compact, f"tasks[{len(job['tasks'])}]", member.views[0])
            job["tasks"].append(task)
            indexed = list(enumerate(member.views))
            running.extend(self.running(compact, member.name, indexed, len(running)))
        if running:
            job["running"] = running
        return job

    def _podgroup_spec(self, o: KubeObject, spec: Mapping[str, Any]) -> dict[str, Any]:
        """The PodGroup spec fields the compact job has; the others are warned about."""
        out: dict[str, Any] = {}
        for key, name in (
            ("minMember", "minAvailable"),
            ("minTaskMember", "minTaskMember"),
            ("minResources", "minResources"),
        ):
            if key in spec:
                out[name] = spec[key]
        class_name = spec.get("priorityClassName")
        if class_name:
            out["priorityClassName"] = class_name
            known = {pc["name"] for pc in self.priority_classes}
            if isinstance(class_name, str) and class_name not in known:
                default = self._default_priority()
                self.diag.warn(
                    o.obj,
                    "spec.priorityClassName",
                    f"PriorityClass {shown_value(class_name)} is not in the snapshot; Volcano "
                    f"then uses the default priority ({default})",
                )
                out["priority"] = default
        topology = self._mapping(o, spec, "networkTopology", "spec.networkTopology")
        if topology:
            out["networkTopology"] = {
                k: topology[k] for k in _NETWORK_TOPOLOGY_KEYS if k in topology
            }
            for key in topology:
                if key not in _NETWORK_TOPOLOGY_KEYS:
                    self._not_modelled(o, f"spec.networkTopology.{key}")
        for key in spec:
            if key not in _PODGROUP_SPEC_KEYS:
                self._not_modelled(o, f"spec.{key}")
        return out

    def _lone_job(self, view: PodView) -> dict[str, Any]:
        o = view.o
        job: dict[str, Any] = {"name": o.name, "namespace": o.namespace}
        key = next((k for k in QUEUE_NAME_KEYS if k in view.annotations), None)
        job["queue"] = (view.annotations[key] if key else "") or DEFAULT_QUEUE
        if key is not None:
            compact = obj_name("Job", o.name, o.namespace)
            self.origins.add(compact, "queue", Origin(o.obj, f"metadata.annotations.{key}"))
        priority = view.spec.get("priority")
        if priority is not None:
            job["priority"] = priority
        if view.spec.get("priorityClassName"):
            job["priorityClassName"] = view.spec["priorityClassName"]
        self._job_metadata(o, job, labels_and_annotations=False)
        return {**job, **self._one_pod(view)}

    def _foreign_job(self, view: PodView) -> dict[str, Any]:
        """A bound pod of another scheduler: node usage only, so no queue, and of its task
        only what holds room or meets other pods' terms (resources, labels, pod terms)."""
        job: dict[str, Any] = {
            "name": view.o.name,
            "namespace": view.o.namespace,
            "schedulerName": view.scheduler,
            **self._one_pod(view),
        }
        task = job["tasks"][0]
        for key in _FOREIGN_DROPPED:
            task.pop(key, None)
        terms = {k: v for k, v in task.pop("affinity", {}).items() if k != "nodeAffinity"}
        if terms:
            task["affinity"] = terms
        return job

    def _one_pod(self, view: PodView) -> dict[str, Any]:
        """The single task and running entry of a pod that is a job of its own."""
        o = view.o
        compact = obj_name("Job", o.name, o.namespace)
        self.origins.add_object(compact, o.obj, _POD_JOB_FIELDS)
        self.task_origins(compact, "tasks[0]", view)
        out: dict[str, Any] = {
            "tasks": [{**self.task(LONE_TASK, [view]), "podNames": [view.o.name]}]
        }
        running = self.running(compact, LONE_TASK, [(0, view)], 0)
        if running:
            out["running"] = running
        return out

    def _job_metadata(
        self, o: KubeObject, job: dict[str, Any], *, labels_and_annotations: bool = True
    ) -> None:
        if labels_and_annotations:
            for key in ("labels", "annotations"):
                values = self._metadata_map(o, key)
                if values:
                    job[key] = values
        if o.metadata.get("creationTimestamp") is not None:
            job["creationTimestamp"] = o.metadata["creationTimestamp"]

    def _default_priority(self) -> int:
        for pc in self.priority_classes:
            if pc.get("globalDefault") is True and isinstance(pc.get("value"), int):
                return pc["value"]
        return 0

    def _not_modelled(self, o: KubeObject, field: str) -> None:
        self.diag.warn(o.obj, field, "not modelled by vcopt; ignored")


def _pods(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _be(n: int) -> str:
    return "is" if n == 1 else "are"


def _breakdown(counts: Counter[str]) -> str:
    return ", ".join(f"{name}: {n}" for name, n in sorted(counts.items()))
