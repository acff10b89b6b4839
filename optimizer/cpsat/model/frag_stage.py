"""The fragmentation stage in the model: FGD's F written per device, so that shares packed
together on one device are valued together.

F of a node is Σ_m p_m · Frag(m) over the typical mix (``models.fragmentation``). For a typical
task of one GPU that fits the node, Frag(m) is a sum over devices — a device's free milli
counts unless m may use its type and finds its share there — so F splits into one term per
device, a step-wise linear function of the device's free milli r:

    φ(r) = r · (1 − Σ p_m over the tasks m that fit the node, may use the device and ask ≤ r)

written in the model as one interval literal and one interval part per step (exactly one
interval holds r). The stage is Σ φ(before) − φ(after) over the devices the plan can change,
so it sees which shares stack on which device, which a per-pod Δ against the snapshot cannot.

Which tasks "fit the node" is read on the snapshot, with two corrections: a new pod's CPU can
make a typical task stop fitting, and new shares can leave a multi-GPU typical task too few
devices with its per-GPU share free (an 8-GPU task on a node of 8 idle devices, once one of
them takes a share); then the task's usable milli — on the devices that still have its share
free — becomes fragment too. Each is a literal ("the task still fits") and a term per task,
one-sided: the objective keeps them tight, so the search may overstate the loss, never
understate it, and a solution read back through the derivations is exact; two-sided, the
search found less in the same seconds.

The stage needs devices one by one: with a mix, every node with devices is a class of its own
and every device a device class of its own (``data.compile_instance``); nodes without devices
have no F. A device's free milli is ``fragmentation.device_free``; a share takes
⌊1000·max(cores / device cores, memory / device memory)⌉ of it, a whole device all of it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from math import floor
from typing import TYPE_CHECKING

from models.fragmentation import MILLI, TypicalTask, allows
from models.gpu import GpuDevice

from ...plan import Placement
from ..compile.classes import DeviceClass
from ..compile.fragmentation import SCALE, device_free
from .constraints import gpu_users
from .variables import Expr, Linear, Values, lsum, per_node_limit, wsum

if TYPE_CHECKING:
    from ..compile.data import Compiled
    from .variables import Variables


def share_milli_on(device: GpuDevice, memory: int, cores: int) -> int:
    """Milli-GPU of a device that ``memory`` MiB and ``cores`` cores on it take."""
    parts = [0.0]
    if device.cores > 0:
        parts.append(cores / device.cores)
    if device.memory > 0:
        parts.append(memory / device.memory)
    return min(MILLI, round(MILLI * max(parts)))


@dataclass(frozen=True)
class Curve:
    """φ of one device as steps: coefficient ``coefs[j]`` (⌊SCALE·w_j⌉) on [starts[j],
    starts[j+1])."""

    starts: tuple[int, ...]
    coefs: tuple[int, ...]

    def value(self, free: int) -> int:
        if free <= 0:
            return 0
        return self.coefs[bisect_right(self.starts, free) - 1] * free

    def intervals(self, lo: int, hi: int) -> list[tuple[int, int, int]]:
        """(first, last, coefficient) of the steps meeting [lo, hi]; below 0, φ is 0."""
        out = [(lo, min(hi, -1), 0)] if lo < 0 else []
        ends = [*self.starts[1:], MILLI + 1]
        for start, end, coef in zip(self.starts, ends, self.coefs, strict=True):
            first, last = max(start, lo), min(end - 1, hi)
            if first <= last:
                out.append((first, last, coef))
        return out


@dataclass
class Device:
    """One device of a one-node class the plan may change."""

    cls: int
    dc: int
    base: int
    """Free milli with no running pod that may be evicted on it."""
    before: int
    """Free milli in the snapshot."""
    curve: Curve
    type: str
    free: Expr | None = None
    """Its free milli after the plan, when the plan can change it."""
    pieces: list[tuple[int, int, int, Expr, Expr]] = field(default_factory=list)
    """(first, last, coefficient, interval literal or 1, part) per step the free milli may
    reach."""

    def usable(self, at_least: int) -> Expr:
        """Free milli when it is ≥ ``at_least`` (a step start), else 0."""
        return lsum(part for first, _, _, _, part in self.pieces if first >= at_least)


@dataclass(frozen=True)
class Risk:
    """Typical tasks of one shape that fit the node in the snapshot and that the plan can
    stop fitting: by its new CPU use (``cpu_risk``) or, with several GPUs, by leaving fewer
    than ``gpus`` devices with ``milli`` free."""

    cpu: int
    milli: int
    gpus: int
    types: tuple[str, ...]
    coef: int
    """⌊SCALE · Σ p⌉ of the tasks of this shape."""
    cpu_risk: bool

    def allows(self, device_type: str) -> bool:
        return allows(self.types, device_type)


@dataclass
class NodeTerms:
    """The stage's terms of one node (a one-node class)."""

    cls: int
    cpu: int
    devices: list[Device]
    risks: list[Risk]


