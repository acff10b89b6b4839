"""The kubectl input form (models/io/kube/): a dump of live objects loads like its compact twin."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from models.errors import InputError, Problem
from models.io.kube import compact_from_objects
from models.load import from_documents, load, loads
from models.workload import DeviceShare, RunningPod

DATA = Path(__file__).parent / "data" / "kube"
EXAMPLES = Path("/work/shared/examples/volcano")


def _pod(
    name: str,
    *,
    group: str | None = "train",
    namespace: str = "default",
    cpu: str = "1",
    annotations: dict[str, str] | None = None,
    phase: str = "Pending",
    node: str | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    meta_annotations = dict(annotations or {})
    if group is not None:
        meta_annotations["scheduling.k8s.io/group-name"] = group
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "containers": containers
        or [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
    }
    if init_containers is not None:
        spec["initContainers"] = init_containers
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": meta_annotations},
        "spec": spec,
        "status": {"phase": phase},
    }


def _podgroup(name: str = "train", min_member: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member, **spec},
    }


def _node(name: str = "n1", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}, **status},
    }


def _translate(*docs: object) -> tuple[dict[str, Any], list[Problem], list[Problem]]:
    return compact_from_objects(list(docs), "dir/cluster-dump.yaml")


def _has(problems: list[Problem], obj: str, field: str, text: str) -> bool:
    return any(p.obj == obj and p.field == field and text in p.message for p in problems)


# -- the central test: a kubectl dump and its hand-written compact twin ----------------------


def test_snapshot_loads_into_the_same_instance_as_its_compact_twin() -> None:
    """snapshot.yaml (3 Nodes, one with a HAMi JSON inventory; 3 HyperNodes; a root → research
    → team-a queue tree plus default; a PriorityClass; the scheduler ConfigMap; a PodGroup with
    3 pods, one running with a HAMi device annotation; a lone pod) and snapshot-compact.yaml,
    written by hand from the reasoning in its header, must give equal Instances. ``now`` comes
    from the vcopt-snapshot ConfigMap in one and from ``now:`` in the other."""
    dumped = load(DATA / "snapshot.yaml")
    written = load(DATA / "snapshot-compact.yaml")
    assert dumped == written
    assert dumped.now == datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
    assert [j.key for j in dumped.jobs] == ["ml/llm-train", "default/debug-shell"]
    assert len(dumped.node_by_name["gpu-1"].gpus) == 2
    train = dumped.job_by_key["ml/llm-train"]
    assert train.running == (
        RunningPod(0, "gpu-1", "worker", ((DeviceShare("GPU-a100-0", 81920, 100),),)),
    )
    assert train.tasks[0].resources["cpu"] == 8100


def test_snapshot_keeps_the_lone_pods_name_and_warns_about_dropped_annotations() -> None:
    """The lone pod debug-shell keeps its cluster name as the pod of its one-pod job; the
    Calico pod IP (only on the running pod) is dropped, and the user must hear of it."""
    instance = load(DATA / "snapshot.yaml")
    assert [p.key for p in instance.job_by_key["default/debug-shell"].pods] == [
        "default/debug-shell"
    ]
    assert any(
        w.obj == 'Pod "ml/llm-train-worker-0"'
        and w.field == "metadata.annotations"
        and "cni.projectcalico.org/podIP" in w.message
        for w in instance.warnings
    )


def test_metadata_noise_does_not_reach_the_compact_form() -> None:
    """The compact schema forbids unknown fields, so uid, managedFields, status… must be gone."""
    compact, errors, _ = _translate(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "q", "uid": "u", "resourceVersion": "7", "managedFields": []},
            "spec": {"weight": 3},
            "status": {"state": "Open", "allocated": {"cpu": "1"}},
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "low", "uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "value": 10,
        },
    )
    assert errors == []
    assert compact["queues"] == [{"name": "q", "weight": 3, "state": "Open"}]
    assert compact["priorityClasses"] == [{"name": "low", "value": 10}]
    assert compact["metadata"] == {"name": "cluster-dump"}
    assert "now" not in compact


# -- stream structure ------------------------------------------------------------------------


def test_list_kind_items_are_read_like_documents() -> None:
    """``kubectl get nodes,queues -o yaml`` prints one ``kind: List``; a typed ``PodList`` may
    leave out its items' kind, which is then the list's kind without "List"."""
    compact, errors, _ = _translate(
        {"apiVersion": "v1", "kind": "List", "items": [_node("a"), _node("b")]},
        {"apiVersion": "v1", "kind": "PodList", "items": [{**_pod("solo", group=None)}]},
    )
    assert errors == []
    assert [n["name"] for n in compact["nodes"]] == ["a", "b"]
    del compact["jobs"][0]["tasks"]
    assert compact["jobs"] == [{"name": "solo", "namespace": "default", "queue": "default"}]


def test_list_items_without_kind_in_a_plain_list_are_errors() -> None:
    _, errors, _ = _translate({"kind": "List", "items": [{"metadata": {"name": "x"}}]})
    assert errors == [Problem("required: every object needs a kind", "document 1 items[0]", "kind")]


def test_unknown_kinds_are_ignored_with_a_warning() -> None:
    """PVCs are not part of a scheduling snapshot; a Deployment or a batch Job is a pod
    controller, whose pods are what Volcano schedules, so its warning says the pods are absent."""
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    batch = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"}}
    compact, errors, warnings = _translate(_node(), deployment, batch, pvc)
    assert errors == []
    assert _has(warnings, 'Deployment "web"', "", "its pods are not in the input")
    assert _has(warnings, 'Job "default/j"', "", "its pods are not in the input")
    assert _has(warnings, 'PersistentVolumeClaim "c"', "", "not a snapshot object; ignored")
    assert [n["name"] for n in compact["nodes"]] == ["n1"]


def test_a_document_that_is_not_a_mapping_is_an_error() -> None:
    _, errors, _ = _translate(_node(), ["not", "an", "object"], {"metadata": {"name": "x"}})
    assert errors == [
        Problem(
            "expected a Kubernetes object (a mapping with a kind), got a list", "document 2", ""
        ),
        Problem("required: every object needs a kind", "document 3", "kind"),
    ]


def test_errors_stop_the_loader_with_the_file_name() -> None:
    """train-w-0 and train-w-1 are named as one vcjob task's pods, so they come from one
    template; train-w-1 asking for 2 CPUs is an error, reported with the file's name."""
    with pytest.raises(InputError) as err:
        from_documents([_podgroup(), _pod("train-w-0"), _pod("train-w-1", cpu="2")], "dump.yaml")
    assert [(p.file, p.obj, p.field) for p in err.value.problems] == [
        ("dump.yaml", 'Pod "default/train-w-1"', "spec.containers[0].resources.requests.cpu")
    ]


