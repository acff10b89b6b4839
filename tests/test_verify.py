"""The verifier, one rule at a time.

Every test starts from ``tests/data/verify/base.yaml`` (read its header), changes one thing and
writes a plan that breaks exactly one rule, so the expected violation list is that one rule and
nothing else; the docstrings say why the other rules hold. Amounts: n1–n3 have 8 cpu, 32Gi and
two 40000 MiB GPUs with 10 slots and 100 cores; ``shared`` pods book 10000 MiB / 30 cores,
``whole`` pods 40000 MiB / 100 cores (HAMi's webhook makes a bare ``nvidia.com/gpu: 1`` a whole
card, hami-gpu.md pitfall 4). team-a's realCapability is research's 4 GPUs (inherited).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.errors import InputError
from models.instance import Instance
from models.load import from_dict, load
from models.workload import DeviceShare
from optimizer.plan import Eviction, Pipelined, Placement, Plan
from optimizer.verify import RULES, Violation, format_violations, verify

BASE = Path(__file__).parent / "data" / "verify" / "base.yaml"
DEMO = Path(__file__).parent.parent / "instances" / "demo.yaml"

Doc = dict[str, Any]


def build(edit: Callable[[Doc], None] | None = None) -> Instance:
    """The base instance, after ``edit`` changed its document."""
    doc = yaml.safe_load(BASE.read_text())
    if edit is not None:
        edit(doc)
    return from_dict(doc, str(BASE))


def find(doc: Doc, section: str, name: str) -> Doc:
    return next(x for x in doc[section] if x["name"] == name)


def task(doc: Doc, job: str) -> Doc:
    return find(doc, "jobs", job)["tasks"][0]


def place(pod: str, node: str, *devices: tuple[str, int, int]) -> Placement:
    """A placement of ``default/<pod>``; devices given → explicit, none → left to the verifier."""
    shares = tuple(DeviceShare(i, m, c) for i, m, c in devices)
    return Placement(f"default/{pod}", node, shares or None)


def evict(pod: str, node: str, reason: str = "reclaim", namespace: str = "default") -> Eviction:
    return Eviction(f"{namespace}/{pod}", node, reason)


def rules(instance: Instance, *placements: Placement, **sections: Any) -> list[str]:
    plan = Plan(placements=placements, **sections)
    return [v.rule for v in verify(instance, plan)]


def violations(instance: Instance, *placements: Placement, **sections: Any) -> list[Violation]:
    return verify(instance, Plan(placements=placements, **sections))


SHARE = ("GPU-1a", 10000, 30)
WHOLE_1A = ("GPU-1a", 40000, 100)


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


# -- node-capacity, pod-count -------------------------------------------------------------------


def test_node_capacity() -> None:
    """solo asks for 9 cpu; n1 has 8. Memory 1Gi ≤ 32Gi, 1 pod ≤ 4; the queue has no cpu limit."""

    def edit(doc: Doc) -> None:
        task(doc, "solo")["resources"]["cpu"] = "9"

    found = violations(build(edit), place("solo-main-0", "n1"))
    assert [v.rule for v in found] == ["node-capacity"]
    assert found[0].message == "node n1: cpu 9 > allocatable 8"
    assert found[0].objects == ("n1",)


def test_node_capacity_counts_a_missing_resource_as_zero() -> None:
    """A pod asking for example.com/fpga on z1, which has none: 1 > 0. No quota plugin is
    configured (capacity removed), because realCapability would refuse it too."""

    def edit(doc: Doc) -> None:
        task(doc, "solo")["resources"]["example.com/fpga"] = 1
        tier = doc["scheduler"]["tiers"][1]["plugins"]
        tier[:] = [p for p in tier if p["name"] != "capacity"]

    found = violations(build(edit), place("solo-main-0", "n3"))
    assert [v.message for v in found] == ["node n3: example.com/fpga 1 > allocatable 0"]


def test_node_capacity_counts_running_pods_but_not_evicted_ones() -> None:
    """batch runs three 1-cpu pods on n2. solo with 6 cpu → 9 > 8; evicting batch-w-0 → 8 ≤ 8."""

    def edit(doc: Doc) -> None:
        task(doc, "solo")["resources"]["cpu"] = "6"

    instance = build(edit)
    assert rules(instance, place("solo-main-0", "n2")) == ["node-capacity"]
    assert rules(instance, place("solo-main-0", "n2"), evictions=(evict("batch-w-0", "n2"),)) == []


def test_node_over_committed_before_the_plan_is_not_reported_without_placements() -> None:
    """batch's running pods ask for 3 × 5 cpu on n2 (15 > 8). A plan that places solo on n1
    does not touch n2, so n2 is not judged; placing solo on n2 is judged and reported."""

    def edit(doc: Doc) -> None:
        task(doc, "batch")["resources"]["cpu"] = "5"

    instance = build(edit)
    assert rules(instance, place("solo-main-0", "n1")) == []
    assert rules(instance, place("solo-main-0", "n2")) == ["node-capacity"]


def test_pod_count() -> None:
    """solo gets 5 replicas (minAvailable defaults to 5, all placed); n1 takes 4 pods. cpu 5 ≤ 8."""

    def edit(doc: Doc) -> None:
        task(doc, "solo")["replicas"] = 5

    instance = build(edit)
    found = violations(instance, *(place(f"solo-main-{i}", "n1") for i in range(5)))
    assert [v.message for v in found] == ["node n1: 5 pods > pod capacity 4"]
    assert (
        rules(instance, *(place(f"solo-main-{i}", "n1" if i < 4 else "n2") for i in range(5))) == []
    )


# -- gpu-capacity -------------------------------------------------------------------------------


def test_gpu_capacity_memory() -> None:
    """Two shared pods of 30000 MiB on GPU-1a: 60000 > 40000. Cores 60, slots 2 are fine."""

    def edit(doc: Doc) -> None:
        task(doc, "shared")["resources"]["nvidia.com/gpumem"] = 30000

    found = violations(
        build(edit),
        place("shared-w-0", "n1", ("GPU-1a", 30000, 30)),
        place("shared-w-1", "n1", ("GPU-1a", 30000, 30)),
    )
    assert [v.message for v in found] == ["GPU GPU-1a on node n1: memory 60000 MiB > 40000 MiB"]
    assert found[0].rule == "gpu-capacity"


def test_gpu_capacity_cores() -> None:
    """Two shared pods of 60 cores on GPU-1a: 120 > 100 (memory 20000, slots 2 fine)."""

    def edit(doc: Doc) -> None:
        task(doc, "shared")["resources"]["nvidia.com/gpucores"] = 60

    found = violations(
        build(edit),
        place("shared-w-0", "n1", ("GPU-1a", 10000, 60)),
        place("shared-w-1", "n1", ("GPU-1a", 10000, 60)),
    )
    assert [v.message for v in found] == ["GPU GPU-1a on node n1: cores 120 > 100"]


def test_gpu_capacity_slots() -> None:
    """GPU-1a has one time-slice (count 1); two shared pods take two slots."""

    def edit(doc: Doc) -> None:
        find(doc, "nodes", "n1")["gpus"][0]["count"] = 1

    found = violations(
        build(edit), place("shared-w-0", "n1", SHARE), place("shared-w-1", "n1", SHARE)
    )
    assert [v.message for v in found] == ["GPU GPU-1a on node n1: slots 2 > 1"]


def test_gpu_capacity_booking_must_match_the_request() -> None:
    """shared-w-0 asks for 10000 MiB and 30 cores but the plan books 5000 MiB on GPU-1a."""
    found = violations(build(), place("shared-w-0", "n1", ("GPU-1a", 5000, 30)))
    assert [v.rule for v in found] == ["gpu-capacity"]
    assert found[0].message == (
        "pod default/shared-w-0 on GPU GPU-1a (node n1) books 5000 MiB and 30 cores; its request "
        "books 10000 MiB and 30 cores"
    )


def test_gpu_capacity_percentage_is_resolved_per_device() -> None:
    """gpumem-percentage 25 on a 40000 MiB card books floor(40000·25/100) = 10000 MiB; cores
    are given (30), so HAMi injects nothing. Booking 10000 is right, 10001 is not."""

    def edit(doc: Doc) -> None:
        resources = task(doc, "shared")["resources"]
        del resources["nvidia.com/gpumem"]
        resources["nvidia.com/gpumem-percentage"] = 25

    instance = build(edit)
    assert rules(instance, place("shared-w-0", "n1", ("GPU-1a", 10000, 30))) == []
    assert rules(instance, place("shared-w-0", "n1", ("GPU-1a", 10001, 30))) == ["gpu-capacity"]


def test_gpu_capacity_number_of_devices_must_match() -> None:
    """shared-w-0 asks for one GPU and is given two (each booked correctly, both distinct)."""
    found = violations(build(), place("shared-w-0", "n1", SHARE, ("GPU-1b", 10000, 30)))
    assert [v.message for v in found] == [
        "pod default/shared-w-0: 2 GPU(s) given on node n1, its request needs 1"
    ]


def test_gpu_capacity_non_gpu_pod_given_devices() -> None:
    """solo requests no GPU; giving it GPU-1a (0 MiB, 0 cores) is still wrong."""
    found = violations(build(), place("solo-main-0", "n1", ("GPU-1a", 0, 0)))
    assert [v.message for v in found] == [
        "pod default/solo-main-0 requests no GPU but is given GPU-1a on node n1"
    ]


def test_gpu_capacity_open_placements_that_pack() -> None:
    """Devices left open: whole-w-0 takes one card alone, the two shared pods share the other
    (20000 MiB, 60 cores). Node: 3 pods, 3 cpu; team-a 3 GPUs ≤ 4."""
    assert (
        rules(
            build(),
            place("whole-w-0", "n1"),
            place("shared-w-0", "n1"),
            place("shared-w-1", "n1"),
        )
        == []
    )


def test_gpu_capacity_open_placements_that_cannot_pack() -> None:
    """Two whole cards take both of n1's devices exclusively; a shared pod has nowhere to go,
    although the node's nvidia.com/gpu allocatable (20 slots) would allow 3."""
    found = violations(
        build(),
        place("whole-w-0", "n1"),
        place("whole-w-1", "n1"),
        place("shared-w-0", "n1"),
    )
    assert [v.rule for v in found] == ["gpu-capacity"]
    assert found[0].objects == (
        "n1",
        "default/whole-w-0",
        "default/whole-w-1",
        "default/shared-w-0",
    )


