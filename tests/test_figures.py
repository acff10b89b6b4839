"""The figure of ``compare --plot`` and ``solve --plot``: its structure, not its pixels.

The hand-written demo plans of ``tests/demo_plans.py`` are used, so counts follow from the file:
running pods hold 8 GPUs (rl-tuning, 2 × 4) and 2 (serving, 2 × 1) = 10 GPUs in plan A; plan
B evicts rl-tuning's pod on node-003 (GPUs 0-3), so 6 remain hatched and 4 are marked
evicted. The plans differ on 8 GPUs: node-002 GPU 0 and node-004 GPU 0 (notebooks in A),
node-005 GPUs 0 and 1 (notebooks in B) and node-003 GPUs 0-3 (rl-tuning in A only).
"""

from __future__ import annotations

import numpy as np
import pytest
from demo_plans import demo_and_plans
from matplotlib.image import AxesImage
from matplotlib.patches import Rectangle

from models.load import from_dict
from optimizer import figures
from optimizer.compare import PRIMARY_SPECS
from optimizer.figures.placement import (
    FREE,
    MAX_JOB_COLOURS,
    Palette,
    is_detailed,
    placement_map,
)
from optimizer.generate import generate
from optimizer.plan import plan_from_dict
from optimizer.solve import with_metrics


@pytest.fixture(scope="module")
def case():
    return demo_and_plans()


@pytest.fixture(scope="module")
def demo(case):
    return case[0]


@pytest.fixture(scope="module")
def plans(case):
    return case[1], case[2]


def _axes(fig, gid: str):
    found = [ax for ax in fig.get_axes() if ax.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


@pytest.fixture(scope="module")
def figure(demo, plans):
    return figures.compare_figure(demo, *plans)


def test_one_score_axis_per_metric_with_unit_and_direction(figure, plans) -> None:
    scores = {
        ax.get_gid(): ax for ax in figure.get_axes() if (ax.get_gid() or "").startswith("score:")
    }
    assert set(scores) == {f"score:{s.name}" for s in PRIMARY_SPECS}
    for spec in PRIMARY_SPECS:
        ax = scores[f"score:{spec.name}"]
        assert ax.get_title() == f"{spec.label}\n{'↑' if spec.higher_is_better else '↓'} better"
        assert ax.get_ylabel() == spec.unit
        assert [t.get_text() for t in ax.get_xticklabels()] == ["greedy (Volcano)", "cpsat"]
    evictions = [t for t in scores["score:evictions"].texts]
    assert [t.get_text() for t in evictions] == ["0", "1"]
    assert [t.get_fontweight() for t in evictions] == ["bold", "normal"]
    assert [t.get_text() for t in scores["score:gpu_allocated"].texts] == ["11.5", "7.5"]
    assert [t.get_text() for t in scores["score:jobs_admitted"].texts] == ["1", "1"]


def test_placement_maps_side_by_side(figure) -> None:
    greedy, cpsat = _axes(figure, "map:greedy"), _axes(figure, "map:cpsat")
    assert greedy.get_title().startswith("greedy (Volcano): 1 job admitted, 11.5 of 64 GPUs")
    assert cpsat.get_title().startswith("cpsat: 1 job admitted, 7.5 of 64 GPUs")
    names = [t.get_text() for t in greedy.get_yticklabels()]
    assert names == [f"node-00{i}" for i in range(1, 8)] + ["node-008  [rz1]"]
    assert greedy.get_xlabel() == "GPU index on the node"

    def hatched(ax) -> int:
        return sum(1 for p in ax.patches if isinstance(p, Rectangle) and p.get_hatch())

    def evicted(ax) -> int:
        return sum(1 for p in ax.patches if p.get_linewidth() == 2 and p.get_fill() is False)

    assert (hatched(greedy), hatched(cpsat)) == (10, 6)
    assert (evicted(greedy), evicted(cpsat)) == (0, 4)
    shared = sorted(t.get_text() for t in cpsat.texts)
    # Four notebook shares of 20,000 MiB and 25 cores on an 81,920 MiB card: cores 100 %,
    # memory 80,000 / 81,920 = 97.7 %, apart by more than a rounding; two shares: 50 % / 49 %.
    assert shared == ["50%\n2 pods", "mem 98%\ncores 100%\n4 pods"]
    assert sorted(t.get_text() for t in greedy.texts) == ["75%\n3 pods", "75%\n3 pods"]
    assert "the plans differ on 8 of 64 GPUs" in figure.subfigs[0]._suptitle.get_text()


def test_pending_jobs_are_listed_above_each_map(figure) -> None:
    """Plan A admits only notebooks: the pending jobs are llm-pretrain (2 × 8 GPUs),
    big-train (4 × 8), bert-finetune (4 × 2) and batch-scavenger (2 × 4)."""
    title = _axes(figure, "map:greedy").get_title()
    assert "pending (4): llm-pretrain (2 × 8 GPU), big-train (4 × 8 GPU)" in title.replace(
        "\n", " "
    )
    assert "batch-scavenger (2 × 4 GPU)" in title.replace("\n", " ")


def test_plan_figure_has_one_map_and_one_bar_per_metric(demo, plans) -> None:
    fig = figures.plan_figure(demo, plans[1])
    assert _axes(fig, "map:cpsat") is not None
    ax = _axes(fig, "score:pods_placed")
    assert [t.get_text() for t in ax.texts] == ["6"]


def _wide_instance():
    """50 nodes of 8 GPUs and no HyperNodes: too many rows for one row per node."""
    return from_dict(
        {
            "apiVersion": "vcopt/v1alpha1",
            "kind": "Instance",
            "metadata": {"name": "wide"},
            "now": "2026-11-30T14:00:00Z",
            "nodeGroups": [
                {
                    "namePrefix": "n-",
                    "count": 50,
                    "allocatable": {"cpu": "64", "memory": "512Gi", "pods": 110},
                    "gpus": {"count": 8, "type": "NVIDIA-A100", "memory": 81920},
                }
            ],
            "queues": [{"name": "root"}, {"name": "default", "parent": "root"}],
            "jobs": [
                {
                    "name": "a",
                    "queue": "default",
                    "tasks": [
                        {
                            "name": "w",
                            "replicas": 1,
                            "resources": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 8},
                        }
                    ],
                }
            ],
        },
        "<wide>",
    )