# -- pods and tasks --------------------------------------------------------------------------


def test_pods_without_task_spec_are_named_podgroup_task_index() -> None:
    """Without ``volcano.sh/task-spec`` the task is what lies between ``train-`` and the index:
    train-ps-0 is task ps, train-worker-0/1 task worker with 2 replicas."""
    compact, errors, _ = _translate(
        _podgroup(min_member=3),
        _pod("train-worker-1"),
        _pod("train-ps-0"),
        _pod("train-worker-0"),
    )
    assert errors == []
    tasks = compact["jobs"][0]["tasks"]
    assert [(t["name"], t["replicas"]) for t in tasks] == [("worker", 2), ("ps", 1)]


def test_task_spec_annotation_names_the_task_and_pods_keep_their_names() -> None:
    """A vcjob whose PodGroup is ``<job>-<uid>`` names pods after the job, not the PodGroup;
    the task comes from the annotation, and the pod keeps its own name."""
    compact, errors, _ = _translate(
        _podgroup("train-abc"),
        _pod("train-worker-0", group="train-abc", annotations={"volcano.sh/task-spec": "worker"}),
    )
    assert errors == []
    task = compact["jobs"][0]["tasks"][0]
    assert (task["name"], task["podNames"]) == ("worker", ["train-worker-0"])


