"""Named cluster shapes (S, M, L, XL, custom) and the GPU node models racks are built of."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuModel:
    """One node type: every node of a rack has the same GPUs."""

    type: str
    product: str
    count: int
    memory: int
    cpu: int
    memory_gi: int
    share: float
    """Expected share of the racks."""


MODELS = (
    GpuModel("NVIDIA-A100-SXM4-80GB", "A100-SXM4-80GB", 8, 81920, 128, 1024, 0.50),
    GpuModel("NVIDIA-H100-80GB-HBM3", "H100-80GB-HBM3", 8, 81920, 192, 2048, 0.35),
    GpuModel("NVIDIA-L40S", "L40S", 4, 49152, 64, 512, 0.15),
)


@dataclass(frozen=True)
class Shape:
    """A cluster layout: ``nodes`` in racks of ``nodes_per_rack`` (the last one may be
    smaller), racks grouped ``racks_per_group`` at a time under tier-2 HyperNodes, and
    optionally one tier-3 HyperNode over all groups."""

    name: str
    nodes: int
    nodes_per_rack: int
    racks_per_group: int
    group_tier: str = "spine"
    top_tier: str = ""

    @property
    def rack_sizes(self) -> list[int]:
        full, rest = divmod(self.nodes, self.nodes_per_rack)
        return [self.nodes_per_rack] * full + ([rest] if rest else [])


SHAPES: Mapping[str, Shape] = {
    "S": Shape("S", 32, 8, 2),
    "M": Shape("M", 594, 18, 11),
    "L": Shape("L", 1280, 64, 10, group_tier="block"),
    "XL": Shape("XL", 5000, 100, 10, top_tier="super-spine"),
}
CUSTOM = "custom"


def custom_shape(nodes: int) -> Shape:
    """Racks of 20 nodes (fewer for tiny clusters), about √racks racks per spine."""
    if nodes < 1:
        raise ValueError(f"nodes must be ≥ 1, got {nodes}")
    per_rack = min(20, max(2, nodes // 4))
    racks = math.ceil(nodes / per_rack)
    return Shape(CUSTOM, nodes, per_rack, max(1, round(math.sqrt(racks))))


def shape_of(name: str, nodes: int | None = None) -> Shape:
    """The named shape; ``custom`` needs ``nodes``."""
    if name == CUSTOM:
        if nodes is None:
            raise ValueError("shape custom needs a node count")
        return custom_shape(nodes)
    if name not in SHAPES:
        raise ValueError(f"unknown shape {name!r} (choose from {', '.join([*SHAPES, CUSTOM])})")
    if nodes is not None:
        raise ValueError(f"a node count is only taken by shape custom, not {name}")
    return SHAPES[name]
