"""Small helpers shared by the CP-SAT tests: build an instance from a YAML body, solve it with
CP-SAT, and check every plan with the independent verifier.

Constraint tests solve against an *empty* floor plan instead of the greedy plan, so that what
they observe is the CP-SAT model's own answer (with the greedy floor, an equally good greedy
plan would be returned as is). An empty floor is always feasible, so when the model can place
nothing better the result is that empty plan, with "(greedy plan kept)" in its status.
"""

from __future__ import annotations

import textwrap

from models.instance import Instance
from models.load import loads
from optimizer.cpsat.compile.data import compile_instance
from optimizer.cpsat.engine import solve
from optimizer.cpsat.model.objective import StageValues, evaluate
from optimizer.greedy.engine import solve as solve_greedy
from optimizer.options import SolveOptions
from optimizer.plan import Plan
from optimizer.verify import verify

HEADER = """\
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: t}
now: "2026-11-30T14:00:00Z"
"""

BASE = """\
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}, {name: predicates}]
"""
"""No quota plugin, no topology plugin, no evicting action: only the node and device rules."""


def instance(*parts: str, now: str | None = None) -> Instance:
    """The instance whose body is ``parts`` joined, each part dedented on its own (so parts
    written at different indentations line up)."""
    text = HEADER + "".join(textwrap.dedent(part).strip("\n") + "\n" for part in parts)
    if now is not None:
        text = text.replace('"2026-11-30T14:00:00Z"', f'"{now}"', 1)
    return loads(text)


def options(**changes: object) -> SolveOptions:
    defaults: dict[str, object] = {"time_limit": 20.0, "workers": 2}
    defaults.update(changes)
    return SolveOptions.of(**defaults)


def checked(inst: Instance, plan: Plan) -> Plan:
    violations = verify(inst, plan)
    assert violations == [], "\n".join(str(v) for v in violations)
    return plan


def cpsat(inst: Instance, **changes: object) -> Plan:
    """The CP-SAT model's own plan (floored by the empty plan), verified."""
    empty = Plan(instance=inst.name, engine="empty")
    return checked(inst, solve(inst, options(**changes), empty))


def greedy(inst: Instance) -> Plan:
    return solve_greedy(inst, 0)


def cpsat_over_greedy(inst: Instance, **changes: object) -> tuple[Plan, Plan]:
    """The greedy plan and the CP-SAT plan hinted and floored by it, both verified."""
    floor = checked(inst, greedy(inst))
    return floor, checked(inst, solve(inst, options(**changes), floor))


def stages(inst: Instance, plan: Plan) -> StageValues:
    return evaluate(compile_instance(inst), plan)


def pods_of(plan: Plan, job: str) -> list[str]:
    """Pod names of ``job`` (namespace default) that the plan places."""
    prefix = f"default/{job}-"
    return [p.pod for p in plan.placements if p.pod.startswith(prefix)]


def nodes_of(plan: Plan, job: str) -> list[str]:
    prefix = f"default/{job}-"
    return sorted(p.node for p in plan.placements if p.pod.startswith(prefix))


def devices_of(plan: Plan, job: str) -> list[list[str]]:
    """Per placed pod of ``job``, the device ids it gets, in placement order."""
    prefix = f"default/{job}-"
    return [[s.id for s in p.gpus or ()] for p in plan.placements if p.pod.startswith(prefix)]


def evicted(plan: Plan) -> list[tuple[str, str]]:
    return sorted((e.pod, e.reason) for e in plan.evictions)


QUEUES = """
    scheduler:
      actions: "enqueue, allocate"
      tiers:
      - plugins: [{name: priority}, {name: gang}]
      - plugins: [{name: predicates}, {name: capacity}]
    nodes:
    - {name: n1, allocatable: {cpu: "8", memory: 64Gi}}
    - {name: n2, allocatable: {cpu: "8", memory: 64Gi}}
    queues:
    - {name: qa, deserved: {cpu: "8"}}
    - {name: qb, deserved: {cpu: "8"}, priority: 10}
    jobs:
    - {name: a1, queue: qa, tasks: [{name: w, replicas: 1, resources: {cpu: "8", memory: 1Gi}}]}
    - {name: b1, queue: qb, tasks: [{name: w, replicas: 1, resources: {cpu: "8", memory: 1Gi}}]}
    - {name: b2, queue: qb, tasks: [{name: w, replicas: 1, resources: {cpu: "8", memory: 1Gi}}]}
    """
"""Two 8-CPU nodes; qa and qb deserve 8 CPUs each, qb has the higher queue priority and two
one-node jobs, qa one."""