def _fits(m: TypicalTask, cpu: int, free: Sequence[tuple[int, str]]) -> bool:
    """Whether typical task ``m`` fits a node with ``cpu`` free and devices (free milli,
    type) in the snapshot."""
    if m.gpus == 0 or cpu < m.cpu:
        return False
    return m.gpus == 1 or sum(1 for r, t in free if r >= m.milli and m.allows(t)) >= m.gpus


def curve_of(mix: Sequence[TypicalTask], fitting: Sequence[bool], device_type: str) -> Curve:
    """φ of a device of ``device_type`` on a node where the tasks ``fitting`` fit."""
    ms = [m for m, ok in zip(mix, fitting, strict=True) if ok and m.allows(device_type)]
    starts = [0, *sorted({m.milli for m in ms})]
    coefs = [round(SCALE * (1 - sum(m.weight for m in ms if m.milli <= t))) for t in starts]
    return Curve(tuple(starts), tuple(coefs))


def _holdings_share(data: Compiled, c: int, dc: int) -> list[tuple[int, int, int, int]]:
    """(eviction group, milli, memory, cores per pod) of the evictable shares on device
    class ``dc``."""
    device = data.classes[c].devices[dc].device
    out = []
    for eg in data.classes[c].evict_groups:
        held = [(mem, cor) for d, mem, cor in data.evict_groups[eg].holdings if d == dc]
        if held:
            memory, cores = sum(a for a, _ in held), sum(b for _, b in held)
            out.append((eg, share_milli_on(device, memory, cores), memory, cores))
    return out


def _holdings_milli(data: Compiled, c: int, dc: int) -> list[tuple[int, int]]:
    """(eviction group, milli per pod) of the evictable shares on device class ``dc``."""
    return [(eg, milli) for eg, milli, _, _ in _holdings_share(data, c, dc)]


def _evictable_cpu(data: Compiled, c: int) -> list[tuple[int, int]]:
    """(eviction group, CPU per pod) of the class's evictable running pods."""
    groups = (data.evict_groups[eg] for eg in data.classes[c].evict_groups)
    return [(eg.index, data.running[eg.pods[0]].request.get("cpu", 0)) for eg in groups]


def node_terms(data: Compiled) -> list[NodeTerms]:
    """The terms of every one-node class with devices (memoised on ``data``)."""
    if data.fragmentation_terms is None:
        data.fragmentation_terms = [_node(data, c) for c, cls in enumerate(data.classes)
                                    if cls.devices]  # fmt: skip
    return data.fragmentation_terms


