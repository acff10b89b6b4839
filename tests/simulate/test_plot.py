"""``simulate --plot``: what each axis of the figure draws (its data, not its pixels), and
the PNG written with the other outputs."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from sim_timelines import instance, two_queues

from optimizer.cli import main
from optimizer.figures.simulation import ecdf, simulation_figure
from optimizer.options import SolveOptions
from optimizer.simulate import simulate


@pytest.fixture(scope="module")
def figure():
    sim = instance(two_queues())
    options = SolveOptions.of(time_limit=5)
    runs = [
        simulate(sim, "greedy", options),
        simulate(sim, "cpsat", options, optimize_every=timedelta(minutes=10), name="cpsat@10m"),
    ]
    return simulation_figure(runs, "two-queues")


def _axes(fig, gid: str):
    found = [ax for ax in fig.get_axes() if ax.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def _line(ax, label: str) -> tuple[list[float], list[float]]:
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
    return [float(x) for x in line.get_xdata()], [float(y) for y in line.get_ydata()]


def _same(actual: list[float], expected: list[float]) -> bool:
    return len(actual) == len(expected) and all(
        (math.isnan(a) and math.isnan(e)) or a == pytest.approx(e)
        for a, e in zip(actual, expected, strict=True)
    )


HOURS = [0, 1 / 6, 1, 1.5, 1.5]
"""The series' instants (14:00, 14:10, 15:00, 15:30) in hours, then the run's end (15:30)."""


def test_gpus_and_pending_per_engine(figure) -> None:
    gpus, pending = _axes(figure, "gpus"), _axes(figure, "pending")
    # a1 holds 2 GPUs until 15:00, then b1 holds 1 until 15:30; b1 is pending 14:10-15:00.
    # Nothing reclaims, so the periodic CP-SAT run decides the same as greedy.
    for label in ("greedy (Volcano)", "cpsat@10m"):
        assert _same(_line(gpus, label)[0], HOURS)
        assert _same(_line(gpus, label)[1], [2, 2, 1, 0, 0])
        assert _same(_line(pending, label)[1], [0, 1, 0, 0, 0])
    assert _line(gpus, "cluster: 2 GPUs")[1] == [2, 2]


def test_queue_shares_against_deserved(figure) -> None:
    # qa: 2 of 2 deserved, then 2 of 1 once qb has a job; nothing once a1 ends. qb: 0 of 1
    # while b1 waits, then 1 of 1; nothing before b1 arrives or after it ends.
    for engine in ("greedy", "cpsat@10m"):
        ax = _axes(figure, f"share:{engine}")
        assert _same(_line(ax, "qa")[1], [1, 2, math.nan, math.nan, math.nan])
        assert _same(_line(ax, "qb")[1], [math.nan, 0, 1, math.nan, math.nan])
        assert _line(ax, "deserved (1.0)")[1] == [1, 1]


def test_wait_distributions_per_queue(figure) -> None:
    # The longest wait is b1's 50 min, so every curve runs to 1.2 x 50 = 60 min.
    qa, qb = _axes(figure, "waits:qa"), _axes(figure, "waits:qb")
    assert _line(qa, "greedy (Volcano): 1 started") == ([0, 0, 60], [0, 1, 1])
    assert _line(qb, "greedy (Volcano): 1 started") == ([0, 50, 60], [0, 1, 1])
    assert qa.get_title() == "qa (1 job)"


def test_ecdf_counts_the_jobs_that_never_started() -> None:
    # 4 jobs, 2 started (after 0 and 10 min): the curve climbs to 1/4 at 0, 2/4 at 10, and
    # stays at 1/2 to the end.
    assert ecdf([10, 0], 4, 30) == ([0, 0, 10, 30], [0, 0.25, 0.5, 0.5])


def test_plot_is_written_with_the_other_outputs(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(two_queues()))
    png, doc = tmp_path / "sim.png", tmp_path / "sim.json"
    assert main(["simulate", str(path), "--plot", str(png), "--json", str(doc), "-q"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert doc.exists()


def test_an_unwritable_plot_stops_the_run_before_any_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(two_queues()))
    doc = tmp_path / "sim.json"
    missing = tmp_path / "nowhere" / "sim.png"
    assert main(["simulate", str(path), "--plot", str(missing), "--json", str(doc), "-q"]) == 2
    assert "--plot" in capsys.readouterr().err
    assert not doc.exists()
