"""Volcano Jobs in the kubectl form (models/io/kube/vcjob.py, admission.py): the PodGroup and
pods the job controller makes, and the job webhook's refusals (spec/volcano-job.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from models.errors import InputError
from models.io.kube import compact_from_objects
from models.load import from_documents, load_inputs
from models.resources import parse_amount
from optimizer.cli import main
from optimizer.plan import read_plan
from optimizer.solve import solve
from optimizer.verify import verify

DATA = Path(__file__).parent / "data"
BAD = sorted((DATA / "vcjob" / "bad").glob("*.yaml"))
DUMP = [DATA / "kube" / "cluster-dump.yaml", DATA / "kube" / "scheduler-cm.yaml"]
EXAMPLES = Path("/work/shared/examples/volcano")


def _task(name: str, replicas: int, cpu: str, **extra: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}
    return {"name": name, "replicas": replicas, "template": {"spec": {"containers": [container]}}}


def _vcjob(name: str = "j", annotations: dict[str, str] | None = None, **spec: Any) -> dict:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
        "spec": spec,
    }


def _job(*docs: object) -> dict[str, Any]:
    compact, errors, _ = compact_from_objects(list(docs), "dump.yaml")
    assert errors == []
    return compact["jobs"][0]


def test_example_job_becomes_its_podgroup_and_six_pods() -> None:
    """volcano-job.md §10.1: minAvailable 3 stays, the task's minAvailable defaults to its 6
    replicas; 3 < 6 is Case A, so minResources counts 3 pods of 1 CPU."""
    instance = load_inputs([EXAMPLES / "job.yaml"])
    job = instance.job_by_key["default/test-job"]
    assert job.min_available == 3
    assert dict(job.min_task_member) == {"default-nginx": 6}
    assert job.min_resources is not None
    assert job.min_resources.get("cpu") == 3000 and job.min_resources.get("pods") == 3
    assert [p.name for p in job.pods] == [f"test-job-default-nginx-{i}" for i in range(6)]


def test_min_resources_case_b_takes_each_task_minimum() -> None:
    """§10.7: master ×1 at 500m and worker ×3 at 1000m, minAvailable 4 = Σ minAvailable:
    Case B books 500m + 3 × 1000m = 3500m for 4 pods."""
    job = _job(_vcjob(minAvailable=4, tasks=[_task("master", 1, "500m"), _task("worker", 3, "1")]))
    assert job["minTaskMember"] == {"master": 1, "worker": 3}
    assert job["minResources"]["cpu"] == "3500m"
    assert job["minResources"]["pods"] == "4"


def test_min_resources_case_a_follows_task_priority() -> None:
    """Case A takes the first minMember pods in priority order: the high master first (2
    CPUs), then one worker (1 CPU) for minAvailable 2."""
    master = _task("master", 1, "2")
    master["template"]["spec"]["priorityClassName"] = "high"
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}
    high |= {"metadata": {"name": "high"}, "value": 100}
    job = _job(high, _vcjob(minAvailable=2, tasks=[_task("worker", 4, "1"), master]))
    assert parse_amount("cpu", job["minResources"]["cpu"]) == 3000


def test_job_annotations_reach_the_pods_as_the_controller_copies_them() -> None:
    """§6.3: preemptable and the revocable zone are copied; of the two disruption budgets only
    min-available; other job annotations stay on the PodGroup only."""
    annotations = {
        "volcano.sh/preemptable": "false",
        "volcano.sh/revocable-zone": "*",
        "volcano.sh/jdb-min-available": "1",
        "volcano.sh/jdb-max-unavailable": "1",
        "team": "a",
    }
    doc = _vcjob(annotations=annotations, tasks=[_task("w", 2, "1")])
    instance = from_documents([doc], "dump.yaml")
    task = instance.jobs[0].tasks[0]
    assert dict(task.annotations) == {
        "volcano.sh/preemptable": "false",
        "volcano.sh/revocable-zone": "*",
        "volcano.sh/jdb-min-available": "1",
    }
    assert instance.jobs[0].annotations["team"] == "a"


def test_compact_jobs_copy_their_annotations_too() -> None:
    """A compact job is a vcjob: a job-level preemptable false overrides the task's true."""
    doc = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "now": "2026-11-30T14:00:00Z",
        "nodes": [{"name": "n", "allocatable": {"cpu": "4"}}],
        "jobs": [
            {
                "name": "j",
                "annotations": {"volcano.sh/preemptable": "false"},
                "tasks": [{"name": "t", "annotations": {"volcano.sh/preemptable": "true"}}],
            }
        ],
    }
    task = from_documents([doc], "x.yaml").jobs[0].tasks[0]
    assert task.annotations["volcano.sh/preemptable"] == "false"


