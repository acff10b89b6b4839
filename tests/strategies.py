"""Hypothesis strategies for tiny random instances that are valid by construction.

The property tests judge both engines with the verifier, so a generated instance must be one the
loader accepts *and* one that describes a real cluster: running pods fit the nodes they run on
and hold device shares HAMi could have booked, queue quotas keep the admission webhook's rules,
and every revocable zone a node names has a window. Anything less and a "violation" could be the
input's fault rather than an engine's. Instances stay tiny (≤ 8 nodes, ≤ 6 jobs of ≤ 8 pods) so
that CP-SAT settles them in well under a second and a failure shrinks to a readable case.

:func:`instances` draws the compact document (a plain dict for ``models.load.from_dict``);
:func:`to_yaml` prints one, so a shrunk counterexample can be pasted into a regression test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import strategies as st

from models.tdm import ZONE_LABEL, pod_revocable_zone
from models.vocabulary import PREEMPTABLE

NOW = "2026-11-30T14:00:00Z"
ZONE = "rz1"
OPEN_WINDOW = "08:00-21:00"
"""Active at :data:`NOW` (14:00 UTC): the zone's node takes revocable pods."""
CLOSED_WINDOW = "20:00-23:00"
"""Inactive at :data:`NOW`: the zone's node takes nothing new and TDM evicts from it."""
GIB = 2**30
MIB = 2**20
POOL = "pool"
ZONE_KEY = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
APP = "app"
TAINT_KEY = "dedicated"
GPU_TYPES = ("NVIDIA-A100-SXM4-80GB", "NVIDIA-A10", "NVIDIA-T4")
DEVICE_MEMORY = (16384, 24576, 40960, 81920)
"""MiB; a shared request of 20000 MiB fits some cards and not others."""
QUOTA_PLUGINS = ("helm-default", "proportion", "capacity", "capacity-hierarchy")

_NODE_CPU = (("2", 2000), ("4", 4000), ("8", 8000), ("16", 16000), ("32", 32000))
_NODE_MEMORY = (
    ("8Gi", 8 * GIB),
    ("16Gi", 16 * GIB),
    ("32Gi", 32 * GIB),
    ("64Gi", 64 * GIB),
    ("128Gi", 128 * GIB),
)
_NODE_PODS = (3, 8, 110)
_POD_CPU = (("250m", 250), ("500m", 500), ("1", 1000), ("2", 2000), ("4", 4000))
_POD_MEMORY = (("512Mi", 512 * MIB), ("1Gi", GIB), ("2Gi", 2 * GIB), ("8Gi", 8 * GIB))
_SHARED_MEMORY = (2048, 4096, 8192, 20000)
_SHARED_CORES = (10, 25, 50)
_QUOTA_RANGES = {"cpu": 64, "memory": 256, "nvidia.com/gpu": 16}
"""Upper bound of each quota dimension, in cores, GiB and GPUs."""


@dataclass(frozen=True)
class Device:
    id: str
    memory: int
    count: int


@dataclass(frozen=True)
class NodeSpec:
    """A generated node, kept beside its YAML so running pods can be fitted onto it."""

    name: str
    cpu: int
    memory: int
    pods: int
    labels: Mapping[str, str]
    tainted: bool
    devices: tuple[Device, ...]
    doc: Mapping[str, Any]


@dataclass(frozen=True)
class GpuAsk:
    """A container's GPU request: ``nums`` whole cards, or one card shared by memory and cores."""

    nums: int
    memory: int | None = None
    cores: int | None = None

    @property
    def whole(self) -> bool:
        return self.memory is None

    def resources(self) -> dict[str, int]:
        if self.whole:
            return {"nvidia.com/gpu": self.nums}
        return {
            "nvidia.com/gpu": 1,
            "nvidia.com/gpumem": self.memory or 0,
            "nvidia.com/gpucores": self.cores or 0,
        }


@dataclass(frozen=True)
class TaskSpec:
    name: str
    replicas: int
    cpu: int
    memory: int
    gpu: GpuAsk | None
    selector: Mapping[str, str]
    tolerates: bool
    annotations: Mapping[str, str]
    doc: Mapping[str, Any]