def test_gpu_capacity_open_placement_sees_explicit_ones() -> None:
    """whole-w-0 is given GPU-1a explicitly; whole-w-1 (open) then needs GPU-1b, which is free —
    but not when GPU-1b is unhealthy (the search respects the device masks)."""
    assert rules(build(), place("whole-w-0", "n1", WHOLE_1A), place("whole-w-1", "n1")) == []

    def edit(doc: Doc) -> None:
        find(doc, "nodes", "n1")["gpus"][1]["health"] = False

    assert rules(build(edit), place("whole-w-0", "n1", WHOLE_1A), place("whole-w-1", "n1")) == [
        "gpu-capacity"
    ]


def test_gpu_capacity_open_multi_gpu_container_needs_distinct_devices() -> None:
    """shared asks for 2 GPUs of 10000 MiB / 30 cores. n1 has two cards: it packs. With GPU-1b
    unhealthy only GPU-1a is left, which has room for both shares but must not take both."""

    def two(doc: Doc) -> None:
        task(doc, "shared")["resources"]["nvidia.com/gpu"] = 2

    def two_one_healthy(doc: Doc) -> None:
        two(doc)
        find(doc, "nodes", "n1")["gpus"][1]["health"] = False

    assert rules(build(two), place("shared-w-0", "n1")) == []
    assert rules(build(two_one_healthy), place("shared-w-0", "n1")) == ["gpu-capacity"]


