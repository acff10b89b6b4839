"""Plan metrics (DESIGN §6, fgd-benchmark.md §6).

Every instance here is small enough to work out by hand; each test's docstring does the
arithmetic. Units: nvidia.com/gpu and cpu are in milli inside ``Resources`` (1 GPU = 1000),
GPU device memory in MiB. An A100 card here has 81920 MiB.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import yaml

from models.fragmentation import TypicalTask
from models.instance import Instance
from models.load import loads
from models.resources import NVIDIA_GPU
from models.workload import DeviceShare
from optimizer.metrics import Metrics, measure
from optimizer.options import SolveOptions
from optimizer.plan import Eviction, Pipelined, Placement, Plan
from optimizer.solve import solve

HEADER = """
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: t}
now: "2026-11-30T14:00:00Z"
"""
CAPACITY = """
scheduler:
  actions: "enqueue, allocate, backfill"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity}, {name: deviceshare}]
"""


def instance(body: str, scheduler: str = CAPACITY) -> Instance:
    return loads(HEADER + scheduler + body)


def place(pod: str, node: str, *gpus: DeviceShare) -> Placement:
    return Placement(f"default/{pod}", node, tuple(gpus) if gpus else None)


def measured(inst: Instance, *placements: Placement, **plan: object) -> Metrics:
    return measure(inst, Plan(placements=placements, **plan))  # type: ignore[arg-type]


# -- GPU-equivalents ---------------------------------------------------------------------------

ONE_A100 = """
nodes:
- name: n1
  allocatable: {cpu: "16", memory: 64Gi}
  gpus: [{id: G0, index: 0, type: NVIDIA-A100, memory: 81920}]
jobs:
- name: nb
  tasks:
  - {name: nb, replicas: 2, resources: {cpu: "2", memory: 8Gi, nvidia.com/gpu: 1,
     nvidia.com/gpumem: 20000, nvidia.com/gpucores: 25}}
"""


def test_two_shared_pods_on_one_card_count_half_a_gpu() -> None:
    """Each pod holds 20000 MiB and 25 cores of an 81920 MiB card: max(25/100, 20000/81920 =
    0.244) = 0.25, so two pods hold 0.5 GPU of the one healthy GPU (ratio 0.5). Memory:
    40000 of 81920 MiB = 0.48828125. The card is half used, so it is partially used. cpu: 2 × 2
    of 16 cores = 0.25; memory 2 × 8Gi of 64Gi = 0.25."""
    share = DeviceShare("G0", 20000, 25)
    m = measured(instance(ONE_A100), place("nb-nb-0", "n1", share), place("nb-nb-1", "n1", share))
    assert m.gpu_allocated == pytest.approx(0.5)
    assert m.gpu_total == 1
    assert m.gpu_allocation_ratio == pytest.approx(0.5)
    assert m.gpu_memory_allocated == 40000
    assert m.gpu_memory_total == 81920
    assert m.gpu_memory_ratio == pytest.approx(40000 / 81920)
    assert m.gpus_partially_used == 1
    assert m.cpu_allocation_ratio == pytest.approx(0.25)
    assert m.memory_allocation_ratio == pytest.approx(0.25)


def test_shared_pods_without_chosen_devices_count_by_their_request() -> None:
    """With ``gpus`` left open each pod counts nums × share_of(81920) = 1 × max(0.25, 0.244) =
    0.25, and 20000 MiB: 0.5 GPU, 40000 MiB, as when the devices are named. Both go on G0, the
    node's only card, which is then half used: one partially used GPU."""
    m = measured(instance(ONE_A100), place("nb-nb-0", "n1"), place("nb-nb-1", "n1"))
    assert m.gpu_allocated == pytest.approx(0.5)
    assert m.gpu_memory_allocated == 40000
    assert m.gpus_partially_used == 1


