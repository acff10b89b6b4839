"""From counts per class to concrete nodes and devices, deterministically.

The model says how many pods of each group go to each class, and how many pods of each
eviction group go. Expansion evicts the first pods of each eviction group (in node order),
then packs each class's new pods into its nodes first-fit, largest first — a job the model
keeps on one node (topology level 0) as one bundle, and before all the pods a node may hold
only one of (``affinity_keys.node_caps``) —, choosing each container's devices by
HAMi's rules (time-slices, memory, cores, exclusive use, the zero-core rule, distinct devices,
NUMA binding, the type and UUID filters). Nodes are tried in the class's order and devices
from the fullest, so that the plan opens as few nodes and devices as it can.

On a one-node class the model's counts and device uses are the plan: each container takes the
device classes its uses name before any other, and packing always succeeds. On a larger class
the model bounds the class as a whole; a class whose counts do not pack is reported, so that
the solve can give its nodes classes of their own and try again (or drop the jobs that did not
fit when no time is left).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from models.gpu import GpuDevice, GpuRequest, exclusive_on
from models.workload import DeviceShare

from ...plan import Placement
from ..compile.affinity_keys import node_caps
from ..compile.data import Compiled
from ..compile.records import Group
from ..model.variables import Values, Variables


@dataclass
class _Device:
    device: GpuDevice
    held: bool
    """A running pod held a share before the plan (so using it opens nothing)."""
    slots: int = 0
    memory: int = 0
    cores: int = 0
    exclusive: int = 0
    zero: int = 0

    def accepts(self, memory: int, cores: int) -> bool:
        """One more share keeps every hami-gpu §3.4 rule on this device."""
        dev = self.device
        exclusive = self.exclusive + exclusive_on(cores, dev)
        zero = self.zero + (cores == 0)
        slots, used_memory, used_cores = self.slots + 1, self.memory + memory, self.cores + cores
        if slots > dev.count or used_memory > dev.memory or used_cores > dev.cores:
            return False
        if exclusive and slots > 1:
            return False
        return not (zero and dev.cores and used_cores == dev.cores)

    def add(self, memory: int, cores: int) -> None:
        self.slots += 1
        self.memory += memory
        self.cores += cores
        self.exclusive += exclusive_on(cores, self.device)
        self.zero += cores == 0


@dataclass
class _Node:
    index: int
    position: int
    """The node's position in its class."""
    free: dict[str, int]
    pods: int
    devices: list[_Device]

    def copy(self) -> _Node:
        return _Node(
            self.index,
            self.position,
            dict(self.free),
            self.pods,
            [_Device(**vars(d)) for d in self.devices],
        )


@dataclass
class Expansion:
    placements: list[Placement] = field(default_factory=list)
    evicted: list[int] = field(default_factory=list)
    """Running pod indices."""
    failed_classes: set[int] = field(default_factory=set)
    failed_units: set[int] = field(default_factory=set)
    failed_jobs: set[str] = field(default_factory=set)
    """Jobs of merged units (interchangeable one-pod jobs) whose pod found no room: only that
    job is left out, not the whole unit."""


def _evicted(v: Variables, values: Values) -> list[int]:
    out = []
    for eg in v.data.evict_groups:
        out += eg.pods[: values[v.evict[eg.index].index]]
    return sorted(out)


def _node_states(data: Compiled, evicted: set[int]) -> dict[int, _Node]:
    """Free room of every node of a class that gets pods, after the pods that stay."""
    states: dict[int, _Node] = {}
    for cls in data.classes:
        if not data.groups_on[cls.index]:
            continue
        for position, n in enumerate(cls.nodes):
            devices = [_Device(d, held=False) for d in data.nodes[n].gpus]
            states[n] = _Node(n, position, dict(cls.allocatable), cls.pod_capacity, devices)
    for i, r in enumerate(data.running):
        if r.node not in states:
            continue
        state = states[r.node]
        for d, _, _ in r.gpus:
            state.devices[d].held = True
        if i in evicted:
            continue
        state.pods -= 1
        for resource, amount in r.request.items():
            state.free[resource] = state.free.get(resource, 0) - amount
        for d, memory, cores in r.gpus:
            state.devices[d].add(memory, cores)
    return states


def _pods_per_class(v: Variables, values: Values) -> dict[int, list[tuple[Group, str]]]:
    """Per class, the (group, pod key) pairs it receives: a group's admitted pods in order,
    sliced over its classes in class order."""
    data = v.data
    out: dict[int, list[tuple[Group, str]]] = {}
    for g in data.groups:
        counts = [(c, values[v.count[g.index, c].index]) for c in g.classes]
        total = sum(n for _, n in counts)
        if not total:
            continue
        pods = iter(g.pods[:total])
        for c, n in counts:
            for _ in range(n):
                out.setdefault(c, []).append((g, next(pods).key))
    return out


