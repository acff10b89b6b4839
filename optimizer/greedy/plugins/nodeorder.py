"""The ``nodeorder`` plugin: kube-scheduler's scores, weighted, as one BatchNodeOrderFn.

Volcano's ``plugins/nodeorder/nodeorder.go`` runs the vendored kube-scheduler Score plugins over
the candidate nodes of one task and adds ``score × weight`` per plugin (spec §2.5). The formulas
are kube-scheduler's, integer arithmetic included, because the floors decide ties that the
random tie-break then settles (spec §9 items 14, 15):

- LeastAllocated / MostAllocated read *non-zero* requests (100m / 200 MiB for a pod that sets
  none) of the pods in kube-scheduler's ``NodeInfo``, pipelined ones included (§9 item 20);
- BalancedAllocation reads actual requests and skips BestEffort pods;
- TaintToleration counts intolerable PreferNoSchedule taints and is the only one normalised
  over the candidate set (in reverse, so the node with the most such taints gets 0).

NodeAffinity, InterPodAffinity and PodTopologySpread score preferred node affinity, preferred
pod (anti-)affinity and ``ScheduleAnyway`` spread (``pod_scores.py``), normalised over the
candidates; they are built only when some pod carries such a term. ImageLocality (Volcano's
NodeOrderFn part) needs container images, which an instance does not carry, so it adds 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from math import sqrt

import numpy as np

from models.cluster import Taint
from models.resources import CPU, MEMORY, NVIDIA_GPU
from models.workload import Toleration

from ..api import NodeInfo, TaskInfo
from ..node_arrays import NodeArrays
from ..score_arrays import Versioned
from ..session import Plugin, Session
from .pod_scores import PodScores
from .predicates import KubeNodeView, tolerated

MAX_NODE_SCORE = 100
LEAST_WEIGHTS = (50, 50)
"""Volcano's LeastAllocated ``ScoringStrategy`` resources: cpu 50, memory 50."""
MOST_WEIGHTS = (1, 1)
"""Volcano's MostAllocated ``ScoringStrategy`` resources: cpu 1, memory 1."""
BALANCED_RESOURCES = (CPU, MEMORY, NVIDIA_GPU)
"""Volcano's BalancedAllocation resources."""
PREFER_NO_SCHEDULE = "PreferNoSchedule"


@dataclass(frozen=True)
class NodeOrderWeights:
    """The ``<score>.weight`` arguments (defaults of ``nodeorder.go:calculateWeight``).

    The image weight is read for completeness; with no images to score it multiplies 0.
    """

    least_requested: int = 1
    most_requested: int = 0
    balanced_resource: int = 1
    node_affinity: int = 2
    pod_affinity: int = 2
    taint_toleration: int = 3
    pod_topology_spread: int = 2
    image_locality: int = 1

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, object]) -> NodeOrderWeights:
        """Only integers are taken: Volcano's ``Arguments.GetInt`` ignores a string or a float
        (it logs a warning) and keeps the default."""
        keys = {
            "least_requested": "leastrequested.weight",
            "most_requested": "mostrequested.weight",
            "balanced_resource": "balancedresource.weight",
            "node_affinity": "nodeaffinity.weight",
            "pod_affinity": "podaffinity.weight",
            "taint_toleration": "tainttoleration.weight",
            "pod_topology_spread": "podtopologyspread.weight",
            "image_locality": "imagelocality.weight",
        }
        values = {
            attr: value
            for attr, key in keys.items()
            if isinstance(value := arguments.get(key), int) and not isinstance(value, bool)
        }
        return cls(**values)


def least_requested_score(requested: int, capacity: int) -> int:
    """kube-scheduler ``leastRequestedScore``: free share in 0..100, 0 when over capacity."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    """kube-scheduler ``mostRequestedScore``: used share in 0..100, capped at capacity because
    non-zero defaults can push a node's requests above it."""
    if capacity == 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def cpu_memory_average(
    scorer: Callable[[int, int], int],
    weights: tuple[int, int],
    cpu: tuple[int, int],
    memory: tuple[int, int],
) -> int:
    """``⌊Σ w·s / Σ w⌋`` over cpu and memory given as (requested, allocatable); a resource
    the node does not offer (allocatable 0) is left out of both sums."""
    total = weight_sum = 0
    for (requested, capacity), weight in ((cpu, weights[0]), (memory, weights[1])):
        if capacity:
            total += scorer(requested, capacity) * weight
            weight_sum += weight
    return total // weight_sum if weight_sum else 0


