"""Dumps of production clusters (tests/data/kube/production/) load as Volcano sees them.

Each dump's header says what it holds. Per dump, these tests assert the jobs and their tasks
(names, replicas, the pods' cluster names), what is node usage only (other schedulers' pods),
every warning, and that both engines' plans name pods as the cluster does. The expected
values are read off the dumps by hand, with the reasoning next to them.
"""

from __future__ import annotations

import copy
import csv
from pathlib import Path
from typing import Any

import pytest

from models.instance import Instance
from models.io.kube import compact_from_objects
from models.load import from_documents, load
from models.workload import DeviceShare
from models.yamlio import load_documents
from optimizer.cli import main
from optimizer.options import SolveOptions
from optimizer.plan import Placement, Plan
from optimizer.solve import solve
from optimizer.verify import verify

PRODUCTION = Path(__file__).parent / "data" / "kube" / "production"
SPARK = PRODUCTION / "spark.yaml"
KUBERAY = PRODUCTION / "kuberay-hami.yaml"
KUBEFLOW = PRODUCTION / "kubeflow-web.yaml"
ENGINES = ("greedy", "cpsat")
OPTIONS = SolveOptions.of(time_limit=10, workers=1, seed=1)


def _tasks(instance: Instance, job: str) -> list[tuple[str, int, list[str]]]:
    """(task, replicas, the pods' names) of a job, in task order."""
    found = instance.job_by_key[job]
    return [
        (t.name, t.replicas, [p.name for p in found.pods if p.task == t.name]) for t in found.tasks
    ]


def _bound(instance: Instance, job: str) -> dict[str, str]:
    """Pod name → node of a job's running pods."""
    return {p.name: p.node for p in instance.job_by_key[job].pods if p.node is not None}


def _usage(instance: Instance) -> list[tuple[str, str, str]]:
    """(pod key, node, scheduler) of the pods that are node usage only."""
    return [(p.key, p.node or "", j.scheduler_name) for j, p in instance.foreign_pods]


def _messages(instance: Instance) -> list[str]:
    return [str(w).removeprefix(f"{instance.source}: ") for w in instance.warnings]


def _gpu(node: int, index: int) -> str:
    """A device id of kuberay-hami.yaml: GPU ``index`` of node gpu-``node``."""
    return f"GPU-9f2c4e61-{node}a0b-4c3d-8e7f-6a5b4c3d2e{node}{index}"


# -- spark.yaml ------------------------------------------------------------------------------


def test_spark_driver_and_executors_are_tasks_by_their_spark_role() -> None:
    """spark-role splits the PodGroup's pods into driver and executor; the executors keep
    their names in the order of their index (1, 2, 3, 10: name order would put 10 second).
    The driver and executors 1 and 2 run on cpu-1, executor 3 on cpu-2, 10 waits."""
    instance = load(SPARK)
    assert [j.key for j in instance.jobs] == ["spark/spark-pi-group"]
    executors = [f"spark-pi-5b1f9a8e3c-exec-{i}" for i in (1, 2, 3, 10)]
    assert _tasks(instance, "spark/spark-pi-group") == [
        ("driver", 1, ["spark-pi-driver"]),
        ("executor", 4, executors),
    ]
    assert _bound(instance, "spark/spark-pi-group") == {
        "spark-pi-driver": "cpu-1",
        executors[0]: "cpu-1",
        executors[1]: "cpu-1",
        executors[2]: "cpu-2",
    }
    # spark-exec-id differs from executor to executor; it is the pod's own id, not the task's.
    assert (
        "spark-exec-id" not in instance.job_by_key["spark/spark-pi-group"].task("executor").labels
    )


