"""Classes of interchangeable nodes: what makes the model small on a large cluster.

Two nodes belong to one class when no constraint or objective term can tell them apart: the
same HyperNode at every tier, the same allocatable and free resources, the same devices in the
same state (type, memory, cores, time-slices, NUMA node, health, cordon, what running pods hold
on each), the same values of every label a pending pod's selectors or affinity read (and the
topology keys inter-pod terms read, ``affinity.class_label_keys``), running pods that are the
same to those terms, the same taints, the same TDM zone, and the same evictable running pods.
The model then counts pods per
(group, class) instead of per (group, node); idle nodes of one rack collapse into one class,
busy nodes split by what they hold.

Inside a class the devices of one node fall into *device classes* (devices in the same state),
and the evictable running pods into *eviction groups* (pods of one task holding the same kind
of devices), so that device shares and evictions are counted too. A class of one node with
one device per device class is exactly the per-node model; the counts of a larger class are
turned into concrete nodes and devices by ``expand.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from models.cluster import Node
from models.gpu import GpuDevice
from models.instance import Instance
from models.tdm import node_zone

from .affinity_keys import class_label_keys, has_pod_terms, node_signature
from .records import Group, RunningPod
from .units import model_units


class DeviceBase(NamedTuple):
    """A device's own state and what the pods that stay hold on it: devices with equal bases
    offer new pods the same room."""

    pool: bool
    """In the pool new pods may use (``hami-gpu.md``: the node's usable devices)."""
    type: str
    memory: int
    cores: int
    count: int
    numa: int
    health: bool
    mode: str
    uuid: str | None
    """Kept only when some pending pod's filter names UUIDs."""
    zero_core: bool
    used_slots: int
    used_memory: int
    used_cores: int


class DeviceState(NamedTuple):
    """A device's base and who else holds shares of it: (evictable pod key, memory, cores)."""

    base: DeviceBase
    holders: tuple[tuple[object, int, int], ...]


NodeDevices = tuple[list[DeviceState], dict[int, tuple[object, ...]]]
"""A node's device states and the key of each evictable pod on it."""


@dataclass
class DeviceClass:
    """Devices of one node class in one state, ``per_node`` of them on each node."""

    index: int
    per_node: int
    members: list[list[int]]
    """Per node of the class (in the class's order), the device indices on that node."""
    device: GpuDevice
    pool: bool
    """Any GPU pod may use it (healthy, NVIDIA, not cordoned)."""
    used_slots: int
    used_memory: int
    used_cores: int
    """What running pods that stay (cannot be evicted) hold on each device."""
    used_zero_core: bool
    """One of those holds a share with no cores (the zero-core rule then binds)."""
    evictable_shares: int
    """Shares of evictable running pods on each device (which eviction groups hold them is
    in :attr:`EvictGroup.holdings`)."""

    @property
    def fixed(self) -> bool:
        """A running pod that cannot be evicted holds a share: the device is never free."""
        return self.used_slots > 0

    @property
    def held(self) -> bool:
        """Some running pod holds a share of each device (so the plan does not open it)."""
        return self.fixed or self.evictable_shares > 0

    @property
    def free_slots(self) -> int:
        return self.device.count - self.used_slots

    @property
    def free_memory(self) -> int:
        return self.device.memory - self.used_memory

    @property
    def free_cores(self) -> int:
        return self.device.cores - self.used_cores


@dataclass
class EvictGroup:
    """Evictable running pods of one class that no rule can tell apart."""

    index: int
    cls: int
    pods: list[int]
    """Running pod indices (``Compiled.running``), in node order."""
    holdings: list[tuple[int, int, int]]
    """Per pod, (device class, memory, cores) of each device share it holds."""

    @property
    def size(self) -> int:
        return len(self.pods)


@dataclass
class NodeClass:
    index: int
    nodes: list[int]
    """Node indices, in instance order."""
    path: tuple[str, ...]
    """The domain at every topology level above 0."""
    allocatable: dict[str, int]
    """Per node, model units rounded down."""
    pod_capacity: int
    held: dict[str, int]
    """Per node, what running pods that stay hold (model units, rounded up)."""
    held_pods: int
    busy: bool
    """Nodes hold running pods before the plan (so the plan does not open them)."""
    devices: list[DeviceClass]
    evict_groups: list[int] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.nodes)

    @property
    def rep(self) -> int:
        """The node the class's static predicates are evaluated on."""
        return self.nodes[0]

    def free(self, resource: str) -> int:
        return self.allocatable.get(resource, 0) - self.held.get(resource, 0)


