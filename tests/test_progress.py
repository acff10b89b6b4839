"""The plain progress lines of a log: how often they come."""

from __future__ import annotations

import io

import pytest

from optimizer.progress import PLAIN_INTERVAL, PlainProgress, plain_interval


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0.0),
        ("2.5", 2.5),
        ("", PLAIN_INTERVAL),
        ("soon", PLAIN_INTERVAL),
        ("-1", PLAIN_INTERVAL),
        ("inf", PLAIN_INTERVAL),
        ("nan", PLAIN_INTERVAL),
    ],
)
def test_interval_comes_from_the_environment(
    text: str, expected: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VCOPT_PROGRESS_INTERVAL", text)
    assert plain_interval() == expected


def test_interval_zero_prints_every_phase() -> None:
    stream = io.StringIO()
    progress = PlainProgress(60.0, stream, interval=0)
    progress.phase("greedy")
    progress.phase("compile")
    phases = [line.split("  ")[1] for line in stream.getvalue().splitlines()]
    assert phases == ["greedy", "compile"]


def test_default_interval_keeps_a_short_solve_silent() -> None:
    stream = io.StringIO()
    progress = PlainProgress(60.0, stream)
    progress.phase("greedy")
    progress.phase("compile")
    assert stream.getvalue() == ""
