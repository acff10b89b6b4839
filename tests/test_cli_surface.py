"""What a new user meets first on the command line: ``--version``, help for every argument,
``solve --plot``."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from optimizer import __version__
from optimizer.cli import EXIT_OK, build_parser, main

DEMO = str(Path(__file__).resolve().parents[1] / "instances" / "demo.yaml")
VCOPT = Path(sys.executable).with_name("vcopt")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_version_comes_from_the_package_metadata() -> None:
    """The installed distribution's version, which pyproject reads from the one place the
    source keeps it (``optimizer.__version__``)."""
    run = subprocess.run([str(VCOPT), "--version"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0
    assert run.stdout == f"vcopt {version('vcopt')}\n"
    assert version("vcopt") == __version__


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_argument_and_positional_has_help(name: str) -> None:
    parser = _subcommands()[name]
    missing = [
        "/".join(a.option_strings) or a.dest
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction) and not (a.help and a.help.strip())
    ]
    assert missing == []


def test_every_subcommand_has_a_summary() -> None:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert {c.dest: bool(c.help) for c in sub._choices_actions} == dict.fromkeys(sub.choices, True)


def test_solve_plot_writes_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png = tmp_path / "plan.png"
    assert main(["solve", "--engine", "greedy", "-q", "--plot", str(png), DEMO]) == EXIT_OK
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Plan for demo (greedy)" in capsys.readouterr().out


def test_plot_into_a_missing_folder_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One line naming the file, exit 2, and nothing left behind."""
    target = tmp_path / "missing" / "plan.png"
    assert main(["solve", "--engine", "greedy", "-q", "--plot", str(target), DEMO]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {target}: No such file or directory\n"
    assert list(tmp_path.iterdir()) == []
