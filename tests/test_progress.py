"""The plain progress lines of a log: how often they come; the pause a test asks for."""

from __future__ import annotations

import io
import signal
from concurrent.futures import ThreadPoolExecutor

import pytest

from optimizer.progress import (
    PAUSE_VARIABLE,
    PLAIN_INTERVAL,
    PlainProgress,
    Progress,
    plain_interval,
)


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


def _never_pause() -> None:
    raise AssertionError("paused")


def _signal_comes() -> None:
    """What a SIGINT does to a pause: its handler raises."""
    raise KeyboardInterrupt


@pytest.mark.parametrize("setting", [None, "", "greedy", "stage", "stage work (1/4)", " compile"])
def test_pause_hook_is_inert_unless_it_names_the_phase(
    setting: str | None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if setting is None:
        monkeypatch.delenv(PAUSE_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(PAUSE_VARIABLE, setting)
    monkeypatch.setattr(signal, "pause", _never_pause)
    progress = Progress()
    progress.phase("stage work", "(1/4)")
    progress.phase("compile")
    assert capsys.readouterr().err == ""


def test_pause_hook_waits_for_a_signal_in_a_named_phase(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(PAUSE_VARIABLE, "greedy,stage work")
    monkeypatch.setattr(signal, "pause", _signal_comes)
    progress = Progress()
    progress.phase("compile")
    with pytest.raises(KeyboardInterrupt):
        progress.phase("stage work", "(1/4)")
    assert capsys.readouterr().err == "vcopt paused at stage work\n"
    assert progress.state.phase == "stage work"


def test_pause_hook_leaves_other_threads_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A signal handler runs on the main thread only: a pause elsewhere could never end."""
    monkeypatch.setenv(PAUSE_VARIABLE, "compile")
    monkeypatch.setattr(signal, "pause", _never_pause)
    with ThreadPoolExecutor(1) as pool:
        pool.submit(Progress().phase, "compile").result()
