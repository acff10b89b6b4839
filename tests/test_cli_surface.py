"""What a new user meets first on the command line: ``--version``, help for every argument,
``solve --plot``; and what a user meets running vcopt on a production dump: every command
reads several files and standard input, options go anywhere among them, the scheduler
ConfigMap is a ``--scheduler-conf``, and an output that cannot be written is refused before
any work."""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

from optimizer import __version__, cli
from optimizer.cli import EXIT_INPUT, EXIT_OK, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
DEMO = str(ROOT / "instances" / "demo.yaml")
SWEEP = str(ROOT / "instances" / "sweep-demo.yaml")
VCOPT = Path(sys.executable).with_name("vcopt")
KUBE = ROOT / "tests" / "data" / "kube"
DUMP, CM = KUBE / "cluster-dump.yaml", KUBE / "scheduler-cm.yaml"
NOW = ["--now", "2026-11-30T14:00:00Z"]


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
    assert err == (
        f"error: {target}: --plot: cannot be written: the directory {target.parent} does not "
        "exist\n"
    )
    assert list(tmp_path.iterdir()) == []


# -- a dump in several files ------------------------------------------------------------------


@pytest.fixture
def split(tmp_path: Path) -> tuple[str, str]:
    """cluster-dump.yaml cut in two as a user's dump often is: the cluster (nodes, priority
    classes, queues) in one file, the work (vcjobs, PodGroups, pods) in the other."""
    (doc,) = yaml.safe_load_all(DUMP.read_text())
    cluster_kinds = {"Node", "PriorityClass", "Queue"}
    parts = {
        "cluster": [i for i in doc["items"] if i["kind"] in cluster_kinds],
        "work": [i for i in doc["items"] if i["kind"] not in cluster_kinds],
    }
    paths = []
    for name, items in parts.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
        paths.append(str(path))
    return paths[0], paths[1]


def _stdin(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(Path(path).read_bytes())))