def topology_levels(instance: Instance) -> tuple[list[int], list[list[str]]]:
    """Topology levels for LCA reasoning: tier 0 (one node) and every real HyperNode tier.

    ``domains[l][n]`` names the largest HyperNode of tier ≤ ``levels[l]`` that contains node
    ``n`` (the node itself when there is none), so the domains of one level partition the nodes
    and "all of a job's pods within one HyperNode of tier ≤ t" becomes "all in one domain".
    """
    topology = instance.topology
    levels = [0, *sorted({topology.tier(h) for h in topology.names})]
    containing: dict[str, list[tuple[int, str]]] = {n.name: [] for n in instance.nodes}
    for h in topology.names:
        for node in topology.real_nodes(h):
            if node in containing:
                containing[node].append((topology.tier(h), h))
    domains = []
    for level in levels:
        row = []
        for node in instance.nodes:
            fitting = [c for c in containing[node.name] if c[0] <= level]
            row.append(max(fitting)[1] if level > 0 and fitting else f"node:{node.name}")
        domains.append(row)
    return levels, domains


def label_keys_read(groups: Sequence[Group]) -> frozenset[str]:
    """Node label keys some pending pod's node selector or required node affinity reads."""
    keys: set[str] = set()
    for g in groups:
        keys.update(g.task.node_selector)
        for term in g.task.required_affinity:
            keys.update(k for k, _ in term.match_labels)
            keys.update(e.key for e in term.match_expressions)
    return frozenset(keys)


def uuids_read(groups: Sequence[Group]) -> frozenset[str]:
    """Device UUIDs some pending pod's GPU filter names (their devices are told apart)."""
    ids: set[str] = set()
    for g in groups:
        f = g.task.gpu_filter
        if f is not None:
            ids.update(f.use_uuids)
            ids.update(f.nouse_uuids)
    return frozenset(ids)


