"""Synthetic instances for benchmarks and tests (DESIGN §8): a named cluster shape, a seeded
workload mix and a contention knob.

Real snapshots are scarce and cannot be shared, so the engines are measured on clusters built
to look like the ones vcopt is for: racks of identical GPU nodes under spines or blocks, a
department/team queue tree on hierarchical capacity, a TDM revocable zone, HAMi GPU sharing, and
a mix of topology-bound gangs, single pods, fractional-GPU pods and revocable batch work, with
about 30 % of the GPUs already busy. ``load`` sets how much work there is: running plus pending
GPU requests as a fraction of all GPUs, so 1.3 means 30 % more demand than the cluster holds and
the engines must choose.

Every choice comes from one ``random.Random(seed)``, drawn in a fixed order, so a seed names the
same instance on every machine. Demand is counted in GPU-equivalents (a whole GPU is 1; a
fractional pod counts its ``gpucores`` share, which the fractions below keep at or above its
memory share even on the 48 GB devices).
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from models.gpu import HAMI_CORES, HAMI_COUNT, HAMI_MEMORY
from models.resources import NVIDIA_GPU
from models.vocabulary import API_VERSION, PREEMPTABLE, REVOCABLE_ZONE, helm_default_scheduler

from .atomic import write_atomic

NOW = "2026-11-30T14:00:00Z"
"""Inside the zone's window: revocable nodes are lendable at this instant."""
ZONE = "rz1"
WINDOW = "08:00-21:00"
RACK_LABEL = "topology.kubernetes.io/rack"
PRODUCT_LABEL = "nvidia.com/gpu.product"
RUNNING_SHARE = 0.3
"""Share of the GPUs busy before the cycle, as in a cluster that is never empty."""
MAX_GANG = 64
CENTI = 100
"""Demand is kept in hundredths of a GPU so that sums are exact."""
CPU_PER_GPU = 12
MEMORY_GI_PER_GPU = 96
FRACTIONAL_CPU = 4
FRACTIONAL_MEMORY_GI = 16
FRACTIONS = ((8000, 20), (10000, 25), (16000, 40), (20000, 50))
"""(gpumem MiB, gpucores): the cores share is ≥ the memory share on 48 and 80 GB devices."""
NODE_PODS = 110
SLICES = 10
"""HAMi's default time-slices per device."""
RUNNING_FAILURES = 200
"""Running jobs that may fail to find room before the cluster counts as full."""

SCHEDULER: dict[str, Any] = {
    "actions": "enqueue, allocate, backfill, reclaim",
    "tiers": [
        helm_default_scheduler()["tiers"][0],
        {
            "plugins": [
                {"name": "drf", "enablePreemptable": False},
                {"name": "predicates"},
                {
                    "name": "capacity",
                    "enableHierarchy": True,
                    "arguments": {"ancestorReclaimLevel": 1},
                },
                {"name": "nodeorder"},
                {"name": "binpack"},
                {
                    "name": "tdm",
                    "arguments": {f"tdm.revocable-zone.{ZONE}": WINDOW, "tdm.evict.period": "1m"},
                },
                {
                    "name": "deviceshare",
                    "arguments": {
                        "deviceshare.VGPUEnable": True,
                        "deviceshare.SchedulePolicy": "binpack",
                    },
                },
                {"name": "network-topology-aware"},
            ]
        },
    ],
}
"""Volcano's Helm-chart first tier (priority, gang, conformance), then hierarchical capacity,
TDM, GPU sharing and network topology: every feature vcopt models."""
PRIORITY_CLASSES = (
    {"name": "high", "value": 1000},
    {"name": "normal", "value": 100},
    {"name": "low", "value": 10},
)
DEPARTMENTS = (
    ("research", ("llm", "vision", "speech")),
    ("product", ("search", "ads", "recsys")),
    ("platform", ("infra", "eval", "batch")),
)


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


