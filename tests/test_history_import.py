"""``vcopt import history``: a cluster from an instance file, the jobs from a CSV of what was
submitted when (docs/INSTANCE.md, "A history of jobs"). Expected values are worked by hand
from those rules in the docstrings."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from models.load import from_dict
from optimizer.cli import main
from optimizer.options import SolveOptions
from optimizer.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]
DUMP = ROOT / "tests" / "data" / "kube" / "cluster-dump.yaml"
CLUSTER = """\
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: lab}
now: "2026-11-30T14:00:00Z"
timezone: Europe/Paris
priorityClasses: [{name: high, value: 1000}, {name: low, value: 10}]
nodes:
- name: a100-1
  labels: {nvidia.com/gpu.product: A100-SXM4-80GB}
  allocatable: {cpu: "64", memory: 512Gi, pods: 110}
  gpus: {count: 4, type: NVIDIA-A100-SXM4-80GB, memory: 81920}
- name: l4-1
  labels: {nvidia.com/gpu.product: L4}
  allocatable: {cpu: "32", memory: 128Gi, pods: 110}
  gpus: {count: 2, type: NVIDIA-L4, memory: 23034}
queues:
- {name: root}
- {name: research, parent: root}
- {name: team-a, parent: research}
- {name: prod, parent: root}
jobs:
- name: old
  queue: prod
  tasks: [{name: w, replicas: 1, resources: {cpu: "1"}}]