class _Signatures:
    """Per node: the state of each device and the evictable pods on it, as hashable keys."""

    def __init__(
        self,
        instance: Instance,
        running: Sequence[RunningPod],
        pools: Sequence[Sequence[int]],
        uuids: frozenset[str],
    ) -> None:
        self.pod_terms = has_pod_terms(instance)
        self.nodes = instance.nodes
        self.running = running
        self.pools = [set(p) for p in pools]
        self.uuids = uuids
        self.on_node: list[list[int]] = [[] for _ in self.nodes]
        for i, r in enumerate(running):
            self.on_node[r.node].append(i)
        self._fixed_cache: dict[int, dict[int, tuple[int, int, int, bool]]] = {}

    def base(self, n: int, d: int) -> DeviceBase:
        """A device's own state and what pods that stay hold on it."""
        dev = self.nodes[n].gpus[d]
        slots, memory, cores, zero = self._fixed(n).get(d, (0, 0, 0, False))
        uuid = dev.id if dev.id in self.uuids else None
        return DeviceBase(
            d in self.pools[n],
            dev.type,
            dev.memory,
            dev.cores,
            dev.count,
            dev.numa,
            dev.health,
            dev.mode,
            uuid,
            zero,
            slots,
            memory,
            cores,
        )

    def _fixed(self, n: int) -> dict[int, tuple[int, int, int, bool]]:
        """Per device of node ``n``: (slots, memory, cores, a zero-core share) held by running
        pods that cannot be evicted."""
        if n not in self._fixed_cache:
            out: dict[int, tuple[int, int, int, bool]] = {}
            for i in self.on_node[n]:
                r = self.running[i]
                if r.evictable:
                    continue
                for d, mem, cor in r.gpus:
                    slots, memory, cores, zero = out.get(d, (0, 0, 0, False))
                    out[d] = (slots + 1, memory + mem, cores + cor, zero or cor == 0)
            self._fixed_cache = {n: out}
        return self._fixed_cache[n]

    def pod_key(self, n: int, i: int, bases: Sequence[DeviceBase]) -> tuple[object, ...]:
        r = self.running[i]
        shares = tuple(sorted((bases[d], mem, cor) for d, mem, cor in r.gpus))
        return (r.job.key, r.task.name, tuple(sorted(r.request.items())), shares)

    def node(self, n: int) -> tuple[list[DeviceState], dict[int, tuple[object, ...]]]:
        """(full state per device, key per evictable running pod) of node ``n``.

        A pod's key names its task, request and the full state of every device it holds (who
        else holds it), so that pods with equal keys hold devices of the same device classes.
        """
        gpus = self.nodes[n].gpus
        bases = [self.base(n, d) for d in range(len(gpus))]
        own = {i: self.pod_key(n, i, bases) for i in self.on_node[n] if self.running[i].evictable}
        holders: list[list[tuple[object, int, int]]] = [[] for _ in gpus]
        for i, key in own.items():
            for d, mem, cor in self.running[i].gpus:
                holders[d].append((key, mem, cor))
        states = [
            DeviceState(bases[d], tuple(sorted(holders[d], key=repr))) for d in range(len(gpus))
        ]
        pod_keys = {
            i: (key, tuple(sorted((states[d] for d, _, _ in self.running[i].gpus), key=repr)))
            for i, key in own.items()
        }
        return states, pod_keys


def _node_key(
    node: Node,
    n: int,
    path: tuple[str, ...],
    states: Sequence[tuple[object, ...]],
    pod_keys: Mapping[int, tuple[object, ...]],
    sig: _Signatures,
    keys: frozenset[str],
) -> tuple[object, ...]:
    held: Counter[str] = Counter()
    held_pods = 0
    for i in sig.on_node[n]:
        r = sig.running[i]
        if not r.evictable:
            held.update(r.request)
            held_pods += 1
    taints = tuple(sorted((t.key, t.value, t.effect) for t in node.hard_taints))
    return (
        path,
        tuple(sorted(model_units(node.allocatable, round_up=False).items())),
        node.pod_capacity,
        tuple(sorted(held.items())),
        held_pods,
        bool(sig.on_node[n]),
        tuple(sorted(states, key=repr)),
        tuple(sorted(pod_keys.values(), key=repr)),
        tuple(sorted((k, node.labels[k]) for k in keys if k in node.labels)),
        node_signature([sig.running[i] for i in sig.on_node[n]]) if sig.pod_terms else (),
        taints,
        node.unschedulable,
        node_zone(node.labels),
    )