def test_gpu_capacity_open_placements_search_is_exact_on_a_tight_mix() -> None:
    """Four open pods on n1 (2 cards of 40000 MiB, 100 cores): two of 30000 MiB / 10 cores and
    two of 10000 MiB / 90 cores. Greedy "big memory first on the first card" would put both
    30000s on GPU-1a and fail; the only packing pairs one of each on each card (40000 MiB,
    100 cores). A fifth 10000 MiB / 90-core pod cannot fit anywhere."""

    def edit(doc: Doc) -> None:
        t = task(doc, "shared")
        t["replicas"] = 3
        t["resources"].update({"nvidia.com/gpumem": 10000, "nvidia.com/gpucores": 90})
        w = task(doc, "whole")
        w["resources"].update({"nvidia.com/gpumem": 30000, "nvidia.com/gpucores": 10})
        find(doc, "nodes", "n1")["allocatable"]["pods"] = 10
        find(doc, "queues", "research")["capability"]["nvidia.com/gpu"] = 10

    instance = build(edit)
    four = [place(p, "n1") for p in ("whole-w-0", "whole-w-1", "shared-w-0", "shared-w-1")]
    assert rules(instance, *four) == []
    assert rules(instance, *four, place("shared-w-2", "n1")) == ["gpu-capacity"]


def test_gpu_capacity_open_placements_keep_the_zero_core_rule() -> None:
    """Two 50-core shared pods and one 0-core pod, devices open. On a node with one usable card
    (GPU-1b unhealthy) the zero-core pod would sit beside 100 used cores: no valid assignment.
    With both cards it goes to the other one."""

    def edit(doc: Doc) -> None:
        task(doc, "shared")["resources"]["nvidia.com/gpucores"] = 50
        task(doc, "whole")["resources"].update(
            {"nvidia.com/gpumem": 1000, "nvidia.com/gpucores": 0}
        )

    def one_card(doc: Doc) -> None:
        edit(doc)
        find(doc, "nodes", "n1")["gpus"][1]["health"] = False

    plan = [place(p, "n1") for p in ("shared-w-0", "shared-w-1", "whole-w-0")]
    assert rules(build(edit), *plan) == []
    assert rules(build(one_card), *plan) == ["gpu-capacity"]


# -- gpu-distinct, gpu-exclusive, gpu-filter ----------------------------------------------------


def test_gpu_distinct() -> None:
    """shared asks for 2 GPUs and is given GPU-1a twice. GPU-1a then carries 2 slots, 20000
    MiB and 60 cores, all within limits; team-a holds 2 GPUs ≤ 4."""

    def edit(doc: Doc) -> None:
        task(doc, "shared")["resources"]["nvidia.com/gpu"] = 2

    found = violations(build(edit), place("shared-w-0", "n1", SHARE, SHARE))
    assert [v.rule for v in found] == ["gpu-distinct"]
    assert (
        found[0].message == "pod default/shared-w-0: GPU GPU-1a is given 2 times to one container"
    )


def test_gpu_exclusive_whole_card_must_be_alone() -> None:
    """whole books 1000 MiB and 100 cores (exclusive on a 100-core card); shared books 0 cores.
    Together on GPU-1a: 2 slots, 11000 MiB, 100 cores, all within limits, but the exclusive
    assignment is not alone. (The zero-core rule is broken too; one violation per device.)"""

    def edit(doc: Doc) -> None:
        task(doc, "whole")["resources"].update(
            {"nvidia.com/gpumem": 1000, "nvidia.com/gpucores": 100}
        )
        task(doc, "shared")["resources"]["nvidia.com/gpucores"] = 0

    found = violations(
        build(edit),
        place("whole-w-0", "n1", ("GPU-1a", 1000, 100)),
        place("shared-w-0", "n1", ("GPU-1a", 10000, 0)),
    )
    assert [v.rule for v in found] == ["gpu-exclusive"]
    assert found[0].message == (
        "GPU GPU-1a on node n1: pod default/whole-w-0 holds it exclusively (cores 100) but it "
        "also carries default/shared-w-0"
    )


def test_gpu_exclusive_zero_cores_beside_a_full_device() -> None:
    """Two whole pods of 50 cores use all 100 cores of GPU-1a; a 0-core shared pod may not join
    them (hami-gpu §3.4). Slots 3, memory 12000, cores 100 are within limits."""

    def edit(doc: Doc) -> None:
        task(doc, "whole")["resources"].update(
            {"nvidia.com/gpumem": 1000, "nvidia.com/gpucores": 50}
        )
        task(doc, "shared")["resources"]["nvidia.com/gpucores"] = 0

    found = violations(
        build(edit),
        place("whole-w-0", "n1", ("GPU-1a", 1000, 50)),
        place("whole-w-1", "n1", ("GPU-1a", 1000, 50)),
        place("shared-w-0", "n1", ("GPU-1a", 10000, 0)),
    )
    assert [v.message for v in found] == [
        "GPU GPU-1a on node n1: pod default/shared-w-0 books 0 cores beside assignments that use "
        "all 100 cores"
    ]