def _node(data: Compiled, c: int) -> NodeTerms:
    cls = data.classes[c]
    if cls.size != 1 or any(dc.per_node != 1 for dc in cls.devices):
        raise ValueError(f"fragmentation needs one-node classes; class {c} is not")
    cpu = cls.free("cpu")
    evictable = sum(per_pod * data.evict_groups[eg].size for eg, per_pod in _evictable_cpu(data, c))
    devices: list[Device] = []
    for dc in cls.devices:
        base = device_free(dc)
        held = sum(milli for _, milli in _holdings_milli(data, c, dc.index))
        devices.append(Device(c, dc.index, base, max(0, base - held), Curve((0,), (0,)),
                              dc.device.type))  # fmt: skip
    free = [(d.before, d.type) for d in devices]
    fitting = [_fits(m, cpu - evictable, free) for m in data.typical]
    for d in devices:
        d.curve = curve_of(data.typical, fitting, d.type)
    most = evictable + sum(
        data.groups[g].request.get("cpu", 0)
        * min(data.groups[g].size, per_node_limit(data.groups[g], cls))
        for g in data.groups_on[c]
    )
    changes = bool(data.groups_on[c] or cls.evict_groups)
    shapes: dict[tuple[int, int, int, tuple[str, ...]], float] = {}
    for m, ok in zip(data.typical, fitting, strict=True):
        if ok and changes and (m.gpus > 1 or m.cpu > cpu - most):
            key = (m.cpu, m.milli, m.gpus, m.types)
            shapes[key] = shapes.get(key, 0.0) + m.weight
    risks = [Risk(cpu_m, q, k, types, round(SCALE * p), cpu_m > cpu - most)
             for (cpu_m, q, k, types), p in sorted(shapes.items())]  # fmt: skip
    return NodeTerms(c, cpu, devices, [r for r in risks if r.coef])


# -- the model side --------------------------------------------------------------------------


def _device_load(
    v: Variables, data: Compiled, d: Device
) -> tuple[Expr, list[tuple[int, int]], int]:
    """(the milli new shares and kept evictable shares take, (milli, most uses) per user,
    the most milli they can take together within the device's cores and memory)."""
    dc = data.classes[d.cls].devices[d.dc]
    device = dc.device
    terms: list[tuple[int, Expr]] = []
    users: list[tuple[int, int]] = []
    shares: list[tuple[int, int, int]] = []
    whole_user = False
    for g, k, whole, uses, bound in gpu_users(v, d.cls, d.dc):
        request = data.groups[g].gpus[k]
        memory, cores = request.memory_on(device.memory), request.booked_cores
        milli = d.base if whole else share_milli_on(device, memory, cores)
        terms.append((milli, uses))
        users.append((milli, bound))
        if whole:
            whole_user = True
        else:
            shares.append((milli, cores, memory))
    for eg, milli, memory, cores in _holdings_share(data, d.cls, d.dc):
        terms.append((milli, v.kept(eg)))
        users.append((milli, data.evict_groups[eg].size))
        shares.append((milli, cores, memory))
    most = sum(milli * bound for milli, bound in users)
    bound = share_load_bound(dc, shares)
    if bound is not None:
        most = min(most, max(d.base if whole_user else 0, bound))
    return wsum(terms), users, most


def share_load_bound(dc: DeviceClass, shares: Sequence[tuple[int, int, int]]) -> int | None:
    """The most milli shares (milli, cores, memory each) can take of a device of ``dc`` while
    their cores and memory fit what it has free (``gpu_capacity``): by either resource, at
    most its free amount times the largest milli per unit of it. A share's milli is the
    larger of its two fractions, rounded, so Σ milli can exceed the device's free milli only
    through that rounding or through shares heavier in one resource than the free milli's
    own balance; without the bound every device with several possible shares would carry a
    negative step whose width weakens the model."""
    bounds = []
    capacity = ((1, dc.device.cores, dc.free_cores), (2, dc.device.memory, dc.free_memory))
    for resource, total, free in capacity:
        if shares and total > 0 and all(share[resource] > 0 for share in shares):
            ratio = max(Fraction(share[0], share[resource]) for share in shares)
            bounds.append(floor(ratio * max(free, 0)))
    return min(bounds, default=None)