@dataclass
class _Free:
    """What is left on one node while running pods are being placed (generation-time only)."""

    cpu: int
    memory: int
    pods: int
    device_memory: dict[str, int] = field(default_factory=dict)
    device_cores: dict[str, int] = field(default_factory=dict)
    device_slots: dict[str, int] = field(default_factory=dict)
    exclusive: set[str] = field(default_factory=set)


# -- nodes -------------------------------------------------------------------------------------


@st.composite
def _devices(draw: st.DrawFn, node: str) -> tuple[tuple[Device, ...], Any]:
    """0–4 GPUs, written either as HAMi's shorthand or as an explicit device list."""
    count = draw(st.integers(0, 4))
    if count == 0:
        return (), None
    gpu_type = draw(st.sampled_from(GPU_TYPES))
    if draw(st.booleans()):
        memory = draw(st.sampled_from(DEVICE_MEMORY))
        split = draw(st.sampled_from((1, 10)))
        devices = tuple(Device(f"GPU-{node}-{i}", memory, split) for i in range(count))
        return devices, {"count": count, "type": gpu_type, "memory": memory, "split": split}
    devices = tuple(
        Device(
            f"GPU-{node}-x{i}",
            draw(st.sampled_from(DEVICE_MEMORY)),
            draw(st.sampled_from((1, 10))),
        )
        for i in range(count)
    )
    listed = [
        {"id": d.id, "index": i, "type": gpu_type, "memory": d.memory, "count": d.count}
        for i, d in enumerate(devices)
    ]
    return devices, listed


@st.composite
def _node(draw: st.DrawFn, index: int) -> NodeSpec:
    name = f"n{index}"
    cpu_text, cpu = draw(st.sampled_from(_NODE_CPU))
    memory_text, memory = draw(st.sampled_from(_NODE_MEMORY))
    pods = draw(st.sampled_from(_NODE_PODS))
    labels = {POOL: draw(st.sampled_from("ab"))} if draw(st.booleans()) else {}
    if draw(st.integers(0, 3)):
        labels[ZONE_KEY] = draw(st.sampled_from(("z1", "z2")))
    tainted = draw(st.integers(0, 4)) == 0
    devices, gpus = draw(_devices(name))
    doc: dict[str, Any] = {
        "name": name,
        "allocatable": {"cpu": cpu_text, "memory": memory_text, "pods": pods},
    }
    if labels:
        doc["labels"] = dict(labels)
    if tainted:
        doc["taints"] = [{"key": TAINT_KEY, "value": "gpu", "effect": "NoSchedule"}]
    if gpus is not None:
        doc["gpus"] = gpus
    return NodeSpec(name, cpu, memory, pods, labels, tainted, devices, doc)


def _with_zone(node: NodeSpec) -> NodeSpec:
    labels = {**node.labels, ZONE_LABEL: ZONE}
    return NodeSpec(
        node.name,
        node.cpu,
        node.memory,
        node.pods,
        labels,
        node.tainted,
        node.devices,
        {**node.doc, "labels": labels},
    )


@st.composite
def _hypernodes(draw: st.DrawFn, nodes: Sequence[NodeSpec]) -> list[dict[str, Any]]:
    """0–3 racks of tier 1 by exactMatch on node names, optionally a tier-2 spine above them.

    Every rack gets at least one node; the others go to a random rack or, now and then, to none,
    so hard-topology jobs also meet nodes outside every HyperNode.
    """
    racks = draw(st.integers(0, min(3, len(nodes))))
    if racks == 0:
        return []
    members: list[list[str]] = [[nodes[r].name] for r in range(racks)]
    for node in nodes[racks:]:
        rack = draw(st.sampled_from([*range(racks), None]))
        if rack is not None:
            members[rack].append(node.name)
    out: list[dict[str, Any]] = [
        {
            "name": f"rack-{r}",
            "tier": 1,
            "tierName": "rack",
            "members": [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in names],
        }
        for r, names in enumerate(members)
    ]
    if draw(st.booleans()):
        out.append(
            {
                "name": "spine-0",
                "tier": 2,
                "tierName": "spine",
                "members": [
                    {"type": "HyperNode", "selector": {"exactMatch": {"name": f"rack-{r}"}}}
                    for r in range(racks)
                ],
            }
        )
    return out