def test_the_dump_loads_with_running_pods_podgroups_and_real_names() -> None:
    """cluster-dump.yaml (its header says what to expect): train's running pod joins it and
    its PodGroup is not a job of its own; held has no pods; bare pods keep their names."""
    instance = load_inputs(DUMP)
    assert [j.key for j in instance.jobs] == [
        "ml/train",
        "ml/sweep",
        "ml/held",
        "default/gpu-pod",
        "default/whole-pod",
    ]
    train = instance.job_by_key["ml/train"]
    assert train.phase == "Running"
    assert [(r.task, r.index, r.node) for r in train.running] == [("worker", 0, "plain-1")]
    assert instance.job_by_key["ml/held"].tasks == ()
    assert instance.job_by_key["ml/held"].min_available == 2
    assert instance.node_by_name["plain-1"].plain_gpus
    assert not instance.node_by_name["hami-1"].plain_gpus
    assert instance.scheduler.plugin("deviceshare") is not None
    assert {p.key for p in instance.pods} >= {"default/gpu-pod", "default/whole-pod"}


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_plain_gpus_are_a_count_in_both_engines(engine: str) -> None:
    """16 plain GPUs, 4 held by train-worker-0: train-worker-1 (4) and whole-pod (2) fit by
    count and get no devices; gpu-pod's 3000 MiB share can only go to the HAMi node; sweep
    needs 24 whole GPUs at once and only 10 plain ones are left, so it stays pending."""
    instance = load_inputs(DUMP)
    plan = solve(instance, engine)
    assert verify(instance, plan) == []
    placed = {p.pod: p for p in plan.placements}
    assert placed["ml/train-worker-1"].node in ("plain-1", "plain-2")
    assert placed["ml/train-worker-1"].gpus == ()
    assert placed["default/whole-pod"].node in ("plain-1", "plain-2")
    assert placed["default/gpu-pod"].node == "hami-1"
    status = {d.job: d.status for d in plan.jobs}
    assert status["ml/sweep"] == "pending"
    assert status["ml/held"] == "pending"
    if engine == "cpsat":
        assert "no pods in the input" in next(d.reason for d in plan.jobs if d.job == "ml/held")


def test_a_gpu_share_on_plain_gpus_gets_a_clear_reason() -> None:
    """Without the HAMi node, gpu-pod has nowhere to go: the plain nodes cannot split a GPU."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "share", "namespace": "default"},
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {
                    "name": "c",
                    "resources": {"limits": {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000}},
                }
            ],
        },
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "plain"},
        "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "nvidia.com/gpu": "8"}},
    }
    instance = from_documents([node, pod], "dump.yaml")
    plan = solve(instance, "greedy")
    assert plan.placements == ()
    assert "plain count" in plan.jobs[0].reason


def test_the_verifier_refuses_a_gpu_share_on_plain_gpus() -> None:
    """A hand-written plan that puts gpu-pod on a plain node breaks gpu-capacity."""
    instance = load_inputs(DUMP)
    plan = solve(instance, "greedy")
    moved = tuple(
        p if p.pod != "default/gpu-pod" else type(p)(p.pod, "plain-2", ()) for p in plan.placements
    )
    rules = {v.rule for v in verify(instance, plan.replace(placements=moved))}
    assert "gpu-capacity" in rules


def test_bindings_are_read_back_by_verify(tmp_path: Path) -> None:
    """--format bindings writes one Binding per placement; verify reads it back (exit 0), and
    the placements it reads are the plan's, devices included."""
    out = tmp_path / "bindings.yaml"
    args = [str(p) for p in DUMP]
    assert (
        main(["solve", *args, "--engine", "greedy", "-q", "--format", "bindings", "-o", str(out)])
        == 0
    )
    assert "kind: Binding" in out.read_text()
    assert main(["verify", *args, str(out), "-q"]) == 0
    instance = load_inputs(DUMP)
    plan = solve(instance, "greedy")
    back = read_plan(out, instance)
    assert {(p.pod, p.node, p.gpus) for p in back.placements} == {
        (p.pod, p.node, p.gpus or None) for p in plan.placements
    }