def test_open_devices_are_packed_onto_the_most_used_card() -> None:
    """Two 25 % pods without named devices on a two-card node: binpack puts the second on the
    card the first already uses, so one card is partially used (0.5) and the other idle. Spread
    over both cards, the count would be 2."""
    inst = instance(
        ONE_A100.replace(
            "gpus: [{id: G0, index: 0, type: NVIDIA-A100, memory: 81920}]",
            "gpus: {count: 2, type: NVIDIA-A100, memory: 81920}",
        )
    )
    m = measured(inst, place("nb-nb-0", "n1"), place("nb-nb-1", "n1"))
    assert m.gpu_total == 2
    assert m.gpus_partially_used == 1
    assert m.gpu_free == pytest.approx(1.5)


WHOLE_GPU = """
nodes:
- name: n1
  allocatable: {cpu: "16", memory: 64Gi}
  gpus:
  - {id: G0, index: 0, type: NVIDIA-A100, memory: 81920}
  - {id: G1, index: 1, type: NVIDIA-A100, memory: 81920}
  - {id: G2, index: 2, type: NVIDIA-A100, memory: 81920, health: false}
jobs:
- name: run
  tasks: [{name: w, replicas: 1, resources: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}}]
  running: [{index: 0, node: n1, gpus: [{id: G0, memory: 81920, cores: 100}]}]
- name: new
  tasks: [{name: w, replicas: 1, resources: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}}]
"""


def test_a_whole_gpu_counts_one_and_unhealthy_gpus_are_not_capacity() -> None:
    """The running pod holds G0 whole: max(100/100, 81920/81920) = 1.0. ``nvidia.com/gpu: 1``
    without memory is a whole card (HAMi's webhook sets cores 100, memory 100 %), so the new pod
    placed without devices also counts max(1.0, 1.0) = 1.0: 2.0 GPUs of 2 healthy (G2 is
    unhealthy) = ratio 1.0, memory 2 × 81920 of 163840 MiB. No card is partially used. Nothing
    is free, so free GPU and fragmentation are 0 and the rate is 0, not a division by zero."""
    m = measured(instance(WHOLE_GPU), place("new-w-0", "n1"))
    assert m.gpu_allocated == pytest.approx(2.0)
    assert m.gpu_total == 2
    assert m.gpu_allocation_ratio == pytest.approx(1.0)
    assert m.gpu_memory_allocated == 2 * 81920
    assert m.gpu_memory_ratio == pytest.approx(1.0)
    assert m.gpus_partially_used == 0
    assert (m.gpu_free, m.fragmentation, m.fragmentation_rate) == (0.0, 0.0, 0.0)


# -- jobs ----------------------------------------------------------------------------------------

JOBS = """
nodes:
- {name: n1, allocatable: {cpu: "64", memory: 64Gi}}
jobs:
- name: run
  minAvailable: 2
  tasks: [{name: w, replicas: 2, resources: {cpu: "1"}}]
  running: [{index: 0, node: n1}, {index: 1, node: n1}]
- name: new
  minAvailable: 2
  tasks: [{name: w, replicas: 2, resources: {cpu: "1"}}]
- name: half
  minAvailable: 2
  tasks: [{name: w, replicas: 2, resources: {cpu: "1"}}]
- name: idle
  tasks: [{name: w, replicas: 1, resources: {cpu: "1"}}]
- name: shrunk
  minAvailable: 2
  tasks: [{name: w, replicas: 2, resources: {cpu: "1"}}]
  running: [{index: 0, node: n1}, {index: 1, node: n1}]
- name: grow
  minAvailable: 1
  tasks: [{name: w, replicas: 3, resources: {cpu: "1"}}]
  running: [{index: 0, node: n1}]
"""


