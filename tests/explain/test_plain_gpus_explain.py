"""Nodes of the plain NVIDIA device plugin (``nvidia.com/gpu`` as a count, no inventory):
explain and capacity place whole-GPU pods there by count, as both engines do.

plain-0 counts 8 GPUs; a running pod holds 4 of them. No queue plugin is configured, so
nothing but room keeps a job out. ``want`` is a gang of two pods of 8
whole GPUs each: neither fits the 4 left, so it needs two more nodes like plain-0 (one pod
each), and one more is not enough. A share (``nvidia.com/gpumem``) never fits such a node.
"""

from __future__ import annotations

import pytest

from models.load import loads
from optimizer.explain import capacity, explain
from optimizer.options import SolveOptions

CASE = """\
apiVersion: vcopt/v1alpha1
kind: Instance
now: "2026-11-30T14:00:00Z"
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: nodeorder}, {name: binpack}]
nodes:
- {name: plain-0, allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: 8}}
queues: [{name: q}]
jobs:
- name: busy
  queue: q
  tasks: [{name: w, replicas: 1, resources: {cpu: "4", memory: 8Gi, nvidia.com/gpu: 4}}]
  running: [{index: 0, node: plain-0}]
- name: want
  queue: q
  tasks: [{name: w, replicas: 2, resources: {cpu: "4", memory: 8Gi, nvidia.com/gpu: 8}}]
"""

OPTIONS = SolveOptions.of(time_limit=10, workers=1)


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_whole_gpu_pods_are_placed_on_plain_nodes_by_count(engine: str) -> None:
    instance = loads(CASE)
    why = explain(instance, "want", engine, options=OPTIONS)
    assert [b.kind for b in why.blockers] == ["node-capacity"]
    assert [c.text for c in why.changes] == ["with 2 more node(s) like plain-0"]
    assert why.admitted_after is True
    short = capacity(instance, like="plain-0", engine=engine, options=OPTIONS)
    assert short.possible and short.count == 2 and not short.unadmittable


def test_a_share_never_fits_a_plain_node() -> None:
    instance = loads(
        CASE.replace("nvidia.com/gpu: 8}}]\n", "nvidia.com/gpu: 1, nvidia.com/gpumem: 4000}}]\n", 1)
    )
    short = capacity(instance, like="plain-0", engine="greedy", options=OPTIONS)
    assert short.count == 0  # nothing admissible is left to count
    assert list(short.unadmittable) == ["default/want"]
    assert "a share of a GPU" in short.unadmittable["default/want"]