def test_pods_of_any_name_join_their_podgroup() -> None:
    """trainer has no -<index>, other-worker-0 does not start with its PodGroup's name, train-0
    has no task between PodGroup and index, and none has a task-spec or role label: alike in
    everything, they are one task ``main`` of 3 pods. They are ordered by (name before the
    index, index), a name without an index counting as a whole: other-worker/0, train/0,
    trainer."""
    compact, errors, _ = _translate(
        _podgroup(), _pod("trainer"), _pod("other-worker-0"), _pod("train-0")
    )
    assert errors == []
    [task] = compact["jobs"][0]["tasks"]
    assert (task["name"], task["replicas"]) == ("main", 3)
    assert task["podNames"] == ["other-worker-0", "train-0", "trainer"]


def test_a_gap_in_the_indices_keeps_the_pods_and_their_names() -> None:
    """train-w-1 is gone (finished, deleted): the task w has the 2 pods that are there, in
    index order, each under its own name."""
    compact, errors, _ = _translate(_podgroup(), _pod("train-w-2"), _pod("train-w-0"))
    assert errors == []
    [task] = compact["jobs"][0]["tasks"]
    assert (task["name"], task["replicas"]) == ("w", 2)
    assert task["podNames"] == ["train-w-0", "train-w-2"]


def test_pods_of_one_task_with_different_specs_are_an_error() -> None:
    """train-w-1 asks for 2 CPUs where train-w-0 asks for 1: the first differing field is the
    first container's cpu request, named as the pod spells it."""
    _, errors, _ = _translate(_podgroup(), _pod("train-w-0"), _pod("train-w-1", cpu="2"))
    assert len(errors) == 1
    assert errors[0].obj == 'Pod "default/train-w-1"'
    assert errors[0].field == "spec.containers[0].resources.requests.cpu"
    assert "train-w-0" in errors[0].message


def test_a_pod_whose_init_containers_are_no_list_is_reported_not_a_crash() -> None:
    """``initContainers: 3`` is reported on the pod; comparing it with its task's other pod
    then sees no init containers, so the pods still agree."""
    bad = _pod("train-w-0")
    bad["spec"]["initContainers"] = 3
    _, errors, _ = _translate(_podgroup(), bad, _pod("train-w-1"))
    assert [(p.obj, p.field) for p in errors] == [
        ('Pod "default/train-w-0"', "spec.initContainers")
    ]
    assert "expected a list" in errors[0].message


def test_annotations_vcopt_reads_must_agree_between_pods() -> None:
    """``volcano.sh/preemptable`` changes who may be evicted, so it cannot just be dropped."""
    _, errors, _ = _translate(
        _podgroup(),
        _pod("train-w-0", annotations={"volcano.sh/preemptable": "true"}),
        _pod("train-w-1", annotations={"volcano.sh/preemptable": "false"}),
    )
    assert [(p.obj, p.field) for p in errors] == [
        ('Pod "default/train-w-1"', "metadata.annotations.volcano.sh/preemptable")
    ]


