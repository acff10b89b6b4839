"""The cluster while running pods are laid out on it, and its nodeGroups and HyperNodes."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from models.vocabulary import REVOCABLE_ZONE

from .jobs import DrawnJob, PodSpec
from .params import (
    CENTI,
    NODE_PODS,
    PRODUCT_LABEL,
    RACK_LABEL,
    SLICES,
    ZONE,
)
from .shapes import MODELS, GpuModel, Shape


class NodeRoom:
    """A node's free resources while running pods are laid out, with undo for gangs that do
    not fit as a whole."""

    __slots__ = (
        "cpu",
        "free_cores",
        "free_memory",
        "memory_gi",
        "model",
        "name",
        "pods",
        "revocable",
        "slices",
    )

    def __init__(self, name: str, model: GpuModel, revocable: bool) -> None:
        self.name = name
        self.model = model
        self.revocable = revocable
        self.cpu = model.cpu
        self.memory_gi = model.memory_gi
        self.pods = NODE_PODS
        self.free_memory = [model.memory] * model.count
        self.free_cores = [CENTI] * model.count
        self.slices = [SLICES] * model.count

    def admits(self, job: DrawnJob) -> bool:
        """Static fit: GPU type, selector and TDM (only revocable pods on revocable nodes)."""
        if job.pod.gpus > self.model.count:
            return False
        if job.product and job.product != self.model.product:
            return False
        return job.revocable or not self.revocable

    def take(self, pod: PodSpec) -> list[dict[str, Any]] | None:
        """Bind one pod here if it fits; returns the devices it holds."""
        if self.cpu < pod.cpu or self.memory_gi < pod.memory_gi or self.pods < 1:
            return None
        devices = self._devices(pod)
        if devices is None:
            return None
        self.cpu -= pod.cpu
        self.memory_gi -= pod.memory_gi
        self.pods -= 1
        held = []
        for d in devices:
            memory = self.model.memory if pod.whole else pod.memory
            self.free_memory[d] -= memory
            self.free_cores[d] -= pod.cores
            self.slices[d] -= 1
            held.append({"id": f"GPU-{self.name}-{d}", "memory": memory, "cores": pod.cores})
        return held

    def give_back(self, pod: PodSpec, held: Sequence[Mapping[str, Any]]) -> None:
        self.cpu += pod.cpu
        self.memory_gi += pod.memory_gi
        self.pods += 1
        for share in held:
            d = int(str(share["id"]).rsplit("-", 1)[1])
            self.free_memory[d] += share["memory"]
            self.free_cores[d] += share["cores"]
            self.slices[d] += 1

    def _devices(self, pod: PodSpec) -> list[int] | None:
        """Whole GPUs take untouched devices, lowest index first; a share takes the fullest
        device it fits on (HAMi binpack)."""
        count = self.model.count
        if pod.whole:
            free = [
                d for d in range(count) if self.free_cores[d] == CENTI and self.slices[d] == SLICES
            ]
            return free[: pod.gpus] if len(free) >= pod.gpus else None
        fits = [
            d
            for d in range(count)
            if self.free_memory[d] >= pod.memory
            and self.free_cores[d] >= pod.cores
            and self.slices[d] > 0
        ]
        return [min(fits, key=lambda d: (self.free_cores[d], d))] if fits else None


@dataclass
class ClusterRoom:
    """The nodes, by rack and by tier-2 group, while the running workload is laid out."""

    shape: Shape
    nodes: list[NodeRoom]
    racks: list[list[NodeRoom]]
    groups: list[list[NodeRoom]]
    rack_models: list[GpuModel]
    revocable_racks: list[int]

    @property
    def capacity_centi(self) -> int:
        return CENTI * sum(n.model.count for n in self.nodes)

    def domains(self, job: DrawnJob, rng: random.Random) -> Iterator[list[NodeRoom]]:
        """Where a running job may have been placed, tightest first (as Volcano's topology
        plugin would have done): racks, then groups, then, unless bound, anywhere."""
        mode, tier = job.topology or ("", 0)
        if mode:
            yield from _shuffled(self.racks, rng)
            if tier >= 2:
                yield from _shuffled(self.groups, rng)
            if mode == "hard":
                return
        start = rng.randrange(len(self.nodes))
        yield self.nodes[start:] + self.nodes[:start]

    def place(self, job: DrawnJob, rng: random.Random) -> bool:
        """Lay all the job's pods out in one domain, first fit, or none of them."""
        for domain in self.domains(job, rng):
            nodes = [n for n in domain if n.admits(job)]
            done: list[tuple[NodeRoom, list[dict[str, Any]]]] = []
            at = 0
            while len(done) < job.replicas and at < len(nodes):
                held = nodes[at].take(job.pod)
                if held is None:
                    at += 1
                else:
                    done.append((nodes[at], held))
            if len(done) == job.replicas:
                job.running = [
                    {"index": i, "node": node.name, "gpus": held}
                    for i, (node, held) in enumerate(done)
                ]
                return True
            for node, held in done:
                node.give_back(job.pod, held)
        return False

    def largest(self, tier: int, product: str, gpus: int) -> int:
        """The most non-revocable nodes of ``product`` (any with ≥ ``gpus`` GPUs when empty)
        in one domain of ``tier`` (1 rack, 2 group, 0 the cluster)."""
        domains = {1: self.racks, 2: self.groups}.get(tier, [self.nodes])
        return max(
            sum(
                1
                for n in d
                if not n.revocable
                and n.model.count >= gpus
                and (not product or n.model.product == product)
            )
            for d in domains
        )