def test_gpu_exclusive_only_on_100_core_devices() -> None:
    """With core scaling GPU-1a has 200 cores: cores 100 is no longer exclusive (pitfall 5), so
    a 100-core and a 30-core assignment (130 ≤ 200) may share it."""

    def edit(doc: Doc) -> None:
        task(doc, "whole")["resources"].update(
            {"nvidia.com/gpumem": 1000, "nvidia.com/gpucores": 100}
        )
        find(doc, "nodes", "n1")["gpus"][0]["cores"] = 200

    plan = (place("whole-w-0", "n1", ("GPU-1a", 1000, 100)), place("shared-w-0", "n1", SHARE))
    assert rules(build(edit), *plan) == []

    def on_100_cores(doc: Doc) -> None:
        task(doc, "whole")["resources"].update(
            {"nvidia.com/gpumem": 1000, "nvidia.com/gpucores": 100}
        )

    assert rules(build(on_100_cores), *plan) == ["gpu-capacity", "gpu-exclusive"]


def _unhealthy(doc: Doc) -> None:
    find(doc, "nodes", "n1")["gpus"][1]["health"] = False


def _amd(doc: Doc) -> None:
    find(doc, "nodes", "n1")["gpus"][1]["type"] = "AMD-MI300"


def _nouse_a100(doc: Doc) -> None:
    task(doc, "shared")["annotations"] = {"nvidia.com/nouse-gputype": "A100"}


def _use_uuid_1a(doc: Doc) -> None:
    task(doc, "shared")["annotations"] = {"nvidia.com/use-gpuuuid": "GPU-1a"}


def _cordoned(doc: Doc) -> None:
    find(doc, "nodes", "n1")["annotations"] = {"hami.io/device-cordon": "GPU-3a, GPU-1b"}


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (_unhealthy, "the device is unhealthy"),
        (_amd, 'type "AMD-MI300" is not an NVIDIA GPU'),
        (_nouse_a100, "the pod's GPU type, UUID or mode annotations exclude it"),
        (_use_uuid_1a, "the pod's GPU type, UUID or mode annotations exclude it"),
        (_cordoned, "the device is cordoned (hami.io/device-cordon)"),
    ],
)
def test_gpu_filter(edit: Callable[[Doc], None], reason: str) -> None:
    """shared-w-0 on GPU-1b, correctly booked, where GPU-1b is unhealthy / not NVIDIA / excluded
    by nouse-gputype (substring "A100") / not in use-gpuuuid / cordoned on its node."""
    found = violations(build(edit), place("shared-w-0", "n1", ("GPU-1b", 10000, 30)))
    assert [v.rule for v in found] == ["gpu-filter"]
    assert found[0].message == f"pod default/shared-w-0 on GPU GPU-1b (node n1): {reason}"


def test_gpu_filter_numa_bind() -> None:
    """shared asks for 2 GPUs with nvidia.com/numa-bind: "true"; GPU-1b sits on NUMA 1, so
    GPU-1a + GPU-1b span two NUMA nodes, and with devices left open n1 has no valid pair;
    n2's two cards share NUMA 0."""

    def edit(doc: Doc) -> None:
        t = task(doc, "shared")
        t["resources"]["nvidia.com/gpu"] = 2
        t["annotations"] = {"nvidia.com/numa-bind": "true"}
        find(doc, "nodes", "n1")["gpus"][1]["numa"] = 1

    instance = build(edit)
    found = violations(instance, place("shared-w-0", "n1", SHARE, ("GPU-1b", 10000, 30)))
    assert [v.rule for v in found] == ["gpu-filter"]
    assert "span NUMA nodes 0, 1" in found[0].message
    assert rules(instance, place("shared-w-0", "n1")) == ["gpu-capacity"]
    assert rules(instance, place("shared-w-0", "n2")) == []


def test_gpu_filter_ignores_running_pods() -> None:
    """A running pod on an unhealthy device is a fact; placing another pod on the node (on the
    healthy card) judges only the new assignment."""

    def edit(doc: Doc) -> None:
        find(doc, "nodes", "n1")["gpus"][1]["health"] = False
        find(doc, "jobs", "shared")["running"] = [
            {"index": 1, "node": "n1", "gpus": [{"id": "GPU-1b", "memory": 10000, "cores": 30}]}
        ]

    assert rules(build(edit), place("shared-w-0", "n1", SHARE)) == []


# -- selector, taint ----------------------------------------------------------------------------


def test_selector_node_selector() -> None:
    """solo wants rack=r2 and is placed on n1 (rack=r1); on n3 it is fine."""

    def edit(doc: Doc) -> None:
        task(doc, "solo")["nodeSelector"] = {"rack": "r2"}

    instance = build(edit)
    found = violations(instance, place("solo-main-0", "n1"))
    assert [v.message for v in found] == [
        "pod default/solo-main-0 on node n1: nodeSelector rack=r2 does not match"
    ]
    assert rules(instance, place("solo-main-0", "n3")) == []


