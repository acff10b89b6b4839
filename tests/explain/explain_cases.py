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

A100 = "gpus: {count: 8, type: NVIDIA-A100-SXM4-80GB, memory: 81920}"
ROOM = 'allocatable: {cpu: "64", memory: 512Gi}'


def node(name: str, labels: str = "", extra: str = "") -> str:
    """One 8 × A100 node as a YAML list item."""
    fields = [f"name: {name}", f"labels: {{{labels}}}", ROOM, A100] + ([extra] if extra else [])
    return "- {" + ", ".join(fields) + "}\n"


def rack(name: str, label: str) -> str:
    selector = f"{{labelMatch: {{matchLabels: {{rack: {label}}}}}}}"
    return f"- {{name: {name}, tier: 1, members: [{{type: Node, selector: {selector}}}]}}\n"


def child(name: str) -> str:
    return f"{{type: HyperNode, selector: {{exactMatch: {{name: {name}}}}}}}"


RACKS = (
    "nodes:\n"
    + "".join(node(f"gpu-a-00{i}", f"rack: r{(i + 1) // 2}") for i in range(1, 5))
    + "hypernodes:\n"
    + rack("rack-1", "r1")
    + rack("rack-2", "r2")
    + f"- {{name: spine-1, tier: 2, members: [{child('rack-1')}, {child('rack-2')}]}}\n"
)
"""Two racks of two 8-GPU nodes under one spine."""


def whole(node: str, indices: range) -> str:
    """Whole-device shares of ``node``'s GPUs ``indices``, as a running pod lists them."""
    return ", ".join(f"{{id: GPU-{node}-{i}, memory: 81920, cores: 100}}" for i in indices)


def running(
    name: str, node: str, gpus: int, *, queue: str = "default", preemptable: bool = False
) -> str:
    """A one-pod job running on ``node`` with its first ``gpus`` whole devices; its pod is a
    possible victim only when ``preemptable``."""
    devices = whole(node, range(gpus))
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


TEXTS: dict[int, str] = {}
"""The YAML each built instance was loaded from (by ``id``), for tests of the command line."""


def build(*parts: str) -> Instance:
    text = HEADER + "".join(textwrap.dedent(p).strip("\n") + "\n" for p in parts)
    instance = loads(text)
    TEXTS[id(instance)] = text
    return instance


TWO_NODES = "nodes:\n" + node("gpu-a-001", "pool: a") + node("gpu-a-002", "pool: a")

QUEUES = """\
queues:
- {name: root}
- {name: research, parent: root, capability: {nvidia.com/gpu: 8}}
"""


def want(
    gpus: int = 8, replicas: int = 1, *, queue: str = "default", task: str = "", job: str = ""
) -> str:
    """The job to explain: ``replicas`` pods of ``gpus`` whole GPUs, one gang, priority 100."""
    lines = [
        "- name: want",
        f"  queue: {queue}",
        "  priority: 100",
        f"  minAvailable: {replicas}",
    ]
    if job:
        lines.append(f"  {job}")
    lines += [
        "  tasks:",
        "  - name: w",
        f"    replicas: {replicas}",
        f'    resources: {{cpu: "1", memory: 1Gi, nvidia.com/gpu: {gpus}}}',
    ]
    if task:
        lines.append(f"    {task}")
    return "\n".join(lines) + "\n"


def queue_case() -> Instance:
    """research may hold 8 GPUs; job a holds 4 of them; want asks for 8: capability +4 (8 → 12)."""
    return build(
        CAPACITY,
        TWO_NODES,
        QUEUES,
        "jobs:\n",
        running("a", "gpu-a-001", 4, queue="research"),
        want(queue="research"),
    )


def topology_case() -> Instance:
    """3 pods of 8 GPUs, hard tier ≤ 1, racks of two 8-GPU nodes: only spine-1 (tier 2) holds it."""
    return build(
        TOPOLOGY,
        RACKS,
        "jobs:\n",
        want(8, 3, job="networkTopology: {mode: hard, highestTierAllowed: 1}"),
    )


def tdm(window: str) -> str:
    """Zone rz1 open during ``window``; gpu-r-001 is in it, gpu-a-001 is not."""
    zone = f'{{name: tdm, arguments: {{tdm.revocable-zone.rz1: "{window}"}}}}'
    return (
        "scheduler:\n"
        '  actions: "enqueue, allocate"\n'
        "  tiers:\n"
        "  - plugins: [{name: priority}, {name: gang}]\n"
        f"  - plugins: [{{name: predicates}}, {{name: deviceshare}}, {zone}]\n"
        "nodes:\n" + node("gpu-a-001") + node("gpu-r-001", "volcano.sh/revocable-zone: rz1")
    )


def window_case() -> Instance:
    """The only free node is in zone rz1, closed until 18:00 (now 14:00): after 18:00."""
    return build(
        tdm("18:00-21:00"),
        "jobs:\n",
        running("a", "gpu-a-001", 8),
        want(task='annotations: {volcano.sh/revocable-zone: "*"}'),
    )


def revocable_case() -> Instance:
    """The only free node is revocable (zone open) and want's pods are not: annotate "*"."""
    return build(tdm("08:00-21:00"), "jobs:\n", running("a", "gpu-a-001", 8), want())


def selector_case() -> Instance:
    """want selects pool=b; no node has it; gpu-a-002 is the free one: label it pool=b."""
    return build(
        CAPACITY,
        TWO_NODES,
        "jobs:\n",
        running("a", "gpu-a-001", 8),
        want(task="nodeSelector: {pool: b}"),
    )