def build_classes(
    instance: Instance,
    groups: Sequence[Group],
    running: Sequence[RunningPod],
    domains: Sequence[Sequence[str]],
    pools: Sequence[Sequence[int]],
    *,
    aggregate: bool = True,
    split: frozenset[int] = frozenset(),
    nodes: frozenset[int] | None = None,
) -> tuple[list[NodeClass], list[int], list[EvictGroup]]:
    """The node classes, each node's class (-1 for a node outside ``nodes``, when only those
    are open to new pods) and the eviction groups of all classes."""
    sig = _Signatures(instance, running, pools, uuids_read(groups))
    keys = label_keys_read(groups) | class_label_keys(instance, [g.task for g in groups])
    by_key: dict[tuple[object, ...], list[int]] = {}
    node_states: list[NodeDevices] = []
    for n, node in enumerate(instance.nodes):
        if nodes is not None and n not in nodes:
            node_states.append(([], {}))
            continue
        states, pod_keys = sig.node(n)
        node_states.append((states, pod_keys))
        path = tuple(domains[level][n] for level in range(1, len(domains)))
        key = _node_key(node, n, path, states, pod_keys, sig, keys)
        if not aggregate or n in split:
            key = (key, n)
        by_key.setdefault(key, []).append(n)
    classes: list[NodeClass] = []
    node_class = [-1] * len(instance.nodes)
    evict_groups: list[EvictGroup] = []
    for members in by_key.values():
        rep = members[0]
        node = instance.nodes[rep]
        held: Counter[str] = Counter()
        held_pods = 0
        for i in sig.on_node[rep]:
            if not running[i].evictable:
                held.update(running[i].request)
                held_pods += 1
        cls = NodeClass(
            index=len(classes),
            nodes=members,
            path=tuple(domains[level][rep] for level in range(1, len(domains))),
            allocatable=model_units(node.allocatable, round_up=False),
            pod_capacity=node.pod_capacity,
            held=dict(held),
            held_pods=held_pods,
            busy=bool(sig.on_node[rep]),
            devices=[],
        )
        _device_classes(cls, node_states, sig, aggregate and rep not in split)
        _evict_groups(cls, node_states, running, evict_groups)
        for n in members:
            node_class[n] = cls.index
        classes.append(cls)
    return classes, node_class, evict_groups


def _device_classes(
    cls: NodeClass,
    node_states: Sequence[NodeDevices],
    sig: _Signatures,
    aggregate: bool,
) -> None:
    """Group each node's devices by state; a one-node class keeps one class per device unless
    the devices are interchangeable (same state, nothing evictable on them)."""
    per_node: list[dict[tuple[object, ...], list[int]]] = []
    for n in cls.nodes:
        states = node_states[n][0]
        by_state: dict[tuple[object, ...], list[int]] = {}
        for d, state in enumerate(states):
            key = state if aggregate or cls.size > 1 else (state, d)
            by_state.setdefault(key, []).append(d)
        per_node.append(by_state)
    rep = cls.rep
    for key, devices in per_node[0].items():
        state = node_states[rep][0][devices[0]]
        base = state.base
        dc = DeviceClass(
            index=len(cls.devices),
            per_node=len(devices),
            members=[by_state.get(key, []) for by_state in per_node],
            device=sig.nodes[rep].gpus[devices[0]],
            pool=base.pool,
            used_slots=base.used_slots,
            used_memory=base.used_memory,
            used_cores=base.used_cores,
            used_zero_core=base.zero_core,
            evictable_shares=len(state.holders),
        )
        cls.devices.append(dc)


def _evict_groups(
    cls: NodeClass,
    node_states: Sequence[NodeDevices],
    running: Sequence[RunningPod],
    evict_groups: list[EvictGroup],
) -> None:
    """Group the class's evictable pods by key, and record which device classes they hold."""
    device_class: dict[tuple[int, int], int] = {}
    for dc in cls.devices:
        for position, n in enumerate(cls.nodes):
            for d in dc.members[position]:
                device_class[n, d] = dc.index
    by_key: dict[tuple[object, ...], list[int]] = {}
    for n in cls.nodes:
        for i, key in node_states[n][1].items():
            # Pods alike but holding devices of different device classes (two devices of one
            # node, each a class of its own) free different devices when evicted.
            held = tuple(device_class[n, d] for d, _, _ in running[i].gpus)
            by_key.setdefault((key, held), []).append(i)
    for pods in by_key.values():
        first = running[pods[0]]
        holdings = [(device_class[first.node, d], mem, cor) for d, mem, cor in first.gpus]
        eg = EvictGroup(len(evict_groups), cls.index, pods, holdings)
        evict_groups.append(eg)
        cls.evict_groups.append(eg.index)
