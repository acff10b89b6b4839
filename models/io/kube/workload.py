"""The workload of a dump: PodGroups and Pods, assembled into the jobs of the compact form.

Jobs are assembled only once the whole stream is read, because a pod may come before its
PodGroup and a PodGroup before its PriorityClass. A PodGroup's pods are named
``<podgroup>-<task>-<index>`` as a vcjob's are (or carry ``volcano.sh/task-spec``); a pod that
belongs to no PodGroup of the dump is a one-pod job of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import Diagnostics
from ...queues import DEFAULT_QUEUE
from ...vocabulary import (
    GROUP_NAME,
    HAMI_ALLOCATED,
    HAMI_NODE,
    HAMI_TO_ALLOCATE,
    JOB_NAME,
    TASK_INDEX,
    TASK_SPEC,
    VOLCANO_ALLOCATED,
)
from .objects import LAST_APPLIED, KubeObject, PodView
from .tasks import INDEX
from .vcjob import VcJobReader, VcJobSeen, owner_job, pod_job

GROUP_NAME_KEYS = (GROUP_NAME, "scheduling.volcano.sh/group-name")
"""Pod annotations naming the PodGroup, Volcano's own first."""
QUEUE_NAME_KEYS = ("scheduling.volcano.sh/queue-name", "volcano.sh/queue-name")
LONE_TASK = "main"
VOLCANO_SCHEDULER = "volcano"

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
    }
)
"""Pod labels that carry the pod's own index, so they always differ within a task."""
_NETWORK_TOPOLOGY_KEYS = ("mode", "highestTierAllowed", "highestTierName")
_PODGROUP_SPEC_KEYS = frozenset(
    {"minMember", "minTaskMember", "minResources", "queue", "priorityClassName", "networkTopology"}
)
_FINISHED = ("Succeeded", "Failed")


