"""Build, hint, solve and read back the CP-SAT model of one instance.

The greedy plan is both the complete hint of the first solve and the floor of the result: if
CP-SAT does not find something better on the staged objective in time (or stops in presolve
with nothing, cpsat-practice B.6), the greedy plan is returned with the solver's status and
"(greedy plan kept)", so ``vcopt solve`` never answers worse than Volcano would.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence

from ortools.sat.python import cp_model

from models.gpu import GpuDevice, GpuRequest
from models.instance import Instance
from models.workload import DeviceShare

from ..plan import ADMITTED, PENDING, RUNNING, Eviction, JobDecision, Placement, Plan, SolverInfo
from . import constraints
from .data import Compiled, Group, compile_instance
from .objective import STAGES, StageValues, evaluate, stage_expressions, stage_span
from .params import SolveOptions, parameters
from .variables import Expr, Values, Variables, value_of

STAGE_SHARE = {"work": 0.4, "fairness": 0.2, "topology": 0.2, "packing": 0.2}
INT64_HEADROOM = 2**62
STATUS = {
    cp_model.OPTIMAL: "OPTIMAL",
    cp_model.FEASIBLE: "FEASIBLE",
    cp_model.INFEASIBLE: "INFEASIBLE",
    cp_model.MODEL_INVALID: "MODEL_INVALID",
    cp_model.UNKNOWN: "UNKNOWN",
}
KEPT = "(greedy plan kept)"


class _Progress(cp_model.CpSolverSolutionCallback):
    """Prints objective, bound, gap and time on stderr; kept tiny (cpsat-practice B.7)."""

    def __init__(self, stage: str) -> None:
        super().__init__()
        self.stage = stage

    def on_solution_callback(self) -> None:
        # Adding 0.0 turns CP-SAT's negative zero into a plain 0 for printing.
        obj, bound = self.objective_value + 0.0, self.best_objective_bound + 0.0
        gap = abs(bound - obj) / max(1.0, abs(obj))
        print(
            f"cpsat {self.stage}: objective {obj:.0f}  bound {bound:.0f}  "
            f"gap {gap:.2%}  {self.wall_time:.1f}s",
            file=sys.stderr,
        )


def active_stages(options: SolveOptions) -> list[str]:
    return [s for s in STAGES if options.weights.get(s, 1) != 0]


class CpsatModel:
    """One instance compiled into a CP-SAT model with the objective stages the options keep."""

    def __init__(self, instance: Instance, options: SolveOptions) -> None:
        self.started = time.perf_counter()
        self.instance = instance
        self.options = options
        self.data: Compiled = compile_instance(instance, tdm_lookahead=options.tdm_lookahead)
        self.model = cp_model.CpModel()
        self.vars = Variables(self.model, self.data)
        for family in constraints.ALL:
            family(self.model, self.vars, self.data)
        self.active = active_stages(options)
        self.stages = stage_expressions(self.model, self.vars, self.data, self.active)
        self.scales, self.dropped = _weighted_scales(self.data, options, self.active)

    @property
    def num_variables(self) -> int:
        return len(self.model.proto.variables)

    @property
    def num_constraints(self) -> int:
        return len(self.model.proto.constraints)

    # -- hints -------------------------------------------------------------------------------

    def hint_plan(self, plan: Plan) -> dict[int, int]:
        """Hint every variable from ``plan`` (complete hints, cpsat-practice B.6); returns the
        hinted values by variable index."""
        values = self.vars.complete(self._core_values(plan))
        self._hint(values)
        return values

    def within_model(self, plan: Plan) -> bool:
        """Whether every placement of ``plan`` is a choice the model offers. A plan that uses a
        node the model rules out (e.g. a revocable node under ``--tdm-lookahead``) is not a
        fallback candidate: returning it would break the options the user asked for."""
        group_of = {p.key: g for g in self.data.groups for p in g.pods}
        for p in plan.placements:
            g = group_of.get(p.pod)
            if g is None or (g.index, self.data.node_index(p.node)) not in self.vars.count:
                return False
        return True

    def _hint(self, values: Values) -> None:
        self.model.clear_hints()
        for i in range(self.num_variables):
            self.model.add_hint(self.model.get_int_var_from_proto_index(i), values.get(i, 0))

    def _core_values(self, plan: Plan) -> dict[int, int]:
        """Counts, devices, admissions and evictions of ``plan`` (pipelined pods hold nothing
        yet and are not hinted)."""
        data, v = self.data, self.vars
        values: dict[int, int] = {}
        group_of = {p.key: g for g in data.groups for p in g.pods}
        admitted: set[str] = set()
        open_devices: list[tuple[Group, int]] = []
        for p in plan.placements:
            g = group_of.get(p.pod)
            n = data.node_index(p.node)
            if g is None or (g.index, n) not in v.count:
                continue
            _bump(values, v.count[g.index, n])
            admitted.add(g.job.key)
            if not g.gpus:
                continue
            if p.gpus is None:
                open_devices.append((g, n))
                continue
            self._hint_devices(values, g, n, _device_indices(data.nodes[n].gpus, p.gpus))
        for (g, n), flat in zip(open_devices, self._open_devices(plan, open_devices), strict=True):
            self._hint_devices(values, g, n, flat)
        for job, var in v.admit.items():
            values[var.index] = int(job in admitted)
        evicted = {e.pod for e in plan.evictions}
        for i, var in v.evict.items():
            values[var.index] = int(data.running[i].pod.key in evicted)
        return values

    def _hint_devices(self, values: dict[int, int], g: Group, n: int, flat: list[int]) -> None:
        """Count one pod's container devices (``flat``, in container order) into the hint."""
        start = 0
        devices = self.data.nodes[n].gpus
        for c, request in enumerate(g.gpus):
            chosen = flat[start : start + request.nums]
            start += request.nums
            for d in chosen:
                var = self.vars.on_device.get((g.index, c, n, d))
                if var is not None:
                    _bump(values, var)
            numas = {devices[d].numa for d in chosen}
            if len(numas) == 1:
                var = self.vars.on_numa.get((g.index, c, n, numas.pop()))
                if var is not None:
                    _bump(values, var)

    def _open_devices(self, plan: Plan, placements: list[tuple[Group, int]]) -> list[list[int]]:
        """Devices for placements that left them open (a greedy run without deviceshare): per
        container, the first allowed devices with room beside what the plan books there."""
        nodes = {n for _, n in placements}
        usage: dict[tuple[int, str], list[int]] = {}
        for b in plan.bound_pods(self.instance).values():
            n = self.data.node_index(b.node)
            if n in nodes:
                for share in b.gpus or ():
                    used = usage.setdefault((n, share.id), [0, 0, 0])
                    used[0] += 1
                    used[1] += share.memory
                    used[2] += share.cores
        out = []
        for g, n in placements:
            devices = self.data.nodes[n].gpus
            flat: list[int] = []
            for request in g.gpus:
                chosen: list[int] = []
                for d in g.devices[n]:
                    used = usage.setdefault((n, devices[d].id), [0, 0, 0])
                    if len(chosen) < request.nums and _room(devices[d], used, request):
                        chosen.append(d)
                for d in chosen:
                    used = usage[n, devices[d].id]
                    used[0] += 1
                    used[1] += request.memory_on(devices[d].memory)
                    used[2] += request.booked_cores
                flat += chosen
            out.append(flat)
        return out

    # -- solving -------------------------------------------------------------------------------

    def objectives(self) -> list[tuple[str, Expr]]:
        """What each sequential solve maximises."""
        if self.options.objective == "weighted":
            return [("weighted", sum(self.scales[s] * self.stages[s] for s in self.scales))]
        return [(s, self.stages[s]) for s in self.active]

    def solve(self, greedy: Plan) -> Plan:
        """Staged solve, hinted with and floored by ``greedy``.

        Each stage is hinted with the best solution so far, its auxiliaries re-derived from
        its core values so that the hint is complete and tight, and the stage is then held at
        that solution's value for the stages after it (also when the stage found nothing in
        its budget, so later stages cannot trade the hinted value away).
        """
        options = self.options
        greedy_values = evaluate(self.data, greedy)
        current = self.hint_plan(greedy)
        solver = cp_model.CpSolver()
        best: dict[int, int] | None = None
        statuses: dict[str, str] = {}
        first_bound: float | None = None
        first_objective: float | None = None
        objectives = self.objectives()
        shares = [STAGE_SHARE.get(name, 1.0) for name, _ in objectives]
        remaining = options.time_limit - (time.perf_counter() - self.started)
        for position, (name, expr) in enumerate(objectives):
            if options.deterministic:
                budget = options.time_limit * shares[position] / sum(shares)
            else:
                budget = remaining * shares[position] / sum(shares[position:])
            self.model.maximize(expr)
            parameters(solver, options, budget, self.num_variables)
            tick = time.perf_counter()
            status = solver.solve(self.model, None if options.quiet else _Progress(name))
            remaining = max(0.0, remaining - (time.perf_counter() - tick))
            statuses[name] = STATUS.get(status, str(status))
            if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                best = dict(enumerate(solver.response_proto.solution))
                current = self.vars.complete({v.index: best[v.index] for v in self.vars.core()})
                if position == 0:
                    first_bound = solver.best_objective_bound
                    first_objective = float(value_of(expr, best))
            if position + 1 < len(objectives):
                self.model.add(expr >= value_of(expr, current))
                self._hint(current)
        wall = time.perf_counter() - self.started
        first = objectives[0][0] if objectives else ""
        status = statuses.get(first, "UNKNOWN")
        if best is None:
            reason = "no CP-SAT solution" if objectives else "every objective stage is off"
            return self._fallback(greedy, greedy_values, status, reason, wall, statuses)
        plan = self._plan_from(best)
        plan_values = evaluate(self.data, plan)
        if self.within_model(greedy) and self._score(plan_values) <= self._score(greedy_values):
            return self._fallback(
                greedy, greedy_values, status, "CP-SAT plan not better than greedy", wall, statuses
            )
        all_optimal = len(statuses) == len(objectives) and all(
            s == "OPTIMAL" for s in statuses.values()
        )
        gap = None
        if first_bound is not None and first_objective is not None:
            gap = round(abs(first_bound - first_objective) / max(1.0, abs(first_objective)), 6)
        info = SolverInfo(
            status="OPTIMAL" if all_optimal else "FEASIBLE",
            wall_seconds=round(wall, 3),
            objective=first_objective,
            bound=first_bound,
            gap=gap,
            workers=options.workers,
            stages={s: float(value_of(self.stages[s], best)) for s in self.active},
            variables=self.num_variables,
            constraints=self.num_constraints,
            message=self._message(statuses),
        )
        return plan.replace(solver=info)

    def _score(self, values: StageValues) -> tuple[int, ...]:
        """What "better" means for the chosen objective: the active stages in order, or the
        weighted sum."""
        if self.options.objective == "weighted":
            return (sum(self.scales[s] * getattr(values, s) for s in self.scales),)
        return values.as_tuple(self.active)

    def _message(self, statuses: Mapping[str, str], reason: str = "") -> str:
        parts = [f"{k} {s}" for k, s in statuses.items()]
        if self.dropped:
            parts.append(f"stages {', '.join(self.dropped)} left out of the weighted sum (int64)")
        if reason:
            parts.append(reason)
        return ", ".join(parts)

    def _fallback(
        self,
        greedy: Plan,
        values: StageValues,
        status: str,
        reason: str,
        wall: float,
        statuses: Mapping[str, str],
    ) -> Plan:
        info = SolverInfo(
            status=f"{status} {KEPT}",
            wall_seconds=round(wall, 3),
            objective=float(self._score(values)[0]) if self._score(values) else None,
            workers=self.options.workers,
            stages={k: float(x) for k, x in values.as_dict().items()},
            variables=self.num_variables,
            constraints=self.num_constraints,
            message=self._message(statuses, reason),
        )
        return greedy.replace(engine="cpsat", solver=info)

    # -- reading the solution ------------------------------------------------------------------

    def _plan_from(self, values: Values) -> Plan:
        data, v = self.data, self.vars
        placements: list[Placement] = []
        free: dict[int, list[int]] = {}
        for g in data.groups:
            pods = iter(g.pods)
            for n in g.nodes:
                count = values[v.count[g.index, n].index]
                if not count:
                    continue
                node = data.nodes[n]
                if n in v.whole and n not in free:
                    free[n] = self._free_devices(values, n)
                per_container = [
                    [[] for _ in range(count)]
                    if g.whole[n][c]
                    else self._split(values, g, c, n, count)
                    for c in range(len(g.gpus))
                ]
                for p in range(count):
                    shares: list[DeviceShare] = []
                    for c, request in enumerate(g.gpus):
                        chosen = per_container[c][p]
                        if g.whole[n][c]:
                            chosen, free[n] = free[n][: request.nums], free[n][request.nums :]
                        for d in chosen:
                            dev = node.gpus[d]
                            memory = request.memory_on(dev.memory)
                            shares.append(DeviceShare(dev.id, memory, request.booked_cores))
                    placements.append(Placement(next(pods).key, node.name, tuple(shares)))
        evictions = []
        for i, var in v.evict.items():
            if values[var.index]:
                r = data.running[i]
                evictions.append(
                    Eviction(r.pod.key, data.nodes[r.node].name, self._reason(values, i))
                )
        plan = Plan(
            instance=self.instance.name,
            engine="cpsat",
            seed=self.options.seed,
            placements=tuple(placements),
            evictions=tuple(evictions),
        )
        return plan.replace(jobs=self._decisions(plan, values))

    def _free_devices(self, values: Values, n: int) -> list[int]:
        """The node's pool devices that carry no share after the plan, those running pods held
        before first (taking them opens no new device)."""
        v = self.vars
        users = v.device_users()

        def taken(d: int) -> bool:
            if any(values[var.index] for _, _, var in users.get((n, d), [])):
                return True
            holders = self.data.holders.get((n, d), [])
            return any(i not in v.evict or not values[v.evict[i].index] for i, _, _ in holders)

        free = [d for d in self.data.pool[n] if not taken(d)]
        return sorted(free, key=lambda d: ((n, d) not in self.data.holders, d))

    def _split(self, values: Values, g: Group, c: int, n: int, count: int) -> list[list[int]]:
        """The devices of container ``c`` for each of the ``count`` pods on node ``n``.

        Each pod takes the ``nums`` devices with the most uses left: with per-device counts ≤
        the pods and a total of nums × pods this always yields distinct devices. A NUMA-bound
        container is split per NUMA node first.
        """
        nums = g.gpus[c].nums
        remaining = {d: values[self.vars.on_device[g.index, c, n, d].index] for d in g.devices[n]}
        numas = self.vars.numa_nodes(g.index, c, n)
        if numas:
            gpus = self.data.nodes[n].gpus
            parts = [
                (
                    values[self.vars.on_numa[g.index, c, n, k].index],
                    {d: r for d, r in remaining.items() if gpus[d].numa == k},
                )
                for k in numas
            ]
        else:
            parts = [(count, remaining)]
        out: list[list[int]] = []
        for pods, left in parts:
            for _ in range(pods):
                chosen = sorted(left, key=lambda d: (-left[d], d))[:nums]
                for d in chosen:
                    left[d] -= 1
                out.append(chosen)
        return out

    def _reason(self, values: Values, i: int) -> str:
        """Preempt when a higher-priority job of the victim's queue gets in, else reclaim when
        the queue can be reclaimed from, else preempt (Volcano's preempt also evicts before
        the preemptor can bind)."""
        victim = self.data.running[i].job
        preemptor_in = any(
            values[self.vars.admit[j.key].index]
            for j in self.data.jobs
            if j.queue == victim.queue and j.key in self.vars.admit and j.priority > victim.priority
        )
        if constraints.can_preempt(self.data, i) and (
            preemptor_in or not constraints.can_reclaim(self.data, victim.queue)
        ):
            return "preempt"
        return "reclaim"

    def _decisions(self, plan: Plan, values: Values) -> tuple[JobDecision, ...]:
        data, v = self.data, self.vars
        topology = self.instance.topology
        nodes_of: dict[str, list[str]] = {}
        for key, b in plan.bound_pods(self.instance).items():
            nodes_of.setdefault(self.instance.pod_by_key[key].job, []).append(b.node)
        out = []
        for job in data.jobs:
            nodes = nodes_of.get(job.key, [])
            tier = topology.lca_tier(nodes) if len(nodes) > 1 else None
            hypernode = topology.lowest_common(nodes) if len(nodes) > 1 else None
            if job.key in v.admit and values[v.admit[job.key].index]:
                out.append(JobDecision(job.key, ADMITTED, "", hypernode, tier))
            elif nodes:
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


