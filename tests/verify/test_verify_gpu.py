"""GPU rules: gpu-capacity (with the exact search for open assignments), gpu-distinct,
gpu-exclusive, gpu-filter."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verify_kit import (
    SHARE,
    WHOLE_1A,
    Doc,
    build,
    find,
    place,
    rules,
    task,
    violations,
)

from models.load import from_dict
from models.workload import DeviceShare
from optimizer.plan import Placement, Plan
from optimizer.verify import verify

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


# -- HAMi's mutex GPU policy (part of gpu-exclusive) ----------------------------------------------


def _mutex(doc: Doc) -> None:
    """shared pods carry ``hami.io/gpu-scheduler-policy: mutex``."""
    task(doc, "shared")["annotations"] = {"hami.io/gpu-scheduler-policy": "mutex"}


def test_gpu_exclusive_mutex_pods_do_not_share_a_device() -> None:
    """``NvidiaGPUDevices.Fit`` step 7 (hami-gpu.md §3.3): a pod whose GPU policy contains
    mutex skips every device with ``Used > 0``. Two mutex pods of 10000 MiB / 30 cores on
    GPU-1a (20000 MiB, 60 cores, 2 slots: within every capacity) — in either order the second
    finds the device used."""
    found = violations(
        build(_mutex), place("shared-w-0", "n1", SHARE), place("shared-w-1", "n1", SHARE)
    )
    assert [v.rule for v in found] == ["gpu-exclusive"]
    assert "mutex GPU policy" in found[0].message


def test_gpu_exclusive_mutex_pod_may_be_followed_by_a_plain_pod() -> None:
    """The mutex test is the placed pod's own: a plain pod placed after it may share its
    device. A mutex pod and a plain pod on GPU-1a (whole books the other GPU of n1) → some
    order keeps every rule → no violation; and a mutex pod on distinct devices is fine."""

    def edit(doc: Doc) -> None:
        _mutex(doc)
        doc["jobs"].append(
            {
                "name": "plain",
                "queue": "team-a",
                "tasks": [
                    {
                        "name": "w",
                        "replicas": 1,
                        "resources": {
                            "cpu": "1",
                            "memory": "1Gi",
                            "nvidia.com/gpu": 1,
                            "nvidia.com/gpumem": 10000,
                            "nvidia.com/gpucores": 30,
                        },
                    }
                ],
            }
        )

    assert (
        rules(build(edit), place("shared-w-0", "n1", SHARE), place("plain-w-0", "n1", SHARE)) == []
    )
    assert rules(build(_mutex), place("shared-w-0", "n1", SHARE), place("shared-w-1", "n2")) == []


def test_gpu_exclusive_open_mutex_placements_need_unused_devices() -> None:
    """Open placements (no ``gpus``): the exact search gives mutex containers only unused
    devices. Three mutex pods on n1 (two GPUs) cannot all get one; two can."""

    def edit(doc: Doc) -> None:
        _mutex(doc)
        task(doc, "shared")["replicas"] = 3

    three = [place(f"shared-w-{i}", "n1") for i in range(3)]
    assert rules(build(edit), *three) == ["gpu-capacity"]
    assert rules(build(edit), *three[:2]) == []
