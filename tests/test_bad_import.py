"""``vcopt import alibaba`` on trace files it cannot draw from: exit 2, one line per problem
naming the right CSV file (pods or nodes), the row and the column, or the option; nothing
written. Before these checks, files without GPU demand made the arrival draw loop forever."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.cli import main

NODES_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
PODS_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
NODES = NODES_HEADER + "node-a,64000,262144,2,T4\nnode-b,96000,786432,8,V100M32\n"
PODS = PODS_HEADER + "pod-0,4000,8192,1,500,\npod-1,8000,16384,2,1000,\n"


def _files(tmp_path: Path, pods: str = PODS, nodes: str = NODES) -> tuple[Path, Path]:
    p, n = tmp_path / "pods.csv", tmp_path / "nodes.csv"
    p.write_text(pods)
    n.write_text(nodes)
    return p, n


def _refused(args: list[str], capsys: pytest.CaptureFixture[str], out: Path) -> list[str]:
    assert main(["import", "alibaba", *args, "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Traceback" not in captured.err
    assert not out.exists()
    return captured.err.splitlines()


def test_good_files_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The baseline the cases below break: two nodes (10 GPUs), two GPU tasks."""
    pods, nodes = _files(tmp_path)
    out = tmp_path / "out.yaml"
    assert (
        main(["import", "alibaba", "--pods", str(pods), "--nodes", str(nodes), "-o", str(out)]) == 0
    )
    assert "kind: Instance" in out.read_text()


@pytest.mark.parametrize(
    ("pods", "nodes", "which", "where"),
    [
        (PODS_HEADER + "pod-0,4000,8192,0,0,\n", NODES, "pods", "no task asks for a GPU"),
        (PODS_HEADER, NODES, "pods", "no task rows"),
        (
            PODS.replace("pod-0,4000,8192,1,500", "pod-0,4000,8192,-1,500"),
            NODES,
            "pods",
            'line 2 ("pod-0"): num_gpu: must be between 0 and 8, got -1',
        ),
        (
            PODS.replace("pod-0,4000,8192,1,500", "pod-0,4000,8192,1,0"),
            NODES,
            "pods",
            'line 2 ("pod-0"): gpu_milli: is 0 for a task that asks for 1 GPU(s)',
        ),
        (
            PODS.replace("pod-1,8000,16384,2,1000,", "pod-1,8000"),
            NODES,
            "pods",
            "line 3: has 2 fields, the header 6",
        ),
        (
            PODS.replace("4000", "four"),
            NODES,
            "pods",
            'line 2 ("pod-0"): cpu_milli: expected an integer',
        ),
        (
            "name,cpu\npod-0,1\n",
            NODES,
            "pods",
            "line 1: missing column(s) cpu_milli, memory_mib, num_gpu, gpu_milli",
        ),
        (PODS, NODES_HEADER, "nodes", "no node rows"),
        (PODS, NODES_HEADER + "node-a,64000,262144,0,T4\n", "nodes", "no node has a GPU"),
        (
            PODS,
            NODES.replace("node-b,96000,786432,8", "node-b,96000"),
            "nodes",
            "line 3: has 3 fields, the header 5",
        ),
        (PODS, NODES.replace("T4", "H100"), "nodes", 'line 2 ("node-a"): model: unknown GPU model'),
        (
            PODS,
            NODES.replace("262144,2", "262144,9"),
            "nodes",
            'line 2 ("node-a"): gpu: must be between 0 and 8, got 9',
        ),
    ],
)
def test_trace_file_it_cannot_draw_from(
    pods: str,
    nodes: str,
    which: str,
    where: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    p, n = _files(tmp_path, pods, nodes)
    named = {"pods": p, "nodes": n}[which]
    lines = _refused(["--pods", str(p), "--nodes", str(n)], capsys, tmp_path / "out.yaml")
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {named}: "), lines[0]
    assert where in lines[0]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--arrival", "0"),
        ("--arrival", "-1"),
        ("--arrival", "nan"),
        ("--arrival", "1e400"),
        ("--nodes-per-shape", "0"),
    ],
)
def test_option_it_cannot_draw_with(
    option: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p, n = _files(tmp_path)
    lines = _refused(["--pods", str(p), "--nodes", str(n), option, value], capsys, tmp_path / "o")
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {option}: ")


def test_arrival_too_small_to_draw_a_task_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """10 GPUs × 1,000 milli × 0.0001 is 1 milli: the smallest task (500) does not fit."""
    p, n = _files(tmp_path)
    lines = _refused(
        ["--pods", str(p), "--nodes", str(n), "--arrival", "0.0001"], capsys, tmp_path / "o"
    )
    assert lines == ["error: --arrival: draws no task at this arrival: raise it"]


def test_device_as_trace_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, n = _files(tmp_path)
    lines = _refused(["--pods", "/dev/zero", "--nodes", str(n)], capsys, tmp_path / "o")
    assert lines == ["error: /dev/zero: not a text file (it holds NUL bytes)"]


def test_a_csv_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """A spreadsheet's UTF-8 export starts with U+FEFF; the mark is not part of the first
    column's name ('\\ufeffsn' would be a missing column), so both files import as without it."""
    pods, nodes = _files(tmp_path)
    nodes.write_text("\ufeff" + NODES, encoding="utf-8")
    pods.write_text("\ufeff" + PODS, encoding="utf-8")
    plain = tmp_path / "plain.yaml"
    marked = tmp_path / "marked.yaml"
    (tmp_path / "clean").mkdir()
    clean_pods, clean_nodes = tmp_path / "clean" / pods.name, tmp_path / "clean" / nodes.name
    clean_pods.write_text(PODS, encoding="utf-8")
    clean_nodes.write_text(NODES, encoding="utf-8")
    args = ["import", "alibaba", "--seed", "1"]
    assert (
        main([*args, "--pods", str(clean_pods), "--nodes", str(clean_nodes), "-o", str(plain)]) == 0
    )
    assert main([*args, "--pods", str(pods), "--nodes", str(nodes), "-o", str(marked)]) == 0
    assert marked.read_text() == plain.read_text()