def test_selector_required_affinity_terms_are_ored() -> None:
    """Terms [rack In (r9)] OR [rack NotIn (r1)]: n1 (r1) matches neither, n3 (r2) the second."""

    def edit(doc: Doc) -> None:
        terms = [
            {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r9"]}]},
            {"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["r1"]}]},
        ]
        task(doc, "solo")["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
        }

    instance = build(edit)
    assert rules(instance, place("solo-main-0", "n1")) == ["selector"]
    assert rules(instance, place("solo-main-0", "n3")) == []


def test_taint() -> None:
    """n1 carries dedicated=gpu:NoSchedule; solo has no toleration."""

    def edit(doc: Doc) -> None:
        find(doc, "nodes", "n1")["taints"] = [
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
        ]

    found = violations(build(edit), place("solo-main-0", "n1"))
    assert [v.message for v in found] == [
        "pod default/solo-main-0 on node n1: untolerated taint dedicated=gpu:NoSchedule"
    ]


def test_taint_tolerated_or_only_preferred() -> None:
    """A matching toleration, or a PreferNoSchedule taint, lets solo onto n1."""

    def tolerated(doc: Doc) -> None:
        find(doc, "nodes", "n1")["taints"] = [
            {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}
        ]
        task(doc, "solo")["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]

    def preferred(doc: Doc) -> None:
        find(doc, "nodes", "n1")["taints"] = [{"key": "x", "effect": "PreferNoSchedule"}]

    assert rules(build(tolerated), place("solo-main-0", "n1")) == []
    assert rules(build(preferred), place("solo-main-0", "n1")) == []


def test_taint_unschedulable_node() -> None:
    """A cordoned (unschedulable) n1 takes no new pod, unless the pod tolerates
    node.kubernetes.io/unschedulable:NoSchedule."""

    def cordoned(doc: Doc) -> None:
        find(doc, "nodes", "n1")["unschedulable"] = True

    def tolerating(doc: Doc) -> None:
        cordoned(doc)
        task(doc, "solo")["tolerations"] = [
            {
                "key": "node.kubernetes.io/unschedulable",
                "operator": "Exists",
                "effect": "NoSchedule",
            }
        ]

    assert rules(build(cordoned), place("solo-main-0", "n1")) == ["taint"]
    assert rules(build(tolerating), place("solo-main-0", "n1")) == []


# -- gang, topology -----------------------------------------------------------------------------


def test_gang() -> None:
    """Only one of pair's two pods is placed: 1 ready < minAvailable 2."""
    found = violations(build(), place("pair-w-0", "n1"))
    assert [v.message for v in found] == ["job default/pair: 1 pods ready < minAvailable 2"]


def _roles(min_available: int) -> Callable[[Doc], None]:
    def edit(doc: Doc) -> None:
        doc["jobs"].append(
            {
                "name": "ps-job",
                "queue": "team-a",
                "minAvailable": min_available,
                "minTaskMember": {"ps": 1, "worker": 1},
                "tasks": [
                    {"name": "ps", "replicas": 1, "resources": {"cpu": "1"}},
                    {"name": "worker", "replicas": 2, "resources": {"cpu": "1"}},
                ],
            }
        )

    return edit


def test_gang_per_role_minimum() -> None:
    """minAvailable 2 = Σ minTaskMember (ps 1 + worker 1): two workers make 2 ready pods, but
    role ps has 0 < 1."""
    found = violations(
        build(_roles(2)), place("ps-job-worker-0", "n1"), place("ps-job-worker-1", "n1")
    )
    assert [v.message for v in found] == [
        "job default/ps-job: role ps has 0 pods ready < minTaskMember 1"
    ]


def test_gang_per_role_skipped_when_min_available_is_below_the_role_sum() -> None:
    """minAvailable 1 < Σ minTaskMember 2: Volcano skips the role check, one worker is enough."""
    assert rules(build(_roles(1)), place("ps-job-worker-0", "n1")) == []


def test_gang_counts_pending_best_effort_pods_as_ready() -> None:
    """A job of a 1-cpu main pod and an empty-request sidecar, minAvailable 2: placing main is
    enough, since gang counts the pending BestEffort sidecar as ready (spec §3, §9 item 17)."""

    def edit(doc: Doc) -> None:
        doc["jobs"].append(
            {
                "name": "be",
                "queue": "team-a",
                "minAvailable": 2,
                "tasks": [
                    {"name": "main", "replicas": 1, "resources": {"cpu": "1"}},
                    {"name": "sidecar", "replicas": 1},
                ],
            }
        )

    assert rules(build(edit), place("be-main-0", "n1")) == []


def test_gang_counts_running_pods_and_ignores_jobs_without_placements() -> None:
    """batch (minAvailable 1) runs 3 pods: evicting all of them places nothing of batch, so gang
    is not judged (with reason preempt: no budget, no guarantee check)."""
    evictions = tuple(evict(f"batch-w-{i}", "n2", "preempt") for i in range(3))
    assert rules(build(), evictions=evictions) == []


def test_topology_hard() -> None:
    """ring (hard, tier 1) on n1 (rack-1) and n3 (rack-2): lowest common HyperNode spine, tier 2."""
    found = violations(build(), place("ring-w-0", "n1"), place("ring-w-1", "n3"))
    assert [v.message for v in found] == [
        "job default/ring: pods span n1, n3 (lowest common HyperNode spine, tier 2) > "
        "highestTierAllowed 1"
    ]


def test_topology_inside_one_rack_or_one_node() -> None:
    """n1 + n2 are both in rack-1 (tier 1); two pods on one node are tier 0."""
    assert rules(build(), place("ring-w-0", "n1"), place("ring-w-1", "n2")) == []
    assert rules(build(), place("ring-w-0", "n3"), place("ring-w-1", "n3")) == []


def test_topology_soft_or_without_the_plugin_is_not_enforced() -> None:
    """Soft mode never constrains; hard mode needs the network-topology-aware plugin (§9 item 6)."""

    def soft(doc: Doc) -> None:
        find(doc, "jobs", "ring")["networkTopology"]["mode"] = "soft"

    def no_plugin(doc: Doc) -> None:
        tier = doc["scheduler"]["tiers"][1]["plugins"]
        tier[:] = [p for p in tier if p["name"] != "network-topology-aware"]

    for edit in (soft, no_plugin):
        assert rules(build(edit), place("ring-w-0", "n1"), place("ring-w-1", "n3")) == []


# -- queues -------------------------------------------------------------------------------------


def _team_a_one_gpu(doc: Doc) -> None:
    find(doc, "queues", "team-a")["capability"] = {"nvidia.com/gpu": 1}


def test_queue_capability() -> None:
    """team-a capability 1 GPU; two shared pods (1 GPU each) → 2 > 1. research: 2 ≤ 4."""
    found = violations(build(_team_a_one_gpu), place("shared-w-0", "n1"), place("shared-w-1", "n1"))
    assert [v.rule for v in found] == ["queue-capability"]
    assert found[0].message == "queue team-a: nvidia.com/gpu 2 > realCapability 1"


def test_queue_capability_of_an_ancestor() -> None:
    """Three whole GPUs in team-a (3 ≤ 4) and two shared pods in team-b (2 ≤ 4): research
    carries 5 > its capability 4. Devices: n1's two cards, n2 and n3 open."""

    def edit(doc: Doc) -> None:
        task(doc, "whole")["replicas"] = 3
        find(doc, "jobs", "shared")["queue"] = "team-b"

    found = violations(
        build(edit),
        place("whole-w-0", "n1", WHOLE_1A),
        place("whole-w-1", "n1", ("GPU-1b", 40000, 100)),
        place("whole-w-2", "n2"),
        place("shared-w-0", "n3"),
        place("shared-w-1", "n3"),
    )
    assert [v.message for v in found] == ["queue research: nvidia.com/gpu 5 > realCapability 4"]


def test_queue_capability_only_on_resources_the_new_pods_request() -> None:
    """whole runs 2 GPUs in team-a (capability 1) already; solo asks only cpu and memory, which
    team-a does not limit, so placing it is fine. Another GPU pod is not."""

    def edit(doc: Doc) -> None:
        _team_a_one_gpu(doc)
        find(doc, "jobs", "whole")["running"] = [
            {"index": 0, "node": "n1", "gpus": [{"id": "GPU-1a", "memory": 40000, "cores": 100}]},
            {"index": 1, "node": "n2", "gpus": [{"id": "GPU-2a", "memory": 40000, "cores": 100}]},
        ]

    instance = build(edit)
    assert rules(instance, place("solo-main-0", "n3")) == []
    assert rules(instance, place("shared-w-0", "n3")) == ["queue-capability"]


@pytest.mark.parametrize("plugin", [{"name": "capacity"}, {"name": "proportion"}])
def test_queue_capability_flat(plugin: dict[str, str]) -> None:
    """Flat capacity and proportion share realCapability = min_dim(max₀(T − G) + guarantee,
    capability) (§5.2, §5.5): team-a's is 1 GPU, two pods need 2. research is not judged."""

    def edit(doc: Doc) -> None:
        _team_a_one_gpu(doc)
        tier = doc["scheduler"]["tiers"][1]["plugins"]
        tier[:] = [plugin if p["name"] == "capacity" else p for p in tier]

    found = violations(build(edit), place("shared-w-0", "n1"), place("shared-w-1", "n1"))
    assert [v.message for v in found] == ["queue team-a: nvidia.com/gpu 2 > realCapability 1"]


def test_queue_capability_without_a_quota_plugin() -> None:
    def edit(doc: Doc) -> None:
        _team_a_one_gpu(doc)
        tier = doc["scheduler"]["tiers"][1]["plugins"]
        tier[:] = [p for p in tier if p["name"] != "capacity"]

    assert rules(build(edit), place("shared-w-0", "n1"), place("shared-w-1", "n1")) == []


def test_queue_capability_closed_queue() -> None:
    """team-a is Closed: solo may not start in it, whatever the quota."""

    def edit(doc: Doc) -> None:
        find(doc, "queues", "team-a")["state"] = "Closed"

    found = violations(build(edit), place("solo-main-0", "n1"))
    assert [v.message for v in found] == [
        "queue team-a is Closed: it accepts no new pods (default/solo-main-0)"
    ]


def test_queue_leaf() -> None:
    """The loader refuses jobs in non-leaf queues, so the instance is changed after loading:
    solo moves to research, which has children. research's quota (4 GPUs) is not touched."""
    instance = build()
    jobs = tuple(
        dataclasses.replace(j, queue="research") if j.name == "solo" else j for j in instance.jobs
    )
    found = violations(instance.replace(jobs=jobs), place("solo-main-0", "n1"))
    assert [v.message for v in found] == [
        "job default/solo gets pods but its queue research is not a leaf (children: team-a, team-b)"
    ]


# -- TDM ----------------------------------------------------------------------------------------


def _late(doc: Doc) -> None:
    doc["now"] = "2026-11-30T22:00:00Z"


def test_tdm_window() -> None:
    """At 22:00 UTC the window 08:00-21:00 is closed; scavenger is revocable."""
    found = violations(build(_late), place("scavenger-w-0", "z1"))
    assert [v.message for v in found] == [
        "pod default/scavenger-w-0 on node z1: revocable zone rz1 (08:00-21:00) is not active at "
        "2026-11-30T22:00:00+00:00"
    ]


def test_tdm_window_bounds_are_inclusive() -> None:
    """Volcano compares whole seconds inclusively: 21:00:00 is still inside 08:00-21:00."""

    def edit(doc: Doc) -> None:
        doc["now"] = "2026-11-30T21:00:00Z"

    assert rules(build(edit), place("scavenger-w-0", "z1")) == []


def test_tdm_revocable_only() -> None:
    """solo is not revocable (no zone annotation, volcano.sh/preemptable unset); window open."""
    found = violations(build(), place("solo-main-0", "z1"))
    assert [v.message for v in found] == [
        "pod default/solo-main-0 on node z1 (revocable zone rz1) is not revocable"
    ]


def test_tdm_preemptable_annotation_makes_a_pod_revocable() -> None:
    def edit(doc: Doc) -> None:
        task(doc, "solo")["annotations"] = {"volcano.sh/preemptable": "true"}

    assert rules(build(edit), place("solo-main-0", "z1")) == []


def test_tdm_rules_need_the_plugin() -> None:
    """Without the tdm plugin the zone label means nothing: any pod, any time."""

    def edit(doc: Doc) -> None:
        _late(doc)
        tier = doc["scheduler"]["tiers"][1]["plugins"]
        tier[:] = [p for p in tier if p["name"] != "tdm"]

    assert rules(build(edit), place("solo-main-0", "z1")) == []


# -- running-kept -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sections", "message"),
    [
        (
            {"placements": (place("batch-w-0", "n1"),)},
            "pod default/batch-w-0 runs on node n2; placing it on node n1 would move it",
        ),
        (
            {
                "placements": (place("batch-w-0", "n1"),),
                "evictions": (evict("batch-w-0", "n2"),),
            },
            "pod default/batch-w-0 runs on node n2; placing it on node n1 would move it",
        ),
        (
            {"placements": (place("batch-w-0", "n2"),)},
            "pod default/batch-w-0 already runs on node n2; only pending pods are placed",
        ),
        (
            {"evictions": (evict("solo-main-0", "n1"),)},
            "pod default/solo-main-0 is evicted but it is not running",
        ),
        (
            {"evictions": (evict("batch-w-0", "n1"),)},
            "pod default/batch-w-0 is evicted from node n1 but it runs on node n2",
        ),
        (
            {"pipelined": (Pipelined("default/batch-w-0", "n1"),)},
            "pod default/batch-w-0 is pipelined but it is already running",
        ),
        (
            {
                "placements": (place("solo-main-0", "n1"),),
                "pipelined": (Pipelined("default/solo-main-0", "n1"),),
            },
            "pod default/solo-main-0 is both placed and pipelined",
        ),
        (
            {"placements": (place("solo-main-0", "n1"), place("solo-main-0", "n1"))},
            "pod default/solo-main-0 is placed twice",
        ),
    ],
)
def test_running_kept(sections: dict[str, Any], message: str) -> None:
    """A running pod never moves (not even evicted and re-placed in one plan); evictions name a
    running pod and its node; pipelined pods are pending and not placed; a pod is placed once.
    Each plan is otherwise valid: batch pods are preemptable, reclaim is configured and team-a
    has no guarantee; n1 has room."""
    found = verify(build(), Plan(**sections))
    assert [(v.rule, v.message) for v in found] == [("running-kept", message)]


# -- eviction-allowed ---------------------------------------------------------------------------


def _batch(**changes: Any) -> Callable[[Doc], None]:
    def edit(doc: Doc) -> None:
        job = find(doc, "jobs", "batch")
        for key, value in changes.items():
            if key == "task_annotations":
                job["tasks"][0]["annotations"] = value
            else:
                job[key] = value

    return edit


def _with_critical_class(doc: Doc) -> None:
    doc["priorityClasses"] = [{"name": "system-cluster-critical", "value": 2000000000}]
    find(doc, "jobs", "batch")["priorityClassName"] = "system-cluster-critical"


def _no_evicting_action(doc: Doc) -> None:
    doc["scheduler"]["actions"] = "enqueue, allocate, backfill"


def _not_reclaimable(doc: Doc) -> None:
    find(doc, "queues", "team-a")["reclaimable"] = False


@pytest.mark.parametrize(
    ("edit", "namespace", "message"),
    [
        (
            _batch(task_annotations={"volcano.sh/preemptable": "false"}),
            "default",
            "pod default/batch-w-0: it is not preemptable (volcano.sh/preemptable)",
        ),
        (
            _batch(namespace="kube-system"),
            "kube-system",
            "pod kube-system/batch-w-0: conformance protects pods of namespace kube-system",
        ),
        (
            _with_critical_class,
            "default",
            "pod default/batch-w-0: conformance protects priority class system-cluster-critical",
        ),
        (
            _no_evicting_action,
            "default",
            "pod default/batch-w-0: no preempt or reclaim action is configured, and it is not a "
            "TDM eviction from a closed revocable zone",
        ),
        (
            _not_reclaimable,
            "default",
            "pod default/batch-w-0: reclaimed from queue team-a, which is not reclaimable",
        ),
    ],
)
def test_eviction_allowed_victim(edit: Callable[[Doc], None], namespace: str, message: str) -> None:
    """One batch pod reclaimed from n2, where the pod is not preemptable / in kube-system /
    system-cluster-critical / there is no evicting action / team-a is not reclaimable. No
    budget annotation, team-a has no guarantee."""
    found = verify(build(edit), Plan(evictions=(evict("batch-w-0", "n2", namespace=namespace),)))
    assert [(v.rule, v.message) for v in found] == [("eviction-allowed", message)]


def test_eviction_conformance_needs_the_plugin() -> None:
    """Without the conformance plugin Volcano does not protect kube-system pods."""

    def edit(doc: Doc) -> None:
        _batch(namespace="kube-system")(doc)
        doc["scheduler"]["tiers"][0]["plugins"] = [{"name": "priority"}, {"name": "gang"}]

    plan = Plan(evictions=(evict("batch-w-0", "n2", namespace="kube-system"),))
    assert verify(build(edit), plan) == []


def _batch_on_z1(doc: Doc) -> None:
    _no_evicting_action(doc)
    find(doc, "jobs", "batch")["running"] = [{"index": i, "node": "z1"} for i in range(3)]


def test_tdm_eviction_needs_no_action_when_the_zone_is_closed() -> None:
    """batch runs on z1; without preempt/reclaim only TDM may evict, and only once rz1's window
    (08:00-21:00) is closed: at 22:00 yes, at 14:00 no."""

    def late(doc: Doc) -> None:
        _batch_on_z1(doc)
        _late(doc)

    plan = Plan(evictions=(evict("batch-w-0", "z1", "tdm"),))
    assert verify(build(late), plan) == []
    assert [v.rule for v in verify(build(_batch_on_z1), plan)] == ["eviction-allowed"]


def test_eviction_budget_annotation() -> None:
    """jdb-max-unavailable 1 with 3 of 3 pods running: 1 may go; evicting 2 breaks it."""
    instance = build(_batch(annotations={"volcano.sh/jdb-max-unavailable": "1"}))
    two = tuple(evict(f"batch-w-{i}", "n2") for i in range(2))
    found = verify(instance, Plan(evictions=two))
    assert [v.message for v in found] == ["job default/batch: 2 pods evicted > disruption budget 1"]
    assert verify(instance, Plan(evictions=two[:1])) == []


def test_eviction_budget_min_available() -> None:
    """jdb-min-available 1 with 3 running: 3 − 1 = 2 may go; 3 may not."""
    instance = build(_batch(annotations={"volcano.sh/jdb-min-available": "1"}))
    evictions = tuple(evict(f"batch-w-{i}", "n2") for i in range(3))
    assert verify(instance, Plan(evictions=evictions[:2])) == []
    assert [v.rule for v in verify(instance, Plan(evictions=evictions))] == ["eviction-allowed"]


def test_eviction_budget_applies_to_tdm_evictions_by_default() -> None:
    """Without a budget annotation reclaim may take two batch pods, but TDM evicts at most the
    default 1 per job."""
    reclaim = tuple(evict(f"batch-w-{i}", "n2") for i in range(2))
    tdm = tuple(evict(f"batch-w-{i}", "n2", "tdm") for i in range(2))
    assert verify(build(), Plan(evictions=reclaim)) == []
    assert [v.rule for v in verify(build(), Plan(evictions=tdm))] == ["eviction-allowed"]


def _capacity_reclaims(doc: Doc) -> None:
    """gang and conformance stop answering Reclaimable, so capacity's tier decides reclaim."""
    for option in doc["scheduler"]["tiers"][0]["plugins"]:
        if option["name"] in ("gang", "conformance"):
            option["enableReclaimable"] = False


def test_eviction_guarantee() -> None:
    """team-b's guarantee is cpu 2 and steady holds exactly 2 × 1 cpu: reclaiming one leaves 1.
    With capacity deciding reclaim that breaks the guarantee; preempt (inside the queue) does
    not consult the guarantee."""
    instance = build(_capacity_reclaims)
    found = verify(instance, Plan(evictions=(evict("steady-w-0", "n3"),)))
    assert [v.message for v in found] == ["queue team-b: cpu 1 left after evictions < guarantee 2"]
    assert verify(instance, Plan(evictions=(evict("steady-w-0", "n3", "preempt"),))) == []


def test_eviction_guarantee_not_protected_when_gang_tier_decides() -> None:
    """In the base conf gang and conformance answer Reclaimable in tier 1, before capacity: a
    non-empty tier-1 answer is final and capacity's guarantee check is never consulted (spec
    §8.2, §9.4), so Volcano itself may reclaim below a guarantee and the plan is allowed."""
    assert verify(build(), Plan(evictions=(evict("steady-w-0", "n3"),))) == []


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
        "tdm-window",
        "tdm-revocable-only",
        "running-kept",
        "eviction-allowed",
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


# -- the open-device search against explicit assignments ---------------------------------------

_GPU_RULES = {"gpu-capacity", "gpu-distinct", "gpu-exclusive", "gpu-filter"}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    devices=st.lists(
        st.tuples(
            st.sampled_from([20000, 40000]), st.integers(1, 3), st.booleans(), st.integers(0, 1)
        ),
        min_size=1,
        max_size=3,
    ),
    pods=st.lists(
        st.tuples(
            st.integers(1, 2),
            st.sampled_from([10000, 20000, 30000]),
            st.sampled_from([0, 50, 100]),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_open_placements_fit_iff_some_explicit_assignment_is_valid(
    devices: list[tuple[int, int, bool, int]], pods: list[tuple[int, int, int]]
) -> None:
    """The oracle for the search: devices left open are accepted exactly when some explicit
    choice of distinct devices per pod passes every explicit GPU rule. Each pod books its
    absolute gpumem and its gpucores (given, so HAMi injects nothing); bookings are written
    out by hand from that. Devices: memory, slots, health, NUMA; one pod per job."""
    doc: Doc = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "now": "2026-11-30T14:00:00Z",
        "nodes": [
            {
                "name": "n",
                "allocatable": {"cpu": "64", "memory": "64Gi"},
                "gpus": [
                    {
                        "id": f"G{i}",
                        "index": i,
                        "type": "NVIDIA-X",
                        "memory": m,
                        "count": c,
                        "health": h,
                        "numa": numa,
                    }
                    for i, (m, c, h, numa) in enumerate(devices)
                ],
            }
        ],
        "jobs": [
            {
                "name": f"p{k}",
                "tasks": [
                    {
                        "name": "t",
                        "resources": {
                            "nvidia.com/gpu": n,
                            "nvidia.com/gpumem": m,
                            "nvidia.com/gpucores": c,
                        },
                    }
                ],
            }
            for k, (n, m, c) in enumerate(pods)
        ],
    }
    instance = from_dict(doc, "<generated>")
    keys = [f"default/p{k}-t-0" for k in range(len(pods))]
    ids = [f"G{i}" for i in range(len(devices))]
    choices = [list(itertools.combinations(ids, n)) for n, _, _ in pods]
    fits = any(
        not {v.rule for v in verify(instance, Plan(placements=explicit))} & _GPU_RULES
        for combo in itertools.product(*choices)
        for explicit in [
            tuple(
                Placement(key, "n", tuple(DeviceShare(d, m, c) for d in chosen))
                for key, chosen, (_, m, c) in zip(keys, combo, pods, strict=True)
            )
        ]
    )
    open_plan = Plan(placements=tuple(Placement(key, "n") for key in keys))
    open_rules = [v.rule for v in verify(instance, open_plan) if v.rule in _GPU_RULES]
    assert open_rules == ([] if fits else ["gpu-capacity"])
