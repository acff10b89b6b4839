"""``vcopt show`` writes quantities for people: cores, binary memory units, GPU cards with
their HAMi slices apart, one spelling for unset values, and a word on what ALLOCATED counts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from models.load import load
from optimizer import show
from optimizer.cli import main

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "instances" / "demo.yaml"
SHARING = ROOT / "instances" / "gpu-sharing.yaml"


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (4_000_000_000, "3.73Gi"),  # 4G = 4e9 bytes = 3.7253 GiB
        (768 * 2**30, "768Gi"),
        (1536 * 2**20, "1.5Gi"),
        (12 * 2**40, "12Ti"),
        (20000 * 2**20, "19.5Gi"),  # 20000 MiB = 19.53 GiB
        (512 * 2**10, "512Ki"),
        (0, "0"),
    ],
)
def test_bytes_read_in_binary_units(amount: int, text: str) -> None:
    assert show.bytes_text(amount) == text


def test_cpu_reads_in_cores() -> None:
    assert show.amount_text("cpu", 500) == "0.5"
    assert show.amount_text("cpu", 96_000) == "96"
    assert show.amount_text("cpu", 2_250) == "2.25"


def _rows(out: str, header: str) -> dict[str, list[str]]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = {}
    for line in lines[start + 1 :]:
        if not re.search(r"\S {3,}\S", line):  # a blank line or the legend ends the table
            break
        cells = re.split(r" {3,}", line.strip())
        rows[cells[0]] = cells
    return rows


def test_queue_table_adds_what_running_pods_hold(capsys: pytest.CaptureFixture[str]) -> None:
    """Running in the demo: rl-tuning (team-b) 2 × (16 cpu, 128Gi, 4 GPUs) and serving
    (inference) 2 × (8 cpu, 64Gi, 1 GPU): team-b holds 32 cpu, 256Gi, 8 GPUs; inference 16,
    128Gi, 2; root the sum, 48 cpu, 384Gi, 10; team-a nothing."""
    assert main(["show", str(DEMO)]) == 0
    out = capsys.readouterr().out
    rows = _rows(out, "QUEUE ")
    assert rows["root"][6] == "cpu=48, memory=384Gi, nvidia.com/gpu=10"
    assert rows["team-b"][6] == "cpu=32, memory=256Gi, nvidia.com/gpu=8"
    assert rows["inference"][6] == "cpu=16, memory=128Gi, nvidia.com/gpu=2"
    assert rows["team-a"][6] == "-"
    assert rows["research"][4] == "nvidia.com/gpu=56, others ∞"
    assert rows["prod"][4] == "∞"
    assert "ALLOCATED: what the pods already running request" in out
    assert "The cluster's 64 GPUs register 640 HAMi slices" in " ".join(out.split())


def test_unset_values_have_one_spelling(capsys: pytest.CaptureFixture[str]) -> None:
    """The flat default queue of gpu-sharing.yaml has no deserved: '-', never 'none'."""
    assert main(["show", str(SHARING)]) == 0
    out = capsys.readouterr().out
    assert "none" not in out
    assert _rows(out, "QUEUE ")["default"][2] == "-"


def test_gpus_read_as_cards_with_slices_apart(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(SHARING)]) == 0
    out = capsys.readouterr().out
    nodes = _rows(out, "NODE ")
    assert nodes["a100-001"][2] == "8 × NVIDIA-A100-SXM4-80GB 80Gi (80 slices)"
    assert nodes["a100-001"][1] == "cpu=128, memory=1Ti"
    summary = out.splitlines()[1]
    assert "64 GPUs (32 × NVIDIA-A100-SXM4-80GB, 32 × NVIDIA-H100-80GB-HBM3" in summary
    assert "640 HAMi slices" in summary


def test_pod_requests_show_cores_memory_and_gpu_shares() -> None:
    """demo notebooks: 4 cpu, 32Gi, one GPU at 20000 MiB and 25 % of its cores."""
    demo = load(DEMO)
    text = show.request_text(demo.job_by_key["default/notebooks"].tasks[0])
    assert text == "4 cores, 32Gi, 1 GPU share (19.5Gi memory, 25 % cores)"
    whole = show.request_text(demo.job_by_key["default/llm-pretrain"].tasks[0])
    assert whole == "32 cores, 256Gi, 8 GPUs"


def test_memory_written_in_decimal_reads_in_gi(tmp_path: Path, capsys) -> None:
    """A Queue capability of 4G (Volcano's own sample) reads 3.73Gi, not 3906250Ki."""
    path = tmp_path / "queue.yaml"
    path.write_text(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: default\n"
        "spec:\n  weight: 1\n  capability:\n    cpu: 2000m\n    memory: 4G\n"
    )
    assert main(["show", "-q", str(path)]) == 0
    out = capsys.readouterr().out
    assert "cpu=2, memory=3.73Gi" in out
    assert "Ki" not in out