def test_containers_are_summed_and_several_gpu_containers_warned() -> None:
    """Two containers with 1 GPU and 500m CPU each (limits only, so they are also the requests):
    one task asking for 2 GPUs and 1 CPU. The init containers' max is taken per resource:
    cpu max(2, 1) = 2, memory max(1Gi, 4Gi) = 4Gi."""
    containers = [
        {"name": n, "resources": {"limits": {"cpu": "500m", "nvidia.com/gpu": 1}}}
        for n in ("a", "b")
    ]
    init = [
        {"name": "i1", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
        {"name": "i2", "resources": {"requests": {"cpu": "1", "memory": "4Gi"}}},
    ]
    compact, errors, warnings = _translate(
        _podgroup(), _pod("train-w-0", containers=containers, init_containers=init)
    )
    assert errors == []
    task = compact["jobs"][0]["tasks"][0]
    assert task["resources"] == {
        "requests": {"cpu": "1", "nvidia.com/gpu": "2"},
        "limits": {"cpu": "1", "nvidia.com/gpu": "2"},
    }
    assert task["initResources"] == {"cpu": "2", "memory": "4Gi"}
    assert _has(warnings, 'Pod "default/train-w-0"', "spec.containers", "one container per task")


def test_a_limit_on_one_container_of_two_bounds_that_container_only() -> None:
    """Container a asks for 2 CPUs without a limit, b is limited to 1 CPU (its request then
    defaults to 1): the API server takes the pod, each request being within its own limit.
    The pod asks for 3 CPUs; its cpu limit is not the pod's, so the compact task has none
    (a summed limit of 1 would read as a request above its limit). The GPU, limited on the
    one container that asks for it, stays a limit."""
    containers = [
        {"name": "a", "resources": {"requests": {"cpu": "2"}}},
        {"name": "b", "resources": {"limits": {"cpu": "1", "nvidia.com/gpu": "1"}}},
    ]
    compact, errors, _ = _translate(_podgroup(), _pod("train-w-0", containers=containers))
    assert errors == []
    assert compact["jobs"][0]["tasks"][0]["resources"] == {
        "requests": {"cpu": "3", "nvidia.com/gpu": "1"},
        "limits": {"nvidia.com/gpu": "1"},
    }
    instance = from_documents([_node(), _podgroup(), _pod("train-w-0", containers=containers)], "d")
    assert instance.jobs[0].tasks[0].resources["cpu"] == 3000


def test_bad_quantities_name_the_container_field() -> None:
    containers = [{"name": "a", "resources": {"limits": {"cpu": "lots"}}}]
    _, errors, _ = _translate(_podgroup(), _pod("train-w-0", containers=containers))
    assert [p.field for p in errors] == ["spec.containers[0].resources.limits.cpu"]


def test_bound_pods_become_running_entries_with_their_devices() -> None:
    """HAMi (§6.1): one entry per container ending in ';', so ';A:B:;;' is: init container
    none, app container 1 devices A and B, app container 2 none. Volcano (§6.2): only GPU
    containers, joined by ';' — 'C,NVIDIA,100,10:' is one container with device C."""
    two = [{"name": "a"}, {"name": "b"}]
    hami = ";GPU-A,NVIDIA,1000,30:GPU-B,NVIDIA,2000,40:;;"
    compact, errors, _ = _translate(
        _podgroup(min_member=2),
        _pod(
            "train-w-0",
            node="n1",
            phase="Running",
            containers=two,
            init_containers=[{"name": "i"}],
            annotations={"hami.io/vgpu-devices-allocated": hami},
        ),
        _pod(
            "train-w-1",
            node="n1",
            containers=two,
            init_containers=[{"name": "i"}],
            annotations={"volcano.sh/vgpu-ids-new": "GPU-C,NVIDIA,100,10:"},
        ),
    )
    assert errors == []
    assert compact["jobs"][0]["running"] == [
        {
            "index": 0,
            "node": "n1",
            "task": "w",
            "gpus": [
                {"id": "GPU-A", "memory": 1000, "cores": 30},
                {"id": "GPU-B", "memory": 2000, "cores": 40},
            ],
        },
        {
            "index": 1,
            "node": "n1",
            "task": "w",
            "gpus": [{"id": "GPU-C", "memory": 100, "cores": 10}],
        },
    ]


def test_hami_annotation_with_the_wrong_container_count_is_an_error() -> None:
    """The pod has 1 container but the annotation lists 2 (';X:;;' without its final ';')."""
    annotations = {"hami.io/vgpu-devices-allocated": "GPU-X,NVIDIA,1,1:;;"}
    _, errors, _ = _translate(
        _podgroup(), _pod("train-w-0", node="n1", phase="Running", annotations=annotations)
    )
    assert [p.field for p in errors] == ["metadata.annotations.hami.io/vgpu-devices-allocated"]


def test_finished_and_foreign_pods() -> None:
    """A Succeeded pod holds nothing; a pending pod of default-scheduler is not Volcano's; a
    bound one holds its node's room, so it stays as a job of its scheduler: no queue, one task
    with the pod's name and its requests, running on n1. Each kind is one summary warning."""
    done = _pod("train-w-0", phase="Succeeded")
    foreign = _pod("web", group=None)
    foreign["spec"]["schedulerName"] = "default-scheduler"
    bound = _pod("dns", group=None, node="n1", phase="Running")
    bound["spec"]["schedulerName"] = "default-scheduler"
    compact, errors, warnings = _translate(_podgroup(), done, foreign, bound)
    assert errors == []
    assert [w.message for w in warnings if not w.obj] == [
        "1 finished pod (Succeeded: 1) is ignored: a finished pod holds nothing",
        "1 pending pod of another scheduler (default-scheduler: 1) is not Volcano's and is ignored",
    ]
    assert _has(warnings, 'PodGroup "default/train"', "", "no pods")
    assert len(warnings) == 3
    assert [j["name"] for j in compact["jobs"]] == ["train", "dns"]
    assert "tasks" not in compact["jobs"][0]
    assert compact["jobs"][1] == {
        "name": "dns",
        "namespace": "default",
        "schedulerName": "default-scheduler",
        "tasks": [
            {
                "name": "main",
                "replicas": 1,
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                "podNames": ["dns"],
            }
        ],
        "running": [{"index": 0, "node": "n1", "task": "main"}],
    }


def test_lone_pod_takes_its_queue_from_the_annotation() -> None:
    """A pod whose PodGroup is missing is its own job; Volcano's queue annotation applies."""
    pod = _pod("solo", group="gone", annotations={"scheduling.volcano.sh/queue-name": "batch"})
    compact, _, warnings = _translate(pod)
    job = compact["jobs"][0]
    assert (job["name"], job["queue"], job["tasks"][0]["name"]) == ("solo", "batch", "main")
    assert "annotations" not in job["tasks"][0]
    assert _has(
        warnings,
        'Pod "default/solo"',
        "metadata.annotations.scheduling.k8s.io/group-name",
        "not in the snapshot",
    )


def test_missing_priority_class_falls_back_to_the_default_priority() -> None:
    """Volcano's cache gives a PodGroup whose class does not exist the default priority: the
    global-default class's value (here 5), else 0."""
    default = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "normal"},
        "value": 5,
        "globalDefault": True,
    }
    compact, _, warnings = _translate(
        _podgroup(priorityClassName="urgent"), _pod("train-w-0"), default
    )
    job = compact["jobs"][0]
    assert (job["priorityClassName"], job["priority"]) == ("urgent", 5)
    assert _has(warnings, 'PodGroup "default/train"', "spec.priorityClassName", "(5)")


