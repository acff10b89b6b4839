"""The staged objective: cases where Volcano's greedy cycle is provably beaten, and the
agreement between the model's stage expressions and :func:`evaluate` on plans.

Each gap test runs the real greedy engine, asserts what it does (so the test shows the gap),
and asserts that the CP-SAT plan hinted and floored by it scores a strictly larger stage tuple,
with the stage values worked out by hand from the definitions in ``objective.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cpsat_kit import (
    QUEUES,
    checked,
    cpsat_over_greedy,
    devices_of,
    greedy,
    instance,
    nodes_of,
    options,
    pods_of,
    stages,
)

from models.instance import Instance
from models.load import load
from optimizer.cpsat.model.objective import Ranking, StageValues, evaluate
from optimizer.cpsat.model.variables import value_of
from optimizer.cpsat.search import CpsatModel
from optimizer.cpsat.solution.expand import expand
from optimizer.cpsat.solution.extract import plan_from
from optimizer.options import STAGES
from optimizer.plan import Placement, Plan
from optimizer.progress import Progress

DEMO = Path(__file__).resolve().parents[2] / "instances" / "demo.yaml"


def devices(node: str, count: int) -> str:
    return (
        "["
        + ", ".join(
            f"{{id: {node}-{i}, index: {i}, type: NVIDIA-A100, memory: 81920}}"
            for i in range(count)
        )
        + "]"
    )


def test_gang_keeps_the_big_domain_whole() -> None:
    """Nodes: ``big`` with 24 GPUs of which a running 5-GPU pod holds 5 (19 free), ``s1`` and
    ``s2`` with 10 free GPUs each. Jobs in order: a gang of 2 pods × 10 GPUs, then one pod of
    19 GPUs.

    Greedy: binpack scores a node by how full the pod leaves its CPU and memory; ``big``
    already runs 48 of 96 CPUs, so after a 4-CPU pod it is the fullest (52/96 against 4/96)
    and takes the first 10-GPU pod, keeping 9 free devices; the second pod goes to s1 or s2
    (19 + 10 split). The 19-GPU pod then fits nowhere (9, 10 or 0 free).

    CP-SAT: the gang on s1 + s2 (10 + 10) leaves big's 19 whole for the 19-GPU pod. Work in
    thousandths of GPUs (all priorities equal, weight 1; a whole GPU is worth 1000): greedy
    5000 (running) + 20000 = 25000; CP-SAT 25000 + 19000 = 44000.
    """
    held = ", ".join(f"{{id: big-{i}, memory: 81920, cores: 0}}" for i in range(5))
    inst = instance(
        f"""
        scheduler:
          actions: "enqueue, allocate"
          tiers:
          - plugins: [{{name: priority}}, {{name: gang}}]
          - plugins:
            - {{name: predicates}}
            - {{name: binpack}}
            - {{name: deviceshare, arguments: {{deviceshare.VGPUEnable: true}}}}
        nodes:
        - {{name: big, allocatable: {{cpu: "96", memory: 512Gi}}, gpus: {devices("big", 24)}}}
        - {{name: s1, allocatable: {{cpu: "96", memory: 512Gi}}, gpus: {devices("s1", 10)}}}
        - {{name: s2, allocatable: {{cpu: "96", memory: 512Gi}}, gpus: {devices("s2", 10)}}}
        jobs:
        - name: old
          tasks:
          - {{name: w, replicas: 1, resources: {{cpu: "48", memory: 64Gi, nvidia.com/gpu: 5}}}}
          running: [{{index: 0, node: big, gpus: [{held}]}}]
        - name: gang20
          minAvailable: 2
          tasks:
          - {{name: w, replicas: 2, resources: {{cpu: "4", memory: 16Gi, nvidia.com/gpu: 10}}}}
        - name: big19
          tasks:
          - {{name: w, replicas: 1, resources: {{cpu: "4", memory: 16Gi, nvidia.com/gpu: 19}}}}
        """
    )
    floor, plan = cpsat_over_greedy(inst)
    assert "big" in nodes_of(floor, "gang20") and len(nodes_of(floor, "gang20")) == 2
    assert pods_of(floor, "big19") == []
    assert nodes_of(plan, "gang20") == ["s1", "s2"]
    assert nodes_of(plan, "big19") == ["big"]
    assert stages(inst, floor).work == 25000
    assert stages(inst, plan).work == 44000


TWO_RACKS = """
    hypernodes:
    - name: rack-1
      tier: 1
      members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: r1}}}}]
    - name: rack-2
      tier: 1
      members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: r2}}}}]
    - name: spine
      tier: 2
      members:
      - {type: HyperNode, selector: {exactMatch: {name: rack-1}}}
      - {type: HyperNode, selector: {exactMatch: {name: rack-2}}}
    """


def test_lower_lca_tier_than_greedy() -> None:
    """Racks r1 = {n1 16 CPUs, n2 12}, r2 = {n3 16, n4 12} under one spine. n1 runs 8 CPUs,
    n3 runs 6. A pair of 8-CPU pods, one per node (no node has 16 free).

    Greedy with binpack takes the fullest node for each pod: n1 (16/16 after) then n3 (14/16,
    ahead of n2 and n4 at 8/12), so the pair's lowest common HyperNode is the spine: tier 2,
    level index 2 of [node, rack, spine] → topology −2. CP-SAT keeps the pair in one rack
    (n3 + n4, or n1 + n2): level 1 → −1, with the same work (30000: 8 + 6 + 2 × 8 CPUs in
    CPU-per-GPU thousandths, no GPUs so 1 CPU = 1000) and fairness (no deserved: 0)."""
    inst = instance(
        """
        scheduler:
          actions: "enqueue, allocate"
          tiers:
          - plugins: [{name: priority}, {name: gang}]
          - plugins: [{name: predicates}, {name: binpack}]
        nodes:
        - {name: n1, labels: {rack: r1}, allocatable: {cpu: "16", memory: 64Gi}}
        - {name: n2, labels: {rack: r1}, allocatable: {cpu: "12", memory: 64Gi}}
        - {name: n3, labels: {rack: r2}, allocatable: {cpu: "16", memory: 64Gi}}
        - {name: n4, labels: {rack: r2}, allocatable: {cpu: "12", memory: 64Gi}}
        """,
        TWO_RACKS,
        """
        jobs:
        - name: old
          tasks: [{name: w, replicas: 1, resources: {cpu: "8", memory: 1Gi}}]
          running: [{index: 0, node: n1}]
        - name: old2
          tasks: [{name: w, replicas: 1, resources: {cpu: "6", memory: 1Gi}}]
          running: [{index: 0, node: n3}]
        - name: pair
          minAvailable: 2
          tasks: [{name: w, replicas: 2, resources: {cpu: "8", memory: 1Gi}}]
        """,
    )
    floor, plan = cpsat_over_greedy(inst)
    assert nodes_of(floor, "pair") == ["n1", "n3"]
    assert nodes_of(plan, "pair") in (["n1", "n2"], ["n3", "n4"])
    before, after = stages(inst, floor), stages(inst, plan)
    assert (before.work, before.fairness, before.topology) == (30000, 0, -2)
    assert (after.work, after.fairness, after.topology) == (30000, 0, -1)
    assert after.as_tuple() > before.as_tuple()


def test_fill_the_under_deserved_queue_first() -> None:
    """Two 8-CPU nodes; queues qa and qb deserve 8 CPUs each, qb has the higher queue
    priority. qb has two 8-CPU jobs, qa one.

    Greedy (capacity orders queues by priority first) gives both nodes to qb, which borrows
    8 CPUs beyond its deserved while qa gets nothing. CP-SAT admits qa's job and one of qb's:
    the same work (2 × 8000), better fairness. Fairness = 10001 × Σ fill + min share, with
    fill = min(1000, ⌊1000 · allocated / deserved⌋) and share capped at 10000: greedy qa 0,
    qb 1000 (share 2000) → 10001 × 1000 + 0 = 10001000; CP-SAT 1000 + 1000 (shares 1000) →
    10001 × 2000 + 1000 = 20003000."""
    inst = instance(QUEUES)
    floor, plan = cpsat_over_greedy(inst)
    assert pods_of(floor, "a1") == []
    assert len(pods_of(floor, "b1") + pods_of(floor, "b2")) == 2
    assert len(pods_of(plan, "a1")) == 1
    assert len(pods_of(plan, "b1") + pods_of(plan, "b2")) == 1
    before, after = stages(inst, floor), stages(inst, plan)
    assert (before.work, before.fairness) == (16000, 10001000)
    assert (after.work, after.fairness) == (16000, 20003000)


def test_device_packing_admits_the_exclusive_pod() -> None:
    """One node, two A100s (81920 MiB, 100 cores). A gang of 2 fractional pods (20000 MiB,
    30 cores) comes first, then a pod wanting a whole GPU's compute (100 cores: exclusive).

    Greedy with the spread device policy puts the fractional pods on different cards, so no
    card is left for the exclusive pod. CP-SAT stacks both fractional pods on one card and
    gives the other to the exclusive pod. Work: a fractional pod is worth max(30/100,
    20000/81920) = 0.3 GPU → 300, the exclusive one 1000: greedy 600, CP-SAT 1600."""
    inst = instance(
        """
        scheduler:
          actions: "enqueue, allocate"
          tiers:
          - plugins: [{name: priority}, {name: gang}]
          - plugins:
            - {name: predicates}
            - name: deviceshare
              arguments: {deviceshare.VGPUEnable: true, deviceshare.SchedulePolicy: spread}
        nodes:
        - name: n1
          allocatable: {cpu: "32", memory: 128Gi}
          gpus:
          - {id: G0, index: 0, type: NVIDIA-A100, memory: 81920}
          - {id: G1, index: 1, type: NVIDIA-A100, memory: 81920}
        jobs:
        - name: frac
          minAvailable: 2
          tasks:
          - name: w
            replicas: 2
            resources: {nvidia.com/gpu: 1, nvidia.com/gpumem: 20000, nvidia.com/gpucores: 30}
        - name: excl
          tasks: [{name: w, replicas: 1, resources: {nvidia.com/gpu: 1, nvidia.com/gpucores: 100}}]
        """
    )
    floor, plan = cpsat_over_greedy(inst)
    assert sorted(d for pod in devices_of(floor, "frac") for d in pod) == ["G0", "G1"]
    assert pods_of(floor, "excl") == []
    frac = {d for pod in devices_of(plan, "frac") for d in pod}
    assert len(frac) == 1
    assert devices_of(plan, "excl") == [sorted({"G0", "G1"} - frac)]
    assert stages(inst, floor).work == 600
    assert stages(inst, plan).work == 1600


def test_evaluate_by_hand() -> None:
    """All four stages of a small plan, by hand. Queue q deserves 4 CPUs; racks r1 = {n1, n2},
    r2 = {n3}; job j (priority class 100 → weight 2, the other job has priority 0 → weight 1)
    places 2-CPU pods on n1 and n3; job old runs a 1-CPU pod on n2.

    work: no GPUs, so 1 CPU = 1000: 2 × (2 × 2000) + 1 × 1000 = 9000. fairness: q holds
    2 + 2 + 1 = 5 CPUs of 4 deserved: fill min(1000, 1250) = 1000, share 1250 →
    10001 × 1000 + 1250 = 10002250. topology: j spans n1, n3 → spine, level 2 → −2 (old has
    one pod, not counted). packing: n1 and n3 were empty → 2 opened nodes, no GPUs, no
    evictions → −2."""
    inst = instance(
        """
        scheduler:
          actions: "enqueue, allocate"
          tiers:
          - plugins: [{name: gang}, {name: predicates}, {name: capacity}]
        priorityClasses: [{name: high, value: 100}]
        nodes:
        - {name: n1, labels: {rack: r1}, allocatable: {cpu: "8", memory: 8Gi}}
        - {name: n2, labels: {rack: r1}, allocatable: {cpu: "8", memory: 8Gi}}
        - {name: n3, labels: {rack: r2}, allocatable: {cpu: "8", memory: 8Gi}}
        queues: [{name: q, deserved: {cpu: "4"}}]
        """,
        TWO_RACKS,
        """
        jobs:
        - name: old
          queue: q
          tasks: [{name: w, replicas: 1, resources: {cpu: "1"}}]
          running: [{index: 0, node: n2}]
        - name: j
          queue: q
          priorityClassName: high
          tasks: [{name: w, replicas: 2, resources: {cpu: "2"}}]
        """,
    )
    plan = checked(
        inst,
        Plan(
            placements=(Placement("default/j-w-0", "n1", ()), Placement("default/j-w-1", "n3", ()))
        ),
    )
    assert stages(inst, plan).as_tuple() == (9000, 10002250, -2, -2)


# -- the model's stage expressions agree with evaluate -------------------------------------

MIXED = """
    scheduler:
      actions: "enqueue, allocate, reclaim"
      tiers:
      - plugins: [{name: priority}, {name: gang}, {name: conformance}]
      - plugins:
        - {name: predicates}
        - {name: capacity}
        - {name: binpack}
        - {name: deviceshare, arguments: {deviceshare.VGPUEnable: true}}
    priorityClasses: [{name: high, value: 100}]
    nodes:
    - name: n1
      labels: {rack: r1}
      allocatable: {cpu: "16", memory: 64Gi}
      gpus:
      - {id: A0, index: 0, type: NVIDIA-A100, memory: 10000}
      - {id: A1, index: 1, type: NVIDIA-A100, memory: 10000}
    - name: n2
      labels: {rack: r1}
      allocatable: {cpu: "16", memory: 64Gi}
      gpus:
      - {id: B0, index: 0, type: NVIDIA-A100, memory: 10000}
      - {id: B1, index: 1, type: NVIDIA-A100, memory: 10000}
    - {name: n3, labels: {rack: r2}, allocatable: {cpu: "16", memory: 64Gi}}
    queues:
    - {name: qa, deserved: {memory: "3000000000", nvidia.com/gpu: 2}}
    - {name: qb, deserved: {cpu: "6"}}
    """
MIXED_JOBS = """
    jobs:
    - name: bulk
      queue: qb
      minAvailable: 1
      tasks: [{name: w, replicas: 3, resources: {cpu: "5", memory: "1500000000"}}]
      running: [{index: 0, node: n3}, {index: 1, node: n3}, {index: 2, node: n3}]
    - name: share
      queue: qa
      minAvailable: 2
      tasks:
      - name: w
        replicas: 3
        resources:
          cpu: "1"
          memory: "1500000001"
          nvidia.com/gpu: 1
          nvidia.com/gpumem: 3000
          nvidia.com/gpucores: 20
    - name: whole
      queue: qa
      priorityClassName: high
      tasks: [{name: w, replicas: 1, resources: {cpu: "2", memory: 1Gi, nvidia.com/gpu: 2}}]
    - name: cpus
      queue: qb
      minAvailable: 2
      tasks: [{name: w, replicas: 3, resources: {cpu: "6", memory: "999999999"}}]
    """


AGREEMENT = [
    pytest.param(lambda: instance(MIXED, TWO_RACKS, MIXED_JOBS), id="mixed"),
    pytest.param(lambda: load(str(DEMO)), id="demo"),
]


@pytest.mark.parametrize("make", AGREEMENT)
@pytest.mark.parametrize("mode", ["lexicographic", "weighted"])
def test_solver_stage_values_agree_with_evaluate(make: Callable[[], Instance], mode: str) -> None:
    """At an optimum every auxiliary sits at its true value, so on the per-node model (one
    class per node) the stage values of the solver's own expressions at its solution equal
    ``evaluate`` of the plan read back from that solution, stage by stage: memory in
    rounded-up MiB on both sides (the mixed instance uses byte amounts that are not whole
    MiB), fills floored the same way, the LCA level, opened devices (whole-GPU pods counted,
    not chosen, in the model) and nodes. The search starts from the empty plan, so the plan
    is the solver's own even where greedy is already optimal."""
    inst = make()
    model = CpsatModel(inst, options(objective=mode, aggregate=False))
    result = model.search(model.hint_plan(Plan(instance=inst.name)), 20.0, Progress())
    assert result.values is not None
    assert set(result.statuses.values()) == {"OPTIMAL"}
    expansion = expand(model.vars, result.values)
    assert not expansion.failed_classes
    plan = checked(inst, plan_from(model.vars, result.values, expansion, inst, 0))
    assert plan.placements
    values = evaluate(model.data, plan).as_dict()
    assert {s: value_of(model.stages[s], result.values) for s in STAGES} == values


