"""The verifier on whole plans (the base, a plan that uses every rule, the demo) and its
contract: rule names, bad references, the violation record and rule order."""

from __future__ import annotations

import dataclasses

import pytest
from verify_kit import (
    DEMO,
    WHOLE_1A,
    Doc,
    build,
    evict,
    place,
    rules,
    task,
    violations,
)

from models.errors import InputError
from models.load import load
from models.workload import DeviceShare
from optimizer.plan import Eviction, Pipelined, Placement, Plan
from optimizer.verify import RULES, Violation, format_violations, verify

# -- the base and the reference plans ----------------------------------------------------------


def test_base_instance_and_empty_plan_are_clean() -> None:
    """An empty plan changes nothing, so nothing can be its fault."""
    assert verify(build(), Plan()) == []


def test_a_plan_that_uses_every_rule_correctly_is_clean() -> None:
    """solo → n1; the gang pair → n1, n2 (2 ≥ minAvailable 2); ring → n1, n2 (rack-1, tier 1);
    scavenger → z1 (revocable, window 08:00-21:00 open at 14:00); two shared pods on GPU-2b
    (20000 MiB, 60 cores) and a whole card on GPU-1a (alone); batch-w-2 evicted from n2
    (preemptable by default, reclaim configured, team-a has no guarantee). n1 then holds
    solo, pair-0, ring-0, whole-0 = 4 pods (capacity 4), cpu 4 ≤ 8; team-a GPUs 3 ≤ 4."""
    plan_rules = rules(
        build(),
        place("solo-main-0", "n1"),
        place("pair-w-0", "n1"),
        place("pair-w-1", "n2"),
        place("ring-w-0", "n1"),
        place("ring-w-1", "n2"),
        place("scavenger-w-0", "z1"),
        place("shared-w-0", "n2", ("GPU-2b", 10000, 30)),
        place("shared-w-1", "n2", ("GPU-2b", 10000, 30)),
        place("whole-w-0", "n1", WHOLE_1A),
        evictions=(evict("batch-w-2", "n2"),),
    )
    assert plan_rules == []


def demo_plan() -> Plan:
    """A hand-made plan for instances/demo.yaml (8 nodes × 8 A100 80GB, 96 cpu, 768Gi).

    - rl-tuning-actor-0 is reclaimed from node-001 (preemptable by default, reclaim is in the
      actions, team-b has no guarantee, no budget annotation), which frees rack-1.
    - llm-pretrain (hard, tier 1): worker-0 → node-001 and worker-1 → node-002, 8 whole GPUs each
      (81920 MiB, 100 cores: a bare nvidia.com/gpu: 8 is 8 exclusive cards). rack-1 = tier 1.
      Every other rack holds a busy or revocable node, so this is the only rack that works.
    - bert-finetune (soft, gang 4): two pods on node-003's free GPUs 4–7 (rl-tuning-actor-1
      keeps 0–3), two on node-004 with devices left to the verifier (8 free cards).
    - batch-scavenger (revocable "*") → node-008 in zone rz1, open 08:00-21:00 at 14:00 UTC,
      GPUs 0–3 and 4–7.
    - notebooks (20000 MiB, 25 cores each): four on GPU-node-005-0 (80000 ≤ 81920 MiB,
      100 ≤ 100 cores, 4 ≤ 10 slots, none exclusive), two on node-006, devices open (7 free).
    - big-train stays pending: no spine has four free nodes.
    Queues: team-a holds 16 GPUs ≤ 56 (research's capability, inherited); team-b holds
    4 + 8 + 8 = 20 ≤ 48 (56 − team-a's guarantee 8); research 36 ≤ 56; prod/inference are
    unlimited. Node cpu: node-003 16 + 2·8 = 32 ≤ 96; node-008 2·16 = 32.
    """

    def whole(node: str, indexes: range) -> tuple[DeviceShare, ...]:
        return tuple(DeviceShare(f"GPU-{node}-{i}", 81920, 100) for i in indexes)

    notebook = (DeviceShare("GPU-node-005-0", 20000, 25),)
    return Plan(
        placements=(
            Placement("default/llm-pretrain-worker-0", "node-001", whole("node-001", range(8))),
            Placement("default/llm-pretrain-worker-1", "node-002", whole("node-002", range(8))),
            Placement("default/bert-finetune-worker-0", "node-003", whole("node-003", range(4, 6))),
            Placement("default/bert-finetune-worker-1", "node-003", whole("node-003", range(6, 8))),
            Placement("default/bert-finetune-worker-2", "node-004"),
            Placement("default/bert-finetune-worker-3", "node-004"),
            Placement("default/batch-scavenger-worker-0", "node-008", whole("node-008", range(4))),
            Placement(
                "default/batch-scavenger-worker-1", "node-008", whole("node-008", range(4, 8))
            ),
            *(Placement(f"default/notebooks-nb-{i}", "node-005", notebook) for i in range(4)),
            Placement("default/notebooks-nb-4", "node-006"),
            Placement("default/notebooks-nb-5", "node-006"),
        ),
        evictions=(Eviction("default/rl-tuning-actor-0", "node-001", "reclaim"),),
    )


