"""Option values no engine can honour: a usage error (exit 2) naming the option, one line, no
traceback, before any work starts (a seed beyond int32 used to crash inside OR-Tools, and a
negative time limit ran and returned the greedy plan headed "(cpsat)")."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.cli import main

BASE = str(Path(__file__).parent / "data" / "base.yaml")


@pytest.mark.parametrize("command", ["solve", "compare"])
@pytest.mark.parametrize(
    ("option", "value", "fragment"),
    [
        ("--seed", "99999999999999999999", "between 0 and 2147483647"),
        ("--seed", "-1", "between 0 and 2147483647"),
        ("--time-limit", "-5", "positive number of seconds"),
        ("--time-limit", "0", "positive number of seconds"),
        ("--time-limit", "nan", "positive number of seconds"),
        ("--time-limit", "1e400", "positive number of seconds"),
        ("--gap", "nan", "between 0 and 1"),
        ("--gap", "-1", "between 0 and 1"),
        ("--gap", "2", "between 0 and 1"),
        ("--workers", "0", "between 1 and 256"),
        ("--workers", "100000", "between 1 and 256"),
        ("--weights", "work=-1", "expected stage=integer"),
        ("--weights", "work=99999999999999", "expected stage=integer"),
        ("--weights", "work=1,work=2", "given twice"),
        ("--weights", "colour=1", "unknown stage"),
    ],
)
def test_solver_option_out_of_range(
    command: str, option: str, value: str, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "-q", BASE, f"{option}={value}"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "Traceback" not in err
    assert err.splitlines() == [err.splitlines()[0]]
    assert err.startswith(f"error: {option}: ")
    assert fragment in err


@pytest.mark.parametrize("value", ["1e400", "nan", "0", "-1", "11"])
def test_generate_load_out_of_range(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", f"--load={value}"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: --load: must be a number above 0 and at most 10")


@pytest.mark.parametrize(
    "args",
    [
        ["solve", BASE, "--time-limit", "abc"],
        ["solve", BASE, "--workers", "1.5"],
        ["generate", "--load", "much"],
        ["solve", BASE, "--engine", "gurobi"],
    ],
)
def test_values_argparse_cannot_read(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(args)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.splitlines()[-1].startswith("vcopt ")
    assert args[-2] in err or "--engine" in err


def test_empty_file_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", ""]) == 2
    assert capsys.readouterr().err == 'error: "": an empty file name\n'