# -- cluster objects and configuration -------------------------------------------------------


def test_node_fields() -> None:
    """A NotReady node takes no new pods in Volcano: it is read as unschedulable."""
    node = _node(conditions=[{"type": "Ready", "status": "False"}])
    node["metadata"]["labels"] = {"rack": "r1"}
    node["spec"] = {
        "taints": [{"key": "k", "value": "v", "effect": "NoSchedule", "timeAdded": None}]
    }
    compact, errors, warnings = _translate(node)
    assert errors == []
    assert compact["nodes"] == [
        {
            "name": "n1",
            "labels": {"rack": "r1"},
            "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
            "allocatable": {"cpu": "8", "memory": "32Gi"},
            "unschedulable": True,
        }
    ]
    assert _has(warnings, 'Node "n1"', "status.conditions", "unschedulable")


def test_bad_scheduler_conf_is_reported_on_the_configmap() -> None:
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
        "data": {"volcano-scheduler.conf": "actions: [unclosed"},
    }
    _, errors, _ = _translate(configmap)
    assert [(p.obj, p.field) for p in errors] == [
        ('ConfigMap "volcano-system/volcano-scheduler-configmap"', "data.volcano-scheduler.conf")
    ]


def test_capacity_plugin_guide_objects_load_together() -> None:
    """Two Queues and the scheduler ConfigMap of Volcano's capacity-plugin guide, concatenated
    as one dump: no error, both queues present with their deserved CPU (2 and 6 cores), and
    the capacity plugin configured."""
    parts = [
        "how_to_use_capacity_plugin.L108.queue1.yaml",
        "how_to_use_capacity_plugin.L122.queue2.yaml",
        "how_to_use_capacity_plugin.L29.configmap-capacity.yaml",
    ]
    text = "\n---\n".join((EXAMPLES / p).read_text() for p in parts)
    instance = loads(text, "capacity-guide.yaml")
    deserved = {q.name: q.deserved.get("cpu") for q in instance.queues}
    assert deserved["queue1"] == 2000
    assert deserved["queue2"] == 6000
    assert instance.scheduler.plugin("capacity") is not None
    assert instance.name == "capacity-guide"


