"""The ``vcopt`` command line: exit codes, ``validate`` and ``show`` (DESIGN §7)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from optimizer import cli
from optimizer.arguments import solve_options
from optimizer.cli import build_parser, main

ROOT = Path(__file__).parent.parent
DEMO = ROOT / "instances" / "demo.yaml"
SEED000 = Path(__file__).parent / "data" / "seed000"
VCOPT = Path(sys.executable).with_name("vcopt")


def hypernode_rows(output: str) -> list[list[str]]:
    """The rows of the HyperNode table, split on runs of spaces, header first."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("NAME "))
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append(re.split(r" {2,}", line.strip()))
    return rows


def test_validate_demo(capsys: pytest.CaptureFixture[str]) -> None:
    """demo.yaml: 7 grouped nodes + node-008 = 8 nodes with 8 GPUs each (64); 7 HyperNodes
    (4 racks, 2 spines, 1 super-spine); 6 queues (root, research, team-a, team-b, prod,
    inference); 7 jobs with 2+4+2+4+6+2+2 = 22 pods; nothing Volcano would warn about."""
    assert main(["validate", str(DEMO)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out == (
        f"{DEMO}: valid: 8 nodes (64 GPUs), 7 hypernodes, 6 queues, 7 jobs (22 pods), 0 warnings\n"
    )


def test_show_demo_prints_the_hypernode_table_like_kubectl(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``kubectl get hypernodes`` columns, plain text, by tier then name. In demo.yaml each
    rack holds 2 nodes, each spine 2 racks (4 nodes), the super-spine both spines (8)."""
    assert main(["show", str(DEMO)]) == 0
    out, _ = capsys.readouterr()
    assert hypernode_rows(out) == [
        ["NAME", "TIER", "TIERNAME", "NODECOUNT"],
        ["rack-1", "1", "rack", "2"],
        ["rack-2", "1", "rack", "2"],
        ["rack-3", "1", "rack", "2"],
        ["rack-4", "1", "rack", "2"],
        ["spine-1", "2", "spine", "4"],
        ["spine-2", "2", "spine", "4"],
        ["super-spine-1", "3", "super-spine", "8"],
    ]
    header = next(line for line in out.splitlines() if line.startswith("NAME "))
    assert re.fullmatch(r"NAME +TIER +TIERNAME +NODECOUNT", header)
    assert not set("│┃┏┗─━|+") & set(out.split("\n\n")[1])


def test_show_seed000_multi_tier_example(capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 000 §1.3 prints rack-1 4, rack-2 3, spine-1 7 for the §8.4 tree; super-spine-1
    holds spine-1 only (spine-2 does not exist), so 7 as well, and the missing spine-2 is a
    warning on stderr, not an error."""
    path = SEED000 / "multi_tier_8_4.yaml"
    assert main(["show", str(path)]) == 0
    out, err = capsys.readouterr()
    assert hypernode_rows(out) == [
        ["NAME", "TIER", "TIERNAME", "NODECOUNT"],
        ["rack-1", "1", "rack", "4"],
        ["rack-2", "1", "rack", "3"],
        ["spine-1", "2", "spine", "7"],
        ["super-spine-1", "3", "super-spine", "7"],
    ]
    assert err == (
        f'warning: {path}: HyperNode "super-spine-1": members[1].selector.exactMatch.name: '
        'no HyperNode named "spine-2"\n'
    )


def test_quiet_hides_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    path = SEED000 / "multi_tier_8_4.yaml"
    assert main(["validate", "--quiet", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.endswith("1 warnings\n")


@pytest.mark.parametrize(
    "argv", [["frobnicate"], [], ["validate"], ["solve", "--engine", "nope", "x"]]
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown subcommand, none at all, a missing argument or a bad choice: usage, exit 2."""
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    _, err = capsys.readouterr()
    assert err.startswith("usage: vcopt")
    assert "error:" in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--help"])
    assert caught.value.code == 0
    out, _ = capsys.readouterr()
    assert "validate" in out
    assert "show" in out


def test_unknown_subcommand_in_a_real_process() -> None:
    run = subprocess.run([str(VCOPT), "frobnicate"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert "invalid choice: 'frobnicate'" in run.stderr


def test_validate_in_a_real_process() -> None:
    run = subprocess.run(
        [str(VCOPT), "validate", str(DEMO)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0
    assert run.stdout.startswith(f"{DEMO}: valid: 8 nodes")


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--max-evictions", "-1"], "--max-evictions"),
        (["--queue-eviction-budget", "nosuch=1"], "no queue 'nosuch'"),
        (["--queue-eviction-budget", "team-a"], "expected queue=integer"),
    ],
)
def test_bad_disruption_caps_exit_2(
    flags: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A negative cap, a budget naming no queue of the instance, or one without a number is
    bad input: one error naming the option, exit 2, no traceback."""
    assert main(["solve", "--engine", "greedy", "--quiet", *flags, str(DEMO)]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("error: ")
    assert fragment in err
    assert "Traceback" not in err


def test_greedy_over_the_eviction_cap_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Greedy follows Volcano, which has no eviction cap: its plan keeps both preemptions (b
    and c make room for hi) and a note says it passes ``--max-evictions 1``."""
    path = tmp_path / "preempt.yaml"
    path.write_text(
        "apiVersion: vcopt/v1alpha1\nkind: Instance\nmetadata: {name: p}\n"
        'now: "2026-11-30T14:00:00Z"\n'
        "scheduler:\n  actions: enqueue, allocate, preempt\n  tiers:\n"
        "  - plugins: [{name: priority}, {name: gang, enablePreemptable: false}]\n"
        "  - plugins: [{name: predicates}, {name: nodeorder}]\n"
        "nodes: [{name: n1, allocatable: {cpu: '4', memory: 64Gi}}]\n"
        "queues: [{name: q1}]\njobs:\n"
        "- {name: b, queue: q1, priority: 1, tasks: [{name: t, replicas: 1,"
        " resources: {cpu: '2'}}],"
        " running: [{index: 0, node: n1}]}\n"
        "- {name: c, queue: q1, priority: 2, tasks: [{name: t, replicas: 1,"
        " resources: {cpu: '2'}}],"
        " running: [{index: 0, node: n1}]}\n"
        "- {name: hi, queue: q1, priority: 10, tasks: [{name: t, replicas: 1,"
        " resources: {cpu: '4'}}]}\n"
    )
    assert main(["solve", "--engine", "greedy", "--max-evictions", "1", str(path)]) == 0
    _, err = capsys.readouterr()
    assert "note: greedy plan (Volcano has no eviction cap): 2 evictions, more than" in err


def test_no_reasons_reaches_the_solve(monkeypatch: pytest.MonkeyPatch) -> None:
    """``solve`` and ``compare`` take ``--no-reasons`` and hand it to ``optimizer.solve``
    (what a command reports is not an engine option); without it the pending reasons are
    named."""

    class Asked(Exception):
        pass

    asked: list[bool] = []

    def solve(*args: object, reasons: bool, **keywords: object) -> None:
        asked.append(reasons)
        raise Asked

    monkeypatch.setattr(cli, "solve", solve)
    monkeypatch.setattr(cli, "solve_both", solve)
    for command in ("solve", "compare"):
        for flags in ([], ["--no-reasons"]):
            with pytest.raises(Asked):
                main([command, "-q", *flags, str(DEMO)])
    assert asked == [True, False, True, False]


def test_no_bound_reaches_the_solve_options() -> None:
    """``--no-bound`` is the engine's ``bound=False``; without it the bound is proved."""
    parser = build_parser()
    for command in ("solve", "compare"):
        assert solve_options(parser.parse_args([command, str(DEMO)])).search.bound
        bare = parser.parse_args([command, "--no-bound", str(DEMO)])
        assert not solve_options(bare).search.bound
