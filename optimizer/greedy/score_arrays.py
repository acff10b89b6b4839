"""Node scores of a scheduling step as arrays over the candidate nodes.

``prioritizeNodes`` adds, for every feasible node, the NodeOrderFns' scores and the
BatchNodeOrderFns' scores, and takes the best. Scores of a node depend on the task (through
what the plugins read of it, their keys) and on the node's own state, which its version
names: so each key keeps one value per node with the version it holds for
(:class:`Versioned`), and a step reads the values of its candidates at once, computing only
those of nodes whose version changed. A dry run that is discarded gives its nodes their
earlier versions back, and their values hold again.

The values are computed by the plugins' own per-node functions; only reading and adding them
up is array work, so the sums are the same floating-point sums, in the same order, as the
per-node path's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .api import NodeInfo
from .node_arrays import NodeArrays


class Versioned:
    """One value per node index, each with the node version it was computed for."""

    def __init__(self, count: int, dtype: type) -> None:
        self.values = np.zeros(count, dtype=dtype)
        self.versions = np.full(count, -1, dtype=np.int64)

    def at(
        self,
        arrays: NodeArrays,
        indices: np.ndarray,
        compute: Callable[[NodeInfo], float],
    ) -> np.ndarray:
        """The values of the nodes at ``indices``, computing those not current."""
        values, versions = self.values, self.versions
        stale = indices[versions[indices] != arrays.version[indices]]
        if len(stale):
            nodes = arrays.nodes
            for i in stale.tolist():
                node = nodes[i]
                values[i] = compute(node)
                versions[i] = node.version
        return values[indices]


def positions(nodes: Sequence[NodeInfo]) -> np.ndarray:
    return np.fromiter((node.index for node in nodes), dtype=np.intp, count=len(nodes))
