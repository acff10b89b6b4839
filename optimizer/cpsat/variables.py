"""The decision variables, created sparsely and only where a decision exists.

Core variables are made eagerly: pod counts per (group, candidate node); per (group, container,
device) counts for GPU containers that share devices (and per NUMA node for NUMA-bound
multi-GPU containers), while containers that take whole devices are only counted, per node;
admission per job; eviction literals for evictable running pods. Every other variable is an
auxiliary that some constraint family or objective stage needs; it is made on first use, so
switching a stage off also removes its variables (the PyJobShop pattern, STYLE.md A.1).

Each auxiliary is registered with a *derivation*: its value as a function of the core values,
the value that satisfies its defining constraints. That is how a plan's hint covers every
variable of the model (cpsat-practice B.6: complete hints are processed differently).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ortools.sat.python import cp_model
from ortools.sat.python.cp_model_helper import FlatIntExpr

from .data import Compiled

IntVar = cp_model.IntVar
Expr = cp_model.LinearExprT
Values = Mapping[int, int]
"""Variable index → value."""


def value_of(expr: Expr, values: Values) -> int:
    """The value of a linear expression under ``values`` (missing variables count as 0)."""
    return Linear(expr).value(values)


class Linear:
    """A linear expression flattened on first use, for evaluating it many times while hinting
    (most expressions are never evaluated, so the model is not slowed down by flattening)."""

    __slots__ = ("_expr", "_terms")

    def __init__(self, expr: Expr) -> None:
        self._expr = expr
        self._terms: tuple[int, tuple[tuple[int, int], ...]] | None = None

    def value(self, values: Values) -> int:
        if self._terms is None:
            if isinstance(self._expr, int):
                self._terms = (self._expr, ())
            else:
                flat = FlatIntExpr(self._expr)
                pairs = zip(flat.vars, flat.coeffs, strict=True)
                self._terms = (flat.offset, tuple((v.index, c) for v, c in pairs))
        offset, terms = self._terms
        return offset + sum(c * values.get(i, 0) for i, c in terms)


class Variables:
    """The model's variables by role, the expressions the families share, and the hints."""

    def __init__(self, model: cp_model.CpModel, data: Compiled) -> None:
        self.model = model
        self.data = data
        self.count: dict[tuple[int, int], IntVar] = {}
        """(group, node) → pods of the group placed on the node."""
        self.on_device: dict[tuple[int, int, int, int], IntVar] = {}
        """(group, container, node, device) → pods of the group whose container uses the device."""
        self.on_numa: dict[tuple[int, int, int, int], IntVar] = {}
        """(group, container, node, NUMA node) → pods whose container's devices lie there."""
        self.whole: dict[int, list[tuple[int, int]]] = {}
        """node → (group, container) pairs that take whole devices there, counted not chosen."""
        self.occupied: dict[tuple[int, int], IntVar | int] = {}
        """(node, device) → the device carries some share after the plan (kept or new, per
        device), so whole-device containers cannot take it."""
        self.admit: dict[str, IntVar] = {}
        self.evict: dict[int, IntVar] = {}
        """Running pod index (data.running) → evicted."""
        self.derived: list[tuple[IntVar, Callable[[Values], int]]] = []
        """Auxiliaries in creation order, each with its value given the core values."""
        self.within: dict[tuple[str, int], IntVar] = {}
        """(job, level) → all the job's bound pods lie in one domain of that level."""
        self.domain: dict[tuple[str, int, str], IntVar] = {}
        self.node_used: dict[int, IntVar] = {}
        """node → the plan places pods on it (forced to 1 by any placement)."""
        self.device_used: dict[tuple[int, int], IntVar] = {}
        self.filled: dict[tuple[str, str], IntVar] = {}
        self.min_share: IntVar | None = None
        self._placed: dict[int, Expr] = {}
        self._whole_devices: dict[int, Expr] = {}
        self._device_users: dict[tuple[int, int], list[tuple[int, int, IntVar]]] | None = None
        self._make_core()

    def _make_core(self) -> None:
        m, data = self.model, self.data
        for job in data.jobs:
            if data.job_groups[job.key]:
                self.admit[job.key] = m.new_bool_var(f"admit[{job.key}]")
        for g in data.groups:
            for n in g.nodes:
                self.count[g.index, n] = m.new_int_var(
                    0, self._max_on_node(g.index, n), f"x[{g.index},{n}]"
                )
                for c in range(len(g.gpus)):
                    if g.whole[n][c]:
                        self.whole.setdefault(n, []).append((g.index, c))
                        continue
                    for d in g.devices[n]:
                        self.on_device[g.index, c, n, d] = m.new_int_var(
                            0, g.size, f"y[{g.index},{c},{n},{d}]"
                        )
                    for k in self.numa_nodes(g.index, c, n):
                        self.on_numa[g.index, c, n, k] = m.new_int_var(
                            0, g.size, f"numa[{g.index},{c},{n},{k}]"
                        )
        for i, r in enumerate(data.running):
            if r.evictable:
                self.evict[i] = m.new_bool_var(f"evict[{r.pod.key}]")

    def _max_on_node(self, group: int, node: int) -> int:
        """Pods of the group that could fit on the node by its devices alone."""
        g = self.data.groups[group]
        most = g.size
        devices = self.data.nodes[node].gpus
        for c, request in enumerate(g.gpus):
            if g.whole[node][c]:
                room = len(g.devices[node])
            else:
                room = sum(devices[d].count for d in g.devices[node])
            most = min(most, room // request.nums)
        return most

    def numa_nodes(self, group: int, container: int, node: int) -> list[int]:
        """NUMA nodes a NUMA-bound multi-GPU container may use on ``node`` (empty when the
        binding cannot matter: not bound, one GPU, or all usable devices on one NUMA node)."""
        g = self.data.groups[group]
        nums = g.gpus[container].nums
        if not g.numa_bind or nums < 2:
            return []
        devices = self.data.nodes[node].gpus
        per_numa: dict[int, int] = {}
        for d in g.devices[node]:
            per_numa[devices[d].numa] = per_numa.get(devices[d].numa, 0) + 1
        if len(per_numa) < 2:
            return []
        return sorted(k for k, n in per_numa.items() if n >= nums)

    # -- expressions ---------------------------------------------------------------------------

    def kept(self, i: int) -> Expr:
        """1 if running pod ``i`` stays, as an expression (a constant when it cannot go)."""
        return 1 - self.evict[i] if i in self.evict else 1

    def placed(self, group: int) -> Expr:
        """New pods of the group, over all its nodes (built once, reused by every family)."""
        if group not in self._placed:
            g = self.data.groups[group]
            self._placed[group] = sum(self.count[group, n] for n in g.nodes)
        return self._placed[group]

    def job_pods_on(self, job: str) -> dict[int, Expr]:
        """Bound pods of ``job`` per node after the plan (new + kept running)."""
        out: dict[int, Expr] = {}
        for gi in self.data.job_groups[job]:
            for n in self.data.groups[gi].nodes:
                out[n] = out.get(n, 0) + self.count[gi, n]
        for i in self.data.job_running[job]:
            n = self.data.running[i].node
            out[n] = out.get(n, 0) + self.kept(i)
        return out

    # -- auxiliaries -------------------------------------------------------------------------

    def aux_bool(self, name: str, derive: Callable[[Values], int]) -> IntVar:
        """A new auxiliary literal; ``derive`` gives its hint from the core values."""
        var = self.model.new_bool_var(name)
        self.derived.append((var, derive))
        return var

    def aux_int(self, lo: int, hi: int, name: str, derive: Callable[[Values], int]) -> IntVar:
        var = self.model.new_int_var(lo, hi, name)
        self.derived.append((var, derive))
        return var

    def any_positive(self, name: str, exprs: list[Expr], bounds: list[int]) -> IntVar:
        """A literal forced to 1 when one of ``exprs`` (each ≤ its bound) is positive; nothing
        forces it to 0, so it can only gate rules that cost something to switch on."""
        linear = [Linear(e) for e in exprs]
        flag = self.aux_bool(name, lambda vals: int(any(e.value(vals) > 0 for e in linear)))
        for expr, bound in zip(exprs, bounds, strict=True):
            self.model.add(expr <= bound * flag)
        return flag

    def within_level(self, job: str, level: int) -> IntVar:
        """``within[job, level]`` with its domain-choice literals and linking constraints
        (spec/cpsat-practice.md B.3): it can be 1 only if every bound pod of the job lies in
        one domain of the level. Per domain, the job's pods there ≤ all its pods × the domain's
        literal (relaxed when ``within`` is 0): one aggregated row per domain, not per node."""
        key = (job, level)
        if key in self.within:
            return self.within[key]
        m = self.model
        domains = self.data.domains[level]
        per_node = self.job_pods_on(job)
        linear = [(domains[n], Linear(e)) for n, e in per_node.items()]
        seen: list[set[str]] = [set()]

        def inside(vals: Values) -> int:
            seen[0] = {name for name, e in linear if e.value(vals) > 0}
            return int(len(seen[0]) <= 1)

        a = self.aux_bool(f"within[{job},{level}]", inside)
        self.within[key] = a
        chosen: dict[str, IntVar] = {}
        for n in per_node:
            name = domains[n]
            if name in chosen:
                continue

            def derive(vals: Values, name: str = name, first: bool = not chosen) -> int:
                # ``inside`` ran just before (auxiliaries are derived in creation order).
                used = seen[0]
                if len(used) > 1:
                    return 0
                return int(name in used or (not used and first))

            chosen[name] = self.aux_bool(f"domain[{job},{level},{name}]", derive)
            self.domain[job, level, name] = chosen[name]
        if not chosen:
            return a
        m.add(sum(chosen.values()) == a)
        most = self._max_pods(job)
        per_domain: dict[str, list[Expr]] = {}
        for n, expr in per_node.items():
            per_domain.setdefault(domains[n], []).append(expr)
        for name, exprs in per_domain.items():
            m.add(sum(exprs) <= most * chosen[name] + most * (1 - a))
        return a

    def _max_pods(self, job: str) -> int:
        """Pods the job can have bound after the plan: its pending and its running pods."""
        data = self.data
        pending = sum(data.groups[g].size for g in data.job_groups[job])
        return pending + len(data.job_running[job])

    def node_used_flag(self, node: int) -> IntVar:
        """1 when the plan places a pod on ``node``."""
        if node not in self.node_used:
            groups = self.data.groups_on[node]
            counts = [self.count[g, node] for g in groups]
            bounds = [self.data.groups[g].size for g in groups]
            self.node_used[node] = self.any_positive(f"node_used[{node}]", counts, bounds)
        return self.node_used[node]

    def device_used_flag(self, node: int, device: int) -> IntVar:
        """1 when the plan gives a new container share of ``device``."""
        key = (node, device)
        if key not in self.device_used:
            users = self.device_users().get(key, [])
            self.device_used[key] = self.any_positive(
                f"device_used[{node},{device}]",
                [var for _, _, var in users],
                [self.data.groups[gi].size for gi, _, _ in users],
            )
        return self.device_used[key]

    def occupied_flag(self, node: int, device: int) -> IntVar | int:
        """1 when ``device`` keeps a running share or gets a new per-device share (a constant
        1 when a share on it cannot be evicted, 0 when nothing can be on it)."""
        key = (node, device)
        if key not in self.occupied:
            holders = [i for i, _, _ in self.data.holders.get(key, [])]
            users = self.device_users().get(key, [])
            if any(i not in self.evict for i in holders):
                self.occupied[key] = 1
            elif not holders:
                self.occupied[key] = self.device_used_flag(node, device) if users else 0
            else:
                self.occupied[key] = self.any_positive(
                    f"occupied[{node},{device}]",
                    [var for _, _, var in users] + [self.kept(i) for i in holders],
                    [self.data.groups[gi].size for gi, _, _ in users] + [1] * len(holders),
                )
        return self.occupied[key]

    def whole_devices(self, node: int) -> Expr:
        """Whole devices the node's whole-device containers take."""
        if node not in self._whole_devices:
            self._whole_devices[node] = sum(
                self.data.groups[g].gpus[c].nums * self.count[g, node]
                for g, c in self.whole.get(node, [])
            )
        return self._whole_devices[node]

    def device_users(self) -> dict[tuple[int, int], list[tuple[int, int, IntVar]]]:
        """(node, device) → (group, container, count variable) of every possible new share."""
        if self._device_users is None:
            self._device_users = {}
            for (gi, c, n, d), var in self.on_device.items():
                self._device_users.setdefault((n, d), []).append((gi, c, var))
        return self._device_users

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
            *self.on_device.values(),
            *self.on_numa.values(),
            *self.admit.values(),
            *self.evict.values(),
        ]

    def complete(self, core_values: Values) -> dict[int, int]:
        """Every variable's value: the core values plus each auxiliary's derivation."""
        values = {var.index: 0 for var in self.core()}
        values.update(core_values)
        for var, derive in self.derived:
            values[var.index] = derive(values)
        return values
