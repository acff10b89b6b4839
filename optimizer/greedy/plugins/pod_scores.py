"""The ``nodeorder`` plugin's NodeAffinity, InterPodAffinity and PodTopologySpread scores.

Each is a kube-scheduler Score plugin with its PreScore and NormalizeScore, run by Volcano's
``BatchNodeOrderFn`` afresh for every task over exactly the candidate list it is given
(``spec/k8s-affinity-spread.md`` §6.3): a PreScore ``Skip`` adds nothing to any node, otherwise
each candidate gets ``weight × normalised score``. Normalisation over the candidates is what
makes the same pod score a node differently in two gradients.

- NodeAffinity (§5): Σ weights of the matching preferred terms, ``100·raw // max``.
- InterPodAffinity (§3): the session's pods, with ``interpod.score_table``.
- PodTopologySpread (§4.4): ``ScheduleAnyway`` constraints, with ``spread.scores``.
"""

from __future__ import annotations

from collections.abc import Sequence

from models.affinity import preferred_node_score

from ..api import NodeInfo, TaskInfo
from ..session import Session
from . import interpod, spread
from .node_pods import NodePods
from .predicates import spread_included


def node_affinity_scores(task: TaskInfo, candidates: Sequence[NodeInfo]) -> dict[str, int] | None:
    """None (Skip) when the pod has no preferred node affinity terms."""
    terms = task.task.preferred_node_affinity
    if not terms:
        return None
    raw = {n.name: preferred_node_score(terms, n.name, n.node.labels) for n in candidates}
    top = max([0, *raw.values()])
    if top == 0:
        return raw
    return {name: 100 * s // top for name, s in raw.items()}


class PodScores:
    """The three scores, weighted; built only when some pod carries a term they read."""

    def __init__(self, ssn: Session, node_affinity: int, pod_affinity: int, spread_w: int) -> None:
        self.ssn = ssn
        self.weights = (node_affinity, pod_affinity, spread_w)
        self.pods = NodePods(ssn)
        self.book = interpod.TermBook(ssn.instance.namespaces)
        self.spread_book = spread.SpreadBook()

    @staticmethod
    def needed(ssn: Session) -> bool:
        return any(
            t.pod_terms or t.preferred_node_affinity for job in ssn.instance.jobs for t in job.tasks
        )

    def add(self, task: TaskInfo, candidates: Sequence[NodeInfo], scores: dict[str, int]) -> None:
        node_w, pod_w, spread_w = self.weights
        nodes = self.ssn.node_list
        parts = []
        if node_w:
            parts.append((node_w, node_affinity_scores(task, candidates)))
        if pod_w:
            table = interpod.score_table(task, nodes, self.pods, self.book)
            if table is not None:
                parts.append((pod_w, interpod.normalised_scores(table, candidates)))
        if spread_w:
            found = spread.scores(
                task, nodes, self.pods, candidates, spread_included, self.spread_book
            )
            parts.append((spread_w, found))
        for weight, part in parts:
            for name, score in (part or {}).items():
                scores[name] += score * weight
