"""Build, hint, solve and read back the CP-SAT model of one instance.

The greedy plan is both the complete hint of the first solve and the floor of the result: if
CP-SAT does not find something at least as good on the staged objective in time (or stops in
presolve with nothing, cpsat-practice B.6), the greedy plan is returned with the solver's
status, so ``vcopt solve`` never answers worse than Volcano would.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping

from ortools.sat.python import cp_model

from models.instance import Instance
from models.workload import DeviceShare

from ..plan import ADMITTED, PENDING, RUNNING, Eviction, JobDecision, Placement, Plan, SolverInfo
from . import constraints
from .data import Compiled, compile_instance
from .objective import STAGES, StageValues, evaluate, stage_expressions
from .params import SolveOptions, parameters
from .variables import Variables

STAGE_SHARE = {"work": 0.4, "fairness": 0.2, "topology": 0.2, "packing": 0.2}
STATUS = {
    cp_model.OPTIMAL: "OPTIMAL",
    cp_model.FEASIBLE: "FEASIBLE",
    cp_model.INFEASIBLE: "INFEASIBLE",
    cp_model.MODEL_INVALID: "MODEL_INVALID",
    cp_model.UNKNOWN: "UNKNOWN",
}


class _Progress(cp_model.CpSolverSolutionCallback):
    """Prints objective, bound, gap and time on stderr; kept tiny (cpsat-practice B.7)."""

    def __init__(self, stage: str, quiet: bool) -> None:
        super().__init__()
        self.stage = stage
        self.quiet = quiet

    def on_solution_callback(self) -> None:
        if self.quiet:
            return
        obj, bound = self.objective_value, self.best_objective_bound
        gap = abs(bound - obj) / max(1.0, abs(obj))
        print(
            f"cpsat {self.stage}: objective {obj:.0f}  bound {bound:.0f}  "
            f"gap {gap:.2%}  {self.wall_time:.1f}s",
            file=sys.stderr,
        )


class CpsatModel:
    """One instance compiled into a CP-SAT model with the four objective stages."""

    def __init__(self, instance: Instance, options: SolveOptions) -> None:
        self.instance = instance
        self.options = options
        self.data: Compiled = compile_instance(instance, tdm_lookahead=options.tdm_lookahead)
        self.model = cp_model.CpModel()
        self.vars = Variables(self.model, self.data)
        for family in constraints.ALL:
            family(self.model, self.vars, self.data)
        self.stages = stage_expressions(self.model, self.vars, self.data)

    @property
    def num_variables(self) -> int:
        return len(self.model.proto.variables)

    @property
    def num_constraints(self) -> int:
        return len(self.model.proto.constraints)

    # -- hints -------------------------------------------------------------------------------

    def hint_plan(self, plan: Plan) -> None:
        """Hint every variable from ``plan`` (complete hints, cpsat-practice B.6)."""
        values = self._values_of_plan(plan)
        self.model.clear_hints()
        for var in self.vars.all():
            self.model.add_hint(var, values.get(var.index, 0))

    def _values_of_plan(self, plan: Plan) -> dict[int, int]:
        data, v = self.data, self.vars
        values: dict[int, int] = {}
        group_of = {p.key: g for g in data.groups for p in g.pods}
        placed_nodes: dict[str, set[int]] = {}
        for p in plan.placements:
            g = group_of.get(p.pod)
            if g is None:
                continue
            n = data.node_index(p.node)
            var = v.count.get((g.index, n))
            if var is None:
                continue
            values[var.index] = values.get(var.index, 0) + 1
            placed_nodes.setdefault(g.job.key, set()).add(n)
            dev_index = {d.id: i for i, d in enumerate(data.nodes[n].gpus)}
            for share in p.gpus or ():
                y = v.on_device.get((g.index, n, dev_index.get(share.id, -1)))
                if y is not None:
                    values[y.index] = values.get(y.index, 0) + 1
            if p.gpus:
                for share in p.gpus:
                    d = dev_index.get(share.id)
                    if d is None:
                        continue
                    if (n, d) in v.opened_device:
                        values[v.opened_device[n, d].index] = 1
                    if g.gpu is not None and g.gpu.booked_cores >= 100 and (n, d) in v.exclusive:
                        values[v.exclusive[n, d].index] = 1
                    if g.gpu is not None and g.gpu.booked_cores == 0 and (n, d) in v.zero_core:
                        values[v.zero_core[n, d].index] = 1
            if n in v.opened_node:
                values[v.opened_node[n].index] = 1
        for job, var in v.admit.items():
            values[var.index] = 1 if job in placed_nodes else 0
        evicted = {e.pod for e in plan.evictions}
        for i, var in v.evict.items():
            values[var.index] = 1 if data.running[i].pod.key in evicted else 0
        for (n, d), var in v.zero_core.items():
            if any(c == 0 and dd == d for r in data.running if r.node == n for dd, _, c in r.gpus):
                values[var.index] = 1
        self._hint_topology(plan, values)
        return values

    def _hint_topology(self, plan: Plan, values: dict[int, int]) -> None:
        data, v = self.data, self.vars
        bound = plan.bound_pods(self.instance)
        nodes_of: dict[str, set[int]] = {}
        for key, b in bound.items():
            job = self.instance.pod_by_key[key].job
            nodes_of.setdefault(job, set()).add(data.node_index(b.node))
        levels, domains = v.levels
        for (job, level), var in v.within.items():
            names = {domains[level][n] for n in nodes_of.get(job, set())}
            inside = len(names) <= 1
            values[var.index] = int(inside)
            if inside and names:
                name = names.pop()
                if (job, level, name) in v.domain:
                    values[v.domain[job, level, name].index] = 1
            elif inside:
                first = next((k for k in v.domain if k[0] == job and k[1] == level), None)
                if first is not None:
                    values[v.domain[first].index] = 1
        del levels

    # -- solving -------------------------------------------------------------------------------

    def solve(self, greedy: Plan) -> Plan:
        """Staged solve, hinted with and floored by ``greedy``."""
        started = time.perf_counter()
        options = self.options
        greedy_values = evaluate(self.data, greedy)
        self.hint_plan(greedy)
        weights = {s: options.weights.get(s, 1) for s in STAGES}
        active = [s for s in STAGES if weights[s] != 0]
        solver = cp_model.CpSolver()
        best: dict[int, int] | None = None
        statuses: dict[str, str] = {}
        bounds: dict[str, float] = {}
        if options.objective == "weighted":
            plan_stages = [("weighted", _weighted(self.stages, weights, active, self.data))]
        else:
            plan_stages = [(s, self.stages[s]) for s in active]
        remaining = options.time_limit
        for position, (name, expr) in enumerate(plan_stages):
            later = sum(STAGE_SHARE.get(s, 1.0) for s, _ in plan_stages[position:])
            budget = remaining * (STAGE_SHARE.get(name, 1.0) / later) if later else remaining
            self.model.maximize(expr)
            parameters(solver, options, budget, self.num_variables)
            tick = time.perf_counter()
            status = solver.solve(self.model, _Progress(name, options.quiet))
            remaining = max(0.0, remaining - (time.perf_counter() - tick))
            statuses[name] = STATUS.get(status, str(status))
            if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                break
            bounds[name] = solver.best_objective_bound
            best = {var.index: solver.value(var) for var in self.vars.all()}
            value = round(solver.objective_value)
            if position + 1 < len(plan_stages):
                self.model.add(expr >= value)
                self.model.clear_hints()
                for var in self.vars.all():
                    self.model.add_hint(var, best[var.index])
        wall = time.perf_counter() - started
        first = plan_stages[0][0]
        status = statuses.get(first, "UNKNOWN")
        if best is None:
            return self._fallback(
                greedy, greedy_values, f"{status}: no CP-SAT solution in time", wall, statuses
            )
        plan = self._plan_from(best)
        values = evaluate(self.data, plan)
        if values.as_tuple() < greedy_values.as_tuple():
            return self._fallback(
                greedy,
                greedy_values,
                f"{status}: CP-SAT plan not better than greedy",
                wall,
                statuses,
            )
        all_optimal = all(s == "OPTIMAL" for s in statuses.values()) and len(statuses) == len(
            plan_stages
        )
        objective = (
            values.as_dict()[first] if first in values.as_dict() else float(solver.objective_value)
        )
        bound = bounds.get(first)
        gap = abs(bound - objective) / max(1.0, abs(objective)) if bound is not None else None
        info = SolverInfo(
            status="OPTIMAL" if all_optimal else "FEASIBLE",
            wall_seconds=round(wall, 3),
            objective=objective,
            bound=bound,
            gap=round(gap, 6) if gap is not None else None,
            workers=options.workers,
            stages={k: float(x) for k, x in values.as_dict().items()},
            variables=self.num_variables,
            constraints=self.num_constraints,
            message=", ".join(f"{k} {s}" for k, s in statuses.items()),
        )
        return plan.replace(solver=info)

    def _fallback(
        self,
        greedy: Plan,
        values: StageValues,
        message: str,
        wall: float,
        statuses: Mapping[str, str],
    ) -> Plan:
        status = next(iter(statuses.values()), "UNKNOWN")
        info = SolverInfo(
            status=f"{status} (greedy plan kept)",
            wall_seconds=round(wall, 3),
            objective=float(values.work),
            workers=self.options.workers,
            stages={k: float(x) for k, x in values.as_dict().items()},
            variables=self.num_variables,
            constraints=self.num_constraints,
            message=message,
        )
        return greedy.replace(engine="cpsat", solver=info)

    # -- reading the solution ------------------------------------------------------------------

    def _plan_from(self, values: Mapping[int, int]) -> Plan:
        data, v = self.data, self.vars
        placements: list[Placement] = []
        for g in data.groups:
            pods = iter(g.pods)
            for n in g.nodes:
                count = values[v.count[g.index, n].index]
                if not count:
                    continue
                node = data.nodes[n]
                remaining = {
                    d: values[v.on_device[g.index, n, d].index] for d in g.devices.get(n, [])
                }
                for _ in range(count):
                    pod = next(pods)
                    gpus = None
                    if g.gpu is not None:
                        # Take the devices with the most remaining uses: with per-device counts
                        # ≤ pods and a total of nums × pods this always yields distinct devices.
                        chosen = sorted(remaining, key=lambda d: (-remaining[d], d))[: g.gpu.nums]
                        gpus = []
                        for d in chosen:
                            remaining[d] -= 1
                            dev = node.gpus[d]
                            gpus.append(
                                DeviceShare(dev.id, g.gpu.memory_on(dev.memory), g.gpu.booked_cores)
                            )
                        gpus = tuple(gpus)
                    placements.append(
                        Placement(pod.key, node.name, gpus if g.gpu is not None else None)
                    )
        evictions = []
        for i, var in v.evict.items():
            if values[var.index]:
                r = data.running[i]
                reason = "reclaim"
                if "preempt" in data.instance.scheduler.actions and any(
                    values.get(v.admit[j.key].index, 0)
                    for j in data.jobs
                    if j.queue == r.job.queue and j.key in v.admit and j.priority > r.job.priority
                ):
                    reason = "preempt"
                evictions.append(Eviction(r.pod.key, data.nodes[r.node].name, reason))
        plan = Plan(
            instance=self.instance.name,
            engine="cpsat",
            seed=self.options.seed,
            placements=tuple(placements),
            evictions=tuple(evictions),
        )
        return plan.replace(jobs=self._decisions(plan, values))

    def _decisions(self, plan: Plan, values: Mapping[int, int]) -> tuple[JobDecision, ...]:
        data, v = self.data, self.vars
        bound = plan.bound_pods(self.instance)
        topology = self.instance.topology
        out = []
        for job in data.jobs:
            nodes = {b.node for k, b in bound.items() if self.instance.pod_by_key[k].job == job.key}
            pods = sum(1 for k in bound if self.instance.pod_by_key[k].job == job.key)
            tier = topology.lca_tier(nodes) if pods > 1 else None
            hypernode = topology.lowest_common(nodes) if pods > 1 else None
            admitted = job.key in v.admit and values[v.admit[job.key].index]
            if admitted:
                out.append(JobDecision(job.key, ADMITTED, "", hypernode, tier))
            elif pods:
                out.append(JobDecision(job.key, RUNNING, "", hypernode, tier))
            else:
                out.append(JobDecision(job.key, PENDING, self._pending_reason(job.key)))
        return tuple(out)

    def _pending_reason(self, job: str) -> str:
        groups = [self.data.groups[g] for g in self.data.job_groups[job]]
        if groups and all(not g.nodes for g in groups):
            return "no node passes the static predicates (selector, taints, TDM, GPU filter)"
        return (
            "not admitted: no feasible placement, or admitting it lowers a higher objective stage"
        )


def _weighted(
    stages: Mapping[str, cp_model.LinearExprT],
    weights: Mapping[str, int],
    active: list[str],
    data: Compiled,
) -> cp_model.LinearExprT:
    """One weighted sum; default weights make each stage dominate the next (bounded below
    int64 by scaling the lower stages down when an instance is large)."""
    scale = {"packing": 1}
    packing_span = (
        100 * len(data.running) + sum(len(n.gpus) for n in data.nodes) + len(data.nodes) + 1
    )
    scale["topology"] = packing_span
    topology_span = 8 * max(1, len(data.jobs)) + 1
    scale["fairness"] = scale["topology"] * topology_span
    fairness_span = 10001 * 1001 * max(1, len({j.queue for j in data.jobs}) * 4) + 1
    scale["work"] = scale["fairness"] * fairness_span
    if scale["work"] > 2**40:
        scale = {"work": 2**20, "fairness": 2**10, "topology": 2**4, "packing": 1}
    return sum(weights[s] * scale[s] * stages[s] for s in active)


def solve(instance: Instance, options: SolveOptions, greedy: Plan) -> Plan:
    """The CP-SAT plan for ``instance``; never worse than ``greedy`` on the staged objective."""
    return CpsatModel(instance, options).solve(greedy)