def reachable(base: int, users: Sequence[tuple[int, int]]) -> tuple[set[int], bool]:
    """The free milli values ≥ 0 some combination of the users' loads leaves, and whether a
    combination can go below 0 (several shares each rounded up)."""
    mask = 1  # bit t: a load of t is reachable
    full = (1 << (base + 1)) - 1
    over = False
    for milli, most in users:
        if milli <= 0:
            continue
        for _ in range(min(most, base // milli + 1)):
            grown = mask | (mask << milli)
            over = over or grown > full
            grown &= full
            if grown == mask:
                break
            mask = grown
    return {base - t for t in range(base + 1) if mask >> t & 1}, over


def _write_device(v: Variables, data: Compiled, d: Device) -> None:
    load, users, most = _device_load(v, data, d)
    values, over = reachable(d.base, users)
    lowest = d.base - most
    over = over and lowest < 0
    if len(values) < 2 and not over:
        return
    free = d.base - load
    d.free = free
    linear = Linear(free)
    steps = [
        (first, last, coef)
        for first, last, coef in d.curve.intervals(lowest if over else 0, d.base)
        if first < 0 or any(first <= r <= last for r in values)
    ]
    if len(steps) == 1 or (not over and values == {0, d.base}):
        # One step, or a device taken whole or not at all: φ is linear in what it can be
        # (φ(0) = 0), with the slope of the step at its free milli.
        first, last, coef = steps[-1]
        d.pieces = [(first, last, coef, 1, free)]
        return
    name = f"frag[{d.cls},{d.dc}]"
    literals, parts = [], []
    for j, (first, last, coef) in enumerate(steps):
        on = v.aux_bool(f"{name}.on{j}", _in_step(linear, first, last, 1))
        part = v.aux_int(min(first, 0), max(last, 0), f"{name}.part{j}",
                         _in_step(linear, first, last, None))  # fmt: skip
        v.model.add(part >= first * on)
        v.model.add(part <= last * on)
        literals.append(on)
        parts.append(part)
        d.pieces.append((first, last, coef, on, part))
    v.model.add_exactly_one(literals)
    v.model.add(lsum(parts) == free)


def _in_step(free: Linear, first: int, last: int, inside: int | None) -> Callable[[Values], int]:
    """The hint of a step's literal (``inside`` 1) or part (None: the free milli) when the free
    milli lies in [first, last], else 0."""

    def derive(vals: Values) -> int:
        r = free.value(vals)
        if first <= r <= last:
            return r if inside is None else inside
        return 0

    return derive


def _write_risks(v: Variables, data: Compiled, node: NodeTerms) -> list[tuple[int, Expr]]:
    """The corrections of one node: per risky shape a literal that implies "the task still
    fits" and a term bounded below by the usable milli lost unless it holds (both one-sided:
    maximising the stage sets the literal where it can hold and the term at its bound). The
    CPU part of the literal is shared by the one-GPU shapes of one CPU threshold."""
    new = [(data.groups[g].request.get("cpu", 0), v.count[g, node.cls])
           for g in data.groups_on[node.cls]]  # fmt: skip
    used = wsum(new + [(cpu, v.kept(eg)) for eg, cpu in _evictable_cpu(data, node.cls)])
    fits = _Fits(v, node, used)
    terms: list[tuple[int, Expr]] = []
    for risk in node.risks:
        keep = fits.literal(risk)
        if keep is None:
            continue
        usable = fits.usable(risk)
        big = sum(max(d.base, 0) for d in node.devices if risk.allows(d.type))
        lost = v.aux_int(0, big, f"frag_lost[{node.cls},{risk.cpu},{risk.milli},{risk.gpus}]",
                         _lost(Linear(usable), Linear(keep)))  # fmt: skip
        v.model.add(lost >= usable - big * keep)
        terms.append((-risk.coef, lost))
    return terms


class _Fits:
    """The literals of one node's risks, each written once for what it tests (a CPU
    threshold, a device keeping a share free)."""

    def __init__(self, v: Variables, node: NodeTerms, used: Expr) -> None:
        self.v, self.node, self.used = v, node, used
        self.cpu: dict[int, Expr] = {}
        self.room: dict[tuple[int, tuple[str, ...]], tuple[list[Expr], int]] = {}
        self.usables: dict[tuple[int, tuple[str, ...]], Expr] = {}
        self.oks: dict[tuple[int, int], Expr] = {}

    def literal(self, risk: Risk) -> Expr | None:
        """A literal that implies ``risk``'s task still fits; None when nothing can stop it."""
        cpu = self._cpu(risk.cpu) if risk.cpu_risk else None
        oks, fixed = self._room(risk) if risk.gpus > 1 else ([], risk.gpus)
        if fixed >= risk.gpus:
            return cpu
        need = risk.gpus - fixed
        tests = [_at_least(oks, need)] + ([_at_least([cpu], 1)] if cpu is not None else [])
        name = f"frag_fits[{self.node.cls},{risk.cpu},{risk.milli},{risk.gpus}]"
        keep = self.v.aux_bool(name, _all_of(tests))
        self.v.model.add(lsum(oks) >= need).only_enforce_if(keep)
        if cpu is not None:
            self.v.model.add_implication(keep, cpu)
        return keep

    def usable(self, risk: Risk) -> Expr:
        """The free milli of the devices ``risk``'s task may use that still have its share."""
        key = (risk.milli, risk.types)
        if key not in self.usables:
            self.usables[key] = lsum(
                d.usable(risk.milli) if d.pieces else (d.before if d.before >= risk.milli else 0)
                for d in self.node.devices
                if risk.allows(d.type)
            )
        return self.usables[key]

    def _cpu(self, threshold: int) -> Expr:
        if threshold not in self.cpu:
            room = self.node.cpu - threshold
            name = f"frag_cpu[{self.node.cls},{threshold}]"
            keep = self.v.aux_bool(name, _at_most(Linear(self.used), room))
            self.v.model.add(self.used <= room).only_enforce_if(keep)
            self.cpu[threshold] = keep
        return self.cpu[threshold]

    def _room(self, risk: Risk) -> tuple[list[Expr], int]:
        """Per device the plan can change, a literal that implies "at least ``milli`` stays
        free", and the number of devices that keep it whatever the plan does."""
        key = (risk.milli, risk.types)
        if key not in self.room:
            oks: list[Expr] = []
            fixed = 0
            for d in self.node.devices:
                if not risk.allows(d.type) or d.before < risk.milli:
                    continue
                if d.free is None:
                    fixed += 1
                    continue
                if (d.dc, risk.milli) not in self.oks:
                    name = f"frag_room[{d.cls},{d.dc},{risk.milli}]"
                    ok = self.v.aux_bool(name, _at_least([d.free], risk.milli))
                    self.v.model.add(d.free >= risk.milli).only_enforce_if(ok)
                    self.oks[d.dc, risk.milli] = ok
                oks.append(self.oks[d.dc, risk.milli])
            self.room[key] = (oks, fixed)
        return self.room[key]


def _at_least(exprs: Sequence[Expr], need: int) -> Callable[[Values], int]:
    """1 when the values of ``exprs`` add up to at least ``need``."""
    total = Linear(lsum(exprs))

    def derive(vals: Values) -> int:
        return int(total.value(vals) >= need)

    return derive


def _all_of(tests: Sequence[Callable[[Values], int]]) -> Callable[[Values], int]:
    def derive(vals: Values) -> int:
        return int(all(test(vals) for test in tests))

    return derive


def _at_most(expr: Linear, room: int) -> Callable[[Values], int]:
    def derive(vals: Values) -> int:
        return int(expr.value(vals) <= room)

    return derive


def _lost(usable: Linear, keep: Linear) -> Callable[[Values], int]:
    def derive(vals: Values) -> int:
        return 0 if keep.value(vals) else usable.value(vals)

    return derive


def stage_expression(v: Variables, data: Compiled) -> Expr:
    """Σ φ(before) − φ(after) over the devices the plan may change, less the usable milli of
    the typical tasks the plan stops fitting."""
    if not data.typical:
        return 0
    terms: list[tuple[int, Expr]] = []
    constant = 0
    for node in node_terms(data):
        for d in node.devices:
            _write_device(v, data, d)
            if d.pieces:
                constant += d.curve.value(d.before)
                terms.extend((-coef, part) for _, _, coef, _, part in d.pieces)
        if node.risks:
            terms.extend(_write_risks(v, data, node))
    return wsum(terms) + constant


def stage_span(data: Compiled) -> int:
    """Bound on max − min of the stage."""
    if not data.typical:
        return 0
    span = 0
    for node in node_terms(data):
        if not data.groups_on[node.cls] and not data.classes[node.cls].evict_groups:
            continue
        span += sum(max(d.curve.coefs) * max(d.base, 0) for d in node.devices)
        for risk in node.risks:
            span += risk.coef * sum(max(d.base, 0) for d in node.devices)
    return span


# -- the plan side ---------------------------------------------------------------------------


def plan_value(data: Compiled, placements: Iterable[Placement], evicted: set[str]) -> int:
    """The stage's value of a plan, as the model counts it."""
    if not data.typical:
        return 0
    group_of = {p.key: g for g in data.groups for p in g.pods}
    new_load: dict[tuple[int, int], int] = {}
    new_cpu: dict[int, int] = {}
    for p in placements:
        g = group_of.get(p.pod)
        if g is None:
            continue
        n = data.node_index(p.node)
        c = data.node_class[n]
        new_cpu[c] = new_cpu.get(c, 0) + g.request.get("cpu", 0)
        index = {dev.id: i for i, dev in enumerate(data.nodes[n].gpus)}
        shares = list(p.gpus or ())
        for k, request in enumerate(g.gpus_on(c)):
            options = dict(g.where.containers[c][k])
            for share in shares[: request.nums]:
                dc = data.device_class[n, index[share.id]]
                device = data.classes[c].devices[dc].device
                milli = (
                    device_free(data.classes[c].devices[dc])
                    if options.get(dc, False)
                    else share_milli_on(
                        device, request.memory_on(device.memory), request.booked_cores
                    )
                )
                new_load[c, dc] = new_load.get((c, dc), 0) + milli
            shares = shares[request.nums :]
    total = 0
    for node in node_terms(data):
        kept_held = {
            dc.index: sum(
                milli * sum(1 for i in data.evict_groups[eg].pods
                            if data.running[i].pod.key not in evicted)
                for eg, milli in _holdings_milli(data, node.cls, dc.index)
            )
            for dc in data.classes[node.cls].devices
        }  # fmt: skip
        after: dict[int, int] = {}
        for d in node.devices:
            after[d.dc] = d.base - new_load.get((node.cls, d.dc), 0) - kept_held[d.dc]
            total += d.curve.value(d.before) - d.curve.value(after[d.dc])
        used = new_cpu.get(node.cls, 0) + sum(
            cpu for eg, cpu in _evictable_cpu(data, node.cls) for i in data.evict_groups[eg].pods
            if data.running[i].pod.key not in evicted
        )  # fmt: skip
        for risk in node.risks:
            usable = [r for d in node.devices
                      if risk.allows(d.type) and (r := after[d.dc]) >= risk.milli]  # fmt: skip
            if used > node.cpu - risk.cpu or len(usable) < risk.gpus:
                total -= risk.coef * sum(usable)
    return total
