"""``vcopt show`` writes quantities for people: cores, binary memory units, GPU cards with
their HAMi slices apart, one spelling for unset values, and a word on what ALLOCATED counts;
its tables keep to the terminal's width."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from models.load import load, loads
from models.resources import readable_amount, readable_bytes
from optimizer import show
from optimizer.cli import main

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "instances" / "demo.yaml"
SHARING = ROOT / "instances" / "gpu-sharing.yaml"


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wide enough for every table of the example instances in one piece (the demo's widest
    is 171 columns); the width tests below set their own."""
    monkeypatch.setenv("COLUMNS", "200")


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
    assert readable_bytes(amount) == text
    assert readable_amount("memory", amount) == text


def test_cpu_reads_in_cores() -> None:
    assert readable_amount("cpu", 500) == "0.5"
    assert readable_amount("cpu", 96_000) == "96"
    assert readable_amount("cpu", 2_250) == "2.25"


GI = 2**30


@pytest.mark.parametrize(
    ("name", "amount", "text"),
    [
        # hugepages are scalars, kept ×1000 like every scalar: 320Gi of them are bytes.
        ("hugepages-1Gi", 320 * GI * 1000, "320Gi"),
        ("ephemeral-storage", 100 * GI, "100Gi"),
        # An extended resource is a count; 320Gi of it reads as written, not 343,597,383,680.
        ("example.com/vram", 320 * GI * 1000, "320Gi"),
        ("example.com/vram", 320 * 10**9 * 1000, "320G"),  # decimal, as written
        ("nvidia.com/gpu", 8_000, "8"),
        ("rdma/hca", 1_000_001 * 1000, "1,000,001"),  # a large count with no exact suffix
        ("pods", 110, "110"),
        ("nvidia.com/gpu", 1 << 80, "∞"),
    ],
)
def test_every_resource_reads_as_people_read_it(name: str, amount: int, text: str) -> None:
    assert readable_amount(name, amount) == text


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


EXTENDED = [f"gpu.example.com/device-class-{i:02d}" for i in range(12)]
"""DRA-style quota keys, as a production Queue names them: twelve of ~33 characters."""


def _production_dump(tmp_path: Path) -> Path:
    """Two nodes reporting what kubelets report (ephemeral-storage, hugepages, pods) and a
    320Gi extended resource, a Queue whose capability names the twelve keys above, and a
    PodGroup in it (capacity derives realCapability for queues with jobs only)."""
    node = """\
apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status:
  allocatable:
    cpu: "96"
    memory: 768Gi
    ephemeral-storage: 100Gi
    hugepages-1Gi: 320Gi
    hugepages-2Mi: "0"
    pods: "110"
    nvidia.com/gpu: "8"
    example.com/vram: 320Gi
"""
    capability = "".join(f"    {key}: 4\n" for key in EXTENDED)
    queue = (
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: research}\n"
        "spec:\n  weight: 1\n  capability:\n    nvidia.com/gpu: 16\n" + capability
    )
    group = (
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
        "metadata: {name: held, namespace: default}\nspec: {queue: research, minMember: 1}\n"
    )
    path = tmp_path / "snap.yaml"
    docs = [node.format(name="gpu-1"), node.format(name="gpu-2"), queue, group]
    path.write_text("---\n".join(docs))
    return path


@pytest.mark.parametrize("width", [80, 200])
def test_a_production_dump_keeps_to_the_terminal(
    width: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """No line passes the width, and nothing is lost on the way: every capability key still
    reads ``key=4`` whole, and research's realCapability is the cluster's total where its
    capability does not cap it (capacity's min_dim): hugepages-1Gi and example.com/vram
    2 × 320Gi = 640Gi, ephemeral-storage 2 × 100Gi, never a row of digits such as
    687,194,767,360."""
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["show", "-q", str(_production_dump(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= width
    for key in EXTENDED:
        assert f"{key}=4" in out
    assert "hugepages-1Gi=640Gi" in out
    assert "example.com/vram=640Gi" in out
    assert "ephemeral-storage=200Gi" in out
    assert not re.search(r"\d{1,3}(,\d{3}){3}", out)


@pytest.mark.parametrize(("width", "tables"), [(80, 3), (200, 1)])
def test_a_wide_table_continues_below_led_by_its_first_column(
    width: int, tables: int, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """The demo's queue table, by hand: its columns are QUEUE 13 wide ("    inference"),
    WEIGHT 6, DESERVED 17 ("nvidia.com/gpu=64"), GUARANTEE 16, CAPABILITY and REALCAPABILITY
    27 ("nvidia.com/gpu=56, others ∞"), ALLOCATED 39, JOBS 4, three spaces apart: 171 in all,
    which 200 columns hold. In 80, QUEUE to GUARANTEE take 61 (CAPABILITY would make 91);
    QUEUE, CAPABILITY, REALCAPABILITY 73; QUEUE, ALLOCATED, JOBS 62: three tables."""
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["show", str(DEMO)]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [line.split() for line in lines if line.startswith("QUEUE ")]
    assert len(heads) == tables
    if tables == 3:
        assert heads == [
            ["QUEUE", "WEIGHT", "DESERVED", "GUARANTEE"],
            ["QUEUE", "CAPABILITY", "REALCAPABILITY"],
            ["QUEUE", "ALLOCATED", "JOBS"],
        ]
        third = next(i for i, line in enumerate(lines) if line.split()[:2] == heads[2][:2])
        assert re.split(r" {3,}", lines[third + 1]) == [
            "root",
            "cpu=48, memory=384Gi, nvidia.com/gpu=10",
            "0",
        ]
    assert max(len(line) for line in lines) <= width


def test_a_cell_wider_than_the_room_wraps_between_words() -> None:
    """Two columns in 20: the first keeps its 4, the second gets 20 − 4 − 3 = 13 and wraps
    "a=1, bb=2, ccc=3" after "bb=2," (10 characters; adding " ccc=3," would make 17)."""
    text = show.columns(["K", "VALUES"], [["key", "a=1, bb=2, ccc=3"]], width=20)
    assert text == "K     VALUES\nkey   a=1, bb=2,\n      ccc=3\n"


def test_other_resources_of_a_request_read_as_name_and_amount() -> None:
    """A pod asking 2 cores, 4Gi, 2Gi of 1Gi hugepages and one RDMA device: cores and memory
    as before, then the hugepages in binary units (a scalar, kept ×1000 underneath) and the
    device as a count."""
    instance = loads(
        """\
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: extended}
now: "2026-11-30T14:00:00Z"
nodes:
- {name: n1, allocatable: {cpu: "8", memory: 64Gi, hugepages-1Gi: 8Gi, rdma/hca: "4"}}
jobs:
- name: j
  tasks:
  - name: w
    replicas: 1
    resources: {cpu: "2", memory: 4Gi, hugepages-1Gi: 2Gi, rdma/hca: "1"}
"""
    )
    task = instance.job_by_key["default/j"].tasks[0]
    assert show.request_text(task) == "2 cores, 4Gi, hugepages-1Gi=2Gi, rdma/hca=1"
