"""A bound on the work stage that no plan can beat, when no whole model was solved.

A decomposed solve improves a plan round by round and never sees the whole snapshot at once,
so CP-SAT proves nothing about it. This bound comes from a linear relaxation of the aggregated
model instead: how many pods of each pending group go to each node class is a real number, and
only what holds for every plan is kept —

- a group places at most its pending pods;
- on every class, the pods placed take at most the class's free room (allocatable less what
  the running pods no rule can evict hold, times the class's nodes) in every resource, at
  most its free pod slots, and at most the free slots, cores and memory of its GPU devices
  taken as one pool;
- a queue's pods stay within its quota, less what its running pods no rule can evict hold.

Everything else — gangs, device fits, topology, affinity, admission — can only lower the
optimum, and every running pod of Volcano's jobs counts as kept, so the linear optimum is an
upper bound on the work of any plan. It is solved with GLOP (OR-Tools' simplex), its rows
built from numpy arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from ortools.linear_solver import linear_solver_pb2, pywraplp

from .compile.classes import NodeClass
from .compile.data import Compiled

MIN_SECONDS = 0.5
"""Below this, the relaxation is not tried: the time is the rounds'."""
TOLERANCE = 1e-6
"""Relative error allowed for the simplex's optimum (GLOP's default tolerances are 1e-7)."""


@dataclass(frozen=True)
class Relaxation:
    """The linear optimum: its bound on work, and where it puts the pending work."""

    bound: float
    class_worth: np.ndarray
    """Per node class, the priority-weighted work of the pending pods the optimum puts there."""
    group_pods: np.ndarray
    """Per group, how many of its pending pods the optimum places (a real number)."""


def relax(data: Compiled, seconds: float) -> Relaxation | None:
    """The linear relaxation of the work stage, or None when it is not solved to optimality
    within ``seconds``. Its bound is an upper bound on ``objective.evaluate``'s ``work`` of
    every plan."""
    if seconds < MIN_SECONDS:
        return None
    kept = sum(
        data.weights[data.running[i].job.key] * data.running[i].value
        for u in data.units
        for i in u.running
    )
    pairs = [(g.index, c) for g in data.groups for c in g.classes]
    if not pairs:
        empty = np.zeros(len(data.classes))
        return Relaxation(float(kept), empty, np.zeros(len(data.groups)))
    model = linear_solver_pb2.MPModelProto(maximize=True)
    upper = [len(data.groups[g].pods) for g, _ in pairs]
    worth = np.array(
        [data.weights[data.groups[g].job.key] * data.groups[g].value for g, _ in pairs],
        dtype=float,
    )
    for high, gain in zip(upper, worth.tolist(), strict=True):
        model.variable.add(lower_bound=0, upper_bound=high, objective_coefficient=gain)
    group_of = np.array([g for g, _ in pairs])
    class_of = np.array([c for _, c in pairs])
    order = np.argsort(group_of, kind="stable")
    starts = np.searchsorted(group_of[order], np.arange(len(data.groups) + 1))
    for g, group in enumerate(data.groups):
        members = order[starts[g] : starts[g + 1]]
        if len(members) > 1:
            _at_most(model, members, np.ones(len(members)), len(group.pods))
    by_class = np.argsort(class_of, kind="stable")
    class_starts = np.searchsorted(class_of[by_class], np.arange(len(data.classes) + 1))
    requests = {
        r: np.array([data.groups[g].request.get(r, 0) for g, _ in pairs], dtype=float)
        for r in data.resources
    }
    for cls in data.classes:
        members = by_class[class_starts[cls.index] : class_starts[cls.index + 1]]
        if not len(members):
            continue
        slots = max(0, cls.pod_capacity - cls.held_pods) * cls.size
        _at_most(model, members, np.ones(len(members)), slots)
        for resource, request in requests.items():
            asked = request[members]
            if asked.any():
                _at_most(model, members, asked, max(0, cls.free(resource)) * cls.size)
        _devices(data, model, cls, members, group_of[members])
    _queues(data, model, group_of, requests)
    solver = pywraplp.Solver.CreateSolver("GLOP")
    solver.LoadModelFromProto(model)
    solver.SetTimeLimit(int(1000 * seconds))
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    # Work is an integer: no plan exceeds the floor of the linear optimum. The simplex's value
    # carries floating-point error, which the tolerance covers so that the bound stays one.
    value = solver.Objective().Value()
    bound = float(kept + math.floor(value + TOLERANCE * max(1.0, abs(value))))
    x = np.array([v.solution_value() for v in solver.variables()])
    return Relaxation(
        bound,
        np.bincount(class_of, weights=x * worth, minlength=len(data.classes)),
        np.bincount(group_of, weights=x, minlength=len(data.groups)),
    )


def _devices(
    data: Compiled,
    model: linear_solver_pb2.MPModelProto,
    cls: NodeClass,
    members: np.ndarray,
    groups: np.ndarray,
) -> None:
    """The class's GPU devices taken as one pool: the shares placed use at most its free
    slots, cores and memory (each share's memory the least it books on any of them)."""
    pool = [dc for dc in cls.devices if dc.pool]
    if not pool:
        return
    slots = np.zeros(len(members))
    cores = np.zeros(len(members))
    memory = np.zeros(len(members))
    for k, g in enumerate(groups.tolist()):
        for request in data.groups[g].gpus_on(cls.index):
            slots[k] += request.nums
            cores[k] += request.nums * request.booked_cores
            memory[k] += request.nums * min(request.memory_on(dc.device.memory) for dc in pool)
    for need, free in (
        (slots, sum(dc.per_node * max(0, dc.free_slots) for dc in pool)),
        (cores, sum(dc.per_node * max(0, dc.free_cores) for dc in pool)),
        (memory, sum(dc.per_node * max(0, dc.free_memory) for dc in pool)),
    ):
        if need.any():
            _at_most(model, members, need, free * cls.size)


def _queues(
    data: Compiled,
    model: linear_solver_pb2.MPModelProto,
    group_of: np.ndarray,
    requests: dict[str, np.ndarray],
) -> None:
    """Each queue's quota on the pairs of its members' groups."""
    for queue, limit in data.queue_limits.items():
        units = {data.unit_of[j] for j in data.queue_members.get(queue, [])}
        groups = [g for u in units for g in data.units[u].groups]
        if not groups:
            continue
        members = np.flatnonzero(np.isin(group_of, groups))
        for resource, request in requests.items():
            if resource not in limit:
                continue
            asked = request[members]
            if not asked.any():
                continue
            held = sum(
                data.running[i].request.get(resource, 0)
                for u in units
                for i in data.units[u].running
                if not data.running[i].evictable
            )
            _at_most(model, members, asked, max(0, limit[resource] - held))


def _at_most(
    model: linear_solver_pb2.MPModelProto,
    indices: np.ndarray,
    coefficients: np.ndarray,
    bound: float,
) -> None:
    model.constraint.add(
        var_index=indices.tolist(),
        coefficient=coefficients.tolist(),
        lower_bound=-np.inf,
        upper_bound=float(bound),
    )
