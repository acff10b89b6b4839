"""Queue rules: queue-capability and queue-leaf."""

from __future__ import annotations

import dataclasses

import pytest
from verify_kit import (
    WHOLE_1A,
    Doc,
    build,
    find,
    place,
    rules,
    task,
    violations,
)

# -- queues -------------------------------------------------------------------------------------


def _team_a_one_gpu(doc: Doc) -> None:
    find(doc, "queues", "team-a")["capability"] = {"nvidia.com/gpu": 1}


def test_queue_capability() -> None:
    """team-a capability 1 GPU; two shared pods (1 GPU each) → 2 > 1. research: 2 ≤ 4."""
    found = violations(build(_team_a_one_gpu), place("shared-w-0", "n1"), place("shared-w-1", "n1"))
    assert [v.rule for v in found] == ["queue-capability"]
    assert found[0].message == "queue team-a: nvidia.com/gpu 2 > realCapability 1"


def test_queue_capability_of_an_ancestor() -> None:
    """Three whole GPUs in team-a (3 ≤ 4) and two shared pods in team-b (2 ≤ 4): research
    carries 5 > its capability 4. Devices: n1's two cards, n2 and n3 open."""

    def edit(doc: Doc) -> None:
        task(doc, "whole")["replicas"] = 3
        find(doc, "jobs", "shared")["queue"] = "team-b"

    found = violations(
        build(edit),
        place("whole-w-0", "n1", WHOLE_1A),
        place("whole-w-1", "n1", ("GPU-1b", 40000, 100)),
        place("whole-w-2", "n2"),
        place("shared-w-0", "n3"),
        place("shared-w-1", "n3"),
    )
    assert [v.message for v in found] == ["queue research: nvidia.com/gpu 5 > realCapability 4"]


def test_queue_capability_only_on_resources_the_new_pods_request() -> None:
    """whole runs 2 GPUs in team-a (capability 1) already; solo asks only cpu and memory, which
    team-a does not limit, so placing it is fine. Another GPU pod is not."""

    def edit(doc: Doc) -> None:
        _team_a_one_gpu(doc)
        find(doc, "jobs", "whole")["running"] = [
            {"index": 0, "node": "n1", "gpus": [{"id": "GPU-1a", "memory": 40000, "cores": 100}]},
            {"index": 1, "node": "n2", "gpus": [{"id": "GPU-2a", "memory": 40000, "cores": 100}]},
        ]

    instance = build(edit)
    assert rules(instance, place("solo-main-0", "n3")) == []
    assert rules(instance, place("shared-w-0", "n3")) == ["queue-capability"]


@pytest.mark.parametrize("plugin", [{"name": "capacity"}, {"name": "proportion"}])
def test_queue_capability_flat(plugin: dict[str, str]) -> None:
    """Flat capacity and proportion share realCapability = min_dim(max₀(T − G) + guarantee,
    capability) (§5.2, §5.5): team-a's is 1 GPU, two pods need 2. research is not judged."""

    def edit(doc: Doc) -> None:
        _team_a_one_gpu(doc)
        tier = doc["scheduler"]["tiers"][1]["plugins"]
        tier[:] = [plugin if p["name"] == "capacity" else p for p in tier]

    found = violations(build(edit), place("shared-w-0", "n1"), place("shared-w-1", "n1"))
    assert [v.message for v in found] == ["queue team-a: nvidia.com/gpu 2 > realCapability 1"]


def test_queue_capability_without_a_quota_plugin() -> None:
    def edit(doc: Doc) -> None:
        _team_a_one_gpu(doc)
        tier = doc["scheduler"]["tiers"][1]["plugins"]
        tier[:] = [p for p in tier if p["name"] != "capacity"]

    assert rules(build(edit), place("shared-w-0", "n1"), place("shared-w-1", "n1")) == []


def test_queue_capability_closed_queue() -> None:
    """team-a is Closed: solo may not start in it, whatever the quota."""

    def edit(doc: Doc) -> None:
        find(doc, "queues", "team-a")["state"] = "Closed"

    found = violations(build(edit), place("solo-main-0", "n1"))
    assert [v.message for v in found] == [
        "queue team-a is Closed: it accepts no new pods (default/solo-main-0)"
    ]


def test_queue_leaf() -> None:
    """The loader refuses jobs in non-leaf queues, so the instance is changed after loading:
    solo moves to research, which has children. research's quota (4 GPUs) is not touched."""
    instance = build()
    jobs = tuple(
        dataclasses.replace(j, queue="research") if j.name == "solo" else j for j in instance.jobs
    )
    found = violations(instance.replace(jobs=jobs), place("solo-main-0", "n1"))
    assert [v.message for v in found] == [
        "job default/solo gets pods but its queue research is not a leaf (children: team-a, team-b)"
    ]