def balanced_score(fractions: Sequence[float]) -> int:
    """kube-scheduler ``balancedResourceScorer``: 100 × (1 − std of the used fractions).

    ``fractions`` are requested/allocatable of the resources the node offers, already capped
    at 1; two resources use ``|f1 − f2| / 2``, more the population standard deviation, in
    float64 as Go computes it, truncated to an integer.
    """
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    return int((1 - std) * float(MAX_NODE_SCORE))


def reverse_normalise(counts: Mapping[str, int]) -> dict[str, int]:
    """kube-scheduler ``DefaultNormalizeScore(100, reverse=true)`` with integer division:
    100 − ⌊100·c / max⌋, and 100 everywhere when no node has anything to count."""
    top = max(counts.values(), default=0)
    if top == 0:
        return dict.fromkeys(counts, MAX_NODE_SCORE)
    return {name: MAX_NODE_SCORE - MAX_NODE_SCORE * c // top for name, c in counts.items()}


class NodeOrderPlugin(Plugin):
    name = "nodeorder"

    def on_session_open(self, ssn: Session) -> None:
        self.weights = NodeOrderWeights.from_arguments(self.arguments)
        self.view = KubeNodeView.of(ssn)
        index = ssn.dims.index
        self._cpu = index[CPU]
        self._memory = index[MEMORY]
        self._balanced = [index[r] for r in BALANCED_RESOURCES if r in index]
        self._soft_taints: list[tuple[Taint, ...]] = [
            tuple(t for t in node.node.taints if t.effect == PREFER_NO_SCHEDULE)
            for node in ssn.node_list
        ]
        self._taint_counts: dict[tuple[Toleration, ...], list[int]] = {}
        self._resource_tables: dict[tuple[int, ...], dict[int, tuple[int, int]]] = {}
        """Resource-score key → node index → (node version, score)."""
        w = self.weights
        self.pod_scores = None
        if PodScores.needed(ssn) and (w.node_affinity or w.pod_affinity or w.pod_topology_spread):
            self.pod_scores = PodScores(ssn, w.node_affinity, w.pod_affinity, w.pod_topology_spread)
        self._resource_arrays: dict[tuple[int, ...], Versioned] = {}
        """Resource-score key → score per node with the version it holds for."""
        self._taint_arrays: dict[tuple[Toleration, ...], np.ndarray] = {}
        self._task_taints: dict[str, tuple[np.ndarray | None]] = {}
        """Task uid → its ``_taint_array`` (tolerations never change in a session)."""
        if (
            w.least_requested
            or w.most_requested
            or w.balanced_resource
            or w.taint_toleration
            or self.pod_scores is not None
        ):
            ssn.add("batch_node_order", self.name, self.batch_node_order)
            ssn.add("batch_node_order_array", self.name, self.batch_node_order_array)

    def batch_node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        w = self.weights
        if w.least_requested or w.most_requested or w.balanced_resource:
            values = self._resource_scores(task, nodes)
        else:
            values = [0] * len(nodes)
        taints = self._taint_scores(task, nodes) if w.taint_toleration else {}
        weight = w.taint_toleration
        if taints is None:
            # No node has an intolerable PreferNoSchedule taint: every node gets 100.
            scores = {
                n.name: v + MAX_NODE_SCORE * weight for n, v in zip(nodes, values, strict=True)
            }
        else:
            scores = {
                n.name: v + taints.get(n.name, 0) * weight
                for n, v in zip(nodes, values, strict=True)
            }
        if self.pod_scores is not None:
            self.pod_scores.add(task, nodes, scores)
        return {name: float(score) for name, score in scores.items()}

    def batch_node_order_array(
        self, task: TaskInfo, nodes: Sequence[NodeInfo], indices: np.ndarray, arrays: NodeArrays
    ) -> np.ndarray | None:
        """:meth:`batch_node_order` as an array over ``nodes``; None when pod scores are on
        (they are read node by node)."""
        if self.pod_scores is not None:
            return None
        w = self.weights
        if w.least_requested or w.most_requested or w.balanced_resource:
            cpu, memory = self.view.nonzero(task)
            pod = task.init_resreq
            key = (cpu, memory, tuple(pod[i] for i in self._balanced))
            table = self._resource_arrays.get(key)
            if table is None:
                table = self._resource_arrays[key] = Versioned(len(self.view.pods), np.int64)
            values = table.at(
                arrays,
                indices,
                lambda node: (
                    self._requested_score(cpu, memory, node) + self._balanced_score(pod, node)
                ),
            )
        else:
            values = np.zeros(len(nodes), dtype=np.int64)
        if w.taint_toleration:
            counts = self._taint_array(task)
            if counts is None:
                values = values + MAX_NODE_SCORE * w.taint_toleration
            else:
                mine = counts[indices]
                top = int(mine.max())
                if top == 0:
                    taints = np.full(len(nodes), MAX_NODE_SCORE, dtype=np.int64)
                else:
                    taints = MAX_NODE_SCORE - MAX_NODE_SCORE * mine // top
                values = values + taints * w.taint_toleration
        return values.astype(np.float64)

    def _taint_array(self, task: TaskInfo) -> np.ndarray | None:
        """The intolerable PreferNoSchedule taints per node as an array (None: none anywhere),
        as :meth:`_taint_scores` counts them."""
        known = self._task_taints.get(task.uid)
        if known is not None:
            return known[0]
        tolerations = tuple(
            t for t in task.task.tolerations if t.effect in ("", PREFER_NO_SCHEDULE)
        )
        found = self._taint_arrays.get(tolerations)
        if found is None:
            counts = self._taint_counts.get(tolerations)
            if counts is None:
                counts = self._taint_counts[tolerations] = [
                    sum(1 for taint in taints if not tolerated(tolerations, taint))
                    for taints in self._soft_taints
                ]
            found = self._taint_arrays[tolerations] = np.array(counts, dtype=np.int64)
        answer = found if found.any() else None
        self._task_taints[task.uid] = (answer,)
        return answer

    def _resource_scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """The weighted LeastAllocated, MostAllocated and BalancedAllocation score per node.

        They read the task's non-zero CPU and memory and its requests of the balanced
        resources, and the node's own pods, which change only with ``NodeInfo.version``: so
        each node's score is kept per (those task amounts, node version) and recomputed only
        for nodes that changed."""
        cpu, memory = self.view.nonzero(task)
        pod = task.init_resreq
        key = (cpu, memory, tuple(pod[i] for i in self._balanced))
        table = self._resource_tables.get(key)
        if table is None:
            table = self._resource_tables[key] = {}
        out = []
        for node in nodes:
            entry = table.get(node.index)
            if entry is None or entry[0] != node.version:
                score = self._requested_score(cpu, memory, node) + self._balanced_score(pod, node)
                entry = table[node.index] = (node.version, score)
            out.append(entry[1])
        return out

    def _requested_score(self, cpu: int, memory: int, node: NodeInfo) -> int:
        """NodeResourcesFit's LeastAllocated and MostAllocated on non-zero requests."""
        least, most = self.weights.least_requested, self.weights.most_requested
        i, allocatable = node.index, node.allocatable
        r_cpu = (self.view.nonzero_cpu[i] + cpu, allocatable[self._cpu])
        r_mem = (self.view.nonzero_memory[i] + memory, allocatable[self._memory])
        score = 0
        if least:
            score += cpu_memory_average(least_requested_score, LEAST_WEIGHTS, r_cpu, r_mem) * least
        if most:
            score += cpu_memory_average(most_requested_score, MOST_WEIGHTS, r_cpu, r_mem) * most
        return score

    def _balanced_score(self, pod: list[int], node: NodeInfo) -> int:
        """BalancedAllocation on actual requests. A BestEffort pod (no cpu, memory or GPU
        request) is skipped at PreScore and scores 0; a GPU the pod does not request is left
        out (kube-scheduler returns allocatable 0 for an unrequested extended resource)."""
        weight = self.weights.balanced_resource
        if not weight or all(pod[i] == 0 for i in self._balanced):
            return 0
        on_node, allocatable = self.view.requested[node.index], node.allocatable
        fractions = []
        for i in self._balanced:
            if (i in (self._cpu, self._memory) or pod[i] > 0) and allocatable[i]:
                # int / int is the correctly rounded quotient, as Go's float64 division of
                # two exactly representable values.
                fraction = (on_node[i] + pod[i]) / allocatable[i]
                fractions.append(fraction if fraction < 1.0 else 1.0)
        return balanced_score(fractions) * weight

    def _taint_scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, int] | None:
        """TaintToleration: intolerable PreferNoSchedule taints per node, reverse-normalised
        over ``nodes``; None when no node of the cluster has one, which normalises to 100
        everywhere. Taints never change in a session, so the counts are computed once per
        distinct set of tolerations (only those without an effect or with PreferNoSchedule
        matter here)."""
        tolerations = tuple(
            t for t in task.task.tolerations if t.effect in ("", PREFER_NO_SCHEDULE)
        )
        counts = self._taint_counts.get(tolerations)
        if counts is None:
            counts = [
                sum(1 for taint in taints if not tolerated(tolerations, taint))
                for taints in self._soft_taints
            ]
            self._taint_counts[tolerations] = counts
        if not any(counts):
            return None
        return reverse_normalise({node.name: counts[node.index] for node in nodes})