def test_job_states_and_pod_counters() -> None:
    """run: 2 running, nothing new → running. new: both placed, 2 ≥ minAvailable 2 → admitted.
    half: 1 placed < 2 → pending. idle: only pipelined, which holds nothing → pending. shrunk:
    one of two evicted, 1 < 2 → pending. grow: 1 running + 1 placed ≥ 1, with a placement →
    admitted. So 2 admitted, 1 running, 3 pending; 4 placements, 1 eviction, 1 pipelined."""
    m = measured(
        instance(JOBS),
        place("new-w-0", "n1"),
        place("new-w-1", "n1"),
        place("half-w-0", "n1"),
        place("grow-w-1", "n1"),
        evictions=(Eviction("default/shrunk-w-1", "n1"),),
        pipelined=(Pipelined("default/idle-w-0", "n1"),),
    )
    assert (m.jobs_admitted, m.jobs_running, m.jobs_pending) == (2, 1, 3)
    assert (m.pods_placed, m.evictions, m.pods_pipelined) == (4, 1, 1)


def test_a_plan_naming_an_unknown_node_is_refused() -> None:
    """Metrics do not guess at a node the instance lacks; the message names the pod."""
    with pytest.raises(ValueError, match="new-w-0"):
        measured(instance(JOBS), place("new-w-0", "n9"))


# -- queues --------------------------------------------------------------------------------------

TWO_QUEUES = """
nodes:
- name: n1
  allocatable: {cpu: "16", memory: 64Gi}
  gpus: {count: 4, type: NVIDIA-A100, memory: 81920}
queues:
- {name: root}
- {name: qa, deserved: {nvidia.com/gpu: 2}}
- {name: qb, deserved: {nvidia.com/gpu: 2}}
jobs:
- name: ja
  queue: qa
  tasks: [{name: w, replicas: 3, resources: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}}]
- name: jb
  queue: qb
  tasks: [{name: w, replicas: 1, resources: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}}]
"""
QUEUES_FLAT = """
- {name: qa, deserved: {nvidia.com/gpu: 2}}
- {name: qb, deserved: {nvidia.com/gpu: 2}}
"""
QUEUES_TREE = """
- {name: research, deserved: {nvidia.com/gpu: 4}}
- {name: team-a, parent: research, deserved: {nvidia.com/gpu: 3}}
- {name: team-b, parent: research, deserved: {nvidia.com/gpu: 1}}
"""


def test_deserved_satisfaction_with_flat_capacity() -> None:
    """Flat capacity: deserved = min_dim(spec 2 GPUs, realCapability 4 GPUs) = 2 GPUs each (cpu
    and memory come out 0, which deserved does not count). One pod of each job is placed.
    qa: allocated 1 GPU, requested 1 + 2 pending = 3 GPUs, share 1/2. qb: allocated 1,
    requested 1, share 1/2. Satisfaction = (min(1,2)/2 + min(1,2)/2) / (min(3,2)/2 +
    min(1,2)/2) = (0.5 + 0.5) / (1 + 0.5) = 2/3."""
    m = measured(instance(TWO_QUEUES), place("ja-w-0", "n1"), place("jb-w-0", "n1"))
    rows = {q.queue: q for q in m.queues}
    assert list(rows) == ["qa", "qb"]
    qa, qb = rows["qa"], rows["qb"]
    assert qa.deserved[NVIDIA_GPU] == 2000 and qb.deserved[NVIDIA_GPU] == 2000
    assert (qa.allocated[NVIDIA_GPU], qa.requested[NVIDIA_GPU]) == (1000, 3000)
    assert (qb.allocated[NVIDIA_GPU], qb.requested[NVIDIA_GPU]) == (1000, 1000)
    assert (qa.share, qb.share) == (pytest.approx(0.5), pytest.approx(0.5))
    assert all(q.leaf for q in m.queues)
    assert m.deserved_satisfaction == pytest.approx(2 / 3)


