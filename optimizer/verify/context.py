"""What the rules read and what they return: the state after the plan, derived once, and
:class:`Violation`.

The state after the plan is ``plan.bound_pods(instance)``: running pods that are not evicted,
plus the placements. Pipelined pods hold nothing yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from models.cluster import Node
from models.errors import InputError, Problem
from models.instance import Instance
from models.resources import Resources
from models.workload import Job, Pod, Task

from ..plan import Bound, Eviction, Plan


@dataclass(frozen=True)
class Violation:
    """One broken rule: its DESIGN §6 name, the objects involved and what is wrong, in numbers."""

    rule: str
    objects: tuple[str, ...]
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.message}"


@dataclass(frozen=True)
class Member:
    """A pod with the job and task it belongs to."""

    pod: Pod
    job: Job
    task: Task


@dataclass(frozen=True)
class Context:
    """Everything the rules read, derived once from the instance and the plan."""

    instance: Instance
    plan: Plan

    @cached_property
    def members(self) -> Mapping[str, Member]:
        """Every pod, other schedulers' included (rules read what they hold)."""
        jobs = (*self.instance.jobs, *self.instance.foreign_jobs)
        return {p.key: Member(p, j, j.task(p.task)) for j in jobs for p in j.pods}

    @cached_property
    def bound(self) -> Mapping[str, Bound]:
        """Volcano's pods after the plan."""
        return self.plan.bound_pods(self.instance)

    @cached_property
    def held(self) -> Mapping[str, Bound]:
        """Every pod on a node after the plan: Volcano's, and the running pods of other
        schedulers, which hold their room whatever the plan says."""
        return self.plan.held_pods(self.instance)

    @cached_property
    def on_node(self) -> Mapping[str, list[Bound]]:
        out: dict[str, list[Bound]] = {}
        for b in self.held.values():
            out.setdefault(b.node, []).append(b)
        return out

    @cached_property
    def placed_nodes(self) -> list[str]:
        """Nodes that receive a new placement, in instance order."""
        targets = {p.node for p in self.plan.placements}
        return [n.name for n in self.instance.nodes if n.name in targets]

    @cached_property
    def placed_jobs(self) -> list[Job]:
        """Jobs with at least one new placement, in instance order."""
        keys = {self.members[p.pod].job.key for p in self.plan.placements}
        return [j for j in self.instance.jobs if j.key in keys]

    @cached_property
    def valid_evictions(self) -> list[Eviction]:
        """Evictions of a running pod from the node it runs on, each pod once (the others are
        ``running-kept`` violations and are not judged further)."""
        seen: set[str] = set()
        out = []
        for e in self.plan.evictions:
            pod = self.members[e.pod].pod
            if pod.running and pod.node == e.node and e.pod not in seen:
                seen.add(e.pod)
                out.append(e)
        return out

    def node(self, name: str) -> Node:
        return self.instance.node_by_name[name]

    def resreq(self, pod: str) -> Resources:
        return self.members[pod].task.resources

    def bound_of_job(self, job: Job) -> list[str]:
        return [p.key for p in job.pods if p.key in self.bound]


def check_references(instance: Instance, plan: Plan) -> None:
    problems: list[Problem] = []
    entries = [
        *((f"placements[{i}]", p.pod, p.node, p.gpus or ()) for i, p in enumerate(plan.placements)),
        *((f"evictions[{i}]", e.pod, e.node, ()) for i, e in enumerate(plan.evictions)),
        *((f"pipelined[{i}]", q.pod, q.node, ()) for i, q in enumerate(plan.pipelined)),
    ]
    for where, pod, node_name, gpus in entries:
        obj = f'Pod "{pod}"'
        if pod not in instance.pod_by_key:
            problems.append(Problem(instance.why_not_plannable(pod), obj, f"{where}.pod"))
        node = instance.node_by_name.get(node_name)
        if node is None:
            problems.append(Problem(f"no such node {node_name!r}", obj, f"{where}.node"))
            continue
        for d, share in enumerate(gpus):
            if node.device(share.id) is None:
                problems.append(
                    Problem(
                        f"node {node_name} has no GPU {share.id!r}", obj, f"{where}.gpus[{d}].id"
                    )
                )
    if problems:
        raise InputError(problems)