# -- queues ------------------------------------------------------------------------------------


@dataclass
class _Quota:
    """A queue's quota in whole units (cores, GiB, GPUs), and what its children may still take."""

    deserved: dict[str, int]
    capability: dict[str, int]
    guarantee: dict[str, int]
    deserved_left: dict[str, int]
    guarantee_left: dict[str, int]


def _quota_text(resource: str, amount: int) -> object:
    if resource == "cpu":
        return str(amount)
    if resource == "memory":
        return f"{amount}Gi"
    return amount


@st.composite
def _quota(draw: st.DrawFn, parent: _Quota | None) -> _Quota:
    """deserved ≤ capability, guarantee ≤ deserved, capability ≤ the parent's, and the siblings'
    deserved and guarantee sums within the parent's, on the resources the parent sets."""
    deserved: dict[str, int] = {}
    capability: dict[str, int] = {}
    guarantee: dict[str, int] = {}
    if draw(st.booleans()):
        return _Quota(deserved, capability, guarantee, {}, {})
    for resource, top in _QUOTA_RANGES.items():
        cap_limit = parent.capability.get(resource, top) if parent else top
        if draw(st.integers(0, 3)) == 0:
            capability[resource] = draw(st.integers(1, cap_limit))
        d_limit = capability.get(resource, cap_limit)
        if parent and resource in parent.deserved:
            d_limit = min(d_limit, parent.deserved_left[resource])
        if d_limit >= 1 and draw(st.booleans()):
            deserved[resource] = draw(st.integers(1, d_limit))
            g_limit = deserved[resource]
            if parent and resource in parent.guarantee:
                g_limit = min(g_limit, parent.guarantee_left[resource])
            if g_limit >= 1 and draw(st.integers(0, 2)) == 0:
                guarantee[resource] = draw(st.integers(1, g_limit))
    if parent:
        _spend(parent.deserved_left, deserved)
        _spend(parent.guarantee_left, guarantee)
    return _Quota(deserved, capability, guarantee, dict(deserved), dict(guarantee))


def _spend(left: dict[str, int], amounts: Mapping[str, int]) -> None:
    """Take a child's amounts from what its parent has left, on the resources it limits."""
    for resource, amount in amounts.items():
        if resource in left:
            left[resource] -= amount


@st.composite
def _queue(draw: st.DrawFn, name: str, parent: str, quota: _Quota) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": name, "parent": parent}
    for key in ("deserved", "capability", "guarantee"):
        values = getattr(quota, key)
        if values:
            doc[key] = {r: _quota_text(r, a) for r, a in values.items()}
    weight = draw(st.integers(1, 3))
    if weight != 1:
        doc["weight"] = weight
    if draw(st.integers(0, 5)) == 0:
        doc["reclaimable"] = False
    return doc


@st.composite
def _queues(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str]]:
    """A flat tree (1–3 leaves under root) or two levels (1–2 parents of 1–2 leaves each);
    returns the queue documents and the leaf names, the only queues that may hold jobs."""
    docs: list[dict[str, Any]] = [{"name": "root"}]
    leaves: list[str] = []
    if draw(st.booleans()):
        for i in range(draw(st.integers(1, 3))):
            name = f"q{i}"
            docs.append(draw(_queue(name, "root", draw(_quota(None)))))
            leaves.append(name)
        return docs, leaves
    for i in range(draw(st.integers(1, 2))):
        parent_name = f"p{i}"
        parent = draw(_quota(None))
        docs.append(draw(_queue(parent_name, "root", parent)))
        for j in range(draw(st.integers(1, 2))):
            name = f"p{i}-l{j}"
            docs.append(draw(_queue(name, parent_name, draw(_quota(parent)))))
            leaves.append(name)
    return docs, leaves


# -- scheduler configuration --------------------------------------------------------------------


@dataclass(frozen=True)
class _Features:
    quota: str
    tdm_window: str | None
    deviceshare: str | None
    topology: bool
    actions: tuple[str, ...]