"""
HEADER = (
    "job,queue,submit_time,duration,gpus,cpu,memory,workers,priority_class,preemptable,gpu_model\n"
)
JOBS = HEADER + (
    "train,team-a,2026-02-01T10:00:00Z,1h,2,8,32Gi,2,high,false,A100-SXM4-80GB\n"
    "eval,prod,2026-02-01T10:30:00+01:00,600,1,,,,low,true,L4\n"
    "sweep,,2026-02-01T10:00:00Z,1.5,0,500m,,,,,\n"
)


def _files(tmp_path: Path, jobs: str, cluster: str = CLUSTER) -> tuple[Path, Path]:
    jobs_csv, cluster_file = tmp_path / "history.csv", tmp_path / "cluster.yaml"
    jobs_csv.write_text(jobs)
    cluster_file.write_text(cluster)
    return jobs_csv, cluster_file


def _import(tmp_path: Path, jobs: str = JOBS, cluster: str = CLUSTER, *extra: str) -> dict:
    jobs_csv, cluster_file = _files(tmp_path, jobs, cluster)
    out = tmp_path / "out.yaml"
    argv = ["import", "history", "--jobs", str(jobs_csv), "--cluster", str(cluster_file)]
    assert main([*argv, *extra, "-o", str(out)]) == 0
    return yaml.safe_load(out.read_text())


def test_rows_become_gangs_on_the_cluster_of_the_instance_file(tmp_path: Path) -> None:
    """eval was submitted at 10:30+01:00 = 09:30Z, before train and sweep (10:00Z): now is
    09:30Z and eval has no arrival; jobs in submit order, file order among equal times: eval,
    train, sweep. train: 2 workers of 8 CPUs, 32Gi and 2 GPUs, on A100 nodes, 1h = 3,600 s.
    train says preemptable false, eval true: each is written as the job's annotation. eval:
    600 s, on L4 nodes. sweep: every optional cell empty, so queue default, one worker, no
    class, no preemptable annotation, any node; 1.5 s. The cluster file's
    timezone, classes, nodes and queues are kept; its job (old) and its now are not."""
    doc = _import(tmp_path)
    assert doc["now"] == "2026-02-01T09:30:00Z"
    assert doc["timezone"] == "Europe/Paris"
    assert [n["name"] for n in doc["nodes"]] == ["a100-1", "l4-1"]
    assert [q["name"] for q in doc["queues"]] == ["root", "research", "team-a", "prod"]
    jobs = {j["name"]: j for j in doc["jobs"]}
    assert list(jobs) == ["eval", "train", "sweep"]
    train, run_eval, sweep = jobs["train"], jobs["eval"], jobs["sweep"]
    assert train == {
        "name": "train",
        "queue": "team-a",
        "priorityClassName": "high",
        "minAvailable": 2,
        "annotations": {"volcano.sh/preemptable": "false"},
        "duration": 3600,
        "arrival": "2026-02-01T10:00:00Z",
        "tasks": [
            {
                "name": "worker",
                "replicas": 2,
                "resources": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": 2},
                "nodeSelector": {"nvidia.com/gpu.product": "A100-SXM4-80GB"},
            }
        ],
    }
    assert run_eval["annotations"] == {"volcano.sh/preemptable": "true"}
    assert (run_eval["priorityClassName"], run_eval["duration"]) == ("low", 600)
    assert "arrival" not in run_eval
    assert run_eval["tasks"][0]["nodeSelector"] == {"nvidia.com/gpu.product": "L4"}
    assert sweep["queue"] == "default"
    assert (sweep["minAvailable"], sweep["duration"]) == (1, 1.5)
    assert "priorityClassName" not in sweep and "annotations" not in sweep
    assert sweep["tasks"][0]["resources"] == {"cpu": "500m"}
    instance = from_dict(doc, "history.yaml")
    assert instance.now == datetime(2026, 2, 1, 9, 30, tzinfo=UTC)
    assert [j.name for j in instance.jobs] == ["eval"]
    assert [j.name for j in instance.arrivals] == ["train", "sweep"]


def test_only_the_required_columns(tmp_path: Path) -> None:
    """A file with job, submit_time, duration and gpus alone: every optional column takes its
    default (queue default, one worker, a job without CPU or memory requests)."""
    doc = _import(tmp_path, "job,submit_time,duration,gpus\nsolo,2026-02-01T10:00:00Z,90m,4\n")
    (job,) = doc["jobs"]
    assert job == {
        "name": "solo",
        "queue": "default",
        "minAvailable": 1,
        "duration": 5400,
        "tasks": [{"name": "worker", "replicas": 1, "resources": {"nvidia.com/gpu": 4}}],
    }


def test_the_cluster_of_a_kubectl_dump(tmp_path: Path) -> None:
    """cluster-dump.yaml's header: nodes plain-1, plain-2 and hami-1, queues root and team-a,
    class high, and five jobs of its own (train, sweep, held, gpu-pod, whole-pod), which the
    history's one job replaces."""
    doc = _import(
        tmp_path,
        "job,queue,submit_time,duration,gpus\nrun,team-a,2026-02-01T10:00:00Z,60,2\n",
        DUMP.read_text(),
    )
    assert [n["name"] for n in doc["nodes"]] == ["plain-1", "plain-2", "hami-1"]
    assert [q["name"] for q in doc["queues"]] == ["root", "team-a"]
    assert [c["name"] for c in doc["priorityClasses"]] == ["high"]
    assert [j["name"] for j in doc["jobs"]] == ["run"]
    assert len(from_dict(doc, "history.yaml").jobs) == 1


def test_the_imported_history_simulates_to_the_end(tmp_path: Path) -> None:
    """One 4-GPU node. big (4 GPUs, 30 min) is submitted at 14:00, the first time, so it
    starts at now; pair (2 workers × 2 GPUs, 1 h) at 14:05 finds no room until big ends at
    14:30, when a cycle binds both workers; it ends at 15:30, and so does the run."""
    cluster = CLUSTER.split("- name: l4-1")[0] + "queues: [{name: team, parent: root}]\n"
    jobs = (
        "job,queue,submit_time,duration,gpus,workers\n"
        "big,team,2026-02-01T14:00:00Z,30m,4,1\n"
        "pair,team,2026-02-01T14:05:00Z,1h,2,2\n"
    )
    doc = _import(tmp_path, jobs, cluster)
    run = simulate(from_dict(doc, "history.yaml"), "greedy", SolveOptions())
    records = {r.job.split("/")[1]: r for r in run.jobs}
    assert records["big"].start == datetime(2026, 2, 1, 14, 0, tzinfo=UTC)
    assert records["big"].end == datetime(2026, 2, 1, 14, 30, tzinfo=UTC)
    assert records["pair"].start == datetime(2026, 2, 1, 14, 30, tzinfo=UTC)
    assert records["pair"].end == datetime(2026, 2, 1, 15, 30, tzinfo=UTC)
    assert run.end == datetime(2026, 2, 1, 15, 30, tzinfo=UTC)


