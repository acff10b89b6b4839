"""``--dask ADDRESS``: a decomposed solve's rounds solved by the workers of a Dask scheduler,
as the same plan the in-process rounds give (``tests/cpsat/test_decompose.py``); here, what
the command line does with the option."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.load import load
from optimizer.cli import main
from optimizer.cpsat import round_runner
from optimizer.plan import read_plan
from optimizer.verify import verify

ROOT = Path(__file__).resolve().parents[1]
TOPOLOGY = ROOT / "instances" / "topology-heavy.yaml"


def test_a_solve_on_a_dask_scheduler_writes_a_verified_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rounds reach the scheduler's workers (every round's batch goes through them) and
    the plan written verifies."""
    from distributed import LocalCluster

    submitted: list[int] = []
    run = round_runner.OnDask.run

    def spy(self: round_runner.OnDask, *args: object, **kwargs: object) -> object:
        submitted.append(len(args[1]))  # type: ignore[arg-type]
        return run(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(round_runner.OnDask, "run", spy)
    out = tmp_path / "plan.yaml"
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as cluster:
        argv = ["solve", "-q", "--strategy", "decompose", "--time-limit", "12"]
        argv += ["--dask", cluster.scheduler_address, "-o", str(out), str(TOPOLOGY)]
        assert main(argv) == 0
    assert submitted, "no round went to Dask"
    instance = load(TOPOLOGY)
    assert verify(instance, read_plan(out, instance)) == []


def test_an_unreachable_scheduler_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing answers at the address: exit 2, one line naming --dask and the address, no
    plan written."""
    monkeypatch.setattr(round_runner, "CONNECT_SECONDS", 1)
    out = tmp_path / "plan.yaml"
    argv = ["solve", "-q", "--strategy", "decompose", "--time-limit", "10"]
    argv += ["--dask", "tcp://127.0.0.1:9", "-o", str(out), str(TOPOLOGY)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --dask: no Dask scheduler answers at 'tcp://127.0.0.1:9'")
    assert "Traceback" not in err
    assert not out.exists()


def test_a_blank_address_is_refused_before_any_work(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "-q", "--dask", " ", str(TOPOLOGY)]) == 2
    assert "--dask" in capsys.readouterr().err