def test_deserved_satisfaction_with_proportion() -> None:
    """No scheduler section: Helm's default, which runs proportion. Requests: qa 3 cpu, 3Gi,
    3 GPUs; qb 1 cpu, 1Gi, 1 GPU; T = 16 cpu, 64Gi, 4 GPUs, weights 1. Round 1 splits T in
    half (8 cpu, 32Gi, 2 GPUs) and clips to the request: qa (3 cpu, 3Gi, 2 GPUs) is not met,
    qb (1, 1Gi, 1) is. Remaining GPUs 4 − 3 = 1 go to qa in round 2: qa = (3, 3Gi, 3). So
    deserved = request for both, on cpu, memory and GPU. qa holds a third of each: 3 terms of
    1/3 over 3 terms of 1; qb holds all: 3 over 3. Satisfaction = (1 + 3) / (3 + 3) = 2/3;
    shares: qa 1/3, qb 1."""
    m = measured(instance(TWO_QUEUES, scheduler=""), place("ja-w-0", "n1"), place("jb-w-0", "n1"))
    rows = {q.queue: q for q in m.queues}
    assert rows["qa"].deserved == rows["qa"].requested
    assert rows["qb"].deserved == rows["qb"].requested
    assert rows["qa"].share == pytest.approx(1 / 3)
    assert rows["qb"].share == pytest.approx(1.0)
    assert m.deserved_satisfaction == pytest.approx(2 / 3)


def test_hierarchical_capacity_reports_ancestors_with_subtree_sums() -> None:
    """root → research (deserved 4 GPUs) → team-a (3), team-b (1). One pod of ja (team-a) and
    the pod of jb (team-b) are placed. research: allocated 1 + 1 = 2 GPUs, requested 3 + 1 = 4,
    deserved 4 (spec, not clipped in hierarchical mode), share 2/4 = 0.5. root's deserved is
    the sum of its children's, 4, so its share is 0.5 too. Satisfaction is over the leaves
    only: (1/3 + 1/1) / (3/3 + 1/1) = (4/3) / 2 = 2/3."""
    body = TWO_QUEUES.replace(QUEUES_FLAT, QUEUES_TREE).replace("queue: qa", "queue: team-a")
    body = body.replace("queue: qb", "queue: team-b")
    scheduler = CAPACITY.replace("{name: capacity}", "{name: capacity, enableHierarchy: true}")
    m = measured(instance(body, scheduler), place("ja-w-0", "n1"), place("jb-w-0", "n1"))
    rows = {q.queue: q for q in m.queues}
    assert list(rows) == ["root", "research", "team-a", "team-b"]
    research = rows["research"]
    assert not research.leaf and not rows["root"].leaf and rows["team-a"].leaf
    assert (research.allocated[NVIDIA_GPU], research.requested[NVIDIA_GPU]) == (2000, 4000)
    assert research.deserved[NVIDIA_GPU] == 4000
    assert research.share == pytest.approx(0.5)
    assert rows["root"].deserved[NVIDIA_GPU] == 4000
    assert rows["root"].share == pytest.approx(0.5)
    assert m.deserved_satisfaction == pytest.approx(2 / 3)


# -- topology ------------------------------------------------------------------------------------

RACKS = """
nodes:
- {name: n1, labels: {rack: r1}, allocatable: {cpu: "16", memory: 64Gi}}
- {name: n2, labels: {rack: r1}, allocatable: {cpu: "16", memory: 64Gi}}
- {name: n3, labels: {rack: r2}, allocatable: {cpu: "16", memory: 64Gi}}
- {name: n4, labels: {rack: r2}, allocatable: {cpu: "16", memory: 64Gi}}
hypernodes:
- name: rack-1
  tier: 1
  members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: r1}}}}]
- name: rack-2
  tier: 1
  members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: r2}}}}]
- name: spine-1
  tier: 2
  members:
  - {type: HyperNode, selector: {exactMatch: {name: rack-1}}}
  - {type: HyperNode, selector: {exactMatch: {name: rack-2}}}
jobs:
- {name: j0, tasks: [{name: w, replicas: 2, resources: {cpu: "2"}}]}
- {name: j1, tasks: [{name: w, replicas: 2, resources: {cpu: "2"}}]}
- {name: j2, tasks: [{name: w, replicas: 2, resources: {cpu: "10"}}]}
- {name: solo, tasks: [{name: w, replicas: 1, resources: {cpu: "1"}}]}
- {name: wide, tasks: [{name: w, replicas: 4, resources: {cpu: "10"}}]}
"""


