"""Two hand-written plans for ``instances/demo.yaml``, whose every consequence can be read off
the file, for the tests of ``compare`` and of its figure.

- Plan A ("greedy") puts the six quarter-GPU notebook pods three to a GPU on node-002 and
  node-004 (rack-1 and rack-2: their LCA is spine-1, tier 2) and evicts nothing.
- Plan B ("cpsat") puts them on node-005 (four on GPU 0, two on GPU 1: one node, tier 0) and
  evicts rl-tuning's pod 1 from node-003, so rl-tuning keeps one pod on node-001 (a single
  pod has no LCA tier).

GPU-equivalents: rl-tuning 2 × 4 whole GPUs, serving 2 × 1, notebooks 6 × max(25/100,
20000/81920) = 6 × 0.25; so A holds 8 + 2 + 1.5 = 11.5 and B, with 4 GPUs evicted, 7.5.
"""

from __future__ import annotations

from pathlib import Path

from models.instance import Instance
from models.load import load
from optimizer.plan import Plan, plan_from_dict
from optimizer.solve import with_metrics

DEMO = Path(__file__).resolve().parents[1] / "instances" / "demo.yaml"
SHARE = {"memory": 20000, "cores": 25}


def _notebook(index: int, node: str, gpu: int) -> dict:
    return {
        "pod": f"default/notebooks-nb-{index}",
        "node": node,
        "gpus": [{"id": f"GPU-{node}-{gpu}", **SHARE}],
    }


def demo_and_plans() -> tuple[Instance, Plan, Plan]:
    demo = load(DEMO)
    a = {
        "placements": [_notebook(i, "node-002", 0) for i in range(3)]
        + [_notebook(i, "node-004", 0) for i in range(3, 6)]
    }
    b = {
        "placements": [_notebook(i, "node-005", 0) for i in range(4)]
        + [_notebook(i, "node-005", 1) for i in range(4, 6)],
        "evictions": [{"pod": "default/rl-tuning-actor-1", "node": "node-003"}],
    }
    greedy = with_metrics(demo, plan_from_dict(a, demo).replace(engine="greedy"))
    cpsat = with_metrics(demo, plan_from_dict(b, demo).replace(engine="cpsat"))
    return demo, greedy, cpsat
