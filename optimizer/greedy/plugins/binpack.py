"""The ``binpack`` plugin: prefer the node that the task leaves fullest (spec §2.5).

Volcano's ``plugins/binpack/binpack.go:BinPackingScore`` as a NodeOrderFn. It reads Volcano's
own ``node.Used``, which holds the tasks allocated this session but not the pipelined ones
(spec §9 item 20), and the task's steady-state ``Resreq``. With the Helm default it runs next to
``nodeorder``, whose LeastAllocated pulls the other way (§9 item 15).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from models.resources import CPU, MEMORY

from ..api import NodeInfo, TaskInfo
from ..session import Plugin, Session

MAX_NODE_SCORE = 100
RESOURCES_ARG = "binpack.resources"


def _int_argument(arguments: Mapping[str, object], key: str, default: int) -> int:
    """Volcano's ``Arguments.GetInt``: only an integer replaces the default."""
    value = arguments.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return default


@dataclass(frozen=True)
class BinpackWeights:
    """``binpack.weight`` and the per-resource weights (``calculateWeight``).

    A negative per-resource weight is reset to 1, as Volcano does; a negative plugin weight is
    kept (it registers and turns the score around).
    """

    weight: int = 1
    resources: Mapping[str, int] = field(
        default_factory=lambda: MappingProxyType({CPU: 1, MEMORY: 1})
    )

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, object]) -> BinpackWeights:
        resources = {
            CPU: _int_argument(arguments, "binpack.cpu", 1),
            MEMORY: _int_argument(arguments, "binpack.memory", 1),
        }
        listed = arguments.get(RESOURCES_ARG)
        for name in (listed if isinstance(listed, str) else "").split(","):
            name = name.strip()
            if name:
                resources[name] = _int_argument(arguments, f"{RESOURCES_ARG}.{name}", 1)
        return cls(
            _int_argument(arguments, "binpack.weight", 1),
            MappingProxyType({k: (1 if v < 0 else v) for k, v in resources.items()}),
        )


class BinpackPlugin(Plugin):
    name = "binpack"

    def on_session_open(self, ssn: Session) -> None:
        self.weights = BinpackWeights.from_arguments(self.arguments)
        self._dims = ssn.dims
        self._terms: dict[str, tuple[tuple[int, int, int], ...]] = {}
        if self.weights.weight != 0:
            ssn.add("node_order", self.name, self.node_order)
            ssn.add("node_order_key", self.name, self._task_terms)

    def _task_terms(self, task: TaskInfo) -> tuple[tuple[int, int, int], ...]:
        """(dimension, request, weight) of each requested resource that has a weight."""
        terms = self._terms.get(task.uid)
        if terms is None:
            weights = self.weights.resources
            terms = tuple(
                (i, request, weights[name])
                for i, (name, request) in enumerate(zip(self._dims.names, task.resreq, strict=True))
                if request > 0 and name in weights
            )
            self._terms[task.uid] = terms
        return terms

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        """``(Σ (used + req)·w / allocatable) / Σ w × 100 × binpack.weight``.

        A resource the node does not offer adds 0 but its weight still counts; one that would
        overflow (``used + req > allocatable``) makes the whole score 0.
        """
        score = 0.0
        weight_sum = 0
        for i, request, weight in self._task_terms(task):
            capacity = node.allocatable[i]
            if capacity != 0 and weight != 0:
                used = request + node.used[i]
                if used > capacity:
                    return 0.0
                score += float(used) * float(weight) / float(capacity)
            weight_sum += weight
        if weight_sum > 0:
            score /= float(weight_sum)
        return score * float(MAX_NODE_SCORE * self.weights.weight)
