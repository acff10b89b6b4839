"""Crafted instances, one per blocker kind, each with exactly one reason to keep ``want``
pending (the docstring of each says which and by how much, worked out by hand)."""

from __future__ import annotations

import textwrap

from models.instance import Instance
from models.load import loads

HEADER = """\
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: case}
now: "2026-11-30T14:00:00Z"
"""

CAPACITY = """\
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: deviceshare}]
"""

TOPOLOGY = """\
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: deviceshare}, {name: network-topology-aware}]
"""

RACKS = """\
nodes:
- {name: gpu-a-001, labels: {rack: r1}, allocatable: {cpu: "64", memory: 512Gi}, gpus: {count: 8, type: NVIDIA-A100-SXM4-80GB, memory: 81920}}
- {name: gpu-a-002, labels: {rack: r1}, allocatable: {cpu: "64", memory: 512Gi}, gpus: {count: 8, type: NVIDIA-A100-SXM4-80GB, memory: 81920}}
- {name: gpu-a-003, labels: {rack: r2}, allocatable: {cpu: "64", memory: 512Gi}, gpus: {count: 8, type: NVIDIA-A100-SXM4-80GB, memory: 81920}}
- {name: gpu-a-004, labels: {rack: r2}, allocatable: {cpu: "64", memory: 512Gi}, gpus: {count: 8, type: NVIDIA-A100-SXM4-80GB, memory: 81920}}
hypernodes:
- {name: rack-1, tier: 1, members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: r1}}}}]}
- {name: rack-2, tier: 1, members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: r2}}}}]}
- {name: spine-1, tier: 2, members: [{type: HyperNode, selector: {exactMatch: {name: rack-1}}}, {type: HyperNode, selector: {exactMatch: {name: rack-2}}}]}
"""


def running(
    name: str, node: str, gpus: int, *, queue: str = "default", preemptable: bool = False
) -> str:
    """A one-pod job running on ``node`` with its first ``gpus`` whole devices; its pod is a
    possible victim only when ``preemptable``."""
    devices = ", ".join(f"{{id: GPU-{node}-{i}, memory: 81920, cores: 100}}" for i in range(gpus))
    flag = "true" if preemptable else "false"
    return f"""\
- name: {name}
  queue: {queue}
  tasks:
  - name: w
    replicas: 1
    resources: {{cpu: "1", memory: 1Gi, nvidia.com/gpu: {gpus}}}
    annotations: {{volcano.sh/preemptable: "{flag}"}}
  running:
  - {{index: 0, node: {node}, gpus: [{devices}]}}
"""


def build(*parts: str) -> Instance:
    text = HEADER + "".join(textwrap.dedent(p).strip("\n") + "\n" for p in parts)
    return loads(text)