@st.composite
def _features(draw: st.DrawFn) -> _Features:
    quota = draw(st.sampled_from(QUOTA_PLUGINS))
    if quota == "helm-default":
        return _Features(quota, None, None, False, ("enqueue", "allocate", "backfill"))
    tdm = draw(st.sampled_from((None, OPEN_WINDOW, CLOSED_WINDOW)))
    deviceshare = draw(st.sampled_from((None, "binpack", "spread")))
    topology = draw(st.booleans())
    evicting = draw(st.sampled_from(((), ("reclaim",), ("preempt",), ("reclaim", "preempt"))))
    return _Features(
        quota, tdm, deviceshare, topology, ("enqueue", "allocate", "backfill", *evicting)
    )


def _scheduler(features: _Features) -> dict[str, Any] | None:
    """The ConfigMap variants people run: the Helm chart's, and the capacity guide's (flat or
    hierarchical) with the optional tdm, deviceshare and network-topology-aware plugins."""
    if features.quota == "helm-default":
        return None
    second: list[dict[str, Any]] = []
    if features.quota == "proportion":
        second.append({"name": "overcommit"})
    second += [{"name": "drf", "enablePreemptable": False}, {"name": "predicates"}]
    if features.quota == "proportion":
        second.append({"name": "proportion"})
    elif features.quota == "capacity":
        second.append({"name": "capacity"})
    else:
        second.append(
            {"name": "capacity", "enableHierarchy": True, "arguments": {"ancestorReclaimLevel": 1}}
        )
    second += [{"name": "nodeorder"}, {"name": "binpack"}]
    if features.tdm_window is not None:
        second.append(
            {
                "name": "tdm",
                "arguments": {
                    f"tdm.revocable-zone.{ZONE}": features.tdm_window,
                    "tdm.evict.period": "1m",
                },
            }
        )
    if features.deviceshare is not None:
        second.append(
            {
                "name": "deviceshare",
                "arguments": {
                    "deviceshare.VGPUEnable": True,
                    "deviceshare.SchedulePolicy": features.deviceshare,
                },
            }
        )
    if features.topology:
        second.append({"name": "network-topology-aware"})
    return {
        "actions": ", ".join(features.actions),
        "tiers": [
            {
                "plugins": [
                    {"name": "priority"},
                    {"name": "gang", "enablePreemptable": False},
                    {"name": "conformance"},
                ]
            },
            {"plugins": second},
        ],
    }


# -- jobs --------------------------------------------------------------------------------------


@st.composite
def _gpu_ask(draw: st.DrawFn) -> GpuAsk | None:
    kind = draw(st.sampled_from(("none", "none", "whole", "shared")))
    if kind == "none":
        return None
    if kind == "whole":
        return GpuAsk(draw(st.integers(1, 2)))
    return GpuAsk(1, draw(st.sampled_from(_SHARED_MEMORY)), draw(st.sampled_from(_SHARED_CORES)))


def _selects(app: str) -> dict[str, Any]:
    return {"matchLabels": {APP: app}}


@st.composite
def _pod_terms(draw: st.DrawFn, app: str) -> dict[str, Any]:
    """Inter-pod terms, spread constraints and preferred node affinity for a task whose pods
    carry ``app: <app>``, unique to the task. Required anti-affinity only ever selects the
    task's own pods, so every pod it selects carries it too: then the rule holds both ways even
    under Volcano's lists frozen at session open (docs/AFFINITY.md)."""
    out: dict[str, Any] = {}
    affinity: dict[str, Any] = {}
    kind = draw(st.sampled_from(("none", "none", "anti", "affine", "spread", "soft")))
    key = draw(st.sampled_from((HOSTNAME, ZONE_KEY)))
    term = {"topologyKey": key, "labelSelector": _selects(app)}
    if kind == "anti":
        required = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        affinity["podAntiAffinity"] = required
    elif kind == "affine":
        zone_term = {"topologyKey": ZONE_KEY, "labelSelector": _selects(app)}
        affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [zone_term]}
    elif kind == "spread":
        out["topologySpreadConstraints"] = [
            {
                "maxSkew": draw(st.integers(1, 2)),
                "topologyKey": key,
                "whenUnsatisfiable": draw(st.sampled_from(("DoNotSchedule", "ScheduleAnyway"))),
                "labelSelector": _selects(app),
            }
        ]
    elif kind == "soft":
        weight = draw(st.integers(1, 100))
        preferred = {"weight": weight, "podAffinityTerm": term}
        which = draw(st.sampled_from(("podAffinity", "podAntiAffinity")))
        affinity[which] = {"preferredDuringSchedulingIgnoredDuringExecution": [preferred]}
        if draw(st.booleans()):
            expression = {"key": POOL, "operator": "In", "values": ["a"]}
            affinity["nodeAffinity"] = {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": weight, "preference": {"matchExpressions": [expression]}}
                ]
            }
    if affinity:
        out["affinity"] = affinity
    return out


