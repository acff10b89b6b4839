"""The decision variables, created sparsely and only where a decision exists.

Core variables are made eagerly: pod counts per (group, candidate node), per (group, device)
counts for GPU groups, admission per job, eviction literals for evictable running pods.
Auxiliaries that only some constraints or objective stages need (topology domains, fairness
levels, opened devices and nodes) are made on first use, so switching a stage off also removes
its variables (the PyJobShop pattern, STYLE.md A.1).
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from .data import Compiled, topology_levels

IntVar = cp_model.IntVar


class Variables:
    def __init__(self, model: cp_model.CpModel, data: Compiled) -> None:
        self.model = model
        self.data = data
        self.count: dict[tuple[int, int], IntVar] = {}
        """(group, node) → pods of the group placed on the node."""
        self.on_device: dict[tuple[int, int, int], IntVar] = {}
        """(group, node, device) → pods of the group holding that device."""
        self.admit: dict[str, IntVar] = {}
        self.evict: dict[int, IntVar] = {}
        """Running pod index (data.running) → evicted."""
        self._levels: tuple[list[int], list[list[str]]] | None = None
        self.within: dict[tuple[str, int], IntVar] = {}
        """(job, level) → all the job's bound pods lie in one domain of that level."""
        self.domain: dict[tuple[str, int, str], IntVar] = {}
        self.exclusive: dict[tuple[int, int], IntVar] = {}
        self.zero_core: dict[tuple[int, int], IntVar] = {}
        self.opened_device: dict[tuple[int, int], IntVar] = {}
        self.opened_node: dict[int, IntVar] = {}
        self.filled: dict[tuple[str, str], IntVar] = {}
        self.min_share: IntVar | None = None
        self._make_core()

    def _make_core(self) -> None:
        m, data = self.model, self.data
        for job in data.jobs:
            if data.job_groups[job.key]:
                self.admit[job.key] = m.new_bool_var(f"admit[{job.key}]")
        for g in data.groups:
            for n in g.nodes:
                self.count[g.index, n] = m.new_int_var(0, len(g.pods), f"x[{g.index},{n}]")
                if g.gpu is not None:
                    cap = len(g.pods)
                    for d in g.devices[n]:
                        self.on_device[g.index, n, d] = m.new_int_var(
                            0, cap, f"y[{g.index},{n},{d}]"
                        )
        for i, r in enumerate(data.running):
            if r.evictable:
                self.evict[i] = m.new_bool_var(f"evict[{r.pod.key}]")

    # -- expressions ---------------------------------------------------------------------------

    def kept(self, i: int) -> cp_model.LinearExprT:
        """1 if running pod ``i`` stays, as an expression (a constant when it cannot go)."""
        return 1 - self.evict[i] if i in self.evict else 1

    def placed(self, group: int) -> cp_model.LinearExprT:
        g = self.data.groups[group]
        return sum(self.count[group, n] for n in g.nodes)

    def job_pods_on(self, job: str) -> dict[int, cp_model.LinearExprT]:
        """Bound pods of ``job`` per node after the plan (new + kept running)."""
        out: dict[int, cp_model.LinearExprT] = {}
        for gi in self.data.job_groups[job]:
            for n in self.data.groups[gi].nodes:
                out[n] = out.get(n, 0) + self.count[gi, n]
        for i in self.data.job_running[job]:
            n = self.data.running[i].node
            out[n] = out.get(n, 0) + self.kept(i)
        return out

    # -- lazily created auxiliaries ----------------------------------------------------------

    @property
    def levels(self) -> tuple[list[int], list[list[str]]]:
        if self._levels is None:
            self._levels = topology_levels(self.data.instance)
        return self._levels

    def within_level(self, job: str, level: int) -> IntVar:
        """``within[job, level]`` with its domain-choice literals and linking constraints."""
        key = (job, level)
        if key in self.within:
            return self.within[key]
        m = self.model
        a = m.new_bool_var(f"within[{job},{level}]")
        self.within[key] = a
        domains = self.levels[1][level]
        per_node = self.job_pods_on(job)
        chosen: dict[str, IntVar] = {}
        for n in per_node:
            name = domains[n]
            if name not in chosen:
                chosen[name] = m.new_bool_var(f"domain[{job},{level},{name}]")
                self.domain[job, level, name] = chosen[name]
        if not chosen:
            return a
        m.add(sum(chosen.values()) == a)
        for n, expr in per_node.items():
            big = self._max_pods(job, n)
            m.add(expr <= big * chosen[domains[n]] + big * (1 - a))
        return a

    def _max_pods(self, job: str, node: int) -> int:
        data = self.data
        total = sum(
            len(data.groups[g].pods) for g in data.job_groups[job] if node in data.groups[g].nodes
        )
        return total + sum(1 for i in data.job_running[job] if data.running[i].node == node)

    def exclusive_on(self, node: int, device: int) -> IntVar:
        key = (node, device)
        if key not in self.exclusive:
            self.exclusive[key] = self.model.new_bool_var(f"exclusive[{node},{device}]")
        return self.exclusive[key]

    def zero_core_on(self, node: int, device: int) -> IntVar:
        key = (node, device)
        if key not in self.zero_core:
            self.zero_core[key] = self.model.new_bool_var(f"zero_core[{node},{device}]")
        return self.zero_core[key]

    def device_opened(self, node: int, device: int) -> IntVar:
        key = (node, device)
        if key not in self.opened_device:
            self.opened_device[key] = self.model.new_bool_var(f"opened_device[{node},{device}]")
        return self.opened_device[key]

    def node_opened(self, node: int) -> IntVar:
        if node not in self.opened_node:
            self.opened_node[node] = self.model.new_bool_var(f"opened_node[{node}]")
        return self.opened_node[node]

    def fill(self, queue: str, resource: str) -> IntVar:
        key = (queue, resource)
        if key not in self.filled:
            self.filled[key] = self.model.new_int_var(0, 1000, f"filled[{queue},{resource}]")
        return self.filled[key]

    def max_min_share(self, cap: int) -> IntVar:
        if self.min_share is None:
            self.min_share = self.model.new_int_var(0, cap, "min_share")
        return self.min_share

    # -- hints -------------------------------------------------------------------------------

    def all(self) -> list[IntVar]:
        out: list[IntVar] = [*self.count.values(), *self.on_device.values(), *self.admit.values()]
        out += [*self.evict.values(), *self.within.values(), *self.domain.values()]
        out += [*self.exclusive.values(), *self.zero_core.values()]
        out += [*self.opened_device.values(), *self.opened_node.values(), *self.filled.values()]
        if self.min_share is not None:
            out.append(self.min_share)
        return out