PREEMPTING = """\
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: lab}
scheduler:
  actions: enqueue, allocate, preempt, backfill
  tiers:
  - plugins: [{name: priority}, {name: gang, enablePreemptable: false}, {name: conformance}]
  - plugins: [{name: drf, enablePreemptable: false}, {name: predicates}, {name: proportion}]
priorityClasses: [{name: high, value: 1000}, {name: low, value: 10}]
nodes:
- name: a100-1
  allocatable: {cpu: "64", memory: 512Gi, pods: 110}
  gpus: {count: 4, type: NVIDIA-A100-SXM4-80GB, memory: 81920}
queues: [{name: team, parent: root}]
"""


@pytest.mark.parametrize(
    ("preemptable", "urgent_starts", "batch_evicted"),
    [("true", 40, 1), ("", 40, 1), ("false", 1000, 0)],
)
def test_preemptable_is_what_the_row_says(
    preemptable: str, urgent_starts: int, batch_evicted: int, tmp_path: Path
) -> None:
    """One 4-GPU node, a preempt action. batch (class low, 4 GPUs, 1,000 s) starts at now;
    urgent (class high, 4 GPUs, 100 s) arrives 10 s later. Preemptable true, or left empty
    (Volcano reads a pod without the annotation as preemptable): the cycle at 10 s evicts
    batch, whose pod leaves after Kubernetes' default grace period of 30 s, and the cycle at
    40 s binds urgent. False: batch is no victim, so urgent waits for its end at 1,000 s."""
    jobs = (
        "job,queue,submit_time,duration,gpus,priority_class,preemptable\n"
        f"batch,team,2026-02-01T14:00:00Z,1000,4,low,{preemptable}\n"
        "urgent,team,2026-02-01T14:00:10Z,100,4,high,\n"
    )
    doc = _import(tmp_path, jobs, PREEMPTING)
    run = simulate(from_dict(doc, "history.yaml"), "greedy", SolveOptions())
    records = {r.job.split("/")[1]: r for r in run.jobs}
    start = datetime(2026, 2, 1, 14, 0, tzinfo=UTC)
    assert (records["urgent"].start - start).total_seconds() == urgent_starts
    assert records["batch"].evictions == batch_evicted


# -- bad input ----------------------------------------------------------------------------------


