"""The decision variables, created sparsely and only where a decision exists.

Core variables are made eagerly: pod counts per (group, candidate class); device uses per
(group, GPU container, class, device class) where a container has a choice of device classes
(and per NUMA node for NUMA-bound multi-GPU containers); admissions per unit (a count for a
unit of interchangeable jobs); eviction counts per eviction group. Every other variable is an
auxiliary that some constraint family or objective stage needs; it is made on first use, so
switching a stage off also removes its variables (the PyJobShop pattern, STYLE.md A.1).

Each auxiliary is registered with a *derivation*: its value as a function of the core values,
the least value that satisfies its defining constraints. That is how a plan's hint covers
every variable of the model (cpsat-practice B.6: complete hints are processed differently).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import mul
from typing import NamedTuple

from ortools.sat.python import cp_model
from ortools.sat.python.cp_model_helper import FlatIntExpr

from ..compile.classes import DeviceClass, NodeClass
from ..compile.data import Compiled
from ..compile.records import Group

IntVar = cp_model.IntVar
Expr = cp_model.LinearExprT
Values = Sequence[int]
"""The value of every variable, by index (a complete assignment: a hint or a solution)."""


def lsum(exprs: Iterable[Expr]) -> Expr:
    """Σ of model expressions, built in one call (Python's ``sum`` re-wraps at every term,
    which dominates model building on large clusters); 0 when there is nothing to add."""
    items = [e for e in exprs if not (isinstance(e, int) and e == 0)]
    if not items:
        return 0
    if len(items) == 1:
        return items[0]
    return cp_model.LinearExpr.sum(items)


def wsum(terms: Iterable[tuple[int, Expr]]) -> Expr:
    """Σ coefficient × expression, built in one call; constants are folded."""
    coefficients: list[int] = []
    exprs: list[Expr] = []
    constant = 0
    for c, e in terms:
        if c == 0:
            continue
        if isinstance(e, int):
            constant += c * e
        else:
            coefficients.append(c)
            exprs.append(e)
    if not exprs:
        return constant
    expr = cp_model.LinearExpr.weighted_sum(exprs, coefficients)
    return expr + constant if constant else expr


def value_of(expr: Expr, values: Values) -> int:
    """The value of a linear expression under ``values`` (missing variables count as 0)."""
    return Linear(expr).value(values)


class Linear:
    """A linear expression flattened on first use, for evaluating it many times while hinting
    (most expressions are never evaluated, so the model is not slowed down by flattening)."""

    __slots__ = ("_coeffs", "_expr", "_indices", "_offset")

    def __init__(self, expr: Expr) -> None:
        self._expr: Expr | None = expr
        self._offset = 0
        self._indices: tuple[int, ...] = ()
        self._coeffs: tuple[int, ...] = ()

    def value(self, values: Values) -> int:
        if self._expr is not None:
            if isinstance(self._expr, int):
                self._offset = self._expr
            else:
                flat = FlatIntExpr(self._expr)
                self._offset = flat.offset
                self._indices = tuple(v.index for v in flat.vars)
                self._coeffs = tuple(flat.coeffs)
            self._expr = None
        return self._offset + sum(map(mul, self._coeffs, map(values.__getitem__, self._indices)))


def per_node_limit(group: Group, cls: NodeClass) -> int:
    """Pods of ``group`` one node of ``cls`` could hold, by its resources, pod slots and
    devices (counting what evictable pods hold as free): the bound of a class's count is this
    times the class's size."""
    most = cls.pod_capacity - cls.held_pods
    for resource, amount in group.request.items():
        if amount > 0:
            most = min(most, max(0, cls.free(resource)) // amount)
    for k, request in enumerate(group.gpus_on(cls.index)):
        room = 0
        for d, whole in group.where.containers[cls.index][k]:
            dc = cls.devices[d]
            room += dc.per_node * (1 if whole else device_room(request, dc))
        most = min(most, room // request.nums)
    return max(0, most)


def device_room(request: object, dc: DeviceClass) -> int:
    """Shares of ``request`` one device of ``dc`` could take, evictable shares evicted."""
    from models.gpu import GpuRequest

    assert isinstance(request, GpuRequest)
    room = dc.free_slots
    memory = request.memory_on(dc.device.memory)
    if memory > 0:
        room = min(room, dc.free_memory // memory)
    if request.booked_cores > 0:
        room = min(room, dc.free_cores // request.booked_cores)
    return max(0, room)


class ShareUser(NamedTuple):
    """A possible new share of a device class: which container of which group, whether it
    takes the device whole, the expression counting its uses and their upper bound."""

    group: int
    container: int
    whole: bool
    uses: Expr
    bound: int


class Variables:
    """The model's variables by role, the expressions the families share, and the hints."""

    def __init__(self, model: cp_model.CpModel, data: Compiled) -> None:
        self.model = model
        self.data = data
        self.count: dict[tuple[int, int], IntVar] = {}
        """(group, class) → pods of the group placed on the class's nodes."""
        self.count_bound: dict[tuple[int, int], int] = {}
        self.per_node: dict[tuple[int, int], int] = {}
        """(group, class) → pods of the group one node of the class can hold."""
        self.use: dict[tuple[int, int, int, int], IntVar] = {}
        """(group, container, class, device class) → device uses, where there is a choice."""
        self.on_numa: dict[tuple[int, int, int, int], IntVar] = {}
        """(group, container, class, NUMA node) → pods whose container's devices lie there."""
        self.admit: dict[int, IntVar] = {}
        """Unit → jobs of the unit admitted (0/1 for a unit of one job)."""
        self.evict: dict[int, IntVar] = {}
        """Eviction group → its pods evicted."""
        self.derived: list[tuple[IntVar, Callable[[Values], int]]] = []
        """Auxiliaries in creation order, each with its value given the core values."""
        self.within: dict[tuple[int, int], IntVar] = {}
        """(unit, level) → all the unit's bound pods lie in one domain of that level."""
        self.domain: dict[tuple[int, int, str], IntVar] = {}
        self.nodes_used: dict[int, IntVar] = {}
        """Class → nodes of the class that get new pods (idle classes only)."""
        self.new_devices: dict[tuple[int, int], IntVar] = {}
        """(class, device class) → devices that get new shares."""
        self.occupied: dict[tuple[int, int], Expr] = {}
        self.device_users: dict[int, dict[int, list[ShareUser]]] = {}
        """Class → device class → the possible new shares (see ``constraints.gpu_users``)."""
        """(class, device class) → devices carrying a share after the plan."""
        self.filled: dict[tuple[str, str], IntVar] = {}
        self.min_share: IntVar | None = None
        self.pooled: dict[int, tuple[int, ...]] = self._pooled_classes()
        """Class → device classes whose devices every whole-device container there may take
        alike: such containers are only counted against the pool, not given device classes."""
        self._placed: dict[int, Expr] = {}
        self._any_new: dict[int, IntVar] = {}
        self._unit_pods: dict[int, dict[int, Expr]] = {}
        self._make_core()

    def _pooled_classes(self) -> dict[int, tuple[int, ...]]:
        data = self.data
        if data.typical:
            return {}  # the fragmentation stage reads every device's own uses
        sets: dict[int, set[tuple[int, ...]]] = {}
        for g in data.groups:
            for c in g.classes:
                for k, options in enumerate(g.where.containers.get(c, [])):
                    if not any(w for _, w in options):
                        continue
                    numa = g.numa_bind and g.gpus[k].nums > 1
                    whole_only = all(w for _, w in options) and len(options) > 1 and not numa
                    key = tuple(d for d, _ in options) if whole_only else ()
                    sets.setdefault(c, set()).add(key)
        return {
            c: next(iter(keys)) for c, keys in sets.items() if len(keys) == 1 and () not in keys
        }

    def is_pooled(self, group: int, container: int, cls: int) -> bool:
        if cls not in self.pooled:
            return False
        options = self.data.groups[group].where.containers[cls][container]
        return len(options) > 1 and all(w for _, w in options)

    def _make_core(self) -> None:
        m, data = self.model, self.data
        for unit in data.units:
            if unit.groups:
                self.admit[unit.index] = (
                    m.new_bool_var(f"admit[{unit.key}]")
                    if unit.size == 1
                    else m.new_int_var(0, unit.size, f"admit[{unit.key}×{unit.size}]")
                )
        limits: dict[tuple[object, ...], int] = {}
        for g in data.groups:
            shape = (id(g.where), tuple(sorted(g.request.items())), g.gpus)
            for c in g.classes:
                cls = data.classes[c]
                key = (shape, c)
                if key not in limits:
                    limits[key] = per_node_limit(g, cls)
                per_node = limits[key]
                bound = min(g.size, per_node * cls.size)
                self.per_node[g.index, c] = per_node
                self.count_bound[g.index, c] = bound
                self.count[g.index, c] = m.new_int_var(0, bound, f"x[{g.index},{c}]")
                for k, request in enumerate(g.gpus_on(c)):
                    options = g.where.containers[c][k]
                    if len(options) > 1 and not self.is_pooled(g.index, k, c):
                        for d, _ in options:
                            self.use[g.index, k, c, d] = m.new_int_var(
                                0, request.nums * bound, f"y[{g.index},{k},{c},{d}]"
                            )
                    for q in self.numa_nodes(g.index, k, c):
                        self.on_numa[g.index, k, c, q] = m.new_int_var(
                            0, bound, f"numa[{g.index},{k},{c},{q}]"
                        )
        for eg in data.evict_groups:
            self.evict[eg.index] = (
                m.new_bool_var(f"evict[{eg.index}]")
                if eg.size == 1
                else m.new_int_var(0, eg.size, f"evict[{eg.index}×{eg.size}]")
            )

    def numa_nodes(self, group: int, container: int, cls: int) -> list[int]:
        """NUMA nodes a NUMA-bound multi-GPU container may use on the class's nodes (empty
        when the binding cannot matter: not bound, one GPU, or one NUMA node only)."""
        g = self.data.groups[group]
        nums = g.gpus[container].nums
        if not g.numa_bind or nums < 2:
            return []
        devices = self.data.classes[cls].devices
        per_numa: dict[int, int] = {}
        for d, _ in g.where.containers[cls][container]:
            numa = devices[d].device.numa
            per_numa[numa] = per_numa.get(numa, 0) + devices[d].per_node
        if len(per_numa) < 2:
            return []
        return sorted(q for q, n in per_numa.items() if n >= nums)

    # -- expressions ---------------------------------------------------------------------------

    def uses(self, group: int, container: int, cls: int, dc: int) -> Expr:
        """Device uses of the container on the device class: its variable, or ``nums × count``
        when the container has no other choice on that class."""
        var = self.use.get((group, container, cls, dc))
        if var is not None:
            return var
        g = self.data.groups[group]
        options = g.where.containers[cls][container]
        if len(options) == 1 and options[0][0] == dc:
            return g.gpus[container].nums * self.count[group, cls]
        return 0

    def pooled_whole(self, cls: int) -> Expr:
        """Whole devices the pooled containers of ``cls`` take."""
        data = self.data
        return wsum(
            (data.groups[g].gpus[k].nums, self.count[g, cls])
            for g in data.groups_on[cls]
            for k in range(len(data.groups[g].gpus))
            if self.is_pooled(g, k, cls)
        )

    def kept(self, eg: int) -> Expr:
        """Pods of eviction group ``eg`` that stay."""
        return self.data.evict_groups[eg].size - self.evict[eg]

    def placed(self, group: int) -> Expr:
        """New pods of the group, over all its classes (built once, reused by every family)."""
        if group not in self._placed:
            g = self.data.groups[group]
            self._placed[group] = lsum(self.count[group, c] for c in g.classes)
        return self._placed[group]

    def unit_pods_on(self, unit: int) -> dict[int, Expr]:
        """Bound pods of ``unit`` per class after the plan (new + running that stay)."""
        if unit not in self._unit_pods:
            self._unit_pods[unit] = self._unit_pods_on(unit)
        return self._unit_pods[unit]

    def _unit_pods_on(self, unit: int) -> dict[int, Expr]:
        data = self.data
        parts: dict[int, list[Expr]] = {}
        for gi in data.units[unit].groups:
            for c in data.groups[gi].classes:
                parts.setdefault(c, []).append(self.count[gi, c])
        fixed, groups = self.running_of(unit)
        for c, n in fixed.items():
            parts.setdefault(c, []).append(n)
        for eg in groups:
            parts.setdefault(data.evict_groups[eg].cls, []).append(self.kept(eg))
        return {c: lsum(exprs) for c, exprs in parts.items()}

    def running_of(self, unit: int) -> tuple[dict[int, int], list[int]]:
        """(per class, running pods of the unit that cannot be evicted; eviction groups of
        the unit's evictable running pods)."""
        data = self.data
        fixed: dict[int, int] = {}
        groups: set[int] = set()
        eg_of = data.evict_group_of
        for i in data.units[unit].running:
            if i in eg_of:
                groups.add(eg_of[i])
            else:
                c = data.node_class[data.running[i].node]
                fixed[c] = fixed.get(c, 0) + 1
        return fixed, sorted(groups)

    def any_new(self, cls: int) -> IntVar:
        """1 when the plan places a pod on the class (a gate for over-committed classes)."""
        if cls not in self._any_new:
            groups = self.data.groups_on[cls]
            counts = [self.count[g, cls] for g in groups]
            bounds = [self.count_bound[g, cls] for g in groups]
            self._any_new[cls] = self.any_positive(f"any_new[{cls}]", counts, bounds)
        return self._any_new[cls]

    # -- auxiliaries -------------------------------------------------------------------------

    def aux_bool(self, name: str, derive: Callable[[Values], int]) -> IntVar:
        """A new auxiliary literal; ``derive`` gives its hint from the core values."""
        var = self.model.new_bool_var(name)
        self.derived.append((var, derive))
        return var

    def aux_int(self, lo: int, hi: int, name: str, derive: Callable[[Values], int]) -> IntVar:
        var = self.model.new_int_var(lo, hi, name)
        self.derived.append((var, lambda vals: max(lo, min(hi, derive(vals)))))
        return var

    def any_positive(self, name: str, exprs: list[Expr], bounds: list[int]) -> IntVar:
        """A literal forced to 1 when one of ``exprs`` (each ≤ its bound) is positive; nothing
        forces it to 0, so it can only gate rules that cost something to switch on."""
        linear = [Linear(e) for e in exprs]
        flag = self.aux_bool(name, lambda vals: int(any(e.value(vals) > 0 for e in linear)))
        for expr, bound in zip(exprs, bounds, strict=True):
            self.model.add(expr <= bound * flag)
        return flag

    def fill(self, queue: str, resource: str, derive: Callable[[Values], int]) -> IntVar:
        key = (queue, resource)
        if key not in self.filled:
            self.filled[key] = self.aux_int(0, 1000, f"filled[{queue},{resource}]", derive)
        return self.filled[key]

    def max_min_share(self, cap: int, derive: Callable[[Values], int]) -> IntVar:
        if self.min_share is None:
            self.min_share = self.aux_int(0, cap, "min_share", derive)
        return self.min_share

    # -- hints -------------------------------------------------------------------------------

    def core(self) -> list[IntVar]:
        """The decision variables a plan fixes directly."""
        return [
            *self.count.values(),
            *self.use.values(),
            *self.on_numa.values(),
            *self.admit.values(),
            *self.evict.values(),
        ]

    def complete(self, core_values: Mapping[int, int]) -> list[int]:
        """Every variable's value: the core values plus each auxiliary's derivation."""
        values = [0] * len(self.model.proto.variables)
        for index, value in core_values.items():
            values[index] = value
        for var, derive in self.derived:
            values[var.index] = derive(values)
        return values