def test_lca_tiers_on_a_rack_spine_tree() -> None:
    """j0 on n1 twice → one node, tier 0. j1 on n1, n2 → rack-1, tier 1. j2 on n1, n3 → only
    spine-1 holds both, tier 2. solo has one pod and is not a multi-pod job. Mean (0+1+2)/3 = 1.
    Lowest tier that could hold each: j0 needs 4 cpu, one 16-cpu node does → 0 = its tier ✓.
    j1 needs 4 cpu too → 0, but it sits at 1 ✗. j2 needs 20 cpu > 16, a rack has 32 → 1, but
    it sits at 2 ✗. Share 1/3."""
    m = measured(
        instance(RACKS),
        place("j0-w-0", "n1"),
        place("j0-w-1", "n1"),
        place("j1-w-0", "n1"),
        place("j1-w-1", "n2"),
        place("j2-w-0", "n1"),
        place("j2-w-1", "n3"),
        place("solo-w-0", "n4"),
    )
    assert dict(m.job_lca_tiers) == {"default/j0": 0, "default/j1": 1, "default/j2": 2}
    assert m.multi_pod_jobs == 3
    assert m.mean_lca_tier == pytest.approx(1.0)
    assert m.lowest_tier_share == pytest.approx(1 / 3)


def test_jobs_too_big_for_a_node_or_a_rack_are_at_their_lowest_tier() -> None:
    """j2 (20 cpu) on n1, n2: no node holds 20, rack-1 (32) does → lowest 1, and it sits in
    rack-1 (tier 1) ✓. wide (4 × 10 = 40 cpu) on n1..n4: no rack (32) holds it, spine-1 (64)
    does → lowest 2, and it spans both racks (tier 2) ✓. Share 2/2 = 1; mean (1+2)/2 = 1.5."""
    m = measured(
        instance(RACKS),
        place("j2-w-0", "n1"),
        place("j2-w-1", "n2"),
        *(place(f"wide-w-{i}", f"n{i + 1}") for i in range(4)),
    )
    assert dict(m.job_lca_tiers) == {"default/j2": 1, "default/wide": 2}
    assert m.lowest_tier_share == pytest.approx(1.0)
    assert m.mean_lca_tier == pytest.approx(1.5)


GPU_RACK = """
nodes:
- name: g1
  labels: {rack: r1}
  allocatable: {cpu: "96", memory: 768Gi}
  gpus: {count: 8, memory: 81920}
- name: g2
  labels: {rack: r1}
  allocatable: {cpu: "96", memory: 768Gi}
  gpus: {count: 8, memory: 81920}
hypernodes:
- name: rack-1
  tier: 1
  members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: r1}}}}]
jobs:
- {name: gang, tasks: [{name: w, replicas: 2, resources: {cpu: "8", nvidia.com/gpu: 8}}]}
"""


def test_lowest_tier_counts_whole_cards_not_time_slices() -> None:
    """Each node lists 8 GPUs with 10 time-slices, so its nvidia.com/gpu allocatable is 80.
    Two 8-GPU pods need 16 whole cards: no node has them (8 each), rack-1 does (16) → the
    lowest tier is 1, and the gang on g1 + g2 sits at tier 1 ✓ (share 1). Counting
    time-slices would wrongly say one node holds both (16 ≤ 80) → lowest tier 0 and share 0."""
    m = measured(
        instance(GPU_RACK),
        place("gang-w-0", "g1", *(DeviceShare(f"GPU-g1-{i}", 81920, 100) for i in range(8))),
        place("gang-w-1", "g2", *(DeviceShare(f"GPU-g2-{i}", 81920, 100) for i in range(8))),
    )
    assert dict(m.job_lca_tiers) == {"default/gang": 1}
    assert m.lowest_tier_share == pytest.approx(1.0)


