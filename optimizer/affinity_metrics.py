"""How many of the soft terms the placed pods carry a plan satisfies, judged on the cluster
after the plan (a metric: it reads only ``models`` and the plan).

For each pod the plan places, each of its soft terms counts once:

- a preferred node affinity term: its node matches the preference;
- a preferred pod affinity term: another pod matching the term is bound in the pod's domain;
- a preferred pod anti-affinity term: no other matching pod is bound there (a node without the
  key has no domain, so nothing is there);
- a ``ScheduleAnyway`` spread constraint: its node has the key and its domain holds at most
  ``maxSkew`` more matching pods than the least filled eligible domain (nodes with the key
  that pass the inclusion policies).
"""

from __future__ import annotations

from collections.abc import Mapping

from models.affinity import PodAffinityTerm, SpreadConstraint
from models.cluster import Node
from models.instance import Instance
from models.workload import Pod, Task

from .plan import Bound, Plan


def _task(instance: Instance, pod: Pod) -> Task:
    return instance.job_by_key[pod.job].task(pod.task)


class _After:
    """The bound pods after the plan, with their tasks and nodes."""

    def __init__(self, instance: Instance, bound: Mapping[str, Bound]) -> None:
        self.instance = instance
        self.pods = [
            (instance.pod_by_key[k], _task(instance, instance.pod_by_key[k]), b.node)
            for k, b in bound.items()
        ]

    def node(self, name: str) -> Node:
        return self.instance.node_by_name[name]

    def pod_term(self, pod: Pod, task: Task, node: Node, term: PodAffinityTerm) -> bool:
        """Another bound pod in ``node``'s domain of the term's key matches the term."""
        key = term.topology_key
        if key not in node.labels:
            return False
        sel = term.selector_for(task.labels)
        return any(
            other.key != pod.key
            and self.node(where).labels.get(key) == node.labels[key]
            and term.matches(
                sel,
                pod.namespace,
                other.namespace,
                other_task.labels,
                self.instance.namespaces.get(other.namespace),
            )
            for other, other_task, where in self.pods
        )

    def spread(self, pod: Pod, task: Task, node: Node, c: SpreadConstraint) -> bool:
        key = c.topology_key
        if key not in node.labels:
            return False
        sel = c.selector_for(task.labels)
        counts = {
            n.labels[key]: 0 for n in self.instance.nodes if key in n.labels and c.includes(task, n)
        }
        for other, other_task, where in self.pods:
            at = self.node(where)
            if (
                key in at.labels
                and at.labels[key] in counts
                and other.namespace == pod.namespace
                and c.counts(sel, other_task.labels)
                and c.includes(task, at)
            ):
                counts[at.labels[key]] += 1
        low = min(counts.values(), default=0)
        return counts.get(node.labels[key], 0) - low <= c.max_skew


def soft_terms(instance: Instance, plan: Plan, bound: Mapping[str, Bound]) -> tuple[int, int]:
    """(soft terms of the placed pods, how many of them hold)."""
    after: _After | None = None
    total = held = 0
    for p in plan.placements:
        pod = instance.pod_by_key[p.pod]
        task = _task(instance, pod)
        node = instance.node_by_name[p.node]
        checks: list[bool] = [
            t.matches(node.name, node.labels) for t in task.preferred_node_affinity
        ]
        pod_terms = [
            (rules.preferred, want)
            for rules, want in ((task.pod_affinity, True), (task.pod_anti_affinity, False))
            if rules is not None
        ]
        soft_spread = [c for c in task.spread if not c.hard]
        if pod_terms or soft_spread:
            after = after or _After(instance, bound)
            for terms, want in pod_terms:
                checks += [after.pod_term(pod, task, node, t) == want for t in terms]
            checks += [after.spread(pod, task, node, c) for c in soft_spread]
        total += len(checks)
        held += sum(checks)
    return total, held