def _bump(values: dict[int, int], var: cp_model.IntVar) -> None:
    values[var.index] = values.get(var.index, 0) + 1


def _device_indices(devices: Sequence[GpuDevice], shares: Sequence[DeviceShare]) -> list[int]:
    index = {d.id: i for i, d in enumerate(devices)}
    return [index[s.id] for s in shares if s.id in index]


def _room(device: GpuDevice, used: Sequence[int], request: GpuRequest) -> bool:
    slots, memory, cores = used
    return (
        slots < device.count
        and memory + request.memory_on(device.memory) <= device.memory
        and cores + request.booked_cores <= device.cores
    )


def _weighted_scales(
    data: Compiled, options: SolveOptions, active: list[str]
) -> tuple[dict[str, int], list[str]]:
    """Per-stage multipliers of the weighted objective: each stage's scale exceeds the whole
    span of the stages after it, so the sum is lexicographic (times the user's weights). Stages
    are dropped from the end while the sum would not fit in int64."""
    if options.objective != "weighted":
        return {}, []
    kept = list(active)
    while kept:
        scales: dict[str, int] = {}
        scale = 1
        for stage in reversed(kept):
            scales[stage] = scale * options.weights.get(stage, 1)
            scale *= stage_span(data, stage) * options.weights.get(stage, 1) + 1
        if scale < INT64_HEADROOM:
            return {s: scales[s] for s in kept}, [s for s in active if s not in kept]
        kept.pop()
    return {}, list(active)


def solve(instance: Instance, options: SolveOptions, greedy: Plan) -> Plan:
    """The CP-SAT plan for ``instance``; never worse than ``greedy`` on the staged objective."""
    return CpsatModel(instance, options).solve(greedy)