# -- fragmentation -------------------------------------------------------------------------------

EIGHT_GPUS = """
nodes:
- name: n1
  allocatable: {cpu: "96", memory: 768Gi}
  gpus: {count: 8, type: NVIDIA-A100, memory: 81920}
jobs:
- name: run
  tasks: [{name: w, replicas: 1, resources: {cpu: "4", memory: 8Gi, nvidia.com/gpu: 1}}]
  running: [{index: 0, node: n1, gpus: [{id: GPU-n1-0, memory: 81920, cores: 100}]}]
- name: big
  tasks: [{name: w, replicas: 1, resources: {cpu: "8", memory: 8Gi, nvidia.com/gpu: 8}}]
- name: small
  tasks: [{name: w, replicas: 1, resources: {cpu: "1", memory: 8Gi, nvidia.com/gpu: 1}}]
"""


def test_fragmentation_against_a_mix_of_8_gpu_and_1_gpu_demand() -> None:
    """One GPU of eight is fully used; 7 × 1000 milli are free. The mix is the instance's own
    pods, running ones included (the objective's rule): a 1-GPU pod with 4 cores, an 8-GPU pod
    with 8 and a 1-GPU pod with 1, p = ⅓ each (three shapes, ⅔ < 95 %: all kept). The 8-GPU task
    needs 8 GPUs with ≥ 1000 milli free and only 7 have it, so all 7000 free milli count; the
    1-GPU tasks fit and no free GPU has < 1000 free, so 0 counts. ⅓ · 7 = 2.333 GPU, rate ⅓."""
    m = measured(instance(EIGHT_GPUS))
    assert m.gpu_free == pytest.approx(7.0)
    assert m.fragmentation == pytest.approx(7 / 3)
    assert m.fragmentation_rate == pytest.approx(1 / 3)
    assert m.gpus_partially_used == 0


def test_fragmentation_reads_the_given_typical_mix() -> None:
    """The same state against a given mix: only the 8-GPU shape (p 1) cannot fit, all 7 GPUs
    count; only a half-GPU share (p 1) fits on any free GPU, none counts; half each: 3.5."""
    inst = instance(EIGHT_GPUS)
    eight, half = TypicalTask(1000, 1000, 8), TypicalTask(1000, 500, 1)
    plan = Plan()
    assert measure(inst, plan, (eight,)).fragmentation == pytest.approx(7.0)
    assert measure(inst, plan, (half,)).fragmentation == pytest.approx(0.0)
    mix = (replace(eight, weight=0.5), replace(half, weight=0.5))
    assert measure(inst, plan, mix).fragmentation == pytest.approx(3.5)


def test_solve_reports_fragmentation_against_the_mix_the_options_give() -> None:
    """``--typical-mix`` reaches the metric: with the 8-GPU shape alone the plan's metrics say
    every free GPU is fragment (greedy cannot place the 8-GPU pod: 7 GPUs are free, so 1 GPU
    goes to the small pod and 6 × 1000 stay free, all fragment); without a mix, the
    instance's own (⅓ · 6 = 2)."""
    inst = instance(EIGHT_GPUS)
    given = solve(inst, "greedy", SolveOptions.of(typical_mix=(TypicalTask(1000, 1000, 8),)))
    own = solve(inst, "greedy")
    assert given.metrics["gpu_free"] == pytest.approx(6.0)
    assert given.metrics["fragmentation"] == pytest.approx(6.0)
    assert own.metrics["fragmentation"] == pytest.approx(2.0)