def _refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    jobs: str,
    cluster: str = CLUSTER,
    *extra: str,
) -> tuple[list[str], Path]:
    jobs_csv, cluster_file = _files(tmp_path, jobs, cluster)
    out = tmp_path / "out.yaml"
    argv = ["import", "history", "--jobs", str(jobs_csv), "--cluster", str(cluster_file)]
    assert main([*argv, *extra, "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert captured.out == ""
    assert not out.exists()
    return captured.err.splitlines(), jobs_csv


TRAIN = "train,team-a,2026-02-01T10:00:00Z,1h,2,8,32Gi,2,high,false,A100-SXM4-80GB"


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        (
            "job,submit_time,duration\nsolo,2026-02-01T10:00:00Z,60\n",
            "line 1: missing column(s) gpus in the header",
        ),
        (JOBS.replace("1h,2,8", "1h,two,8"), 'line 2 ("train"): gpus: expected an integer'),
        (JOBS.replace("1h,2,8", "1h,,8"), 'line 2 ("train"): gpus: required: an integer'),
        (JOBS.replace("Z,1h,", "Z,,"), 'line 2 ("train"): duration: required: a Go duration'),
        (
            JOBS.replace("32Gi,2,high", "32Gi,2.5,high"),
            'line 2 ("train"): workers: expected an integer',
        ),
        (
            JOBS.replace("2026-02-01T10:00:00Z,1h", "yesterday,1h"),
            'line 2 ("train"): submit_time: expected an RFC 3339 time such as '
            '2026-11-30T14:00:00Z, got "yesterday"',
        ),
        (
            JOBS.replace("2026-02-01T10:00:00Z,1h", "2026-02-01T10:00:00,1h"),
            'line 2 ("train"): submit_time: 2026-02-01T10:00:00 needs a UTC offset (Z or +08:00)',
        ),
        (JOBS.replace("Z,1h,", "Z,-5m,"), 'line 2 ("train"): duration: must not be negative'),
        (JOBS.replace(",600,1,", ",-600,1,"), 'line 3 ("eval"): duration: must not be negative'),
        (
            JOBS.replace("Z,1h,", "Z,5 minutes,"),
            'line 2 ("train"): duration: expected a Go duration (90m, 1h30m) or a number of '
            'seconds, got "5 minutes"',
        ),
        (
            JOBS.replace("true,L4", "true,H100"),
            'line 3 ("eval"): gpu_model: no node of the cluster has it as its '
            "nvidia.com/gpu.product label (the label's values: A100-SXM4-80GB, L4)",
        ),
        (
            JOBS.replace("train,team-a,", "train,team-z,"),
            'line 2 ("train"): queue: no queue of this name in the cluster (its leaf queues: '
            "prod, team-a)",
        ),
        (
            JOBS.replace("train,team-a,", "train,research,"),
            'line 2 ("train"): queue: has child queues: only a leaf queue holds jobs',
        ),
        (
            JOBS.replace(",low,true,", ",urgent,true,"),
            'line 3 ("eval"): priority_class: no PriorityClass of this name in the cluster '
            "(it has: high, low)",
        ),
        (
            JOBS.replace(",low,true,", ",low,maybe,"),
            'line 3 ("eval"): preemptable: expected true or false, got "maybe"',
        ),
        (JOBS.replace(",500m,", ",lots,"), 'line 4 ("sweep"): cpu: '),
        (JOBS + TRAIN + "\n", 'line 5 ("train"): job: job train is also on line 2'),
        (JOBS.replace("sweep,,", "Sweep_1,,"), 'line 4 ("Sweep_1"): job: not a DNS-1123'),
        ("", "empty file: expected a CSV header"),
        (HEADER, "no job rows: nothing to simulate"),
        (
            JOBS.replace(",gpu_model", ",GPU-Model"),
            "line 1: column GPU-Model is read as nothing: did you mean gpu_model?",
        ),
    ],
)
def test_a_bad_history_is_named_by_line_and_column(
    jobs: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines, jobs_csv = _refused(tmp_path, capsys, jobs)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {jobs_csv}: {expected}"), lines[0]


def test_a_model_label_no_node_has(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines, jobs_csv = _refused(tmp_path, capsys, JOBS, CLUSTER, "--model-label", "gpu-model")
    assert lines == [
        f'error: {jobs_csv}: line 2 ("train"): gpu_model: no node of the cluster has the label '
        "gpu-model (--model-label)",
        f'error: {jobs_csv}: line 3 ("eval"): gpu_model: no node of the cluster has the label '
        "gpu-model (--model-label)",
    ]


def test_a_bad_cluster_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The cluster file is validated as every command validates an instance file."""
    broken = CLUSTER.replace("count: 4", "count: four")
    lines, _ = _refused(tmp_path, capsys, JOBS, broken)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {tmp_path / 'cluster.yaml'}: "), lines[0]
    assert "gpus.count" in lines[0]


def test_a_bad_model_label_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines, _ = _refused(tmp_path, capsys, JOBS, CLUSTER, "--model-label", "a/b/c")
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: --model-label: not a label key: has 2 '/'")