Quotas = dict[int, dict[tuple[int, int, int], int]]
"""Per one-node class, (group, container, device class) → the device uses the solution gives
it there and the plan has not yet taken."""


def _device_quotas(v: Variables, values: Values) -> Quotas:
    """The solution's device uses on one-node classes, where each device class is devices of
    that one node: the plan takes those devices first, so that what the model decided per
    device (which shares stack on which device: the fragmentation stage values exactly that)
    is what the plan does. On a larger class the uses are the class's total, not per node."""
    out: Quotas = {}
    for (g, k, c, dc), var in v.use.items():
        if v.data.classes[c].size == 1 and (n := values[var.index]) > 0:
            out.setdefault(c, {})[g, k, dc] = n
    return out


def _bundled_units(v: Variables, values: Values) -> set[int]:
    """Units the solution keeps on one node (topology level 0 chosen)."""
    return {u for (u, level), var in v.within.items() if level == 0 and values[var.index]}


def _size_key(g: Group) -> tuple[int, ...]:
    whole = sum(r.nums for r in g.gpus)
    share = sum(r.nums * max(r.booked_cores, 1) for r in g.gpus)
    return (-whole, -share, -g.request.get("cpu", 0), -g.request.get("memory", 0), g.index)


def expand(v: Variables, values: Values) -> Expansion:
    data = v.data
    result = Expansion(evicted=_evicted(v, values))
    states = _node_states(data, set(result.evicted))
    bundled = _bundled_units(v, values)
    pinned = _pinned_nodes(data, bundled)
    caps = node_caps(data)
    quotas = _device_quotas(v, values)
    held: dict[tuple[int, int], int] = {}
    """(node, capped group) → its pods placed there."""
    unplaced: list[tuple[int, list[tuple[Group, str]]]] = []
    for c, pods in sorted(_pods_per_class(v, values).items()):
        cls = data.classes[c]
        items: dict[object, list[tuple[Group, str]]] = {}
        for g, key in pods:
            bundle = g.unit if g.unit in bundled else key
            items.setdefault(bundle, []).append((g, key))
        # Pods that need nodes of their own (``caps``) go first, while every node has room.
        order = sorted(
            items.values(),
            key=lambda it: (it[0][0].index not in caps, -len(it), _size_key(it[0][0]), it[0][1]),
        )
        for item in order:
            unit = item[0][0].unit
            candidates = [pinned[unit]] if unit in pinned else cls.nodes
            candidates = [n for n in candidates if _within_caps(item, n, caps, held)]
            placed = _place_item(data, c, [states[n] for n in candidates], item, quotas)
            if placed is None:
                unplaced.append((c, item))
                continue
            result.placements += placed
            for g, _ in item:
                if g.index in caps:
                    n = data.node_index(placed[0].node)
                    held[n, g.index] = held.get((n, g.index), 0) + 1
    for c, item in unplaced:
        # The class is reported either way, so that a solve with time left re-splits it.
        result.failed_classes.add(c)
        placed = _elsewhere(data, c, states, item, caps)
        unit = item[0][0].unit
        if placed is not None:
            result.placements += placed
        elif data.units[unit].size > 1:
            result.failed_jobs.update(data.instance.pod_by_key[key].job for _, key in item)
        else:
            result.failed_units.add(unit)
    if result.failed_units or result.failed_jobs:
        failed = {p.key for u in result.failed_units for g in data.unit_groups(u) for p in g.pods}
        result.placements = [
            p
            for p in result.placements
            if p.pod not in failed and data.instance.pod_by_key[p.pod].job not in result.failed_jobs
        ]
    return result


def _elsewhere(
    data: Compiled,
    c: int,
    states: dict[int, _Node],
    item: Sequence[tuple[Group, str]],
    caps: dict[int, int],
) -> list[Placement] | None:
    """A lone pod whose class's counts did not deal out to devices, placed in the first other
    class it may use that still has room, after every class got its own pods. Only where no
    rule ties the pod to a domain (no network topology, no inter-pod terms or node caps): its
    job, queue and resources stay what the model decided, only the node differs."""
    if len(item) != 1:
        return None
    g = item[0][0]
    if g.job.network_topology is not None or g.task.pod_terms or g.index in caps:
        return None
    for other in g.classes:
        if other == c:
            continue
        nodes = [states[n] for n in data.classes[other].nodes if n in states]
        placed = _place_item(data, other, nodes, item)
        if placed is not None:
            return placed
    return None