HALF_USED = """
nodes:
- name: n1
  allocatable: {cpu: "16", memory: 64Gi}
  gpus: {count: 2, type: NVIDIA-A100, memory: 81920}
jobs:
- name: run
  tasks: [{name: w, replicas: 1, resources: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1,
           nvidia.com/gpumem: 40960, nvidia.com/gpucores: 50}}]
  running: [{index: 0, node: n1, gpus: [{id: GPU-n1-0, memory: 40960, cores: 50}]}]
- name: want
  tasks: [{name: w, replicas: 1, resources: {REQUEST}}]
"""


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        # A whole GPU fits on GPU-n1-1 (1000 free); only GPU-n1-0's 500 free milli is below the
        # 1000 it needs → 0.5 GPU.
        ("cpu: '1', memory: 1Gi, nvidia.com/gpu: 1", 0.5),
        # A quarter GPU (250 milli) fits, and both GPUs have ≥ 250 free → nothing counts.
        (
            "cpu: '1', memory: 1Gi, nvidia.com/gpu: 1, nvidia.com/gpucores: 25, "
            "nvidia.com/gpumem: 20480",
            0.0,
        ),
        # Two whole GPUs: only one has 1000 free → all 500 + 1000 free milli count.
        ("cpu: '1', memory: 1Gi, nvidia.com/gpu: 2", 1.5),
        # CPU-only: every free GPU milli counts.
        ("cpu: '1', memory: 1Gi", 1.5),
        # Fits the GPUs but needs 16 cpu where 16 − 1 = 15 are free → all free milli count.
        ("cpu: '16', memory: 1Gi, nvidia.com/gpu: 1", 1.5),
    ],
)
def test_fragmentation_on_a_half_used_gpu(request_: str, expected: float) -> None:
    """GPU-n1-0 holds a 50 % share (500 milli free), GPU-n1-1 is idle (1000 free): 1.5 GPU
    free. The mix is both pods, p = ½ each: the running 50 % share with 1 core fits on either
    GPU and counts 0, the pending pod counts the amount beside its request; F is half that."""
    body = HALF_USED.replace("REQUEST", request_)
    m = measured(instance(body))
    assert m.gpu_free == pytest.approx(1.5)
    assert m.gpus_partially_used == 1
    assert m.fragmentation == pytest.approx(expected / 2)
    assert m.fragmentation_rate == pytest.approx(expected / 2 / 1.5)


def test_fragmentation_ignores_unhealthy_gpus() -> None:
    """WHOLE_GPU: G0 is held, G2 unhealthy, so only G1 (1000 milli) is free. The mix is both
    pods, one whole GPU each: it fits on G1 and no free GPU has < 1000 free → 0. Once new is
    placed on G1 nothing healthy is free, so 0 again (G2 would count 1.0 if it were free
    capacity)."""
    inst = instance(WHOLE_GPU)
    before = measured(inst)
    assert before.gpu_free == pytest.approx(1.0)
    assert before.fragmentation == 0.0
    after = measured(inst, place("new-w-0", "n1", DeviceShare("G1", 81920, 100)))
    assert (after.gpu_free, after.fragmentation, after.fragmentation_rate) == (0.0, 0.0, 0.0)


# -- TDM -----------------------------------------------------------------------------------------

TDM = """
scheduler:
  actions: "enqueue, allocate, backfill"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: tdm, arguments: {tdm.revocable-zone.rz1: "WINDOW"}}]
"""
TDM_BODY = """
nodes:
- {name: n1, allocatable: {cpu: "16", memory: 64Gi}}
- {name: n2, labels: {volcano.sh/revocable-zone: rz1}, allocatable: {cpu: "16", memory: 64Gi}}
jobs:
"""
REVOCABLE = '{volcano.sh/revocable-zone: "*"}'
PINNED = '{volcano.sh/revocable-zone: "*", volcano.sh/preemptable: "false"}'