def test_now_and_scheduler_conf_replace_the_inputs(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n')
    instance = load_inputs(DUMP, scheduler_conf=conf, now="2026-12-01T08:00:00Z")
    assert instance.now.isoformat() == "2026-12-01T08:00:00+00:00"
    assert instance.scheduler.plugin("deviceshare") is None
    with pytest.raises(InputError):
        load_inputs(DUMP, now="yesterday")


def test_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(DUMP[0].read_text()))
    assert main(["validate", "-", str(DUMP[1]), "-q"]) == 0
    assert "5 jobs" in capsys.readouterr().out


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_each_webhook_rule_refuses_its_file(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One small file per rule of the job webhook (§4.1): exit 2, and the error names the
    job, the field and the webhook's reason (the file's ``# expect:`` line)."""
    expect = next(line for line in path.read_text().splitlines() if line.startswith("# expect:"))
    obj, field, text = (part.strip() for part in expect.removeprefix("# expect:").split("|"))
    assert main(["validate", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    line = next((ln for ln in err.splitlines() if f"{obj}: {field}: " in ln), None)
    assert line is not None, err
    assert text in line
    assert "Volcano's job webhook refuses the job" in line


# -- what vcopt says about meaning it drops, and about requests that can never fit ------------


def _instance(jobs: list[dict[str, Any]], **extra: Any) -> Any:
    doc = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "now": "2026-11-30T14:00:00Z",
        "nodes": [
            {
                "name": "n1",
                "allocatable": {"cpu": "16", "memory": "64Gi"},
                "gpus": {"count": 8, "type": "NVIDIA-A100", "memory": 40960},
            }
        ],
        "jobs": jobs,
        **extra,
    }
    return from_documents([doc], "x.yaml")


@pytest.mark.parametrize(
    ("resources", "annotations", "text"),
    [
        ({"nvidia.com/gpu": 9}, {}, "asks for 9 GPUs, and the most one node offers is 8"),
        (
            {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 50000},
            {},
            "asks for 50000 MiB, and the largest card it may use has 40960 MiB",
        ),
        ({"nvidia.com/gpu": 1}, {"nvidia.com/use-gputype": "H100"}, "type or mode no node has"),
        ({"cpu": "32"}, {}, "asks for 32 cpu, and the largest node offers 16"),
    ],
)
def test_validate_warns_of_what_can_never_fit(
    resources: dict[str, Any], annotations: dict[str, str], text: str
) -> None:
    """One 8-card A100-40GB node of 16 CPUs: each request exceeds its largest offer."""
    task = {"name": "t", "resources": resources, "annotations": annotations}
    warnings = _instance([{"name": "big", "tasks": [task]}]).warnings
    assert any(w.obj == 'Job "default/big"' and text in w.message for w in warnings), warnings


def test_a_request_that_fits_is_not_warned_about() -> None:
    task = {"name": "t", "resources": {"cpu": "16", "nvidia.com/gpu": 8}}
    warnings = _instance([{"name": "ok", "tasks": [task]}]).warnings
    assert not any("can never" in w.message for w in warnings)


def test_hard_topology_without_the_plugin_is_warned_about() -> None:
    """The Helm default configuration has no network-topology-aware plugin."""
    job = {
        "name": "t",
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
        "tasks": [{"name": "w", "resources": {"cpu": "1"}}],
    }
    warnings = _instance([job]).warnings
    assert any(w.field == "networkTopology" and "not configured" in w.message for w in warnings)


def test_a_spec_under_metadata_is_warned_about() -> None:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q", "spec": {"weight": 2}},
    }
    _, errors, warnings = compact_from_objects([queue], "q.yaml")
    assert errors == []
    assert any(w.obj == 'Queue "q"' and w.field == "metadata.spec" for w in warnings)


def test_what_if_variants_pass_the_same_checks() -> None:
    """A negative tier limit is refused by a what-if variant as by the loader."""
    from optimizer.whatif import with_topology_limit

    job = {
        "name": "t",
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
        "tasks": [{"name": "w", "resources": {"cpu": "1"}}],
    }
    with pytest.raises(InputError) as err:
        with_topology_limit(_instance([job]), "default/t", -1)
    assert any(p.field == "networkTopology.highestTierAllowed" for p in err.value.problems)


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("minAvailable", "3", "expected an integer"),
        ("tasks", "worker", "expected a list"),
        ("plugins", ["ssh"], "expected a mapping"),
        ("volumes", [{"mountPath": ["/a"]}], "mountPath is required"),
        ("networkTopology", "hard", "expected a mapping"),
    ],
)
def test_a_job_of_the_wrong_shape_is_refused_not_crashed(
    field: str, value: object, expected: str
) -> None:
    """Types the CRD schema refuses are errors on their field, never a traceback."""
    doc = _vcjob(minAvailable=1, tasks=[_task("w", 1, "1")])
    doc["spec"][field] = value
    with pytest.raises(InputError) as err:
        from_documents([doc], "dump.yaml")
    assert any(
        p.field.startswith(f"spec.{field}") and expected in p.message for p in err.value.problems
    )