@st.composite
def _task(draw: st.DrawFn, name: str, features: _Features, app: str = "") -> TaskSpec:
    replicas = draw(st.integers(1, 4))
    cpu_text, cpu = draw(st.sampled_from(_POD_CPU))
    memory_text, memory = draw(st.sampled_from(_POD_MEMORY))
    gpu = draw(_gpu_ask())
    resources: dict[str, Any] = {"cpu": cpu_text, "memory": memory_text}
    if gpu is not None:
        resources.update(gpu.resources())
    doc: dict[str, Any] = {"name": name, "replicas": replicas, "resources": resources}
    selector = {POOL: draw(st.sampled_from("ab"))} if draw(st.integers(0, 3)) == 0 else {}
    if selector:
        doc["nodeSelector"] = dict(selector)
    tolerates = draw(st.booleans())
    if tolerates:
        doc["tolerations"] = [{"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    annotations: dict[str, str] = {}
    if features.tdm_window is not None and draw(st.booleans()):
        annotations[ZONE_LABEL] = "*"
    if draw(st.integers(0, 3)) == 0:
        annotations[PREEMPTABLE] = draw(st.sampled_from(("true", "false")))
    if annotations:
        doc["annotations"] = dict(annotations)
    if app:
        doc["labels"] = {APP: app}
        doc.update(draw(_pod_terms(app)))
    return TaskSpec(name, replicas, cpu, memory, gpu, selector, tolerates, annotations, doc)


def _fits(node: NodeSpec, free: _Free, task: TaskSpec) -> bool:
    """Whether a running pod of ``task`` could be on ``node`` beside those placed so far: its
    filters pass (Volcano would not have put it elsewhere) and its resources are free."""
    if any(node.labels.get(k) != v for k, v in task.selector.items()):
        return False
    if node.tainted and not task.tolerates:
        return False
    if ZONE_LABEL in node.labels and pod_revocable_zone(task.annotations) != "*":
        return False
    if free.cpu < task.cpu or free.memory < task.memory or free.pods < 1:
        return False
    return task.gpu is None or len(_device_candidates(node, free, task.gpu)) >= task.gpu.nums


def _device_candidates(node: NodeSpec, free: _Free, ask: GpuAsk) -> list[Device]:
    """Devices that can take one more share of ``ask`` under HAMi's rules (hami-gpu §3.4): a
    whole card (cores 100) needs an untouched device, a share needs a free slot, memory and
    cores on a device no whole-card pod holds."""
    out = []
    for d in node.devices:
        if ask.whole:
            ok = d.count >= 1 and free.device_slots[d.id] == d.count
        else:
            ok = (
                d.id not in free.exclusive
                and free.device_slots[d.id] >= 1
                and free.device_memory[d.id] >= (ask.memory or 0)
                and free.device_cores[d.id] >= (ask.cores or 0)
            )
        if ok:
            out.append(d)
    return out


@st.composite
def _running_pod(
    draw: st.DrawFn,
    task: TaskSpec,
    index: int,
    nodes: Sequence[NodeSpec],
    free: Mapping[str, _Free],
    several_tasks: bool,
) -> dict[str, Any] | None:
    """One running pod of ``task`` on a node where it fits, booking what it holds; None when it
    fits nowhere."""
    candidates = [n for n in nodes if _fits(n, free[n.name], task)]
    if not candidates:
        return None
    node = draw(st.sampled_from(candidates))
    room = free[node.name]
    room.cpu -= task.cpu
    room.memory -= task.memory
    room.pods -= 1
    doc: dict[str, Any] = {"index": index, "node": node.name}
    if several_tasks:
        doc["task"] = task.name
    if task.gpu is not None:
        ask = task.gpu
        devices = draw(
            st.lists(
                st.sampled_from(_device_candidates(node, room, ask)),
                min_size=ask.nums,
                max_size=ask.nums,
                unique=True,
            )
        )
        shares = []
        for d in devices:
            memory = d.memory if ask.whole else (ask.memory or 0)
            cores = 100 if ask.whole else (ask.cores or 0)
            room.device_memory[d.id] -= memory
            room.device_cores[d.id] -= cores
            room.device_slots[d.id] -= 1
            if ask.whole:
                room.exclusive.add(d.id)
            shares.append({"id": d.id, "memory": memory, "cores": cores})
        doc["gpus"] = shares
    return doc


@st.composite
def _job(
    draw: st.DrawFn,
    index: int,
    leaves: Sequence[str],
    features: _Features,
    nodes: Sequence[NodeSpec],
    free: Mapping[str, _Free],
) -> dict[str, Any]:
    tasks = [
        draw(_task(name, features, f"j{index}-{name}"))
        for name in ("w", "ps")[: draw(st.integers(1, 2))]
    ]
    replicas = sum(t.replicas for t in tasks)
    doc: dict[str, Any] = {
        "name": f"j{index}",
        "queue": draw(st.sampled_from(leaves)),
        "tasks": [t.doc for t in tasks],
    }
    priority = draw(st.sampled_from(("", "high", "low", 0, 5)))
    if isinstance(priority, int):
        doc["priority"] = priority
    elif priority:
        doc["priorityClassName"] = priority
    if draw(st.booleans()):
        doc["minAvailable"] = draw(st.integers(1, replicas))
    if draw(st.integers(0, 2)) == 0:
        doc["networkTopology"] = {
            "mode": draw(st.sampled_from(("hard", "soft"))),
            "highestTierAllowed": draw(st.integers(1, 2)),
        }
    if draw(st.integers(0, 3)) == 0:
        doc["annotations"] = {PREEMPTABLE: draw(st.sampled_from(("true", "false")))}
    state = draw(st.sampled_from(("pending", "pending", "partly running", "running")))
    if state != "pending":
        running = []
        for task in tasks:
            for i in range(task.replicas):
                if state == "running" or draw(st.booleans()):
                    pod = draw(_running_pod(task, i, nodes, free, len(tasks) > 1))
                    if pod is not None:
                        running.append(pod)
        if running:
            doc["running"] = running
    return doc


# -- the instance ------------------------------------------------------------------------------


@st.composite
def instances(draw: st.DrawFn) -> dict[str, Any]:
    """A compact ``kind: Instance`` document (a dict) that ``models.load.from_dict`` accepts."""
    features = draw(_features())
    nodes = [draw(_node(i)) for i in range(draw(st.integers(1, 8)))]
    if features.tdm_window is not None:
        zoned = draw(st.integers(0, len(nodes) - 1))
        nodes[zoned] = _with_zone(nodes[zoned])
    queues, leaves = draw(_queues())
    free = {
        n.name: _Free(
            n.cpu,
            n.memory,
            n.pods,
            {d.id: d.memory for d in n.devices},
            {d.id: 100 for d in n.devices},
            {d.id: d.count for d in n.devices},
        )
        for n in nodes
    }
    jobs = [draw(_job(i, leaves, features, nodes, free)) for i in range(draw(st.integers(1, 6)))]
    doc: dict[str, Any] = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "metadata": {"name": "generated"},
        "now": NOW,
        "timezone": "UTC",
    }
    scheduler = _scheduler(features)
    if scheduler is not None:
        doc["scheduler"] = scheduler
    doc["priorityClasses"] = [{"name": "high", "value": 1000}, {"name": "low", "value": 10}]
    doc["nodes"] = [dict(n.doc) for n in nodes]
    hypernodes = draw(_hypernodes(nodes))
    if hypernodes:
        doc["hypernodes"] = hypernodes
    doc["queues"] = queues
    doc["jobs"] = jobs
    return doc


def to_yaml(doc: Mapping[str, Any]) -> str:
    """The document as YAML, the form regression tests keep a shrunk counterexample in."""
    return yaml.safe_dump(dict(doc), sort_keys=False, width=100)