def tdm_instance(window: str, now: str) -> Instance:
    jobs = [
        ("long", "n2", "8h", REVOCABLE),
        ("edge", "n2", "7h", REVOCABLE),
        ("short", "n2", "3h", REVOCABLE),
        ("nodur", "n2", None, REVOCABLE),
        ("pinned", "n2", "8h", PINNED),
        ("normal", "n1", "8h", "{}"),
    ]
    body = TDM_BODY
    for name, node, duration, marks in jobs:
        body += f"- name: {name}\n"
        if duration:
            body += f"  duration: {duration}\n"
        body += (
            f"  tasks: [{{name: w, replicas: 1, resources: {{cpu: '1'}}, "
            f"annotations: {marks}}}]\n"
            f"  running: [{{index: 0, node: {node}}}]\n"
        )
    text = (HEADER + TDM + body).replace("WINDOW", window)
    return loads(text.replace("2026-11-30T14:00:00Z", now))


@pytest.mark.parametrize(
    ("window", "now", "evicted"),
    [
        # Active 08:00-21:00, last active second 21:00:00. long ends 22:00 > 21:00 → evicted;
        # edge ends 21:00:00, not after it → stays; short ends 17:00 → stays; nodur has no
        # duration; pinned is not preemptable; normal is not on a revocable node. → 1.
        ("08:00-21:00", "2026-11-30T14:00:00Z", 1),
        # At 22:00 the zone is inactive: it has closed, so every preemptable pod with a
        # duration on it counts (long, edge, short) → 3.
        ("08:00-21:00", "2026-11-30T22:00:00Z", 3),
        # 00:00-00:00 is always active and never closes → 0.
        ("00:00-00:00", "2026-11-30T14:00:00Z", 0),
    ],
)
def test_tdm_counters(window: str, now: str, evicted: int) -> None:
    """Five bound pods sit on n2 (zone rz1): long, edge, short, nodur, pinned; normal is on n1.
    The evicted count per case is worked beside it."""
    m = measured(tdm_instance(window, now))
    assert m.pods_on_revocable_nodes == 5
    assert m.pods_evicted_at_window_close == evicted


def test_evicted_pods_are_not_on_revocable_nodes_any_more() -> None:
    """Evicting long removes it from n2: 4 pods remain there, and the one that would have
    outlived the window is gone, so 0 are evicted at window close."""
    m = measured(
        tdm_instance("08:00-21:00", "2026-11-30T14:00:00Z"),
        evictions=(Eviction("default/long-w-0", "n2"),),
    )
    assert (m.pods_on_revocable_nodes, m.pods_evicted_at_window_close) == (4, 0)


# -- frames and dict -----------------------------------------------------------------------------


def test_frames_and_dict() -> None:
    """to_frame is one row with one column per scalar measure (24 of them: every field but
    queues and job_lca_tiers); queues_frame has the two queues of TWO_QUEUES, qa's GPU columns
    in GPUs (1 allocated, 2 deserved, 3 requested). as_dict survives JSON and a plan's YAML, with
    amounts as Kubernetes quantities."""
    m = measured(instance(TWO_QUEUES), place("ja-w-0", "n1"), place("jb-w-0", "n1"))
    frame = m.to_frame()
    assert frame.shape == (1, 26)
    assert list(frame.columns) == list(m.scalars())
    assert frame.loc[0, "pods_placed"] == 2
    queues = m.queues_frame()
    assert list(queues["queue"]) == ["qa", "qb"]
    qa = queues.set_index("queue").loc["qa"]
    assert (qa["allocated.nvidia.com/gpu"], qa["deserved.nvidia.com/gpu"]) == (1.0, 2.0)
    assert qa["requested.nvidia.com/gpu"] == 3.0
    doc = json.loads(json.dumps(m.as_dict()))
    assert doc["queues"][0]["requested"] == {"cpu": "3", "memory": "3Gi", "nvidia.com/gpu": "3"}
    assert doc["gpu_allocated"] == pytest.approx(2.0)
    plan_doc = yaml.safe_load(Plan(placements=(), metrics=m.as_dict()).to_yaml())
    assert plan_doc["metrics"]["deserved_satisfaction"] == pytest.approx(2 / 3)