def test_large_clusters_draw_racks_as_bands_of_node_blocks() -> None:
    """50 nodes wrap after 36 per band: 2 bands of 2 × 4 GPU blocks, one pixel row and column
    of gap each, so the image is 2 × 3 rows by 36 × 5 columns. The job's 8 GPUs on the first
    node are its colour, the next node is free."""
    wide = _wide_instance()
    first = wide.nodes[0]
    doc = {
        "placements": [
            {
                "pod": "default/a-w-0",
                "node": first.name,
                "gpus": [{"id": d.id, "memory": d.memory, "cores": 100} for d in first.gpus],
            }
        ]
    }
    plan = with_metrics(wide, plan_from_dict(doc, wide).replace(engine="greedy"))
    pmap = placement_map(wide, plan)
    assert not is_detailed([pmap])
    fig = figures.plan_figure(wide, plan)
    ax = _axes(fig, "map:greedy")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["no HyperNode", "…"]
    (image,) = [a for a in ax.get_children() if isinstance(a, AxesImage)]
    pixels = np.asarray(image.get_array())
    assert pixels.shape == (6, 180, 3)
    colour = Palette(wide, ["default/a"]).colour("default/a")
    assert np.allclose(pixels[0:2, 0:4], colour)
    assert np.allclose(pixels[0:2, 5:9], FREE)


def test_many_jobs_are_coloured_by_queue() -> None:
    inst = from_dict(generate("S", 0, 0.9), "<S>")
    jobs = [j.key for j in inst.jobs]
    assert len(jobs) > MAX_JOB_COLOURS
    palette = Palette(inst, jobs)
    assert palette.by_queue
    assert [label for label, _ in palette.legend()] == list(
        dict.fromkeys(inst.job_by_key[j].queue for j in jobs)
    )
    assert not Palette(inst, jobs[:MAX_JOB_COLOURS]).by_queue


def test_png_is_written_atomically_and_never_through_a_symlink(tmp_path, figure) -> None:
    real = tmp_path / "real.png"
    real.write_bytes(b"old")
    link = tmp_path / "link.png"
    link.symlink_to(real)
    figures.write_png(figure, link)
    assert not link.is_symlink()
    assert link.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert real.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.png", "real.png"]


def test_a_shared_cell_never_reads_above_100_percent() -> None:
    """Two pods each holding 60 % of a card's memory and 30 % of its cores would read
    "120 %" in GPU-equivalents; the cell says memory and cores apart, each within 100 %."""
    from optimizer.figures.placement import GpuCell, Holder

    pods = (Holder("a", 0.6, False, 0.6, 0.3), Holder("b", 0.6, False, 0.6, 0.3))
    assert GpuCell(0, True, pods, False).label() == "mem 100%\ncores 60%"
    same = (Holder("a", 0.5, False, 0.5, 0.5),)
    assert GpuCell(0, True, same, False).label() == "50%"