def test_a_controller_whose_pods_are_present_says_they_are_read() -> None:
    """demo's pod is owned by its ReplicaSet demo-5d8f; other's pods are absent."""
    demo = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "demo"}}
    other = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "other"}}
    pod = _pod("demo-5d8f-x1", group=None)
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "demo-5d8f", "controller": True}
    ]
    compact, errors, warnings = _translate(_node(), demo, other, pod)
    assert errors == []
    assert _has(warnings, 'Deployment "demo"', "", "its pods are read")
    assert _has(warnings, 'Deployment "other"', "", "its pods are not in the input")
    assert [j["name"] for j in compact["jobs"]] == ["demo-5d8f-x1"]


def test_pods_carry_labels_affinity_and_spread_into_their_task() -> None:
    """Two pods of one task, labelled app=web, with required anti-affinity on the hostname and
    a zone spread constraint, one of them running: the task (and so both pods) carries the
    labels and the terms, as the compact form would."""
    spec_terms = {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"app": "web"}},
                    }
                ]
            }
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
    }
    pods = [_pod("train-web-0", node="n1", phase="Running"), _pod("train-web-1")]
    for pod in pods:
        pod["metadata"]["labels"] = {"app": "web"}
        pod["spec"].update(spec_terms)
    inst = from_documents([_node(), _podgroup(), *pods], "dump.yaml")
    task = inst.job_by_key["default/train"].tasks[0]
    assert task.labels == {"app": "web"}
    assert task.pod_anti_affinity is not None
    assert [t.topology_key for t in task.pod_anti_affinity.required] == ["kubernetes.io/hostname"]
    assert [(c.topology_key, c.hard) for c in task.spread] == [("zone", False)]
    running = inst.pod_by_key["default/train-web-0"]
    assert running.node == "n1" and running.labels == {"app": "web"}


def test_namespace_objects_bring_their_labels() -> None:
    """A Namespace in the dump is no warning: its labels are what namespaceSelectors read."""
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml", "labels": {"t": "a"}}}
    inst = from_documents([_node(), ns], "dump.yaml")
    assert inst.namespaces == {"ml": {"t": "a"}}
    assert not any("Namespace" in p.obj for p in inst.warnings)


# -- whose pods, and which pods hold room ----------------------------------------------------


def _snapshot_configmap(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "vcopt-snapshot", "namespace": "default"},
        "data": data,
    }