@pytest.mark.parametrize("make", AGREEMENT)
def test_class_model_stage_values_bound_evaluate(make: Callable[[], Instance]) -> None:
    """With node classes the first three stages are still exact, and packing counts opened
    nodes and devices as a class-wide bound, so the model's packing value can only be
    optimistic: at the optimum, model ≥ ``evaluate`` on packing, equal on the rest."""
    inst = make()
    model = CpsatModel(inst, options())
    result = model.search(model.hint_plan(Plan(instance=inst.name)), 20.0, Progress())
    assert result.values is not None
    expansion = expand(model.vars, result.values)
    plan = checked(inst, plan_from(model.vars, result.values, expansion, inst, 0))
    values = evaluate(model.data, plan).as_dict()
    model_values = {s: value_of(model.stages[s], result.values) for s in STAGES}
    assert {s: model_values[s] for s in STAGES[:3]} == {s: values[s] for s in STAGES[:3]}
    assert model_values["packing"] >= values["packing"]


@pytest.mark.parametrize("make", AGREEMENT)
def test_hinted_stage_values_agree_with_evaluate(make: Callable[[], Instance]) -> None:
    """The hint of any plan sets every auxiliary to the value its derivation gives, which is
    the value the model's optimum would give it; so on the per-node model each stage
    expression evaluated at the greedy plan's hint equals ``evaluate`` of the greedy plan (no
    solve involved)."""
    inst = make()
    floor = greedy(inst)
    model = CpsatModel(inst, options(aggregate=False))
    hint = model.hint_plan(floor)
    expected = evaluate(model.data, floor).as_dict()
    assert {s: value_of(model.stages[s], hint) for s in STAGES} == expected


def test_the_ranking_orders_stages_first_to_last_or_by_their_weighted_sum() -> None:
    """Lexicographic: one more unit of work beats any packing; weighted with scales 10 and 1,
    work 3 + packing 5 (35) loses to work 4 + packing 0 (40) and beats work 3 + packing 4."""
    more_work = StageValues(work=4, fairness=0, topology=0, packing=0)
    more_packing = StageValues(work=3, fairness=0, topology=0, packing=5)
    lexicographic = Ranking(("work", "packing"))
    assert lexicographic.score(more_work) > lexicographic.score(more_packing)
    weighted = Ranking(("work", "packing"), {"work": 10, "packing": 1})
    assert weighted.score(more_packing) == (35,)
    assert weighted.score(more_work) > weighted.score(more_packing)
    less_packing = StageValues(work=3, fairness=0, topology=0, packing=4)
    assert weighted.score(more_packing) > weighted.score(less_packing)
