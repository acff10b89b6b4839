"""A revocable gang at 22:30, when zone rz1 (08:00-21:00) is closed: explain names the closed
window, not only the nodes one could add.

normal-0 (4 cores, two NVIDIA-A100) holds one of the four 4-core, two-GPU pods; rev-0 and
rev-1 (32 cores, eight cards each) hold all four but are in rz1. So two rules block the gang
together — the closed window and normal-0's room — and either change alone admits it: the
window opening at 08:00 (a change of time, no cost to anyone), or three more nodes like
normal-0 (one pod each, with normal-0's own).
"""

from __future__ import annotations

import pytest

from models.load import from_dict
from optimizer.explain import explain
from optimizer.options import SolveOptions

DOC = {
    "apiVersion": "vcopt/v1alpha1",
    "kind": "Instance",
    "now": "2026-11-30T22:30:00Z",
    "scheduler": {
        "actions": "enqueue, allocate, backfill, shuffle",
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
            {
                "plugins": [
                    {"name": "drf"},
                    {"name": "predicates"},
                    {"name": "proportion"},
                    {"name": "nodeorder"},
                    {"name": "binpack"},
                    {
                        "name": "tdm",
                        "arguments": {
                            "tdm.revocable-zone.rz1": "08:00-21:00",
                            "tdm.evict.period": "1m",
                        },
                    },
                ]
            },
        ],
    },
    "nodes": [
        {
            "name": "normal-0",
            "allocatable": {"cpu": "4", "memory": "16Gi"},
            "gpus": {"count": 2, "type": "NVIDIA-A100", "memory": 81920},
        },
        *(
            {
                "name": f"rev-{i}",
                "labels": {"volcano.sh/revocable-zone": "rz1"},
                "allocatable": {"cpu": "32", "memory": "128Gi"},
                "gpus": {"count": 8, "type": "NVIDIA-A100", "memory": 81920},
            }
            for i in range(2)
        ),
    ],
    "queues": [{"name": "q"}],
    "jobs": [
        {
            "name": "batch",
            "queue": "q",
            "annotations": {"volcano.sh/preemptable": "true"},
            "minAvailable": 4,
            "tasks": [
                {
                    "name": "w",
                    "replicas": 4,
                    "resources": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": 2},
                    "annotations": {"volcano.sh/revocable-zone": "*"},
                }
            ],
        }
    ],
}


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_a_closed_window_is_named_and_its_opening_is_the_change(engine: str) -> None:
    instance = from_dict(DOC, "tdm.yaml")
    why = explain(instance, "batch", engine, options=SolveOptions.of(time_limit=10, workers=1))
    assert why.status == "pending"
    kinds = {b.kind: b for b in why.blockers}
    assert set(kinds) == {"tdm-window", "node-capacity"}
    assert "rz1 is closed" in why.dominant
    assert all(b.enough for b in why.blockers)
    assert [c.text for c in kinds["node-capacity"].changes] == ["with 3 more node(s) like normal-0"]
    assert [c.kind for c in why.changes] == ["tdm-window"]
    assert "after 08:00" in why.changes[0].text
    assert why.admitted_after is True
