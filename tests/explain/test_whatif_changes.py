"""The what-if modifiers explain's changes are made of (``optimizer.whatif``)."""

from __future__ import annotations

import pytest
from explain_cases import CAPACITY, RACKS, TWO_NODES, build, evict_case, node, want

from models.errors import InputError
from optimizer import whatif


def test_evicted_pods_leave_their_task_and_the_rest_keep_their_nodes():
    """batch-x runs pods 0 and 1 on gpu-a-002 (GPUs 0-3 and 4-7); evicting pod 0 leaves one
    replica, renumbered 0, still holding GPUs 4-7."""
    changed = whatif.with_evicted(evict_case(), ["default/batch-x-w-0"])
    job = changed.job_by_key["default/batch-x"]
    assert job.tasks[0].replicas == 1
    (pod,) = job.running
    assert pod.index == 0
    assert [s.id for c in pod.gpus for s in c] == [f"GPU-gpu-a-002-{i}" for i in range(4, 8)]
    assert job.min_available == 1


def test_requeued_pods_wait_again_as_pending_pods():
    changed = whatif.with_evicted(evict_case(), ["default/batch-x-w-0"], requeue=True)
    job = changed.job_by_key["default/batch-x"]
    assert job.tasks[0].replicas == 2
    assert [p.running for p in job.pods] == [False, True]


def test_evicting_a_pod_that_does_not_run_is_bad_input():
    with pytest.raises(InputError, match="no such running pod"):
        whatif.with_evicted(evict_case(), ["default/want-w-0"])


def test_nodes_like_one_join_its_rack_by_label():
    changed = whatif.with_nodes_like(build(CAPACITY, RACKS, "jobs:\n", want()), "gpu-a-003", 2)
    assert {"gpu-a-003-new-1", "gpu-a-003-new-2"} <= changed.topology.real_nodes("rack-2")
    copy = changed.node_by_name["gpu-a-003-new-1"]
    assert [d.id for d in copy.gpus][:1] == ["GPU-gpu-a-003-0-new-1"]


def test_nodes_like_one_join_an_exact_match_hypernode_as_members():
    """rack-x lists its node by name: a copy only belongs to it as a new exact member."""
    body = (
        "nodes:\n" + node("gpu-a-001") + "hypernodes:\n- {name: rack-x, tier: 1, members: "
        "[{type: Node, selector: {exactMatch: {name: gpu-a-001}}}]}\n"
        "jobs:\n"
    )
    changed = whatif.with_nodes_like(build(CAPACITY, body, want()), "gpu-a-001", 1)
    assert changed.topology.real_nodes("rack-x") == {"gpu-a-001", "gpu-a-001-new-1"}


def test_task_and_node_edits_are_checked_like_the_loader():
    instance = build(CAPACITY, TWO_NODES, "jobs:\n", want(task="nodeSelector: {pool: b}"))
    relabelled = whatif.with_node_labels(instance, {"gpu-a-002": {"pool": "b"}})
    assert relabelled.node_by_name["gpu-a-002"].labels["pool"] == "b"
    freed = whatif.with_task(instance, "default/want", "w", node_selector={})
    assert freed.job_by_key["default/want"].tasks[0].node_selector == {}
    with pytest.raises(InputError, match="no task"):
        whatif.with_task(instance, "default/want", "nope", node_selector={})
    with pytest.raises(InputError, match="no such node"):
        whatif.with_node(instance, "nope", unschedulable=False)