def test_validate_and_show_read_the_files_as_one_dump(
    split: tuple[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """By the dump's own header: 3 nodes (hami-1's 2 A100s are the only HAMi GPUs), 2
    queues, 5 jobs (train, sweep, held, gpu-pod, whole-pod) with 2 + 3 + 0 + 1 + 1 = 7 pods:
    the nodes from the first file, the jobs from standard input."""
    cluster, work = split
    _stdin(monkeypatch, work)
    assert main(["validate", "-q", cluster, "-", str(CM)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "valid: 3 nodes (2 GPUs), 0 hypernodes, 2 queues, 5 jobs (7 pods)" in out
    _stdin(monkeypatch, work)
    assert main(["show", "-q", cluster, "-", str(CM)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "plain-1" in out and "ml/sweep" in out


def test_solve_verify_compare_read_several_files_with_options_between(
    split: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The command a user typed (``verify snap.yaml cm.yaml --now T plan.yaml``) and its
    kin. By the header, both engines place train-worker-1 (4 GPUs: plain-1 has 4 free),
    gpu-pod (a HAMi share: hami-1) and whole-pod (2 GPUs): 3 jobs admitted; sweep's 24 GPUs
    do not fit and held has no pods."""
    cluster, work = split
    plan = str(tmp_path / "plan.yaml")
    argv = ["solve", cluster, "--engine", "greedy", work, "-q", "-o", plan, str(CM), *NOW]
    assert main(argv) == EXIT_OK
    assert main(["verify", cluster, work, str(CM), *NOW, plan]) == EXIT_OK
    assert "valid plan" in capsys.readouterr().out
    _stdin(monkeypatch, work)
    assert main(["verify", cluster, "-q", "-", str(CM), *NOW, plan]) == EXIT_OK
    capsys.readouterr()
    fast = ["--time-limit", "5", "--workers", "1"]
    assert main(["compare", cluster, *fast, work, "-q", str(CM), *NOW]) == EXIT_OK
    out = capsys.readouterr().out
    assert re.search(r"jobs_admitted\s*│\s*3\s*│\s*3\s*│", out)


def test_explain_and_capacity_read_several_files_and_stdin(
    split: tuple[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """explain FILE... JOB takes its last word as the job; capacity sees both pending jobs
    of the header (sweep, held), and held, a PodGroup alone, is set aside: no node places
    pods vcopt cannot see."""
    cluster, work = split
    _stdin(monkeypatch, work)
    argv = ["explain", cluster, "-", "--engine", "greedy", str(CM), *NOW, "-q", "ml/sweep"]
    assert main([*argv, "--no-check"]) == EXIT_OK
    assert capsys.readouterr().out.startswith("ml/sweep is pending in the greedy plan")
    _stdin(monkeypatch, work)
    argv = ["capacity", cluster, "--engine", "greedy", "-", "-q", str(CM), *NOW]
    assert main([*argv, "--format", "json", "--no-check"]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    assert sorted(doc["jobs"]) == ["ml/held", "ml/sweep"]
    assert "none of its pods is in the input" in doc["unadmittable"]["ml/held"]


@pytest.mark.parametrize(("command", "last"), [("verify", "PLAN"), ("explain", "JOB")])
def test_help_says_the_last_word_is_the_plan_or_the_job(
    command: str, last: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"FILE [FILE ...] {last}" in out
    assert "always the last" in out


def test_one_word_is_not_both_the_files_and_the_job(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["explain", DEMO])
    assert stop.value.code == EXIT_INPUT
    assert "the following arguments are required: JOB" in capsys.readouterr().err


# -- --scheduler-conf -----------------------------------------------------------------------


def _greedy_csv(capsys: pytest.CaptureFixture[str], *conf: str) -> str:
    argv = ["solve", str(DUMP), "--engine", "greedy", "--format", "csv", "-q", *NOW, *conf]
    assert main(argv) == EXIT_OK
    return capsys.readouterr().out


def test_scheduler_conf_takes_the_configmap_and_the_raw_conf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """scheduler-cm.yaml runs allocate: gpu-pod is placed on hami-1, the only node with HAMi
    devices. The same ConfigMap with actions "enqueue" only places nothing, and so does its
    conf written raw: the configuration given is the one applied, in either form."""
    assert "default/gpu-pod,default/gpu-pod,main,team-a,placed,hami-1" in _greedy_csv(
        capsys, "--scheduler-conf", str(CM)
    )
    enqueue_only = CM.read_text().replace('"enqueue, allocate, backfill"', '"enqueue"')
    cm = tmp_path / "cm.yaml"
    cm.write_text(enqueue_only)
    raw = tmp_path / "volcano-scheduler.conf"
    raw.write_text(yaml.safe_load(enqueue_only)["data"]["volcano-scheduler.conf"])
    for conf in (cm, raw):
        out = _greedy_csv(capsys, "--scheduler-conf", str(conf))
        assert ",placed," not in out
        assert "default/gpu-pod,default/gpu-pod,main,team-a,pending," in out


def test_a_problem_in_the_scheduler_conf_names_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ConfigMap's problem names the ConfigMap file, the object and the field under its
    data key; a raw conf's names the conf file and the field; never the snapshot."""
    cm = tmp_path / "cm.yaml"
    cm.write_text(CM.read_text().replace("enqueue, allocate", "enqueue, allocat"))
    assert main(["validate", "-q", str(DUMP), "--scheduler-conf", str(cm)]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.startswith(
        f'error: {cm}: ConfigMap "volcano-system/volcano-scheduler-configmap": '
        "data.volcano-scheduler.conf.actions: unknown action 'allocat'"
    )
    assert str(DUMP) not in err
    raw = tmp_path / "raw.conf"
    raw.write_text('actions: "enqueue, allocat"\n')
    assert main(["validate", "-q", str(DUMP), "--scheduler-conf", str(raw)]) == EXIT_INPUT
    assert capsys.readouterr().err.startswith(f"error: {raw}: actions: unknown action 'allocat'")


def test_a_scheduler_conf_that_is_neither_form_is_refused_naming_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The dump itself given as --scheduler-conf: a List of Nodes, Pods…, no ConfigMap."""
    assert main(["validate", "-q", DEMO, "--scheduler-conf", str(DUMP)]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert f"error: {DUMP}: " in err
    assert "expected a volcano-scheduler.conf (actions, tiers) or the ConfigMap" in err


def test_standard_input_is_read_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-", "--scheduler-conf", "-"]) == EXIT_INPUT
    assert "--scheduler-conf: standard input is read once" in capsys.readouterr().err


# -- outputs are checked first ---------------------------------------------------------------


def _nothing_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command fails the test if it starts: a refusal must come before any work."""

    def ran(args: argparse.Namespace) -> int:
        raise AssertionError(f"{args.command} ran before its outputs were checked")

    for name in dir(cli):
        if name.startswith("cmd_"):
            monkeypatch.setattr(cli, name, ran)


COMMANDS: dict[str, Callable[[str], list[str]]] = {
    "-o/--output": lambda p: ["solve", DEMO, "--time-limit", "100000", "-o", p],
    "--plot": lambda p: ["solve", DEMO, "--plot", p],
    "--csv": lambda p: ["compare", DEMO, "--time-limit", "100000", "--csv", p],
    "--json": lambda p: ["compare", DEMO, "--json", p],
}


@pytest.mark.parametrize("option", sorted(COMMANDS))
@pytest.mark.parametrize("where", ["missing folder", "a directory", "/proc"])
def test_an_output_that_cannot_be_written_is_refused_before_any_work(
    option: str,
    where: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = {
        "missing folder": tmp_path / "nodir" / "out.yaml",
        "a directory": tmp_path,
        "/proc": Path("/proc/vcopt-out.yaml"),
    }[where]
    why = {
        "missing folder": f"the directory {target.parent} does not exist",
        "a directory": "is a directory",
        "/proc": "/proc is on a proc file system, where no file can be written",
    }[where]
    _nothing_runs(monkeypatch)
    assert main(COMMANDS[option](str(target))) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"error: {target}: {option}: cannot be written: {why}")
    assert not target.exists() or target.is_dir()


@pytest.mark.parametrize(
    "argv",
    [
        ["generate", "-o"],
        ["sweep", SWEEP, "-o"],
        ["import", "alibaba", "--pods", "p.csv", "--nodes", "n.csv", "-o"],
    ],
)
def test_every_command_checks_its_output_first(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = tmp_path / "nodir" / "out"
    _nothing_runs(monkeypatch)
    assert main([*argv, str(target)]) == EXIT_INPUT
    assert capsys.readouterr().err.startswith(f"error: {target}: -o/--output: cannot be written")


def test_a_stream_is_a_fine_output(capsys: pytest.CaptureFixture[str]) -> None:
    """/dev/null is a device: written in place, never refused."""
    assert main(["solve", DEMO, "--engine", "greedy", "-q", "-o", "/dev/null"]) == EXIT_OK