@dataclass(frozen=True)
class PodSpec:
    """What one pod asks for: ``gpus`` devices, each whole (``memory`` 0, ``cores`` 100) or a
    share of ``memory`` MiB and ``cores`` percent."""

    gpus: int
    memory: int = 0
    cores: int = 100

    @property
    def whole(self) -> bool:
        return self.memory == 0

    @property
    def centi(self) -> int:
        return self.gpus * self.cores

    @property
    def cpu(self) -> int:
        return CPU_PER_GPU * self.gpus if self.whole else FRACTIONAL_CPU

    @property
    def memory_gi(self) -> int:
        return MEMORY_GI_PER_GPU * self.gpus if self.whole else FRACTIONAL_MEMORY_GI

    def resources(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "cpu": str(self.cpu),
            "memory": f"{self.memory_gi}Gi",
            HAMI_COUNT: self.gpus,
        }
        if not self.whole:
            out[HAMI_MEMORY] = self.memory
            out[HAMI_CORES] = self.cores
        return out


@dataclass
class _Job:
    """One job as drawn; mutable, because the budget trims it and running jobs get their
    placements after the draw."""

    name: str
    queue: str
    task: str
    pod: PodSpec
    replicas: int
    min_available: int
    priority: str
    topology: tuple[str, int] | None = None
    product: str = ""
    revocable: bool = False
    preemptable: bool = False
    duration: str = ""
    running: list[dict[str, Any]] = field(default_factory=list)

    @property
    def centi(self) -> int:
        return self.replicas * self.pod.centi

    def shrink_to(self, centi: int) -> None:
        """Fewer replicas, so that the job asks for about ``centi`` (at least one pod)."""
        self.replicas = max(1, min(self.replicas, math.ceil(centi / self.pod.centi)))
        self.min_available = min(self.min_available, self.replicas)

    def document(self) -> dict[str, Any]:
        task: dict[str, Any] = {
            "name": self.task,
            "replicas": self.replicas,
            "resources": self.pod.resources(),
        }
        if self.product:
            task["nodeSelector"] = {PRODUCT_LABEL: self.product}
        if self.revocable:
            task["annotations"] = {REVOCABLE_ZONE: "*", PREEMPTABLE: "true"}
        doc: dict[str, Any] = {
            "name": self.name,
            "namespace": self.queue,
            "queue": self.queue,
            "priorityClassName": self.priority,
            "minAvailable": self.min_available,
        }
        if self.topology is not None:
            mode, tier = self.topology
            doc["networkTopology"] = {"mode": mode, "highestTierAllowed": tier}
        if self.preemptable:
            doc["annotations"] = {PREEMPTABLE: "true"}
        if self.duration:
            doc["duration"] = self.duration
        doc["tasks"] = [task]
        if self.running:
            doc["running"] = self.running
        return doc


# -- the cluster -----------------------------------------------------------------------------


class _Node:
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

    def admits(self, job: _Job) -> bool:
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
class _Cluster:
    """The nodes, by rack and by tier-2 group, while the running workload is laid out."""

    shape: Shape
    nodes: list[_Node]
    racks: list[list[_Node]]
    groups: list[list[_Node]]
    rack_models: list[GpuModel]
    revocable_racks: list[int]

    @property
    def capacity_centi(self) -> int:
        return CENTI * sum(n.model.count for n in self.nodes)

    def domains(self, job: _Job, rng: random.Random) -> Iterator[list[_Node]]:
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

    def place(self, job: _Job, rng: random.Random) -> bool:
        """Lay all the job's pods out in one domain, first fit, or none of them."""
        for domain in self.domains(job, rng):
            nodes = [n for n in domain if n.admits(job)]
            done: list[tuple[_Node, list[dict[str, Any]]]] = []
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


def _shuffled(items: Sequence[list[_Node]], rng: random.Random) -> list[list[_Node]]:
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


