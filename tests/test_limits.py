"""Work limits at validation: pods, nodes and pods × nodes, named with their numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from models import limits
from models.errors import InputError
from models.load import load

BASE = Path(__file__).parent / "data" / "base.yaml"


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = BASE.read_text()
    assert old in text
    path = tmp_path / "x.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_a_million_replicas_on_two_nodes_is_refused(tmp_path: Path) -> None:
    """The job keeps its one running pod; its task now has 1,000,000 replicas."""
    path = _variant(tmp_path, "replicas: 2", "replicas: 1000000")
    with pytest.raises(InputError) as caught:
        load(path)
    [problem] = caught.value.problems
    assert (problem.obj, problem.field) == ('Instance "base"', "jobs")
    assert "1,000,000 pods is more than the 200,000" in problem.message


def test_too_many_nodes_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_NODES", 1)
    with pytest.raises(InputError) as caught:
        load(BASE)
    [problem] = caught.value.problems
    assert (problem.obj, problem.field) == ('Instance "base"', "nodes")
    assert "2 nodes is more than the 1" in problem.message


def test_pairs_over_the_limit_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """2 pods × 2 nodes = 4 pairs."""
    monkeypatch.setattr(limits, "MAX_PAIRS", 3)
    with pytest.raises(InputError, match="2 pods × 2 nodes = 4 pairs, more than 3"):
        load(BASE)


def test_pairs_over_the_warning_threshold_load_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "WARN_PAIRS", 3)
    instance = load(BASE)
    [warning] = instance.warnings
    assert (warning.obj, warning.field) == ('Instance "base"', "jobs")
    assert "2 pods × 2 nodes = 4 pairs" in warning.message