def _shuffled(items: Sequence[list[NodeRoom]], rng: random.Random) -> list[list[NodeRoom]]:
    out = list(items)
    rng.shuffle(out)
    return out


def _rack_models(racks: int, rng: random.Random) -> list[GpuModel]:
    """Each model gets its share of the racks (at least one each), in random rack order."""
    counts = [max(1, round(m.share * racks)) for m in MODELS[1:]]
    counts = [max(0, racks - sum(counts)), *counts]
    models = [m for m, c in zip(MODELS, counts, strict=True) for _ in range(c)][:racks]
    rng.shuffle(models)
    return models


def build_cluster(shape: Shape, rng: random.Random) -> ClusterRoom:
    sizes = shape.rack_sizes
    models = _rack_models(len(sizes), rng)
    revocable = sorted(rng.sample(range(len(sizes)), max(1, len(sizes) // 16)))
    nodes: list[NodeRoom] = []
    racks: list[list[NodeRoom]] = []
    for r, size in enumerate(sizes):
        width = max(3, len(str(size - 1)))  # as models.load expands nodeGroups names
        rack = [
            NodeRoom(f"{_rack_name(shape, r)}-node-{i:0{width}d}", models[r], r in revocable)
            for i in range(size)
        ]
        racks.append(rack)
        nodes.extend(rack)
    groups = [
        [n for rack in racks[g : g + shape.racks_per_group] for n in rack]
        for g in range(0, len(racks), shape.racks_per_group)
    ]
    return ClusterRoom(shape, nodes, racks, groups, models, revocable)


def _rack_name(shape: Shape, r: int) -> str:
    width = max(2, len(str(len(shape.rack_sizes))))
    return f"rack-{r + 1:0{width}d}"


def _group_name(shape: Shape, g: int) -> str:
    return f"{shape.group_tier}-{g + 1}"


def node_groups(cluster: ClusterRoom) -> list[dict[str, Any]]:
    """One nodeGroup per rack: identical nodes, so the file stays short."""
    out = []
    for r, rack in enumerate(cluster.racks):
        model = cluster.rack_models[r]
        labels = {RACK_LABEL: _rack_name(cluster.shape, r), PRODUCT_LABEL: model.product}
        if r in cluster.revocable_racks:
            labels[REVOCABLE_ZONE] = ZONE
        out.append(
            {
                "namePrefix": f"{_rack_name(cluster.shape, r)}-node-",
                "count": len(rack),
                "labels": labels,
                "allocatable": {
                    "cpu": str(model.cpu),
                    "memory": f"{model.memory_gi}Gi",
                    "pods": NODE_PODS,
                },
                "gpus": {"count": model.count, "type": model.type, "memory": model.memory},
            }
        )
    return out


def hypernodes(cluster: ClusterRoom) -> list[dict[str, Any]]:
    """Racks select their nodes by label (even racks) or by name pattern (odd racks), so both
    selector kinds are exercised; groups and the top tier name their members exactly."""
    shape = cluster.shape
    out = []
    for r in range(len(cluster.racks)):
        rack = _rack_name(shape, r)
        if r % 2 == 0:
            selector: dict[str, Any] = {"labelMatch": {"matchLabels": {RACK_LABEL: rack}}}
        else:
            selector = {"regexMatch": {"pattern": f"^{rack}-node-[0-9]+$"}}
        members = [{"type": "Node", "selector": selector}]
        out.append({"name": rack, "tier": 1, "tierName": "rack", "members": members})
    per = shape.racks_per_group
    for g in range(len(cluster.groups)):
        members = [
            {"type": "HyperNode", "selector": {"exactMatch": {"name": _rack_name(shape, r)}}}
            for r in range(g * per, min((g + 1) * per, len(cluster.racks)))
        ]
        name = _group_name(shape, g)
        out.append({"name": name, "tier": 2, "tierName": shape.group_tier, "members": members})
    if shape.top_tier:
        members = [
            {"type": "HyperNode", "selector": {"exactMatch": {"name": _group_name(shape, g)}}}
            for g in range(len(cluster.groups))
        ]
        out.append(
            {
                "name": f"{shape.top_tier}-1",
                "tier": 3,
                "tierName": shape.top_tier,
                "members": members,
            }
        )
    return out