def test_spark_daemonsets_are_node_usage_and_finished_pods_one_warning() -> None:
    """node-exporter and kube-proxy (default-scheduler) have a pod on each of the two nodes:
    four pods of node usage, no job, no queue. The Succeeded driver of last night and the
    Failed CronJob pod are one warning, the only one (now comes from the ConfigMap)."""
    instance = load(SPARK)
    assert _usage(instance) == [
        ("monitoring/node-exporter-4kq8d", "cpu-1", "default-scheduler"),
        ("monitoring/node-exporter-v9m2x", "cpu-2", "default-scheduler"),
        ("kube-system/kube-proxy-b2t5n", "cpu-1", "default-scheduler"),
        ("kube-system/kube-proxy-q7w3c", "cpu-2", "default-scheduler"),
    ]
    assert [q.name for q in instance.queues] == ["spark"]
    assert _messages(instance) == [
        "2 finished pods (Failed: 1, Succeeded: 1) are ignored: a finished pod holds nothing"
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_spark_plans_place_the_pending_executor_by_its_name(engine: str) -> None:
    """Only executor 10 waits; either node has room for its core, so each engine places it,
    under its cluster name, and the verifier accepts the plan."""
    instance = load(SPARK)
    plan = solve(instance, engine, OPTIONS)
    assert [p.pod for p in plan.placements] == ["spark/spark-pi-5b1f9a8e3c-exec-10"]
    assert plan.evictions == ()
    assert verify(instance, plan) == []


# -- kuberay-hami.yaml -----------------------------------------------------------------------


def test_kuberay_head_and_worker_group_are_tasks() -> None:
    """ray.io/node-type head is task head; the workers of group gpu are task worker-gpu.
    Their names end in no index, so they are in name order: 9qz1c, b7r2d, m4t8w."""
    instance = load(KUBERAY)
    assert [j.key for j in instance.jobs] == ["ray/ray-llm-pg"]
    assert _tasks(instance, "ray/ray-llm-pg") == [
        ("head", 1, ["llm-head-x7k2p"]),
        ("worker-gpu", 3, ["llm-worker-gpu-9qz1c", "llm-worker-gpu-b7r2d", "llm-worker-gpu-m4t8w"]),
    ]
    assert _bound(instance, "ray/ray-llm-pg") == {
        "llm-head-x7k2p": "cpu-1",
        "llm-worker-gpu-9qz1c": "gpu-1",
        "llm-worker-gpu-m4t8w": "gpu-2",
    }


def test_kuberay_hami_pods_hold_their_devices() -> None:
    """Worker 9qz1c holds devices 0 and 1 of gpu-1 whole, as HAMi's annotation says; the
    notebook of hami-scheduler holds 20000 MiB and 30 cores of device 3 of gpu-2, as node
    usage. Worker m4t8w names no devices: its two whole cards are assumed on gpu-2, the
    emptiest devices first, by index: devices 0 and 1 (device 3 holds the notebook's share)."""
    instance = load(KUBERAY)
    gpus = {p.name: p.gpus for p in instance.job_by_key["ray/ray-llm-pg"].pods if p.running}
    assert gpus["llm-worker-gpu-9qz1c"] == (
        (DeviceShare(_gpu(1, 0), 81920, 100), DeviceShare(_gpu(1, 1), 81920, 100)),
    )
    assert gpus["llm-worker-gpu-m4t8w"] == (
        (DeviceShare(_gpu(2, 0), 81920, 100), DeviceShare(_gpu(2, 1), 81920, 100)),
    )
    [notebook] = [p for j, p in instance.foreign_pods if j.scheduler_name == "hami-scheduler"]
    assert (notebook.key, notebook.node) == ("jupyter/notebook-alice-0", "gpu-2")
    assert notebook.gpus == ((DeviceShare(_gpu(2, 3), 20000, 30),),)


def test_kuberay_usage_warnings_and_the_unregistered_node() -> None:
    """HAMi's device plugin on both GPU nodes and node-exporter on the three registered nodes
    are default-scheduler's; the notebook is hami-scheduler's. gpu-3 has no status: it is
    read as unschedulable, one warning; gpu-2's assumed devices are the other."""
    instance = load(KUBERAY)
    assert _usage(instance) == [
        ("jupyter/notebook-alice-0", "gpu-2", "hami-scheduler"),
        ("kube-system/hami-device-plugin-kx9rt", "gpu-1", "default-scheduler"),
        ("kube-system/hami-device-plugin-p2vqz", "gpu-2", "default-scheduler"),
        ("monitoring/node-exporter-4kq8d", "cpu-1", "default-scheduler"),
        ("monitoring/node-exporter-h6w2j", "gpu-1", "default-scheduler"),
        ("monitoring/node-exporter-t3n7f", "gpu-2", "default-scheduler"),
    ]
    gpu3 = instance.node_by_name["gpu-3"]
    assert gpu3.unschedulable and gpu3.allocatable.is_empty()
    assert _messages(instance) == [
        'Node "gpu-3": status.allocatable: not reported: the node has not registered, so it is '
        "read as unschedulable (Volcano places nothing on it)",
        f'Node "gpu-2": 1 running pod names no devices; assumed devices {_gpu(2, 0)}, {_gpu(2, 1)}',
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_kuberay_pending_worker_gets_the_only_two_free_cards(engine: str) -> None:
    """Worker b7r2d wants two whole cards. gpu-1 has devices 2 and 3 free; gpu-2 has only
    device 2 (0 and 1 are m4t8w's, 3 holds the notebook's share); gpu-3 takes nothing. So it
    goes to gpu-1 on devices 2 and 3, under its own name."""
    instance = load(KUBERAY)
    plan = solve(instance, engine, OPTIONS)
    assert [(p.pod, p.node) for p in plan.placements] == [("ray/llm-worker-gpu-b7r2d", "gpu-1")]
    [placed] = plan.placements
    assert {g.id for g in placed.gpus or ()} == {_gpu(1, 2), _gpu(1, 3)}
    assert verify(instance, plan) == []


def test_kuberay_assumed_cards_are_not_given_away() -> None:
    """Devices 0 and 1 of gpu-2 are what m4t8w is assumed to hold: a plan putting b7r2d on
    them books a second exclusive pod on each."""
    instance = load(KUBERAY)
    whole = tuple(DeviceShare(_gpu(2, i), 81920, 100) for i in (0, 1))
    plan = Plan(placements=(Placement("ray/llm-worker-gpu-b7r2d", "gpu-2", whole),))
    assert "gpu-capacity" in {v.rule for v in verify(instance, plan)}


# -- kubeflow-web.yaml -----------------------------------------------------------------------


def test_kubeflow_replica_types_are_tasks_and_pods_keep_their_names() -> None:
    """training.kubeflow.org/replica-type gives master and worker; the pods are named as the
    vcjob convention would (mnist-worker-1), so they need no podNames."""
    instance = load(KUBEFLOW)
    assert [j.key for j in instance.jobs] == [
        "ml/mnist",
        "web/podgroup-9e3d4f1a-6b2c-4d8e-a1f0-7c5b3e2d1a90",
    ]
    assert _tasks(instance, "ml/mnist") == [
        ("master", 1, ["mnist-master-0"]),
        ("worker", 2, ["mnist-worker-0", "mnist-worker-1"]),
    ]
    assert _bound(instance, "ml/mnist") == {"mnist-master-0": "cpu-1", "mnist-worker-0": "cpu-2"}


def test_deployment_pods_are_one_task_with_the_terminating_one_running() -> None:
    """The Deployment's pods have no role: alike in everything, they are one task main, in
    name order. r5vbn is terminating but bound: it still holds cpu-2, so it is running;
    k9wq4 was deleted unbound and zzq8t was evicted: neither is a pod of the task."""
    instance = load(KUBEFLOW)
    job = "web/podgroup-9e3d4f1a-6b2c-4d8e-a1f0-7c5b3e2d1a90"
    web = [f"web-7d4b9c6f8d-{s}" for s in ("7hj4n", "9mzrt", "r5vbn", "x2kqp")]
    assert _tasks(instance, job) == [("main", 4, web)]
    assert _bound(instance, job) == {web[0]: "cpu-2", web[2]: "cpu-2", web[3]: "cpu-1"}


def test_kubeflow_dump_usage_and_warnings() -> None:
    """kube-proxy runs on both nodes (node usage). One warning for the two finished pods
    (the evicted web pod, Failed, and the data-prep pod, Succeeded) and one for the two
    terminating pods (r5vbn bound, k9wq4 not)."""
    instance = load(KUBEFLOW)
    assert _usage(instance) == [
        ("kube-system/kube-proxy-b2t5n", "cpu-1", "default-scheduler"),
        ("kube-system/kube-proxy-q7w3c", "cpu-2", "default-scheduler"),
    ]
    assert _messages(instance) == [
        "2 finished pods (Failed: 1, Succeeded: 1) are ignored: a finished pod holds nothing",
        "2 terminating pods (deletionTimestamp set): 1 bound is read as running, since Volcano "
        "counts a Releasing pod on its node until it is gone (vcopt also counts it for "
        "topology spread, which Volcano does not); 1 not bound is ignored",
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_kubeflow_plans_place_the_waiting_pods_by_their_names(engine: str) -> None:
    """mnist-worker-1 (4 cores) and web's 9mzrt (500m) wait; the two 15.89-core nodes hold
    at most 2 + 0.5 and 4 + 0.5 + 0.5 cores, so both fit."""
    instance = load(KUBEFLOW)
    plan = solve(instance, engine, OPTIONS)
    assert sorted(p.pod for p in plan.placements) == [
        "ml/mnist-worker-1",
        "web/web-7d4b9c6f8d-9mzrt",
    ]
    assert verify(instance, plan) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_the_cli_names_every_pod_as_the_cluster_does(engine: str, tmp_path: Path) -> None:
    """``vcopt solve`` on the dump writes one CSV row per Volcano pod, under its cluster name:
    the 3 of mnist and the 4 of web, none of kube-proxy's."""
    out = tmp_path / "plan.csv"
    args = ["solve", str(KUBEFLOW), "--engine", engine, "--time-limit", "10", "--workers", "1"]
    assert main([*args, "-q", "--format", "csv", "-o", str(out)]) == 0
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert sorted(row["pod"] for row in rows) == [
        "ml/mnist-master-0",
        "ml/mnist-worker-0",
        "ml/mnist-worker-1",
        "web/web-7d4b9c6f8d-7hj4n",
        "web/web-7d4b9c6f8d-9mzrt",
        "web/web-7d4b9c6f8d-r5vbn",
        "web/web-7d4b9c6f8d-x2kqp",
    ]
    placed = {row["pod"] for row in rows if row["state"] == "placed"}
    assert placed == {"ml/mnist-worker-1", "web/web-7d4b9c6f8d-9mzrt"}


# -- at scale --------------------------------------------------------------------------------


def _docs(path: Path) -> list[Any]:
    return load_documents(path.read_text(), str(path))


def test_eighty_daemonset_pods_are_eighty_pods_of_usage_and_no_warning() -> None:
    """40 nodes like spark.yaml's cpu-1, each with its node-exporter and kube-proxy pod: 80
    pods of default-scheduler, so 80 pods of node usage, no Volcano job, no queue and no
    warning at all (no pod is pending, finished or terminating; now is in the ConfigMap)."""
    docs = _docs(SPARK)
    node = next(d for d in docs if d["kind"] == "Node")
    exporter, proxy = (
        next(d for d in docs if d["metadata"]["name"] == name)
        for name in ("node-exporter-4kq8d", "kube-proxy-b2t5n")
    )
    stream: list[Any] = [next(d for d in docs if d["kind"] == "ConfigMap")]
    for n in range(40):
        name = f"node-{n:02d}"
        copied = copy.deepcopy(node)
        copied["metadata"]["name"] = name
        stream.append(copied)
        for template in (exporter, proxy):
            pod = copy.deepcopy(template)
            pod["metadata"]["name"] = f"{template['metadata']['generateName']}{n:05d}"
            pod["spec"]["nodeName"] = name
            terms = pod["spec"]["affinity"]["nodeAffinity"]
            terms = terms["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            terms[0]["matchFields"][0]["values"] = [name]
            stream.append(pod)
    compact, errors, warnings = compact_from_objects(stream, "cluster.yaml")
    assert (errors, warnings) == ([], [])
    assert len(compact["jobs"]) == 80
    assert all(j["schedulerName"] == "default-scheduler" for j in compact["jobs"])
    instance = from_documents(stream, "cluster.yaml")
    assert instance.jobs == () and instance.queues == ()
    assert len(instance.foreign_pods) == 80
    assert instance.warnings == ()