def taint_case() -> Instance:
    """The free node is tainted dedicated=infer:NoSchedule: tolerate it."""
    taint = "taints: [{key: dedicated, value: infer, effect: NoSchedule}]"
    nodes = "nodes:\n" + node("gpu-a-001", "pool: a") + node("gpu-a-002", "pool: a", taint)
    return build(CAPACITY, nodes, "jobs:\n", running("a", "gpu-a-001", 8), want())


def gpu_filter_case() -> Instance:
    """want asks for an H100; every card is an A100: allow NVIDIA-A100-SXM4-80GB."""
    return build(
        CAPACITY, TWO_NODES, "jobs:\n", want(task="annotations: {nvidia.com/use-gputype: H100}")
    )


def evict_case() -> Instance:
    """gpu-a-001 is held by a non-preemptable pod, gpu-a-002 by two preemptable 4-GPU pods of
    batch-x: evicting both frees the 8 GPUs want asks for."""
    batch = """\
- name: batch-x
  tasks:
  - name: w
    replicas: 2
    resources: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 4}
    annotations: {volcano.sh/preemptable: "true"}
  running:
"""
    for index in (0, 1):
        devices = whole("gpu-a-002", range(4 * index, 4 * index + 4))
        batch += f"  - {{index: {index}, node: gpu-a-002, gpus: [{devices}]}}\n"
    return build(CAPACITY, TWO_NODES, "jobs:\n", running("a", "gpu-a-001", 8), batch, want())


def nodes_case() -> Instance:
    """Every GPU is held by a non-preemptable pod; want needs 2 nodes' worth: 2 more nodes."""
    held = "".join(running(f"held-{i}", f"gpu-a-00{i}", 8) for i in range(1, 5))
    return build(CAPACITY, RACKS, "jobs:\n", held, want(8, 2))


def two_blocker_case() -> Instance:
    """The queue case, and want also selects pool=b, which no node has: both must change."""
    return build(
        CAPACITY,
        TWO_NODES,
        QUEUES,
        "jobs:\n",
        running("a", "gpu-a-001", 4, queue="research"),
        want(queue="research", task="nodeSelector: {pool: b}"),
    )


HIERARCHY = CAPACITY.replace("{name: capacity}", "{name: capacity, enableHierarchy: true}")


def hierarchy_case() -> Instance:
    """team-a sets no GPU capability and inherits research's 8; a holds 4 in team-a; want
    asks 8: the field to change is research's capability, +4 (8 → 12)."""
    queues = """\
queues:
- {name: root}
- {name: research, parent: root, capability: {nvidia.com/gpu: 8}}
- {name: team-a, parent: research}
"""
    return build(
        HIERARCHY,
        TWO_NODES,
        queues,
        "jobs:\n",
        running("a", "gpu-a-001", 4, queue="team-a"),
        want(queue="team-a"),
    )


def tier_name_case() -> Instance:
    """topology_case with the limit written as highestTierName rack: rack → spine."""
    racks = RACKS.replace("tier: 1,", "tier: 1, tierName: rack,").replace(
        "tier: 2,", "tier: 2, tierName: spine,"
    )
    limit = "networkTopology: {mode: hard, highestTierName: rack}"
    return build(TOPOLOGY, racks, "jobs:\n", want(8, 3, job=limit))


def cordoned_case() -> Instance:
    """The only node is cordoned: uncordon gpu-a-001."""
    return build(
        CAPACITY, "nodes:\n" + node("gpu-a-001", "", "unschedulable: true"), "jobs:\n", want()
    )


def proportion_case() -> Instance:
    """Helm's default configuration (proportion): the queue's capability 4 caps its deserved;
    want asks 8: capability +4 (4 → 8)."""
    queues = "queues:\n- {name: default, capability: {nvidia.com/gpu: 4}}\n"
    return build(TWO_NODES, queues, "jobs:\n", want(8))


def shared_gpu_case() -> Instance:
    """Eight pods of share book 60000 of the 81920 MiB of each gpu-a-002 card; gpu-a-001 is
    held whole; want asks 40000 MiB of one card: evicting one share pod frees one card."""
    pods = "".join(
        f"  - {{index: {i}, node: gpu-a-002, gpus: [{{id: GPU-gpu-a-002-{i}, memory: 60000, "
        "cores: 0}]}\n"
        for i in range(8)
    )
    share = (
        "- name: share\n  tasks:\n  - name: w\n    replicas: 8\n"
        '    resources: {cpu: "1", nvidia.com/gpu: 1, nvidia.com/gpumem: 60000}\n'
        '    annotations: {volcano.sh/preemptable: "true"}\n'
        "  running:\n" + pods
    )
    asks = (
        "- name: want\n  priority: 100\n  tasks:\n  - name: w\n    replicas: 1\n"
        '    resources: {cpu: "1", nvidia.com/gpu: 1, nvidia.com/gpumem: 40000}\n'
    )
    return build(CAPACITY, TWO_NODES, "jobs:\n", running("a", "gpu-a-001", 8), share, asks)


def nested_limits_case() -> Instance:
    """a-team's own capability 8 and its parent org's 8 both bind (a holds 4 in a-team, want
    asks 8): both must rise by 4, org first so that a-team stays within it (the child's name
    sorts first, so name order would get it wrong)."""
    queues = """\
queues:
- {name: root}
- {name: org, parent: root, capability: {nvidia.com/gpu: 8}}
- {name: a-team, parent: org, capability: {nvidia.com/gpu: 8}}
"""
    return build(
        HIERARCHY,
        TWO_NODES,
        queues,
        "jobs:\n",
        running("a", "gpu-a-001", 4, queue="a-team"),
        want(queue="a-team"),
    )
