"""``--optimize-every``: CP-SAT on the cycles at least the period after its last CP-SAT
cycle, greedy on the cycles between; the run is named ``cpsat@<period>`` everywhere."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from sim_timelines import document, gpu_job, gpu_node, instance

from optimizer.cli import main
from optimizer.options import SolveOptions
from optimizer.simulate import cycle, simulate


def at(text: str) -> datetime:
    return datetime.fromisoformat(f"2026-11-30T{text}").replace(tzinfo=UTC)


def _timeline() -> dict[str, object]:
    """One 1-GPU node. "huge" (2 GPUs) never fits, so a cycle always has work; "a" (4 min)
    is there at 14:00, "b" (5 min) arrives at 14:02, "d" (1 min) at 14:21."""
    return document(
        [gpu_node("n1", 1)],
        [
            gpu_job("a", 1, 1, duration="4m"),
            gpu_job("huge", 1, 2, duration="1h"),
            gpu_job("b", 1, 1, duration="5m", arrival="2m"),
            gpu_job("d", 1, 1, duration="1m", arrival="21m"),
        ],
    )


def test_cpsat_runs_once_a_period_and_greedy_between(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every cycle's (time, engine), by hand, with a period of 10 min and cycles 1 s apart:
    # 14:00:00 the first cycle is CP-SAT's; it places a (a change, so a cycle follows).
    # 14:00:01 greedy (1 s after CP-SAT): nothing changes; huge still waits.
    # 14:02:00 b arrives: greedy, the GPU is a's, nothing changes.
    # 14:04:00 a ends: greedy places b (ends 14:09); 14:04:01 greedy, nothing.
    # 14:09:00 b ends: greedy, nothing fits huge.
    # 14:10:00 no event, but things changed since CP-SAT's 14:00 cycle and huge waits: CP-SAT
    #          is due 10 min after its last cycle; it changes nothing, so it is not repeated.
    # 14:21:00 d arrives, 11 min after CP-SAT's last cycle: this cycle is CP-SAT's; it places
    #          d (ends 14:22). 14:21:01 greedy, nothing. 14:22:00 d ends: greedy, nothing.
    # 14:31:00 CP-SAT again (things changed since 14:21), nothing; then nothing is left.
    seen: list[tuple[datetime, str]] = []
    decide = cycle.decide

    def spy(snapshot, engine, options):  # type: ignore[no-untyped-def]
        seen.append((snapshot.now, engine))
        return decide(snapshot, engine, options)

    monkeypatch.setattr(cycle, "decide", spy)
    run = simulate(
        instance(_timeline()),
        "cpsat",
        SolveOptions.of(time_limit=5),
        optimize_every=timedelta(minutes=10),
        name="cpsat@10m",
    )
    assert seen == [
        (at("14:00:00"), "cpsat"),
        (at("14:00:01"), "greedy"),
        (at("14:02:00"), "greedy"),
        (at("14:04:00"), "greedy"),
        (at("14:04:01"), "greedy"),
        (at("14:09:00"), "greedy"),
        (at("14:10:00"), "cpsat"),
        (at("14:21:00"), "cpsat"),
        (at("14:21:01"), "greedy"),
        (at("14:22:00"), "greedy"),
        (at("14:31:00"), "cpsat"),
    ]
    assert run.engine == "cpsat@10m"
    assert run.cycles == len(seen)
    starts = {r.job.split("/")[1]: r.start for r in run.jobs}
    assert starts == {"a": at("14:00"), "b": at("14:04"), "d": at("14:21"), "huge": None}


def test_without_the_option_cpsat_decides_every_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same timeline without a period: the same cycles, every one of them CP-SAT's, and
    # none at 14:10 or 14:31 (a cycle follows a change, and nothing changes then).
    engines: list[str] = []
    decide = cycle.decide

    def spy(snapshot, engine, options):  # type: ignore[no-untyped-def]
        engines.append(engine)
        return decide(snapshot, engine, options)

    monkeypatch.setattr(cycle, "decide", spy)
    run = simulate(instance(_timeline()), "cpsat", SolveOptions.of(time_limit=5))
    assert engines == ["cpsat"] * 9
    assert run.engine == "cpsat"


def _write(tmp_path: Path) -> Path:
    path = tmp_path / "timeline.yaml"
    doc = document(
        [gpu_node("n1", 1)],
        [gpu_job("a", 1, 1, duration="4m"), gpu_job("b", 1, 1, duration="5m", arrival="2m")],
    )
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_periodic_run_is_named_in_every_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path)
    jobs, series, doc = tmp_path / "jobs.csv", tmp_path / "series.csv", tmp_path / "sim.json"
    code = main(
        [
            "simulate",
            str(path),
            "--engines",
            "greedy,cpsat",
            "--optimize-every",
            "10m",
            "--cycle-limit",
            "5",
            "--jobs",
            str(jobs),
            "--series",
            str(series),
            "--json",
            str(doc),
            "-q",
        ]
    )
    assert code == 0
    table = capsys.readouterr().out
    assert [line.split()[0] for line in table.splitlines() if "default" in line] == [
        "greedy",
        "cpsat@10m",
    ]
    assert "cpsat@10m" in table.split("cycles")[1]
    engines = [e["engine"] for e in json.loads(doc.read_text())["engines"]]
    assert engines == ["greedy", "cpsat@10m"]
    # Two jobs per engine; a series row at least at 14:00 per engine.
    assert [r.split(",")[0] for r in jobs.read_text().splitlines()[1:]] == [
        "greedy",
        "greedy",
        "cpsat@10m",
        "cpsat@10m",
    ]
    assert {r.split(",")[0] for r in series.read_text().splitlines()[1:]} == {
        "greedy",
        "cpsat@10m",
    }


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-5m", "must be a Go duration above 0, got '-5m'"),
        ("0", "must be a Go duration above 0, got '0'"),
        ("0s", "must be a Go duration above 0, got '0s'"),
        ("ten", "'ten' is not a duration"),
        ("10", "'10'"),
    ],
)
def test_a_bad_period_exits_2_naming_option_and_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    path = _write(tmp_path)
    code = main(["simulate", str(path), "--engines", "cpsat", f"--optimize-every={value}", "-q"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--optimize-every" in err
    assert message in err
    assert "Traceback" not in err


def test_a_period_without_cpsat_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path)
    assert main(["simulate", str(path), "--optimize-every", "10m", "-q"]) == 2
    err = capsys.readouterr().err
    assert "--optimize-every" in err and "cpsat" in err