class WorkloadReader(VcJobReader):
    """Collects PodGroups and pods as they come; :meth:`jobs` assembles them at the end."""

    def __init__(self, diag: Diagnostics, priority_classes: list[dict[str, Any]]) -> None:
        super().__init__(diag)
        self.priority_classes = priority_classes
        """The PriorityClass entries read so far (the cluster reader's list, shared)."""
        self.podgroups: dict[tuple[str, str], tuple[int, KubeObject]] = {}
        self.pods: list[PodView] = []
        self.seen_pods: set[tuple[str, str]] = set()
        self.vcjobs: dict[tuple[str, str], VcJobSeen] = {}
        self.owners: set[tuple[str, str, str]] = set()
        """(namespace, kind, name) of every pod's owners: which controllers' pods are here."""

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
        """The pod as it enters the snapshot, or None when Volcano has nothing to do with it."""
        spec = self._mapping(o, o.doc, "spec", "spec")
        phase = self._mapping(o, o.doc, "status", "status").get("phase") or "Pending"
        if phase in _FINISHED:
            self.diag.warn(o.obj, "status.phase", f"{phase}: a finished pod is ignored")
            return None
        node = spec.get("nodeName")
        node = node if isinstance(node, str) and node else None
        scheduler = spec.get("schedulerName", VOLCANO_SCHEDULER)
        if scheduler != VOLCANO_SCHEDULER:
            if node is None:
                self.diag.warn(
                    o.obj, "spec.schedulerName", f"{scheduler!r}: not Volcano's pod; ignored"
                )
                return None
            self.diag.warn(
                o.obj,
                "spec.schedulerName",
                f"{scheduler!r}: kept as a running pod so that its node resources stay in use",
            )
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
        )

    def jobs(self, queues: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Jobs in the order their vcjob, PodGroup (or lone pod) appeared: the loader's
        tie-break. ``queues`` are the dump's, which a vcjob's admission checks."""
        by_podgroup = self._claim_podgroups()
        members: dict[tuple[str, str], list[PodView]] = {key: [] for key in self.podgroups}
        positioned: list[tuple[int, dict[str, Any]]] = []
        for view in self.pods:
            key_name = next((k for k in GROUP_NAME_KEYS if view.annotations.get(k)), None)
            group = view.annotations[key_name] if key_name else ""
            owner = self.vcjobs.get((view.o.namespace, pod_job(view) or ""))
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
                    f"PodGroup {group!r} is not in the snapshot; the pod is read as its own job",
                )
            job = self._lone_job(view)
            if job is not None:
                positioned.append((view.position, job))
        for key, (position, o) in self.podgroups.items():
            job = self._podgroup_job(o, members[key])
            if job is not None:
                positioned.append((position, job))
        classes = {pc["name"]: pc["value"] for pc in self.priority_classes if "value" in pc}
        for vcjob in self.vcjobs.values():
            job = self.vcjob_entry(vcjob, queues, classes, self._default_priority())
            if job is not None:
                positioned.append((vcjob.position, job))
        positioned.sort(key=lambda item: item[0])
        return [job for _, job in positioned]

    def _claim_podgroups(self) -> dict[tuple[str, str], VcJobSeen]:
        """Give each vcjob its PodGroup (by owner reference or by name) and take it out of the
        PodGroups read as jobs; the result maps PodGroup names to their vcjob."""
        claimed: dict[tuple[str, str], VcJobSeen] = {}
        names = {
            (job.o.namespace, name): job
            for job in self.vcjobs.values()
            for name in job.podgroup_names
        }
        for key, (_, o) in list(self.podgroups.items()):
            owner = self.vcjobs.get((o.namespace, owner_job(o.metadata) or "")) or names.get(key)
            if owner is not None:
                owner.podgroup = o
                claimed[key] = owner
                del self.podgroups[key]
        for key, job in names.items():
            claimed.setdefault(key, job)
        return claimed

    def _podgroup_job(self, o: KubeObject, views: list[PodView]) -> dict[str, Any] | None:
        spec = self._mapping(o, o.doc, "spec", "spec")
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
        tasks: dict[str, list[tuple[int, PodView]]] = {}
        for view in views:
            named = self._task_and_index(view, o.name)
            if named is not None:
                tasks.setdefault(named[0], []).append((named[1], view))
        if not tasks:
            return None
        job["tasks"] = []
        running = []
        for task_name, indexed in tasks.items():
            task = self.task(task_name, indexed)
            names = [view.o.name for _, view in sorted(indexed, key=lambda item: item[0])]
            if names != [f"{o.name}-{task_name}-{i}" for i in range(len(names))]:
                task["podNames"] = names
            job["tasks"].append(task)
            running.extend(self.running(task_name, indexed))
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
                    f"PriorityClass {class_name!r} is not in the snapshot; Volcano then uses "
                    f"the default priority ({default})",
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

    def _lone_job(self, view: PodView) -> dict[str, Any] | None:
        o = view.o
        job: dict[str, Any] = {"name": o.name, "namespace": o.namespace}
        queue = next((view.annotations[k] for k in QUEUE_NAME_KEYS if k in view.annotations), "")
        job["queue"] = queue or DEFAULT_QUEUE
        priority = view.spec.get("priority")
        if priority is not None:
            job["priority"] = priority
        if view.spec.get("priorityClassName"):
            job["priorityClassName"] = view.spec["priorityClassName"]
        self._job_metadata(o, job, labels_and_annotations=False)
        job["tasks"] = [{**self.task(LONE_TASK, [(0, view)]), "podNames": [o.name]}]
        running = self.running(LONE_TASK, [(0, view)])
        if running:
            job["running"] = running
        return job

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

    def _task_and_index(self, view: PodView, podgroup: str) -> tuple[str, int] | None:
        """A vcjob pod is ``<job>-<task>-<index>``; ``volcano.sh/task-spec`` names the task
        when present (then only the index is read from the name)."""
        o = view.o
        stem, _, last = o.name.rpartition("-")
        if not stem or not INDEX.fullmatch(last):
            self.diag.error(
                o.obj, "metadata.name", "expected <podgroup>-<task>-<index>: no -<index> suffix"
            )
            return None
        task = view.annotations.get(TASK_SPEC)
        if task:
            return task, int(last)
        prefix = f"{podgroup}-"
        if not stem.startswith(prefix) or len(stem) == len(prefix):
            self.diag.error(
                o.obj,
                "metadata.name",
                f"expected <podgroup>-<task>-<index> with PodGroup {podgroup!r}, "
                f"or a {TASK_SPEC} annotation naming the task",
            )
            return None
        return stem[len(prefix) :], int(last)