def test_scheduler_names_come_from_the_snapshot_configmap_even_after_the_pods() -> None:
    """The ConfigMap comes last and names volcano and volcano-gpu: the bound pod of
    volcano-gpu is Volcano's (a lone job in queue default), the one of kube-scheduler is usage
    only. The names reach the compact form, in the order written, blanks dropped."""
    gpu_pod = _pod("a", group=None, node="n1", phase="Running")
    gpu_pod["spec"]["schedulerName"] = "volcano-gpu"
    other = _pod("b", group=None, node="n1", phase="Running")
    other["spec"]["schedulerName"] = "default-scheduler"
    compact, errors, warnings = _translate(
        _node(), gpu_pod, other, _snapshot_configmap(schedulerNames="volcano, volcano-gpu,")
    )
    assert (errors, warnings) == ([], [])
    assert compact["schedulerNames"] == ["volcano", "volcano-gpu"]
    assert [(j["name"], j.get("queue"), j.get("schedulerName")) for j in compact["jobs"]] == [
        ("a", "default", None),
        ("b", None, "default-scheduler"),
    ]


def test_scheduler_names_that_name_nothing_are_an_error() -> None:
    _, errors, _ = _translate(_snapshot_configmap(schedulerNames=" , "))
    assert errors == [
        Problem(
            "expected comma-separated scheduler names, got none",
            'ConfigMap "default/vcopt-snapshot"',
            "data.schedulerNames",
        )
    ]


def test_a_vcjob_of_another_scheduler_is_judged_once_the_names_are_known() -> None:
    """The vcjob asks for scheduler batch; the ConfigMap after it makes batch one of
    Volcano's names, so the job is read."""
    vcjob = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {
            "schedulerName": "batch",
            "tasks": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
                }
            ],
        },
    }
    ignored, _, warnings = _translate(_node(), vcjob)
    assert "jobs" not in ignored
    assert _has(warnings, 'Job "default/train"', "spec.schedulerName", "not Volcano's; ignored")
    read, errors, _ = _translate(_node(), vcjob, _snapshot_configmap(schedulerNames="batch"))
    assert errors == []
    assert [j["name"] for j in read["jobs"]] == ["train"]


def test_a_pod_of_another_scheduler_is_usage_even_when_it_names_a_podgroup() -> None:
    """train-w-1 carries the group annotation but is default-scheduler's: it is no member of
    PodGroup train (whose task w has train-w-0 alone) but usage of n1. Of its task only what
    holds room or meets other pods' terms stays: no priority, node selector, tolerations or
    node affinity; its labels and pod anti-affinity stay (the group annotation is the
    scheduler's bookkeeping, as on every pod)."""
    member = _pod("train-w-0")
    foreign = _pod("train-w-1", node="n1", phase="Running")
    foreign["metadata"]["labels"] = {"app": "agent"}
    anti = {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"a": "b"}}}
        ]
    }
    foreign["spec"].update(
        {
            "schedulerName": "default-scheduler",
            "priority": 2000001000,
            "priorityClassName": "system-node-critical",
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"operator": "Exists"}],
            "affinity": {"nodeAffinity": {"x": 1}, "podAntiAffinity": anti},
        }
    )
    compact, errors, _ = _translate(_node(), _podgroup(), member, foreign)
    assert errors == []
    train, usage = compact["jobs"]
    assert [(t["name"], t["replicas"]) for t in train["tasks"]] == [("w", 1)]
    assert usage["schedulerName"] == "default-scheduler" and "queue" not in usage
    assert usage["tasks"][0] == {
        "name": "main",
        "replicas": 1,
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
        "labels": {"app": "agent"},
        "podNames": ["train-w-1"],
        "affinity": {"podAntiAffinity": anti},
    }


def test_terminating_pods_hold_their_node_until_they_are_gone() -> None:
    """Both pods of task w are being deleted: train-w-0 is bound to n1, so it is read as
    running there (Releasing in Volcano's cache); train-w-1 was never bound and is ignored.
    One warning says both."""
    deleting = {"deletionTimestamp": "2026-11-30T13:59:00Z"}
    bound = _pod("train-w-0", node="n1", phase="Running")
    unbound = _pod("train-w-1")
    for pod in (bound, unbound):
        pod["metadata"].update(deleting)
    compact, errors, warnings = _translate(_node(), _podgroup(), bound, unbound)
    assert errors == []
    [job] = compact["jobs"]
    assert [(t["name"], t["replicas"]) for t in job["tasks"]] == [("w", 1)]
    assert job["running"] == [{"index": 0, "node": "n1", "task": "w"}]
    assert [w.message for w in warnings] == [
        "2 terminating pods (deletionTimestamp set): 1 bound is read as running, since "
        "Volcano counts a Releasing pod on its node until it is gone (vcopt also counts it for "
        "topology spread, which Volcano does not); 1 not bound is ignored"
    ]