def test_long_names_are_cut_only_in_the_table() -> None:
    """A PodGroup name over 48 characters keeps its first 31 and last 16 in the table."""
    from optimizer.plan.render import short_name

    name = "default/podgroup-6b1a4c2e-0000-4000-8000-000000000001-x"
    assert len(name) > 48
    cut = short_name(name)
    assert len(cut) == 48
    assert cut.startswith(name[:31]) and cut.endswith(name[-16:])
    assert short_name("default/gpu-pod") == "default/gpu-pod"


def test_the_webhook_defaults_name_tasks_and_fill_the_gang() -> None:
    """§3: an unnamed task i is default<i>, the queue is default, the task minAvailable is its
    replicas and the job's their sum (an explicit 0 is overwritten)."""
    job = _job(
        _vcjob(minAvailable=0, tasks=[{**_task("", 2, "1"), "name": ""}, _task("b", 1, "1")])
    )
    assert [t["name"] for t in job["tasks"]] == ["default0", "b"]
    assert job["queue"] == "default"
    assert job["minAvailable"] == 3
    assert job["minTaskMember"] == {"default0": 2, "b": 1}


def test_plans_name_pods_as_the_cluster_does(tmp_path: Path) -> None:
    """CSV rows and annotation keys carry the bare pods' own names."""
    args = [str(p) for p in DUMP]
    csv = tmp_path / "plan.csv"
    assert (
        main(["solve", *args, "--engine", "greedy", "-q", "--format", "csv", "-o", str(csv)]) == 0
    )
    rows = csv.read_text().splitlines()
    assert any(row.startswith("default/whole-pod,default/whole-pod,") for row in rows)
    ann = tmp_path / "ann.yaml"
    assert (
        main(
            ["solve", *args, "--engine", "greedy", "-q", "--format", "annotations", "-o", str(ann)]
        )
        == 0
    )
    assert "default/gpu-pod:" in ann.read_text()


def test_problems_of_several_files_name_the_file_of_their_object(tmp_path: Path) -> None:
    """The refused job is in its own file; the PodGroup warning names the dump."""
    bad = tmp_path / "bad.yaml"
    bad.write_text((DATA / "vcjob" / "bad" / "queue_root.yaml").read_text())
    with pytest.raises(InputError) as err:
        load_inputs([DUMP[0], bad])
    assert [p.file for p in err.value.problems if p.obj == 'Job "default/train"'] == [str(bad)]
    warnings = load_inputs(DUMP).warnings
    assert any(w.obj == 'PodGroup "ml/held"' and w.file == str(DUMP[0]) for w in warnings)


def test_two_pods_of_one_name_are_refused() -> None:
    """Job x's task t would name its pod x-t-0, which job y's podNames already uses."""
    doc = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "now": "2026-11-30T14:00:00Z",
        "jobs": [
            {"name": "y", "tasks": [{"name": "main", "podNames": ["x-t-0"]}]},
            {"name": "x", "tasks": [{"name": "t"}]},
        ],
    }
    with pytest.raises(InputError) as err:
        from_documents([doc], "x.yaml")
    assert [(p.obj, p.field) for p in err.value.problems] == [('Job "default/x"', "tasks")]