def _within_caps(
    item: Sequence[tuple[Group, str]],
    n: int,
    caps: dict[int, int],
    held: dict[tuple[int, int], int],
) -> bool:
    """The node may take the item's pods of every capped group (``affinity_keys.node_caps``)."""
    wanted: dict[int, int] = {}
    for g, _ in item:
        if g.index in caps:
            wanted[g.index] = wanted.get(g.index, 0) + 1
    return all(held.get((n, gi), 0) + k <= caps[gi] for gi, k in wanted.items())


def _pinned_nodes(data: Compiled, bundled: set[int]) -> dict[int, int]:
    """A bundled unit with running pods must join them on their node."""
    out = {}
    for u in bundled:
        nodes = {data.running[i].node for i in data.units[u].running}
        if len(nodes) == 1:
            out[u] = nodes.pop()
    return out


def _place_item(
    data: Compiled,
    c: int,
    nodes: Sequence[_Node],
    item: Sequence[tuple[Group, str]],
    quotas: Quotas | None = None,
) -> list[Placement] | None:
    """Place all pods of ``item`` on the first node that takes them all; commit it there (and
    the device uses it took from the class's ``quotas``)."""
    for node in nodes:
        trial = node.copy()
        left = dict((quotas or {}).get(c, {}))
        placements = []
        for g, key in item:
            shares = _fit_pod(data, c, trial, g, left)
            if shares is None:
                break
            placements.append(Placement(key, data.nodes[node.index].name, tuple(shares)))
        else:
            node.free, node.pods, node.devices = trial.free, trial.pods, trial.devices
            if left and quotas is not None:
                quotas[c] = left
            return placements
    return None


def _fit_pod(
    data: Compiled,
    c: int,
    node: _Node,
    g: Group,
    left: dict[tuple[int, int, int], int] | None = None,
) -> list[DeviceShare] | None:
    """Take the pod's resources and devices from ``node`` (a trial copy), or None; devices of
    the device classes the solution's uses still ``left`` to the container come first."""
    if node.pods < 1:
        return None
    if any(amount > node.free.get(r, 0) for r, amount in g.request.items() if amount > 0):
        return None
    node.pods -= 1
    for r, amount in g.request.items():
        node.free[r] = node.free.get(r, 0) - amount
    shares: list[DeviceShare] = []
    cls = data.classes[c]
    for k, request in enumerate(g.gpus_on(c)):
        allowed = []
        class_of: dict[int, int] = {}
        for dc, whole in g.where.containers[c][k]:
            for d in cls.devices[dc].members[node.position]:
                allowed.append((d, whole))
                class_of[d] = dc
        quota = left or {}
        wanted = {d for d, dc in class_of.items() if quota.get((g.index, k, dc), 0) > 0}
        chosen = _choose_devices(node, request, allowed, g.numa_bind, wanted)
        if chosen is None:
            return None
        for d in chosen:
            if d in wanted:
                quota[g.index, k, class_of[d]] -= 1
            dev = node.devices[d]
            memory = request.memory_on(dev.device.memory)
            dev.add(memory, request.booked_cores)
            if g.task.gpu_mutex:
                dev.exclusive += 1  # the model counted the device as taken whole
            shares.append(DeviceShare(dev.device.id, memory, request.booked_cores))
    return shares


def _choose_devices(
    node: _Node,
    request: GpuRequest,
    allowed: Sequence[tuple[int, bool]],
    numa_bind: bool,
    wanted: Collection[int] = (),
) -> list[int] | None:
    """``nums`` distinct devices for one container, ``wanted`` ones first, then fullest first
    (on one NUMA node when the pod is NUMA-bound); a container taking a device whole needs one
    with no share."""
    fits = []
    for d, whole in allowed:
        dev = node.devices[d]
        if whole and dev.slots:
            continue
        if dev.accepts(request.memory_on(dev.device.memory), request.booked_cores):
            fits.append(d)
    fits.sort(key=lambda d: (d not in wanted, -node.devices[d].slots, not node.devices[d].held, d))
    if not numa_bind or request.nums < 2:
        return fits[: request.nums] if len(fits) >= request.nums else None
    per_numa: dict[int, list[int]] = {}
    for d in fits:
        per_numa.setdefault(node.devices[d].device.numa, []).append(d)
    for numa in sorted(per_numa, key=lambda q: (-len(per_numa[q]), q)):
        if len(per_numa[numa]) >= request.nums:
            return per_numa[numa][: request.nums]
    return None
