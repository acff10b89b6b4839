"""GPU devices and requests (models/gpu.py) against spec/hami-gpu.md.

Section numbers (§) refer to hami-gpu.md. Resource names are spelt out in the tests so that a
renamed constant cannot make a test pass by accident.
"""

from __future__ import annotations

import pytest

from models.errors import Diagnostics
from models.gpu import (
    GPU_RESOURCE_NAMES,
    GpuDevice,
    GpuFilter,
    GpuRequest,
    container_gpu_request,
    exclusive_on,
    gpu_filter,
    hami_allocation_annotation,
    parse_hami_register,
    parse_volcano_register,
    shorthand_devices,
    validate_device,
)

A100 = GpuDevice("GPU-a100", 0, "NVIDIA A100-SXM4-80GB", 81920)


def hami(limits: dict[str, object], requests: dict[str, object] | None = None) -> GpuRequest:
    req = container_gpu_request(limits, requests or {})
    assert req is not None
    assert req.flavor == "hami"
    return req


def volcano(limits: dict[str, object], requests: dict[str, object] | None = None) -> GpuRequest:
    req = container_gpu_request(limits, requests or {})
    assert req is not None
    assert req.flavor == "volcano"
    return req


# §1.4, one test per row (HAMi: webhook §1.2 then scheduler parser §1.3)


def test_row_count_zero_or_absent_is_not_a_gpu_container() -> None:
    """Row 1: count 0 or absent → no GPU request.

    With no GPU name at all there is nothing to read. With ``gpu: 0`` the count is present in
    limits, so the webhook does not default it (§1.2 step 2) and Nums = 0 drops the request
    (§1.3), even though gpumem is given.
    """
    assert container_gpu_request({"cpu": "4"}, {}) is None
    assert container_gpu_request({"nvidia.com/gpu": 0}, {}) is None
    assert container_gpu_request({"nvidia.com/gpu": 0, "nvidia.com/gpumem": 3000}, {}) is None


def test_row_count_absent_but_memory_given_gets_default_count() -> None:
    """Row 1, second half: count absent, gpumem in limits → webhook sets count = defaultGPUNum = 1.

    gpumem is present, so no exclusive core injection (§1.2 step 3): cores 0, memory 3000.
    """
    assert hami({"nvidia.com/gpumem": 3000}) == GpuRequest(1, 3000, None, 0, "hami")


def test_row_gpumem_zero_or_absent_means_whole_card() -> None:
    """Row 2: gpumem 0 or absent with no % → MemPercentagereq = 100 (defaultMemory is 0).

    Absent: bare ``gpu: 1`` → 100 %, and the webhook injects cores 100. Explicit ``gpumem: 0``
    is *present*, which blocks the injection (step 3, "including 0"), so cores stay 0; the
    memory still defaults to the whole card: 100 % of 24576 = 24576 MiB.
    """
    assert hami({"nvidia.com/gpu": 1}) == GpuRequest(1, 0, 100, 100, "hami")
    zero = hami({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 0})
    assert zero == GpuRequest(1, 0, 100, 0, "hami")
    assert zero.memory_on(24576) == 24576


