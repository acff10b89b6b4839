"""What inter-pod terms read of nodes and pods, for the node classes and the constraint
families alike: the compiled terms of a task, which label keys classes must agree on, and
what running pods on a node are to those terms (``classes.py`` keys nodes by it).

``kubernetes.io/hostname``, whose value differs on every node, is the *per-node key*: the
families of ``affinity.py`` handle required anti-affinity and the soft terms on it inside a
class, so only the rules that need each node as its own domain put it into the class key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from models.affinity import HOSTNAME, PodAffinityTerm
from models.instance import Instance
from models.selectors import LabelSelector
from models.workload import Task

from .records import Group, RunningPod

if TYPE_CHECKING:
    from .data import Compiled

Term = tuple[PodAffinityTerm, LabelSelector | None]


def compiled_terms(task: Task, kind: str) -> list[Term]:
    """Terms of ``kind`` (required_affinity, required_anti, preferred_affinity,
    preferred_anti) with the selectors merged for the task's labels."""
    rules = task.pod_affinity if kind.endswith("affinity") else task.pod_anti_affinity
    if rules is None:
        return []
    chosen = rules.required if kind.startswith("required") else rules.preferred
    return [(t, t.selector_for(task.labels)) for t in chosen]


def matches_pod(
    namespaces: Mapping[str, Mapping[str, str]],
    owner_ns: str,
    term: Term,
    namespace: str,
    labels: Mapping[str, str],
) -> bool:
    """The term (owned by a pod of ``owner_ns``) matches a pod of ``namespace`` with
    ``labels``; ``namespaces`` are the Namespace objects' labels."""
    t, sel = term
    return t.matches(sel, owner_ns, namespace, labels, namespaces.get(namespace))


def group_ns(g: Group) -> str:
    return g.job.namespace


def running_ns(r: RunningPod) -> str:
    return r.job.namespace


# -- keys and classes --------------------------------------------------------------------------


def _all_tasks(instance: Instance) -> list[Task]:
    """Tasks whose terms the model states: Volcano's, and other schedulers' running pods,
    whose required anti-affinity still rejects a new pod."""
    return [t for job in (*instance.jobs, *instance.foreign_jobs) for t in job.tasks]


def has_pod_terms(instance: Instance) -> bool:
    return any(t.pod_terms or t.preferred_node_affinity for t in _all_tasks(instance))


def per_node_keys(instance: Instance) -> frozenset[str]:
    """``kubernetes.io/hostname`` when no two nodes share its value (each node its own
    domain); every other key is class-level, so a zone of one node still aggregates."""
    values = [n.labels[HOSTNAME] for n in instance.nodes if HOSTNAME in n.labels]
    return frozenset({HOSTNAME}) if len(values) == len(set(values)) else frozenset()


def _task_keys(task: Task) -> tuple[set[str], set[str]]:
    """(keys that may stay per-node, keys that must be class-level) a task's terms read."""
    loose: set[str] = set()
    strict: set[str] = set()
    for kind in ("required_anti", "preferred_affinity", "preferred_anti"):
        loose.update(t.topology_key for t, _ in compiled_terms(task, kind))
    strict.update(t.topology_key for t, _ in compiled_terms(task, "required_affinity"))
    strict.update(c.topology_key for c in task.spread if c.hard)
    loose.update(c.topology_key for c in task.spread if not c.hard)
    for term in task.preferred_node_affinity:
        loose.update(r.key for r in term.expressions)
    return loose, strict


def class_label_keys(instance: Instance, tasks: Iterable[Task]) -> frozenset[str]:
    """Label keys the pending tasks' terms (and running pods' anti-affinity) read that the
    node classes must agree on: all but the per-node keys that may stay per node."""
    if not has_pod_terms(instance):
        return frozenset()
    per_node = per_node_keys(instance)
    keys: set[str] = set()
    for task in [*tasks, *_all_tasks(instance)]:
        loose, strict = _task_keys(task)
        keys |= strict | {k for k in loose if k not in per_node}
    return frozenset(keys)


def node_signature(pods: Sequence[RunningPod]) -> tuple[object, ...]:
    """What the running pods on a node are to inter-pod terms: their namespaces, labels and
    own terms (only worth keying by when some pod of the instance has terms)."""
    return tuple(
        sorted(
            (
                running_ns(r),
                tuple(sorted(r.task.labels.items())),
                repr(r.task.pod_affinity),
                repr(r.task.pod_anti_affinity),
            )
            for r in pods
        )
    )


def node_caps(data: Compiled) -> dict[int, int]:
    """Group → the most pods of it one node may hold (1 for a group rejecting itself on a
    per-node key): what a one-node topology domain (``domains.py``) and ``expand.py`` must
    honour inside a class. Worked out once per compiled instance."""
    cached: dict[int, int] | None = getattr(data, "_node_caps", None)
    if cached is None:
        cached = _node_caps(data)
        data._node_caps = cached  # type: ignore[attr-defined]
    return cached


def _node_caps(data: Compiled) -> dict[int, int]:
    caps: dict[int, int] = {}
    if not has_pod_terms(data.instance):
        return caps
    per_node = per_node_keys(data.instance)
    for g in data.groups:
        for term in compiled_terms(g.task, "required_anti"):
            if term[0].topology_key in per_node and matches_pod(
                data.instance.namespaces, group_ns(g), term, group_ns(g), g.task.labels
            ):
                caps[g.index] = 1
    return caps
