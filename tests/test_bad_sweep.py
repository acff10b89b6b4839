"""Bad sweep files: each file in ``tests/data/bad_sweep/`` breaks one rule of the sweep file
(``optimizer.sweepspec``) and says what on ``# expect: OBJECT | FIELD | FRAGMENT`` lines, as
the instance corpus does. Every problem names the sweep file, the variant and the field, and
is found before any solve (and before Dask) starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.errors import InputError
from optimizer.cli import main
from optimizer.sweepspec import load_sweep
from tests.test_bad_input import assert_command_says_exactly, assert_refused_exactly

DATA = Path(__file__).parent / "data"
BAD = sorted((DATA / "bad_sweep").glob("*.yaml"))


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_bad_sweep_file_names_file_variant_and_field(path: Path) -> None:
    assert_refused_exactly(path, lambda p: load_sweep(str(p)))


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_sweep_command_exits_2_without_traceback(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_command_says_exactly(path, capsys, ("sweep", "-q"))


def test_missing_instance_is_named_by_its_path(tmp_path: Path) -> None:
    spec = tmp_path / "sweep.yaml"
    spec.write_text("instance: nowhere.yaml\n")
    with pytest.raises(InputError) as caught:
        load_sweep(str(spec))
    (problem,) = caught.value.problems
    assert problem.file == str(tmp_path / "nowhere.yaml")
    assert "cannot read" in problem.message


def test_good_sweep_builds_every_variant_before_solving() -> None:
    """The demo sweep: six named variants, both engines, the settings it states."""
    spec = load_sweep(str(Path(__file__).parents[1] / "instances" / "sweep-demo.yaml"))
    assert [name for name, _ in spec.variants] == [
        "baseline",
        "evening",
        "evening-wider-window",
        "research-deserves-48",
        "pretrain-within-spine",
        "node-003-down",
    ]
    assert spec.engines == ("greedy", "cpsat")
    assert (spec.time_limit, spec.workers, spec.seed) == (10.0, 1, 0)
    down = dict(spec.variants)["node-003-down"]
    assert "node-003" not in down.node_by_name
    assert "node-003" in spec.instance.node_by_name


def test_sweep_api_refuses_engines_as_a_string_before_dask_starts(monkeypatch) -> None:
    """``engines="greedy"`` used to be split into the letters g, r, e, … after the Dask
    cluster had started."""
    import dask.distributed

    from models.load import load
    from optimizer import whatif

    def no_cluster(*args: object, **kwargs: object) -> None:
        raise AssertionError("Dask started")

    monkeypatch.setattr(dask.distributed, "LocalCluster", no_cluster)
    base = load(DATA / "base.yaml")
    with pytest.raises(ValueError, match="engines must be a list"):
        whatif.sweep(base, {"a": base}, "greedy")


def test_the_base_can_come_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sweep file without ``instance`` sweeps over the dump given after it (several files,
    options anywhere); naming the base in both places is refused before Dask starts."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "engines: [greedy]\n"
        "variants: [{name: baseline}, {name: late, at: '2026-11-30T23:00:00Z'}]\n"
    )
    out = tmp_path / "sweep.csv"
    dump = DATA / "kube" / "cluster-dump.yaml"
    assert (
        main(["sweep", str(spec), str(dump), "-q", "--now", "2026-11-30T14:00:00Z", "-o", str(out)])
        == 0
    )
    rows = out.read_text().splitlines()
    assert len(rows) == 3  # header, then one row per variant with the one engine
    both = tmp_path / "both.yaml"
    both.write_text("instance: demo.yaml\nvariants: [{name: a}]\n")
    assert main(["sweep", str(both), str(dump), "-q"]) == 2
    assert "given on the command line too" in capsys.readouterr().err