def _build_cluster(shape: Shape, rng: random.Random) -> _Cluster:
    sizes = shape.rack_sizes
    models = _rack_models(len(sizes), rng)
    revocable = sorted(rng.sample(range(len(sizes)), max(1, len(sizes) // 16)))
    nodes: list[_Node] = []
    racks: list[list[_Node]] = []
    for r, size in enumerate(sizes):
        width = max(3, len(str(size - 1)))  # as models.load expands nodeGroups names
        rack = [
            _Node(f"{_rack_name(shape, r)}-node-{i:0{width}d}", models[r], r in revocable)
            for i in range(size)
        ]
        racks.append(rack)
        nodes.extend(rack)
    groups = [
        [n for rack in racks[g : g + shape.racks_per_group] for n in rack]
        for g in range(0, len(racks), shape.racks_per_group)
    ]
    return _Cluster(shape, nodes, racks, groups, models, revocable)


def _rack_name(shape: Shape, r: int) -> str:
    width = max(2, len(str(len(shape.rack_sizes))))
    return f"rack-{r + 1:0{width}d}"


def _group_name(shape: Shape, g: int) -> str:
    return f"{shape.group_tier}-{g + 1}"


def _node_groups(cluster: _Cluster) -> list[dict[str, Any]]:
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


def _hypernodes(cluster: _Cluster) -> list[dict[str, Any]]:
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


# -- queues ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Team:
    name: str
    deserved: int


def _split(total: int, parts: int, rng: random.Random) -> list[int]:
    """``total`` in ``parts`` uneven whole shares whose sum is at most ``total``."""
    weights = [rng.uniform(1.0, 3.0) for _ in range(parts)]
    return [math.floor(total * w / sum(weights)) for w in weights]


def _queues(gpus: int, rng: random.Random) -> tuple[list[dict[str, Any]], list[_Team]]:
    """root → 2–3 departments → 2–3 teams, on ``nvidia.com/gpu``.

    The numbers satisfy the webhook by construction: children's deserved are floors of shares of
    the parent's, guarantees are floors of a quarter of deserved (so siblings' guarantees sum
    within the parent's quarter), and each capability is at least its deserved and at most the
    department's.
    """
    departments = DEPARTMENTS[: rng.randint(2, 3)]
    queues: list[dict[str, Any]] = [{"name": "root"}]
    teams = []
    for (department, names), deserved in zip(
        departments, _split(gpus, len(departments), rng), strict=True
    ):
        capability = min(gpus, round(deserved * rng.uniform(1.3, 1.8)))
        queues.append(_queue(department, "root", deserved, capability, deserved // 4))
        members = names[: rng.randint(2, 3)]
        for team, share in zip(members, _split(deserved, len(members), rng), strict=True):
            cap = min(capability, round(share * rng.uniform(1.5, 2.5)))
            guarantee = share // 4 if rng.random() < 0.5 else 0
            queues.append(_queue(f"{department}-{team}", department, share, cap, guarantee))
            teams.append(_Team(f"{department}-{team}", share))
    return queues, teams


def _queue(
    name: str, parent: str, deserved: int, capability: int, guarantee: int
) -> dict[str, Any]:
    q: dict[str, Any] = {
        "name": name,
        "parent": parent,
        "deserved": {NVIDIA_GPU: deserved},
        "capability": {NVIDIA_GPU: capability},
    }
    if guarantee:
        q["guarantee"] = {NVIDIA_GPU: guarantee}
    return q


# -- the workload ----------------------------------------------------------------------------

KINDS = ("hard", "soft", "gang", "single", "fractional", "revocable")
KIND_WEIGHTS = (0.12, 0.12, 0.10, 0.30, 0.22, 0.14)
SMALL_KINDS = ("single", "fractional")
"""Drawn (with single pods of one GPU) when a pod-count target needs smaller pods."""
TASK_NAMES = {
    "hard": "worker",
    "soft": "worker",
    "gang": "worker",
    "single": "main",
    "fractional": "replica",
    "revocable": "worker",
}


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    """Small sizes are common and large ones rare, as in real gang-size mixes."""
    if high <= low:
        return low
    return min(high, max(low, round(2 ** rng.uniform(math.log2(low), math.log2(high)))))


class _Mix:
    """Draws jobs of the workload mix, sized so that each could fit the cluster."""

    def __init__(self, cluster: _Cluster, teams: Sequence[_Team], rng: random.Random) -> None:
        self.cluster = cluster
        self.teams = list(teams)
        self.team_weights = [max(1, t.deserved) for t in teams]
        self.rng = rng
        self.count = 0
        self.products = sorted({m.product for m in cluster.rack_models if m.count == 8})

    def draw(self, small: bool = False) -> _Job:
        rng = self.rng
        kind = rng.choice(SMALL_KINDS) if small else rng.choices(KINDS, KIND_WEIGHTS)[0]
        self.count += 1
        team = rng.choices(self.teams, self.team_weights)[0].name
        job = _Job(f"{kind}-{self.count:05d}", team, TASK_NAMES[kind], PodSpec(1), 1, 1, "normal")
        getattr(self, f"_{kind}")(job, small)
        return job

    def _hard(self, job: _Job, small: bool) -> None:
        rng = self.rng
        tier = 1 if rng.random() < 0.6 else 2
        product = rng.choice(self.products) if rng.random() < 0.5 else ""
        most = min(MAX_GANG, self.cluster.largest(tier, product, 8) // 2)
        if most < 2:  # no domain of the tier could hold even two pods: make it a soft gang
            job.name = f"soft-{self.count:05d}"
            self._soft(job, small)
            return
        job.pod = PodSpec(8)
        job.replicas = job.min_available = _log_uniform(rng, 2, most)
        job.topology = ("hard", tier)
        job.product = product
        job.priority = "high" if rng.random() < 0.4 else "normal"

    def _soft(self, job: _Job, small: bool) -> None:
        rng = self.rng
        gpus = 8 if rng.random() < 0.6 else 4
        most = min(MAX_GANG, self.cluster.largest(0, "", gpus) // 4)
        job.pod = PodSpec(gpus)
        job.replicas = job.min_available = _log_uniform(rng, 2, max(2, most))
        job.topology = ("soft", 1 if rng.random() < 0.5 else 2)
        job.priority = "high" if rng.random() < 0.3 else "normal"

    def _gang(self, job: _Job, small: bool) -> None:
        job.pod = PodSpec(4)
        job.replicas = job.min_available = self.rng.randint(2, 8)

    def _single(self, job: _Job, small: bool) -> None:
        rng = self.rng
        gpus = 1 if small else rng.choices((1, 2, 4, 8), (0.4, 0.25, 0.2, 0.15))[0]
        job.pod = PodSpec(gpus)
        job.priority = "high" if rng.random() < 0.2 else "normal"
        job.preemptable = rng.random() < 0.3

    def _fractional(self, job: _Job, small: bool) -> None:
        rng = self.rng
        memory, cores = rng.choice(FRACTIONS)
        job.pod = PodSpec(1, memory, cores)
        job.replicas = rng.randint(1, 8)
        job.priority = "high" if rng.random() < 0.3 else "normal"

    def _revocable(self, job: _Job, small: bool) -> None:
        rng = self.rng
        job.pod = PodSpec(rng.choice((1, 2, 4)))
        job.replicas = job.min_available = rng.randint(1, 4)
        job.priority = "low"
        job.revocable = job.preemptable = True
        job.duration = rng.choice(("1h", "2h", "4h", "8h"))


def _running_jobs(cluster: _Cluster, mix: _Mix, target: int) -> list[_Job]:
    """Jobs already bound, placed consistently on nodes and devices, until ``target``
    GPU-hundredths are busy (or the cluster stops taking more)."""
    jobs: list[_Job] = []
    busy = failures = 0
    while busy < target and failures < RUNNING_FAILURES:
        job = mix.draw()
        job.shrink_to(target - busy)
        if cluster.place(job, mix.rng):
            jobs.append(job)
            busy += job.centi
        else:
            failures += 1
    return jobs


def _pending_jobs(mix: _Mix, budget: int, pods: int | None) -> list[_Job]:
    """Jobs waiting, until the demand reaches ``budget``; with a ``pods`` target, until that
    many pods exist, drawing small pods whenever the mean demand per pod runs above
    ``budget / pods`` so that both targets are met together."""
    jobs: list[_Job] = []
    demand = count = 0
    while (count < pods) if pods is not None else (demand < budget):
        if pods is not None:
            job = mix.draw(small=demand * pods > budget * count)
            job.replicas = min(job.replicas, pods - count)
            job.min_available = min(job.min_available, job.replicas)
        else:
            job = mix.draw()
            job.shrink_to(budget - demand)
        jobs.append(job)
        demand += job.centi
        count += job.replicas
    return jobs


# -- the document ----------------------------------------------------------------------------


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


def generate(
    shape: str, seed: int, load: float = 1.3, *, nodes: int | None = None, pods: int | None = None
) -> dict[str, Any]:
    """A compact instance document (DESIGN §3) of ``shape`` (S, M, L, XL, or custom with
    ``nodes``) whose running plus pending GPU demand is ``load`` × the GPUs; ``pods`` fixes the
    total pod count as well (then pods are made smaller or larger to keep the load)."""
    if not load > 0:
        raise ValueError(f"load must be > 0, got {load}")
    if pods is not None and pods < 1:
        raise ValueError(f"pods must be ≥ 1, got {pods}")
    layout = shape_of(shape, nodes)
    rng = random.Random(seed)
    cluster = _build_cluster(layout, rng)
    capacity = cluster.capacity_centi
    queues, teams = _queues(capacity // CENTI, rng)
    mix = _Mix(cluster, teams, rng)
    budget = round(load * capacity)
    running = _running_jobs(cluster, mix, round(min(RUNNING_SHARE, load / 2) * capacity))
    running_pods = sum(j.replicas for j in running)
    if pods is not None and running_pods >= pods:
        running, running_pods = [], 0
    left = None if pods is None else pods - running_pods
    pending = _pending_jobs(mix, budget - sum(j.centi for j in running), left)
    label = f"shape={layout.name} seed={seed} load={load}"
    if nodes is not None:
        label += f" nodes={nodes}"
    if pods is not None:
        label += f" pods={pods}"
    return {
        "apiVersion": API_VERSION,
        "kind": "Instance",
        "metadata": {
            "name": f"gen-{layout.name.lower()}-{seed}",
            "annotations": {"vcopt/generator": label},
        },
        "now": NOW,
        "timezone": "UTC",
        "scheduler": copy.deepcopy(SCHEDULER),
        "priorityClasses": copy.deepcopy(list(PRIORITY_CLASSES)),
        "nodeGroups": _node_groups(cluster),
        "hypernodes": _hypernodes(cluster),
        "queues": queues,
        "jobs": [j.document() for j in [*running, *pending]],
    }


@dataclass(frozen=True)
class Stats:
    """What a generated document holds, read from the document alone (no loading)."""

    nodes: int
    gpus: int
    jobs: int
    pods: int
    running_pods: int
    demand: float
    """Running plus pending GPU-equivalents."""

    @property
    def load(self) -> float:
        return self.demand / self.gpus if self.gpus else 0.0


def stats(doc: Mapping[str, Any]) -> Stats:
    groups = doc.get("nodeGroups", [])
    demand = 0
    pods = running = 0
    for job in doc.get("jobs", []):
        for task in job["tasks"]:
            res = task["resources"]
            per_device = res.get(HAMI_CORES, CENTI)
            demand += task["replicas"] * res.get(HAMI_COUNT, 0) * per_device
            pods += task["replicas"]
        running += len(job.get("running", []))
    return Stats(
        nodes=sum(g["count"] for g in groups),
        gpus=sum(g["count"] * g["gpus"]["count"] for g in groups),
        jobs=len(doc.get("jobs", [])),
        pods=pods,
        running_pods=running,
        demand=demand / CENTI,
    )


def write_instance(doc: Mapping[str, Any], path: str | Path) -> None:
    """Write ``doc`` as YAML, atomically; leaf mappings and lists stay on one line, so a
    1,000-node instance is a few thousand lines."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text = yaml.dump(dict(doc), Dumper=dumper, sort_keys=False, default_flow_style=None, width=120)
    write_atomic(path, text)
