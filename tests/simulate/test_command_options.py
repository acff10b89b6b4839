"""Options of ``vcopt simulate``: ``--max-evictions N`` reaches every CP-SAT cycle's options
(a value no engine can honour is a usage error naming it), and ``--jobs``/``--series`` write
Parquet when the name ends in ``.parquet``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from sim_timelines import document, gpu_job, gpu_node

from optimizer.cli import main
from optimizer.simulate import variants


def _timeline(tmp_path: Path) -> Path:
    path = tmp_path / "timeline.yaml"
    doc = document([gpu_node("n1", 1)], [gpu_job("a", 1, 1, duration="4m")])
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_cap_reaches_the_cpsat_cycles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    real = variants.simulate

    def spy(instance: Any, engine: str, options: Any, **kwargs: Any) -> Any:
        seen.append((engine, options.disruption.max_evictions))
        return real(instance, engine, options, **kwargs)

    monkeypatch.setattr(variants, "simulate", spy)
    argv = ["simulate", str(_timeline(tmp_path)), "--engines", "greedy,cpsat"]
    assert main([*argv, "--cycle-limit", "2", "--max-evictions", "0", "-q"]) == 0
    assert seen == [("greedy", 0), ("cpsat", 0)]
    seen.clear()
    assert main([*argv, "--cycle-limit", "2", "-q"]) == 0
    assert seen == [("greedy", None), ("cpsat", None)]


def test_a_negative_cap_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(_timeline(tmp_path)), "--max-evictions", "-1", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --max-evictions: must be a non-negative integer")
    assert "Traceback" not in err


def test_tables_ending_in_parquet_are_parquet(tmp_path: Path) -> None:
    """The same rows as the CSV: one job, one engine; a series point per change."""
    import pandas as pd

    path = _timeline(tmp_path)
    csv, parquet = tmp_path / "jobs.csv", tmp_path / "jobs.parquet"
    series = tmp_path / "series.parquet"
    argv = ["simulate", str(path), "-q", "--jobs"]
    assert main([*argv, str(csv)]) == 0
    assert main([*argv, str(parquet), "--series", str(series)]) == 0
    assert parquet.read_bytes()[:4] == b"PAR1"
    from_csv, from_parquet = pd.read_csv(csv), pd.read_parquet(parquet)
    assert list(from_parquet["job"]) == list(from_csv["job"]) == ["default/a"]
    assert list(from_parquet.columns) == list(from_csv.columns)
    assert len(pd.read_parquet(series)) >= 1
