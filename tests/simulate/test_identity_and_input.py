"""A simulation of length zero is one snapshot cycle; bad timeline input is refused as bad
input always is (exit 2, the file, the object and the field)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from sim_timelines import document, gpu_job, gpu_node

from models.load import load
from optimizer.cli import main
from optimizer.options import SolveOptions
from optimizer.simulate import simulate
from optimizer.solve import solve

INSTANCES = Path(__file__).parents[2] / "instances"


@pytest.mark.parametrize("name", ["demo.yaml", "tdm.yaml", "queue-heavy.yaml"])
def test_zero_length_simulation_is_the_greedy_snapshot_plan(name: str) -> None:
    # until = now: the one cycle at now sees the file's own snapshot, so it must decide
    # exactly what `vcopt solve --engine greedy` decides.
    instance = load(INSTANCES / name)
    options = SolveOptions()
    run = simulate(instance, "greedy", options, until=instance.now, keep_plans=True)
    expected = solve(instance, "greedy", options)
    assert len(run.plans) == 1
    when, plan = run.plans[0]
    assert when == instance.now
    assert plan.placements == expected.placements
    assert plan.evictions == expected.evictions
    assert plan.pipelined == expected.pipelined
    assert [(d.job, d.status) for d in plan.jobs] == [(d.job, d.status) for d in expected.jobs]


def _write(tmp_path: Path, job: dict[str, object]) -> Path:
    path = tmp_path / "timeline.yaml"
    path.write_text(yaml.safe_dump(document([gpu_node("n1", 1)], [job])))
    return path


BAD = [
    (
        gpu_job("j", 1, 1, duration="-5m"),
        'Job "default/j": duration: must not be negative',
    ),
    (
        gpu_job("j", 1, 1, duration=-3),
        'Job "default/j": duration: must not be negative',
    ),
    (
        gpu_job("j", 1, 1, arrival="2026-11-30T13:00:00Z"),
        'Job "default/j": arrival: 2026-11-30T13:00:00+00:00 is before now',
    ),
    (
        gpu_job("j", 1, 1, arrival="-10m"),
        'Job "default/j": arrival: must not be before now',
    ),
    (
        gpu_job("j", 1, 1, arrival="tomorrow"),
        'Job "default/j": arrival: expected an RFC 3339 time',
    ),
    (
        gpu_job(
            "j",
            1,
            1,
            duration="1h",
            startedAt="2026-11-30T15:00:00Z",
            running=[{"index": 0, "node": "n1"}],
        ),
        'Job "default/j": startedAt: 2026-11-30T15:00:00+00:00 is after now',
    ),
    (
        gpu_job("j", 1, 1, remaining="10m", running=[{"index": 0, "node": "n1"}]),
        'Job "default/j": remaining: needs the job\'s duration',
    ),
]


@pytest.mark.parametrize(("job", "message"), BAD)
def test_bad_timeline_exits_2_naming_file_object_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], job: dict[str, object], message: str
) -> None:
    path = _write(tmp_path, job)
    assert main(["simulate", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"error: {path}: {message}" in err
    assert "Traceback" not in err


def test_unknown_engine_and_until_before_now_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, gpu_job("j", 1, 1, duration="1h"))
    assert main(["simulate", str(path), "--engines", "volcano", "-q"]) == 2
    assert "--engines" in capsys.readouterr().err
    assert main(["simulate", str(path), "--until", "2026-11-30T13:00:00Z", "-q"]) == 2
    assert "--until" in capsys.readouterr().err


def test_simulate_writes_jobs_and_series(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One 1-GPU job of 10 min there at now on a free node: starts at 14:00, ends at 14:10.
    # Its queue (proportion, the default conf) deserves the cluster's one GPU while the job
    # is there (water-filling clips it to the request, 1 GPU) and nothing once it is done.
    path = _write(tmp_path, gpu_job("j", 1, 1, duration="10m"))
    jobs, series = tmp_path / "jobs.csv", tmp_path / "series.csv"
    code = main(["simulate", str(path), "--jobs", str(jobs), "--series", str(series), "-q"])
    assert code == 0
    rows = jobs.read_text().splitlines()
    assert rows[0].startswith("engine,job,queue,arrival,start,end,wait_s,evictions")
    assert rows[1].startswith(
        "greedy,default/j,default,2026-11-30T14:00:00Z,2026-11-30T14:00:00Z,"
        "2026-11-30T14:10:00Z,0.0,0,0,600.0,0.0"
    )
    assert series.read_text().splitlines() == [
        "engine,time,gpus_allocated,pending_jobs,running_jobs,"
        "held_gpus:default,deserved_gpus:default,waiting_gpus:default",
        "greedy,2026-11-30T14:00:00Z,1.0,0,1,1.0,1.0,0.0",
        "greedy,2026-11-30T14:10:00Z,0.0,0,0,0.0,0.0,0.0",
    ]
    assert "default" in capsys.readouterr().out


@pytest.mark.parametrize(("job", "message"), BAD[:3])
def test_every_command_refuses_a_bad_timeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], job: dict[str, object], message: str
) -> None:
    """The timeline is part of the instance: validate refuses what simulate refuses."""
    path = _write(tmp_path, job)
    assert main(["validate", str(path)]) == 2
    assert f"error: {path}: {message}" in capsys.readouterr().err


def test_the_snapshot_holds_only_the_jobs_that_have_arrived(tmp_path: Path) -> None:
    """At 14:00, ``now`` runs on the one card; ``later`` arrives at 15:00. The snapshot at
    14:00 has ``now`` alone, so a solve places it and nothing else, and ``later`` waits in
    the timeline for a simulation's clock."""
    doc = document(
        [gpu_node("n1", 1)],
        [gpu_job("now", 1, 1, duration="1h"), gpu_job("later", 1, 1, arrival="1h")],
    )
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc))
    instance = load(path)
    assert [j.name for j in instance.jobs] == ["now"]
    assert [j.name for j in instance.arrivals] == ["later"]
    plan = solve(instance, "greedy", SolveOptions.of(time_limit=10))
    assert [p.pod for p in plan.placements] == ["default/now-w-0"]