def test_row_percentage_zero_is_unset_whole_card() -> None:
    """Row 3: percentage 0 → unset (101) → with gpumem 0 the whole card, 100 %.

    The percentage is present and not 100, so the webhook does not inject cores: cores 0.
    """
    req = hami({"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 0})
    assert req == GpuRequest(1, 0, 100, 0, "hami")
    assert req.memory_on(16384) == 16384


def test_row_percentage_negative_is_rejected() -> None:
    """Row 3: a negative percentage is outside 0..100, which the webhook rejects (§1.2 step 1);
    the API server already refuses negative quantities."""
    with pytest.raises(ValueError, match="gpumem-percentage"):
        container_gpu_request({"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": -5}, {})


def test_row_percentage_above_100_is_rejected_by_webhook() -> None:
    """Row 4: percentage > 100 → the webhook rejects it (§1.2 step 1), in limits or requests."""
    with pytest.raises(ValueError, match=r"0\.\.100"):
        container_gpu_request({"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 120}, {})
    with pytest.raises(ValueError, match=r"requests\[nvidia.com/gpumem-percentage\]"):
        container_gpu_request({"nvidia.com/gpu": 1}, {"nvidia.com/gpumem-percentage": "101"})


def test_row_cores_absent_injected_for_whole_card() -> None:
    """Row 5: gpucores absent → 0 in the parser, but the webhook injects 100 for whole-card
    requests: no % and no gpumem, or % exactly 100 (§1.2 step 3). With % 50 it does not."""
    assert hami({"nvidia.com/gpu": 1}).cores == 100
    assert hami({"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 100}).cores == 100
    assert hami({"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 50}).cores == 0


def test_row_cores_zero_is_no_compute_reservation() -> None:
    """Row 6: explicit ``gpucores: 0`` is present, so no injection; not exclusive; whole memory."""
    req = hami({"nvidia.com/gpu": 1, "nvidia.com/gpucores": 0})
    assert req == GpuRequest(1, 0, 100, 0, "hami")
    assert not req.exclusive


def test_row_cores_100_is_exclusive() -> None:
    """Row 7: ``gpucores: 100`` → exclusive (needs Used == 0 on a Totalcore-100 device)."""
    req = hami({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000, "nvidia.com/gpucores": 100})
    assert req.exclusive
    assert req.booked_cores == 100


@pytest.mark.parametrize(
    ("cores", "device_cores", "exclusive"),
    [(100, 100, True), (150, 100, True), (99, 100, False), (0, 100, False), (100, 200, False)],
)
def test_exclusive_on_needs_all_cores_of_a_100_core_device(
    cores: int, device_cores: int, exclusive: bool
) -> None:
    """hami-gpu §3.3 step 13 and pitfall 5: 100 booked cores own a Totalcore-100 device; on a
    device scaled to 200 cores the same share is an ordinary one."""
    device = GpuDevice("GPU-x", 0, "NVIDIA A100-SXM4-80GB", 81920, cores=device_cores)
    assert exclusive_on(cores, device) is exclusive


def test_row_cores_above_100_clamped_exclusive() -> None:
    """Row 8: ``gpucores: 150`` → Fit clamps to 100 (step 8), exclusive, 100 booked.

    The request keeps the written 150; what is booked is 100, so the share is
    max(100/100, 1000/81920) = 1.0.
    """
    req = hami({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000, "nvidia.com/gpucores": 150})
    assert req.cores == 150
    assert req.booked_cores == 100
    assert req.exclusive
    assert req.share_of(81920) == 1.0


def test_row_device_count_zero_is_valid_input() -> None:
    """Row 9: a device with ``count`` 0 can never be used, but it is a legal inventory entry:
    validation accepts count ≥ 0 and leaves the unusability to the fit code."""
    diag = Diagnostics()
    validate_device(
        GpuDevice("GPU-x", 0, "NVIDIA T4", 15360, count=0), 'Node "n1"', "gpus[0]", diag
    )
    assert diag.errors == []


# §1.2 webhook cases


def test_bare_count_is_n_exclusive_whole_gpus() -> None:
    """``nvidia.com/gpu: 2`` → 2 GPUs, cores 100 injected, 100 % memory, exclusive (pitfall 4).
    Each takes a whole 81920 MiB card and counts 1.0 GPU-equivalent."""
    req = hami({"nvidia.com/gpu": 2})
    assert req == GpuRequest(2, 0, 100, 100, "hami")
    assert req.exclusive
    assert req.memory_on(81920) == 81920
    assert req.share_of(81920) == 1.0


def test_gpumem_blocks_core_injection() -> None:
    """``gpu: 1, gpumem: 3000`` → gpumem present, so no injection: cores 0, memory 3000 MiB."""
    req = hami({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000})
    assert req == GpuRequest(1, 3000, None, 0, "hami")
    assert req.memory_on(24576) == 3000
    assert not req.exclusive


def test_percentage_without_count_defaults_count_to_one() -> None:
    """``gpumem-percentage: 50`` alone in limits → webhook count 1; % 50 ≠ 100 → cores 0;
    booked memory floor(24576 × 50 / 100) = 12288."""
    req = hami({"nvidia.com/gpumem-percentage": 50})
    assert req == GpuRequest(1, 0, 50, 0, "hami")
    assert req.memory_on(24576) == 12288


def test_cores_only_in_limits_defaults_count_to_one() -> None:
    """``gpucores: 30`` alone in limits → count 1 (step 2); no memory given → 100 %."""
    assert hami({"nvidia.com/gpucores": 30}) == GpuRequest(1, 0, 100, 30, "hami")


def test_count_default_ignores_requests_only_names() -> None:
    """Step 2 looks at limits only: gpumem only in *requests* and no count → no GPU request,
    because the parser then finds no count anywhere (§1.3)."""
    assert container_gpu_request({}, {"nvidia.com/gpumem": 3000}) is None


def test_webhook_count_in_limits_overrides_requests_count() -> None:
    """Count only in requests (2) but gpumem in limits: step 2 sees no count in limits and sets
    limits count = 1; the parser reads limits first, so Nums = 1, not 2."""
    req = hami({"nvidia.com/gpumem": 2000}, {"nvidia.com/gpu": 2})
    assert req.nums == 1
    assert req.memory == 2000


def test_explicit_cores_zero_blocks_injection_on_bare_count() -> None:
    """``gpu: 2, gpucores: 0``: cores present → step 3 does nothing; cores stay 0 so two such
    containers can share compute; memory is still the whole card."""
    req = hami({"nvidia.com/gpu": 2, "nvidia.com/gpucores": 0})
    assert req == GpuRequest(2, 0, 100, 0, "hami")


def test_limits_read_before_requests() -> None:
    """§1.3: every name is read from limits first, then requests, independently: gpumem 4000
    from limits wins over 8000 in requests; cores 20 only in requests is still read."""
    req = hami(
        {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000},
        {"nvidia.com/gpumem": 8000, "nvidia.com/gpucores": 20},
    )
    assert req == GpuRequest(1, 4000, None, 20, "hami")


def test_hami_absolute_memory_wins_over_percentage() -> None:
    """§1.3 last bullet / §3.3 step 9: both given → Fit books the absolute 3000, not 50 %."""
    req = hami({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000, "nvidia.com/gpumem-percentage": 50})
    assert req.percentage == 50
    assert req.memory_on(24576) == 3000


def test_examples_use_sharing_and_exclusive_card() -> None:
    """use_sharing_card.yaml pod 1: 1 GPU, 40 %, 60 cores → on a 24576 MiB card
    floor(24576 × 40/100) = 9830 MiB; use_exclusive_card.yaml: 2 GPUs, 100 %, 100 cores."""
    shared = hami(
        {"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 40, "nvidia.com/gpucores": 60}
    )
    assert shared == GpuRequest(1, 0, 40, 60, "hami")
    assert shared.memory_on(24576) == 9830
    exclusive = hami(
        {"nvidia.com/gpu": 2, "nvidia.com/gpumem-percentage": 100, "nvidia.com/gpucores": 100}
    )
    assert exclusive == GpuRequest(2, 0, 100, 100, "hami")


def test_gpumem_binary_quantity_drops_request() -> None:
    """Pitfall 8: ``gpumem: 16Gi`` is 17179869184 > int32max → the whole request is dropped."""
    assert container_gpu_request({"nvidia.com/gpu": 1, "nvidia.com/gpumem": "16Gi"}, {}) is None


def test_string_values_are_quantities() -> None:
    """YAML strings are quantities: "2" GPUs and "3k" = 3000 MiB (Go's AsInt64 accepts it)."""
    assert hami({"nvidia.com/gpu": "2", "nvidia.com/gpumem": "3k"}) == GpuRequest(
        2, 3000, None, 0, "hami"
    )


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("nvidia.com/gpumem", "1.5", "whole numbers"),
        ("nvidia.com/gpu", "500m", "whole numbers"),
        ("nvidia.com/gpucores", -1, "negative"),
        ("nvidia.com/gpumem", "lots", "not a quantity"),
        ("volcano.sh/vgpu-memory", "2.5", "whole numbers"),
    ],
)
def test_values_the_api_server_rejects(name: str, value: object, message: str) -> None:
    """Extended resources must be non-negative whole numbers (API server validation), and a
    non-quantity is not a resource value at all; the message names the field."""
    with pytest.raises(ValueError, match=message) as err:
        container_gpu_request({name: value}, {})
    assert name in str(err.value)


def test_mixed_families_hami_wins() -> None:
    """A container with both families is read with HAMi's rules only: bare ``nvidia.com/gpu: 1``
    → whole exclusive card; the Volcano memory 2000 is ignored."""
    req = hami({"nvidia.com/gpu": 1, "volcano.sh/vgpu-number": 2, "volcano.sh/vgpu-memory": 2000})
    assert req == GpuRequest(1, 0, 100, 100, "hami")


def test_gpu_resource_names() -> None:
    """Every HAMi (§1.1) and Volcano (§1.5) request name, and nothing else."""
    assert {
        "nvidia.com/gpu",
        "nvidia.com/gpumem",
        "nvidia.com/gpumem-percentage",
        "nvidia.com/gpucores",
        "volcano.sh/vgpu-number",
        "volcano.sh/vgpu-memory",
        "volcano.sh/vgpu-memory-percentage",
        "volcano.sh/vgpu-cores",
    } == GPU_RESOURCE_NAMES


# §1.5 Volcano


def test_volcano_percentage_overrides_memory() -> None:
    """§1.5: a set percentage overrides the absolute memory (opposite of HAMi):
    3000 MiB and 50 % on 24576 → floor(24576 × 50/100) = 12288."""
    req = volcano(
        {
            "volcano.sh/vgpu-number": 1,
            "volcano.sh/vgpu-memory": 3000,
            "volcano.sh/vgpu-memory-percentage": 50,
        }
    )
    assert req.memory_on(24576) == 12288


def test_volcano_percentage_zero_is_zero_mib() -> None:
    """§1.5: percentage 0 means 0 MiB reserved (HAMi would read it as the whole card)."""
    req = volcano({"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory-percentage": 0})
    assert req.percentage == 0
    assert req.memory_on(24576) == 0


def test_volcano_count_absent_memory_given_is_one_gpu() -> None:
    """§1.5: no count in limits but memory in limits → N = 1; books the 4096 MiB asked for."""
    req = volcano({"volcano.sh/vgpu-memory": 4096})
    assert req == GpuRequest(1, 4096, None, 0, "volcano")
    assert req.memory_on(24576) == 4096


def test_volcano_no_memory_no_percentage_is_whole_card_without_cores() -> None:
    """§1.5: percentage unset and memory 0 → 100 %; no webhook, so cores stay 0 and the
    request is not exclusive (§3.6 "whole-card request cores": 0)."""
    req = volcano({"volcano.sh/vgpu-number": 2})
    assert req == GpuRequest(2, 0, 100, 0, "volcano")
    assert req.memory_on(24576) == 24576
    assert not req.exclusive


def test_volcano_request_decided_from_limits_only() -> None:
    """§1.5: count or memory only in requests → no request; values fall back to requests once
    limits decided there is one (cores 30 from requests)."""
    assert container_gpu_request({}, {"volcano.sh/vgpu-number": 1}) is None
    assert container_gpu_request({}, {"volcano.sh/vgpu-memory": 4096}) is None
    req = volcano({"volcano.sh/vgpu-number": 1}, {"volcano.sh/vgpu-cores": 30})
    assert req.cores == 30


def test_volcano_cores_exclusive_only_at_100() -> None:
    """§3.5: ``cores == 100`` is exclusive; 150 is not clamped (it never fits, §3.6)."""
    assert volcano({"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-cores": 100}).exclusive
    over = volcano({"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-cores": 150})
    assert over.booked_cores == 150
    assert not over.exclusive


def test_volcano_count_zero_is_no_request() -> None:
    """A count of 0 in limits asks for no device."""
    assert container_gpu_request({"volcano.sh/vgpu-number": 0}, {}) is None


# share_of


def test_share_of_takes_the_larger_of_cores_and_memory() -> None:
    """GPU-equivalents = max(cores/100, mem/device):
    - 3000 MiB, 30 cores on 24576: max(0.30, 0.122) = 0.30;
    - use_memory_fraction.yaml (50 %, 30 cores) on 81920: max(0.30, 0.50) = 0.50;
    - 8192 MiB, 0 cores on 16384: 0.5."""
    assert GpuRequest(1, 3000, None, 30, "hami").share_of(24576) == pytest.approx(0.30)
    assert GpuRequest(2, 0, 50, 30, "hami").share_of(81920) == pytest.approx(0.50)
    assert GpuRequest(1, 8192, None, 0, "hami").share_of(16384) == pytest.approx(0.5)


def test_percentage_is_floored_per_device() -> None:
    """Pitfall 21: 10 % of 1280 MiB = 128; 33 % of 1000 = 330 (floor of 330.0), 33 % of 1001 =
    floor(330.33) = 330."""
    req = GpuRequest(1, 0, 10, 0, "hami")
    assert req.memory_on(1280) == 128
    assert GpuRequest(1, 0, 33, 0, "volcano").memory_on(1001) == 330


def test_request_rejects_bad_flavor() -> None:
    """Only HAMi's and Volcano's rules exist."""
    with pytest.raises(ValueError, match="flavor"):
        GpuRequest(1, 0, 100, 0, "kube")


# inventories §2


def test_hami_register_json_example() -> None:
    """§2.1's example value, every key present."""
    text = (
        '[{"id":"GPU-0","count":10,"devmem":81920,"devcore":100,'
        '"type":"NVIDIA A100-SXM4-80GB","numa":1,"health":true,"index":3,"mode":"hami-core"}]'
    )
    assert parse_hami_register(text) == (
        GpuDevice("GPU-0", 3, "NVIDIA A100-SXM4-80GB", 81920, 100, 10, 1, True, "hami-core"),
    )


def test_hami_register_json_omitempty_keys() -> None:
    """§2.1: keys are omitempty, so a missing health is false (unhealthy), a missing index or
    numa is 0; a missing mode is read as hami-core; unknown keys (migProfiles) are ignored."""
    text = (
        '[{"id":"GPU-a","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-T4"},'
        '{"id":"GPU-b","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-T4",'
        '"index":1,"health":true,"mode":"mig","migProfiles":[]}]'
    )
    first, second = parse_hami_register(text)
    assert first == GpuDevice("GPU-a", 0, "NVIDIA-T4", 24576, 100, 10, 0, False, "hami-core")
    assert (second.index, second.health, second.mode) == (1, True, "mig")


def test_hami_register_json_keys_are_case_insensitive() -> None:
    """Go's encoding/json matches object keys case-insensitively, so "ID" and "Health" fill
    id and health like the lower-case spellings the plugin writes."""
    (dev,) = parse_hami_register('[{"ID":"GPU-a","Health":true,"DevMem":1024}]')
    assert (dev.id, dev.health, dev.memory) == ("GPU-a", True, 1024)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"id":"GPU-a",', "not valid JSON"),
        ('[{"id":"GPU-a","count":"10"}]', "count must be an integer"),
        ('[{"id":"GPU-a","health":"yes"}]', "health must be a bool"),
        ('[{"id":"GPU-a","index":-1}]', "index must be ≥ 0"),
        ('["GPU-a"]', "device 0: expected a JSON object"),
    ],
)
def test_hami_register_json_malformed(text: str, message: str) -> None:
    """Each malformed value is rejected with a message naming the device and the key."""
    with pytest.raises(ValueError, match=message):
        parse_hami_register(text)


def test_hami_register_legacy_seven_fields() -> None:
    """protocol.L23 example: two 7-field V100 entries; index is the position (0, 1), mode
    hami-core, health true, numa 0, 10 slots, 32768 MiB, 100 cores."""
    text = (
        "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
        "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
    )
    assert parse_hami_register(text) == (
        GpuDevice(
            "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec", 0, "NVIDIA-Tesla V100-PCIE-32GB", 32768
        ),
        GpuDevice(
            "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448", 1, "NVIDIA-Tesla V100-PCIE-32GB", 32768
        ),
    )


def test_hami_register_legacy_nine_fields() -> None:
    """Seed 003 §4.1 example: ID,Count,Devmem,Devcore,Type,Numa,Health,Index,Mode."""
    text = (
        "GPU-UUID-1,10,32768,100,Tesla-V100,0,true,0,hami-core:"
        "GPU-UUID-2,10,16384,100,Tesla-T4,1,true,1,hami-core:"
    )
    assert parse_hami_register(text) == (
        GpuDevice("GPU-UUID-1", 0, "Tesla-V100", 32768, 100, 10, 0, True, "hami-core"),
        GpuDevice("GPU-UUID-2", 1, "Tesla-T4", 16384, 100, 10, 1, True, "hami-core"),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("GPU-a,10,32768,100,T4,0,true,0:", "expected 7 or 9"),
        ("GPU-a,ten,32768,100,T4,0,true:", "count 'ten' is not an integer"),
        ("GPU-a,10,32768,100,T4,0,maybe:", "health 'maybe' is not a boolean"),
    ],
)
def test_hami_register_legacy_malformed(text: str, message: str) -> None:
    """8 fields, a non-integer count and a non-boolean health are each rejected precisely."""
    with pytest.raises(ValueError, match=message):
        parse_hami_register(text)


def test_empty_register_has_no_devices() -> None:
    """A blank value and an empty JSON array both describe no GPUs."""
    assert parse_hami_register("") == ()
    assert parse_hami_register("[]") == ()


def test_volcano_register_six_fields() -> None:
    """§2.3 example plus a second device: index is the position, cores hard-coded 100, numa 0."""
    text = (
        "GPU-aaa,10,24576,NVIDIA-NVIDIA GeForce RTX 4090,true,hami-core:"
        "GPU-bbb,4,24576,NVIDIA-NVIDIA GeForce RTX 4090,false,mig:"
    )
    assert parse_volcano_register(text) == (
        GpuDevice("GPU-aaa", 0, "NVIDIA-NVIDIA GeForce RTX 4090", 24576, 100, 10, 0, True),
        GpuDevice("GPU-bbb", 1, "NVIDIA-NVIDIA GeForce RTX 4090", 24576, 100, 4, 0, False, "mig"),
    )


def test_volcano_register_rejects_hami_text_form() -> None:
    """A 7-field HAMi entry is not the 6-field Volcano form."""
    with pytest.raises(ValueError, match="expected 6"):
        parse_volcano_register("GPU-a,10,32768,100,T4,0,true:")


def test_shorthand_devices() -> None:
    """``gpus: {count: 8, type: NVIDIA-H100-80GB, memory: 81920}`` on node-02: ids
    GPU-node-02-0..7, indices 0..7, 10 slots and 100 cores by default; split overrides slots."""
    devs = shorthand_devices("node-02", 8, "NVIDIA-H100-80GB", 81920)
    assert [d.id for d in devs] == [f"GPU-node-02-{i}" for i in range(8)]
    assert [d.index for d in devs] == list(range(8))
    assert devs[3] == GpuDevice("GPU-node-02-3", 3, "NVIDIA-H100-80GB", 81920, 100, 10)
    assert shorthand_devices("n", 2, "T4", 15360, split=4)[1].count == 4
    assert shorthand_devices("n", 0, "T4", 15360) == ()


def test_validate_device_reports_every_field() -> None:
    """Empty id, negative index/cores/count, zero memory and an unknown mode: six errors,
    each under the device's own path."""
    diag = Diagnostics()
    bad = GpuDevice("", -1, "NVIDIA T4", 0, cores=-1, count=-1, mode="vgpu")
    validate_device(bad, 'Node "n1"', "gpus[2]", diag)
    assert [p.field for p in diag.errors] == [
        "gpus[2].id",
        "gpus[2].index",
        "gpus[2].memory",
        "gpus[2].cores",
        "gpus[2].count",
        "gpus[2].mode",
    ]
    assert all(p.obj == 'Node "n1"' for p in diag.errors)


def test_validate_device_accepts_a_normal_device() -> None:
    """The DESIGN.md example device is valid."""
    diag = Diagnostics()
    validate_device(
        GpuDevice("GPU-n01-0", 0, "NVIDIA-A100-SXM4-80GB", 81920), 'Node "node-01"', "gpus[0]", diag
    )
    assert diag.errors == []


# filters §3.3 steps 3 and 5


def test_use_type_is_a_substring_match() -> None:
    """Pitfall 9: ``use-gputype: A10`` also selects an A100, case-insensitively; an L4 is not."""
    flt = gpu_filter({"nvidia.com/use-gputype": "a10"})
    assert flt.allows(A100)
    assert not flt.allows(GpuDevice("GPU-l4", 0, "NVIDIA L4", 23034))


def test_nouse_type_excludes() -> None:
    """specify_card_type_not_use.yaml: ``1080,2080`` excludes a 1080 Ti; others pass. Adding
    ``nouse A100`` to ``use A10`` is how the A100 is kept out."""
    flt = gpu_filter({"nvidia.com/nouse-gputype": "1080,2080"})
    assert not flt.allows(GpuDevice("GPU-x", 0, "NVIDIA GeForce GTX 1080 Ti", 11264))
    assert flt.allows(A100)
    both = gpu_filter({"nvidia.com/use-gputype": "A10", "nvidia.com/nouse-gputype": "A100"})
    assert not both.allows(A100)
    assert both.allows(GpuDevice("GPU-a10", 0, "NVIDIA A10", 23028))


def test_use_type_list_needs_one_token() -> None:
    """specify_card_type_to_use.yaml: ``A100,V100`` admits a V100 and an A100, not a T4."""
    flt = gpu_filter({"nvidia.com/use-gputype": "A100,V100"})
    assert flt.allows(GpuDevice("GPU-v", 0, "NVIDIA-Tesla V100-PCIE-32GB", 32768))
    assert flt.allows(A100)
    assert not flt.allows(GpuDevice("GPU-t", 0, "NVIDIA-Tesla T4", 15360))


def test_type_tokens_are_not_trimmed() -> None:
    """Step 3 splits the type list on commas without trimming (only step 5 trims UUIDs), so
    ``"A100, V100"`` has the token " V100": it matches "NVIDIA-Tesla V100" (which has the
    space) but not "NVIDIA-V100"."""
    flt = gpu_filter({"nvidia.com/use-gputype": "A100, V100"})
    assert flt.allows(GpuDevice("GPU-a", 0, "NVIDIA-Tesla V100", 32768))
    assert not flt.allows(GpuDevice("GPU-b", 0, "NVIDIA-V100", 32768))


def test_blank_type_list_is_no_constraint() -> None:
    """Step 3: only a non-blank list constrains."""
    assert gpu_filter({"nvidia.com/use-gputype": "  "}) == GpuFilter()


def test_uuid_lists_match_exactly_after_trimming() -> None:
    """Step 5: use list " GPU-b , GPU-c" → GPU-b allowed after trimming; GPU-bb is not a
    substring match; nouse excludes GPU-c even though use lists it."""
    flt = gpu_filter(
        {"nvidia.com/use-gpuuuid": " GPU-b , GPU-c", "nvidia.com/nouse-gpuuuid": "GPU-c"}
    )
    assert flt.use_uuids == ("GPU-b", "GPU-c")
    assert flt.allows(GpuDevice("GPU-b", 0, "NVIDIA T4", 15360))
    assert not flt.allows(GpuDevice("GPU-bb", 1, "NVIDIA T4", 15360))
    assert not flt.allows(GpuDevice("GPU-c", 2, "NVIDIA T4", 15360))


def test_mode_annotation_is_contains() -> None:
    """§5.3: ``vgpu-mode: "hami-core,mps"`` accepts hami-core and mps devices, not mig."""
    flt = gpu_filter({"nvidia.com/vgpu-mode": "hami-core,mps"})
    assert flt.allows(GpuDevice("GPU-a", 0, "NVIDIA T4", 15360, mode="mps"))
    assert flt.allows(GpuDevice("GPU-b", 0, "NVIDIA T4", 15360))
    assert not flt.allows(GpuDevice("GPU-c", 0, "NVIDIA T4", 15360, mode="mig"))


def test_volcano_spellings_and_hami_precedence() -> None:
    """Volcano's UUID/mode annotations are read; with both spellings the nvidia.com one wins."""
    flt = gpu_filter(
        {
            "volcano.sh/vgpu-use-gpuuuid": "GPU-a",
            "volcano.sh/vgpu-nouse-gpuuuid": "GPU-b",
            "volcano.sh/vgpu-mode": "mig",
        }
    )
    assert flt == GpuFilter((), (), ("GPU-a",), ("GPU-b",), "mig")
    mixed = gpu_filter({"volcano.sh/vgpu-use-gpuuuid": "GPU-a", "nvidia.com/use-gpuuuid": "GPU-z"})
    assert mixed.use_uuids == ("GPU-z",)


def test_no_annotations_allow_everything() -> None:
    """Without annotations there is no constraint, even on an unhealthy device (health is the
    fit code's concern, not the filter's)."""
    assert gpu_filter({}).allows(GpuDevice("GPU-a", 0, "NVIDIA T4", 15360, health=False))


# allocation annotation §6.1


def test_allocation_two_containers_sharing() -> None:
    """§6.1 and protocol.L69: two containers on one GPU, 3000 and 5000 MiB, 0 cores."""
    uuid = "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448"
    assert (
        hami_allocation_annotation([[(uuid, 3000, 0)], [(uuid, 5000, 0)]])
        == f"{uuid},NVIDIA,3000,0:;{uuid},NVIDIA,5000,0:;"
    )


def test_allocation_empty_containers_keep_their_semicolon() -> None:
    """§6.1: init (no GPU) + app with 2 GPUs + sidecar → ``;GPU-a,…:GPU-b,…:;;``."""
    value = hami_allocation_annotation([[], [("GPU-a", 8000, 30), ("GPU-b", 8000, 30)], []])
    assert value == ";GPU-a,NVIDIA,8000,30:GPU-b,NVIDIA,8000,30:;;"


def test_allocation_rejects_separator_in_id() -> None:
    """An id containing a separator would corrupt the annotation."""
    with pytest.raises(ValueError, match="cannot be written"):
        hami_allocation_annotation([[("GPU:a", 1, 0)]])