def test_a_node_without_status_has_not_registered() -> None:
    """A Node object with no status (a node the autoscaler just created): one warning on
    status.allocatable, and nothing may be placed on it. A node with its allocatable but no
    conditions is just read."""
    bare = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "new"}, "spec": {}}
    compact, errors, warnings = _translate(bare, _node("old"))
    assert errors == []
    assert compact["nodes"] == [
        {"name": "new", "unschedulable": True},
        {"name": "old", "allocatable": {"cpu": "8", "memory": "32Gi"}},
    ]
    assert warnings == [
        Problem(
            "not reported: the node has not registered, so it is read as unschedulable "
            "(Volcano places nothing on it)",
            'Node "new"',
            "status.allocatable",
        )
    ]


# -- tasks of PodGroups whatever their pods are called ---------------------------------------


def _labelled(name: str, labels: dict[str, str], cpu: str = "1") -> dict[str, Any]:
    pod = _pod(name, cpu=cpu)
    pod["metadata"]["labels"] = labels
    return pod


def test_pods_of_one_role_that_differ_split_into_numbered_tasks() -> None:
    """Three executors by spark-role; exec-2 asks for 2 CPUs where the others ask for 1: the
    role splits into executor (exec-1, exec-3) and executor-2 (exec-2), no error."""
    role = {"spark-role": "executor"}
    compact, errors, _ = _translate(
        _podgroup(),
        _labelled("app-exec-1", role),
        _labelled("app-exec-2", role, cpu="2"),
        _labelled("app-exec-3", role),
    )
    assert errors == []
    tasks = compact["jobs"][0]["tasks"]
    assert [(t["name"], t["replicas"], t["podNames"]) for t in tasks] == [
        ("executor", 2, ["app-exec-1", "app-exec-3"]),
        ("executor-2", 1, ["app-exec-2"]),
    ]


def test_ray_worker_groups_and_role_names_become_dns_labels() -> None:
    """KubeRay: a worker of group Small_GPU is task worker-small-gpu (lowercase, '_' as '-'),
    the head is head whatever its group; a Kubeflow pod labelled replica-type Master is
    master; app.kubernetes.io/component 'API.Server' is api-server (a label value may hold
    '.', a task name may not)."""
    compact, errors, _ = _translate(
        _podgroup(),
        _labelled("h-x7k2p", {"ray.io/node-type": "head", "ray.io/group": "headgroup"}),
        _labelled("w-9qz1c", {"ray.io/node-type": "worker", "ray.io/group": "Small_GPU"}),
        _labelled("m-0", {"training.kubeflow.org/replica-type": "Master"}),
        _labelled("api-q2", {"app.kubernetes.io/component": "API.Server"}),
    )
    assert errors == []
    names = [t["name"] for t in compact["jobs"][0]["tasks"]]
    assert names == ["head", "worker-small-gpu", "master", "api-server"]


def test_a_role_task_takes_a_number_when_a_named_task_has_its_name() -> None:
    """train-worker-0 is task worker by the vcjob naming; pod p carries
    training.kubeflow.org/replica-type worker but is another task, so it is worker-2."""
    compact, errors, _ = _translate(
        _podgroup(),
        _pod("train-worker-0"),
        _labelled("p", {"training.kubeflow.org/replica-type": "worker"}),
    )
    assert errors == []
    tasks = compact["jobs"][0]["tasks"]
    assert [(t["name"], t.get("podNames")) for t in tasks] == [
        ("worker", None),
        ("worker-2", ["p"]),
    ]
