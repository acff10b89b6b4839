"""Greedy pending reasons stay Volcano-style but never mislead (issue 17's four cases)."""

from __future__ import annotations

import textwrap

from models.load import load, loads
from optimizer.greedy.engine import solve

HEADER = """\
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: reasons}
now: "2026-11-30T14:00:00Z"
"""

ONE_NODE = """\
nodes:
- name: gpu-a-001
  allocatable: {cpu: "64", memory: 512Gi}
  gpus: {count: 8, type: NVIDIA-A100-SXM4-80GB, memory: 81920}
"""


def _reason(body: str, job: str) -> str:
    plan = solve(loads(HEADER + textwrap.dedent(body)))
    decision = plan.job(job)
    assert decision is not None and decision.status == "pending"
    return decision.reason


def test_a_gpu_type_no_card_has_is_not_read_as_a_full_node():
    """The node has 8 free A100s; an H100 request must not read "0/8 GPUs … free"."""
    reason = _reason(
        ONE_NODE
        + """\
jobs:
- name: want
  tasks:
  - name: w
    replicas: 1
    resources: {cpu: "1", nvidia.com/gpu: 1}
    annotations: {nvidia.com/use-gputype: H100}
""",
        "default/want",
    )
    assert "none of its 8 GPUs (NVIDIA-A100-SXM4-80GB) passes the pod's GPU type" in reason
    assert "0/8 GPUs" not in reason


def test_a_resource_no_node_offers_is_named_beside_the_queue_limit():
    reason = _reason(
        ONE_NODE
        + """\
jobs:
- name: want
  tasks:
  - {name: w, replicas: 1, resources: {cpu: "1", nvidia.com/mig-3g.20gb: 1}}
""",
        "default/want",
    )
    assert "(no node offers nvidia.com/mig-3g.20gb)" in reason


def test_hard_topology_without_the_plugin_says_it_is_not_enforced():
    body = """\
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}, {name: predicates}]
nodes:
- {name: n1, labels: {rack: r1}, allocatable: {cpu: "8", memory: 32Gi}}
- {name: n2, labels: {rack: r2}, allocatable: {cpu: "8", memory: 32Gi}}
hypernodes:
- name: rack-1
  tier: 1
  members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: r1}}}}]
- name: rack-2
  tier: 1
  members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: r2}}}}]
jobs:
- name: big
  minAvailable: 3
  networkTopology: {mode: hard, highestTierAllowed: 1}
  tasks:
  - {name: w, replicas: 3, resources: {cpu: "6", memory: 1Gi}}
"""
    reason = _reason(body, "default/big")
    assert "not enforced (network-topology-aware is not configured)" in reason
    assert "tried tier" not in reason


def test_pipelined_pods_with_nothing_releasing_are_not_promised_a_release():
    """demo.yaml: llm-pretrain's pods are pipelined on node-001, where no pod is evicted or
    terminating."""
    plan = solve(load("instances/demo.yaml"))
    reason = plan.job("default/llm-pretrain").reason
    assert "pipelined on node-001, where nothing is being released" in reason
    assert "waiting for resources being released" not in reason