def test_hand_made_demo_plan_is_valid() -> None:
    """See :func:`demo_plan` for why every rule holds."""
    assert verify(load(DEMO), demo_plan()) == []


def test_demo_plan_without_the_eviction_breaks_node_001() -> None:
    """Keeping rl-tuning-actor-0 leaves its four whole cards on GPU-node-001-0..3 beside
    llm-pretrain-worker-0's: each of those devices has two assignments, one of them exclusive
    (gpu-exclusive), and 81920 + 81920 MiB > 81920, 200 cores > 100 (gpu-capacity, twice per
    device). Node cpu 48 ≤ 96 still holds."""
    plan = demo_plan().replace(evictions=())
    found = verify(load(DEMO), plan)
    assert {v.rule for v in found} == {"gpu-capacity", "gpu-exclusive"}
    assert sum(v.rule == "gpu-exclusive" for v in found) == 4
    assert "GPU GPU-node-001-0 on node node-001: memory 163840 MiB > 81920 MiB" in {
        v.message for v in found
    }


def test_demo_plan_in_two_racks_breaks_topology() -> None:
    """llm-pretrain on node-002 and node-004 (both idle) spans rack-1 and rack-2, whose lowest
    common HyperNode is spine-1 (tier 2) > highestTierAllowed 1."""
    found = violations(
        load(DEMO),
        Placement("default/llm-pretrain-worker-0", "node-002"),
        Placement("default/llm-pretrain-worker-1", "node-004"),
    )
    assert [v.rule for v in found] == ["topology-hard"]
    assert found[0].message == (
        "job default/llm-pretrain: pods span node-002, node-004 (lowest common HyperNode "
        "spine-1, tier 2) > highestTierAllowed 1"
    )


# -- the contract -------------------------------------------------------------------------------


def test_rule_names_are_design_section_6s() -> None:
    assert RULES == (
        "node-capacity",
        "pod-count",
        "gpu-capacity",
        "gpu-distinct",
        "gpu-exclusive",
        "gpu-filter",
        "selector",
        "taint",
        "gang",
        "topology-hard",
        "queue-capability",
        "queue-leaf",
        "queue-enqueue",
        "tdm-window",
        "tdm-revocable-only",
        "running-kept",
        "eviction-allowed",
        "pod-affinity",
        "pod-anti-affinity",
        "topology-spread",
    )


@pytest.mark.parametrize(
    ("plan", "field"),
    [
        (Plan(placements=(Placement("default/nobody-w-0", "n1"),)), "placements[0].pod"),
        (Plan(placements=(Placement("default/solo-main-0", "n9"),)), "placements[0].node"),
        (
            Plan(
                placements=(Placement("default/shared-w-0", "n1", (DeviceShare("GPU-2a", 1, 1),)),)
            ),
            "placements[0].gpus[0].id",
        ),
        (Plan(evictions=(Eviction("default/ghost", "n1"),)), "evictions[0].pod"),
        (Plan(pipelined=(Pipelined("default/solo-main-0", "n0"),)), "pipelined[0].node"),
    ],
)
def test_unknown_references_are_bad_input(plan: Plan, field: str) -> None:
    """A plan naming what the instance lacks is an input error (exit 2), not a violation."""
    with pytest.raises(InputError) as caught:
        verify(build(), plan)
    assert [p.field for p in caught.value.problems] == [field]


def test_violation_and_format() -> None:
    v = Violation("pod-count", ("n1",), "node n1: 5 pods > pod capacity 4")
    w = Violation("gang", ("default/pair",), "job default/pair: 1 pods ready < minAvailable 2")
    assert str(v) == "pod-count: node n1: 5 pods > pod capacity 4"
    assert format_violations([v, w]) == (
        "pod-count: node n1: 5 pods > pod capacity 4\n"
        "gang: job default/pair: 1 pods ready < minAvailable 2\n"
    )
    assert format_violations([]) == ""
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.rule = "x"  # type: ignore[misc]


def test_violations_come_in_rule_order() -> None:
    """solo with 9 cpu on z1 breaks node-capacity and tdm-revocable-only; pair-w-0 alone
    breaks gang: reported in DESIGN §6 order."""

    def edit(doc: Doc) -> None:
        task(doc, "solo")["resources"]["cpu"] = "9"

    assert rules(build(edit), place("solo-main-0", "z1"), place("pair-w-0", "n1")) == [
        "node-capacity",
        "gang",
        "tdm-revocable-only",
    ]
