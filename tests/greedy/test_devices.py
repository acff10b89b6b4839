"""Volcano's vGPU device fit (hami-gpu.md §3.5, §3.6, §4.3; volcano-scheduler.md §7.3–7.4, §9.13)
and the deviceshare plugin that configures it.

Every node here holds A100-sized cards (81920 MiB) unless a test says otherwise; requests use
Volcano's resource names, whose rules (percentage wins over absolute memory, cores kept as
written) are the ones the fit applies.
"""

from __future__ import annotations

import dataclasses

import pytest

from models.gpu import GpuRequest
from models.load import loads
from optimizer.greedy.api import NodeInfo, TaskInfo
from optimizer.greedy.devices import DeviceFit, fit
from optimizer.greedy.engine import solve
from optimizer.greedy.plugins.deviceshare import DeviceSharePlugin
from optimizer.greedy.session import UNSCHEDULABLE, FitFailure, Session

HEADER = """
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: devices}
now: "2026-11-30T14:00:00Z"
"""


def card(i: int, **extra: object) -> str:
    fields = {"id": f"GPU-{i}", "index": i, "type": "NVIDIA-A100", "memory": 81920, **extra}
    return "{" + ", ".join(f"{k}: {v}" for k, v in fields.items()) + "}"


def make_session(
    cards: list[str],
    resources: str,
    *,
    annotations: str = "{}",
    running: str = "",
    plugins: str = "[{name: predicates}]",
    replicas: int = 1,
    allocatable: str = '{cpu: "64", memory: 256Gi}',
) -> Session:
    """One node ``n1`` with ``cards``; job ``j`` with ``replicas`` pods of ``resources``;
    ``running`` is an extra job's running pods (YAML list items) holding devices."""
    gpus = "\n".join(f"  - {c}" for c in cards)
    text = f"""{HEADER}
scheduler:
  tiers:
  - plugins: {plugins}
nodes:
- name: n1
  allocatable: {allocatable}
  gpus:
{gpus}
jobs:
- name: j
  tasks:
  - name: w
    replicas: {replicas}
    resources: {resources}
    annotations: {annotations}
"""
    if running:
        text += f"""- name: other
  tasks:
  - {{name: w, replicas: 4, resources: {{cpu: "1", volcano.sh/vgpu-number: 1}}}}
  running:
{running}
"""
    return Session(loads(text), seed=0)


def task_of(ssn: Session, job: str = "default/j", index: int = 0) -> TaskInfo:
    return list(ssn.jobs[job].tasks.values())[index]


def node(ssn: Session) -> NodeInfo:
    return ssn.nodes["n1"]


def ids(result: DeviceFit | FitFailure) -> list[str]:
    assert isinstance(result, DeviceFit), result
    return [share.id for share in result.gpus]


VGPU_1 = '{cpu: "1", volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1000}'


# -- order and policies ---------------------------------------------------------------------


def test_default_order_takes_the_highest_index_first() -> None:
    """§7.3 / §9.13: with no SchedulePolicy Volcano walks the devices by descending index, so
    on four empty cards a 1-GPU pod gets GPU-3 and a 2-GPU pod GPU-3 then GPU-2."""
    ssn = make_session([card(i) for i in range(4)], VGPU_1)
    assert ids(fit(task_of(ssn), node(ssn), "")) == ["GPU-3"]
    two = make_session(
        [card(i) for i in range(4)],
        '{cpu: "1", volcano.sh/vgpu-number: 2, volcano.sh/vgpu-memory: 1000}',
    )
    assert ids(fit(task_of(two), node(two), "")) == ["GPU-3", "GPU-2"]


def test_unknown_policy_uses_the_default_order() -> None:
    """hami-gpu.md §3.5: any policy other than binpack/spread sorts by index descending."""
    ssn = make_session([card(i) for i in range(3)], VGPU_1)
    assert ids(fit(task_of(ssn), node(ssn), "best-fit")) == ["GPU-2"]


def test_binpack_picks_the_most_used_device_and_scores_after_booking() -> None:
    """§7.3: binpack orders by UsedMem descending. GPU-1 holds 20000 MiB, GPU-2 40000 MiB, so
    GPU-2 wins. §7.4: the score is computed after the tentative add: 100·(40000+1000)/81920 =
    50.048828125."""
    running = (
        "  - {index: 0, node: n1, gpus: [{id: GPU-1, memory: 20000, cores: 0}]}\n"
        "  - {index: 1, node: n1, gpus: [{id: GPU-2, memory: 40000, cores: 0}]}"
    )
    ssn = make_session([card(i) for i in range(4)], VGPU_1, running=running)
    result = fit(task_of(ssn), node(ssn), "binpack")
    assert ids(result) == ["GPU-2"]
    assert isinstance(result, DeviceFit)
    assert result.score == pytest.approx(100 * 41000 / 81920)


def test_binpack_ties_go_to_the_lowest_index() -> None:
    """§7.3: binpack's tie-break on equal UsedMem is the lower index (unlike the default)."""
    ssn = make_session([card(i) for i in range(3)], VGPU_1)
    assert ids(fit(task_of(ssn), node(ssn), "binpack")) == ["GPU-0"]


def test_spread_picks_the_least_shared_device_and_scores_zero() -> None:
    """§7.3: spread orders by UsedNum ascending, then index: GPU-0 hosts a pod, so GPU-1 is
    taken. §9.13 quirk: GPUScore under spread is 100 only when UsedNum == 0, which never holds
    after booking, so the score is 0."""
    running = "  - {index: 0, node: n1, gpus: [{id: GPU-0, memory: 1000, cores: 0}]}"
    ssn = make_session([card(i) for i in range(3)], VGPU_1, running=running)
    result = fit(task_of(ssn), node(ssn), "spread")
    assert ids(result) == ["GPU-1"]
    assert isinstance(result, DeviceFit)
    assert result.score == 0.0


def test_default_policy_scores_zero() -> None:
    """§7.4: GPUScore is 0 for any policy other than binpack and spread."""
    running = "  - {index: 0, node: n1, gpus: [{id: GPU-0, memory: 40000, cores: 0}]}"
    ssn = make_session([card(0)], VGPU_1, running=running)
    result = fit(task_of(ssn), node(ssn), "")
    assert isinstance(result, DeviceFit)
    assert result.score == 0.0


# -- capacity rules -------------------------------------------------------------------------


def test_exclusive_cores_need_an_empty_card() -> None:
    """§7.3 rule 6: a request with cores == 100 skips every device with UsedNum > 0, even when
    memory and cores would fit. GPU-1 (tried first, highest index) holds a 10-core pod, so the
    exclusive pod gets GPU-0; once both hold a pod it fits nowhere."""
    exclusive = (
        '{cpu: "1", volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1000, '
        "volcano.sh/vgpu-cores: 100}"
    )
    one = "  - {index: 0, node: n1, gpus: [{id: GPU-1, memory: 1000, cores: 10}]}"
    ssn = make_session([card(0), card(1)], exclusive, running=one)
    assert ids(fit(task_of(ssn), node(ssn), "")) == ["GPU-0"]
    both = one + "\n  - {index: 1, node: n1, gpus: [{id: GPU-0, memory: 1000, cores: 0}]}"
    full = make_session([card(0), card(1)], exclusive, running=both)
    failure = fit(task_of(full), node(full), "")
    assert isinstance(failure, FitFailure)
    assert failure.code == UNSCHEDULABLE
    assert failure.reason.startswith("n1: 0/2 GPUs")


def test_cores_over_100_never_fit() -> None:
    """hami-gpu.md §3.6: Volcano does not clamp cores; UsedCore + 120 > 100 on an empty card."""
    ssn = make_session(
        [card(0)], '{cpu: "1", volcano.sh/vgpu-number: 1, volcano.sh/vgpu-cores: 120}'
    )
    assert isinstance(fit(task_of(ssn), node(ssn), ""), FitFailure)


def test_cores_must_stay_within_100() -> None:
    """§7.3 rule 5: UsedCore 70 + 40 > 100 skips GPU-1, so GPU-0 is used instead."""
    running = "  - {index: 0, node: n1, gpus: [{id: GPU-1, memory: 1000, cores: 70}]}"
    ssn = make_session(
        [card(0), card(1)],
        '{cpu: "1", volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1000, '
        "volcano.sh/vgpu-cores: 40}",
        running=running,
    )
    assert ids(fit(task_of(ssn), node(ssn), "")) == ["GPU-0"]


def test_zero_core_pod_skips_a_saturated_card() -> None:
    """§7.3 rule 7: UsedCore == 100 and a request with 0 cores → skip, even with memory free.
    GPU-1 holds a 100-core pod with 1000 MiB, so the 0-core pod goes to GPU-0."""
    running = "  - {index: 0, node: n1, gpus: [{id: GPU-1, memory: 1000, cores: 100}]}"
    ssn = make_session([card(0), card(1)], VGPU_1, running=running)
    assert ids(fit(task_of(ssn), node(ssn), "")) == ["GPU-0"]


def test_time_slices_are_counted() -> None:
    """§7.3 rule 2: UsedNum ≥ Number (count) skips the device. GPU-1 has count 1 and already
    one pod, so it is skipped despite plenty of memory."""
    running = "  - {index: 0, node: n1, gpus: [{id: GPU-1, memory: 1000, cores: 0}]}"
    ssn = make_session([card(0), card(1, count=1)], VGPU_1, running=running)
    assert ids(fit(task_of(ssn), node(ssn), "")) == ["GPU-0"]


def test_percentage_overrides_memory_and_is_floored() -> None:
    """hami-gpu.md §1.5/§3.6: with both vgpu-memory and a percentage, Volcano books the
    percentage: ⌊1285·10/100⌋ = 128 MiB (pitfall 21), not the 1000 MiB written."""
    ssn = make_session(
        [card(0, memory=1285)],
        '{cpu: "1", volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 1000, '
        "volcano.sh/vgpu-memory-percentage: 10}",
    )
    result = fit(task_of(ssn), node(ssn), "")
    assert isinstance(result, DeviceFit)
    assert result.gpus[0].memory == 128


def test_percentage_is_checked_against_free_memory() -> None:
    """§7.3 rule 4: memreq = ⌊81920·50/100⌋ = 40960 MiB. GPU-1 has 81920 − 50000 = 31920 MiB
    free, so it is skipped and GPU-0 gets the pod."""
    running = "  - {index: 0, node: n1, gpus: [{id: GPU-1, memory: 50000, cores: 0}]}"
    ssn = make_session(
        [card(0), card(1)],
        '{cpu: "1", volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory-percentage: 50}',
        running=running,
    )
    result = fit(task_of(ssn), node(ssn), "")
    assert ids(result) == ["GPU-0"]
    assert isinstance(result, DeviceFit)
    assert result.gpus[0].memory == 40960


def test_no_memory_given_takes_the_whole_card() -> None:
    """§7.2 / §9.13: vgpu-number alone means 100 % of each card's memory, so a card holding
    even 1 MiB cannot take it."""
    running = "  - {index: 0, node: n1, gpus: [{id: GPU-1, memory: 1, cores: 0}]}"
    ssn = make_session([card(0), card(1)], '{cpu: "1", volcano.sh/vgpu-number: 1}', running=running)
    result = fit(task_of(ssn), node(ssn), "")
    assert ids(result) == ["GPU-0"]
    assert isinstance(result, DeviceFit)
    assert result.gpus[0].memory == 81920


# -- multi-GPU and multi-container ----------------------------------------------------------


def test_multi_gpu_container_gets_distinct_devices() -> None:
    """§7.3: each device is visited once per container, so a 2-GPU container on two cards gets
    both, even though one card has room for two such shares."""
    ssn = make_session(
        [card(0), card(1)], '{cpu: "1", volcano.sh/vgpu-number: 2, volcano.sh/vgpu-memory: 1000}'
    )
    assert sorted(ids(fit(task_of(ssn), node(ssn), ""))) == ["GPU-0", "GPU-1"]


def test_more_gpus_than_devices_fails_at_once() -> None:
    """§7.3: Nums > number of devices fails before any device is tried."""
    ssn = make_session(
        [card(0), card(1)], '{cpu: "1", volcano.sh/vgpu-number: 3, volcano.sh/vgpu-memory: 1000}'
    )
    failure = fit(task_of(ssn), node(ssn), "")
    assert isinstance(failure, FitFailure)
    assert failure.reason == "n1: needs 3 GPUs, has 2"


def test_too_few_fitting_devices_fail_with_a_count() -> None:
    """§7.3: fewer than Nums fitting devices fails; GPU-1 is full (81920 MiB used), so only
    1 of the 2 cards has 20000 MiB free for a pod that needs 2."""
    running = "  - {index: 0, node: n1, gpus: [{id: GPU-1, memory: 81920, cores: 0}]}"
    ssn = make_session(
        [card(0), card(1)],
        '{cpu: "1", volcano.sh/vgpu-number: 2, volcano.sh/vgpu-memory: 20000}',
        running=running,
    )
    failure = fit(task_of(ssn), node(ssn), "")
    assert isinstance(failure, FitFailure)
    assert failure.reason == "n1: 1/2 GPUs with 20000 MiB free, needs 2"


def two_containers(task: TaskInfo, memory: int) -> TaskInfo:
    """The same pod with two GPU containers of ``memory`` MiB each (the loader reads one)."""
    request = GpuRequest(1, memory, None, 0, "volcano")
    return dataclasses.replace(task, task=dataclasses.replace(task.task, gpu=(request, request)))


def test_second_container_sees_the_first_containers_booking() -> None:
    """§7.3: an accepted device is tentatively consumed, so later containers of the same pod
    see it. Default order: container 1 takes GPU-1 (50000 of 81920 MiB); container 2 needs
    50000 but GPU-1 has only 31920 free, so it takes GPU-0. On one card the pod cannot fit."""
    ssn = make_session([card(0), card(1)], VGPU_1)
    task = two_containers(task_of(ssn), 50000)
    assert ids(fit(task, node(ssn), "")) == ["GPU-1", "GPU-0"]
    single = make_session([card(0)], VGPU_1)
    assert isinstance(fit(two_containers(task_of(single), 50000), node(single), ""), FitFailure)


def test_binpack_order_is_recomputed_per_container() -> None:
    """§7.3 (hami-gpu §3.5 "recomputed per container"): under binpack container 1 takes GPU-0
    (lowest index among empty cards); container 2 then sees GPU-0 as the most used and joins
    it. Score = 100·10000/81920 + 100·20000/81920 (each after its own booking, §7.4)."""
    ssn = make_session([card(0), card(1)], VGPU_1)
    result = fit(two_containers(task_of(ssn), 10000), node(ssn), "binpack")
    assert ids(result) == ["GPU-0", "GPU-0"]
    assert isinstance(result, DeviceFit)
    assert result.score == pytest.approx(100 * 10000 / 81920 + 100 * 20000 / 81920)


def test_second_container_sees_the_first_containers_time_slice() -> None:
    """§7.3: the tentative booking also counts a time-slice. Both cards have count 1; under
    spread container 1 takes GPU-0 (UsedNum 0, lowest index), and container 2 then finds GPU-0
    at UsedNum 1 ≥ Number 1 and takes GPU-1, though memory would allow sharing."""
    ssn = make_session([card(0, count=1), card(1, count=1)], VGPU_1)
    assert ids(fit(two_containers(task_of(ssn), 1000), node(ssn), "spread")) == ["GPU-0", "GPU-1"]


def test_fit_does_not_change_the_node() -> None:
    """§7.3: FilterNode works on a copy; booking is the framework's job at allocate time."""
    ssn = make_session([card(0)], VGPU_1)
    assert isinstance(fit(task_of(ssn), node(ssn), "binpack"), DeviceFit)
    state = node(ssn).gpus[0]
    assert (state.used_num, state.used_mem, state.used_core, state.pods) == (0, 0, 0, {})


# -- filters, type and mode -----------------------------------------------------------------


def test_uuid_allow_list() -> None:
    """§7.2: volcano.sh/vgpu-use-gpuuuid restricts the pod to the listed devices (exact)."""
    ssn = make_session(
        [card(i) for i in range(3)], VGPU_1, annotations="{volcano.sh/vgpu-use-gpuuuid: GPU-0}"
    )
    assert ids(fit(task_of(ssn), node(ssn), "")) == ["GPU-0"]


def test_uuid_deny_list() -> None:
    """§7.2: volcano.sh/vgpu-nouse-gpuuuid removes devices; default order would pick GPU-2."""
    ssn = make_session(
        [card(i) for i in range(3)],
        VGPU_1,
        annotations='{volcano.sh/vgpu-nouse-gpuuuid: "GPU-2,GPU-1"}',
    )
    assert ids(fit(task_of(ssn), node(ssn), "")) == ["GPU-0"]


def test_use_gputype_makes_volcano_ignore_nouse() -> None:
    """hami-gpu.md §3.6: in Volcano, when use-gputype is present, nouse-gputype is not read.
    Both name A100 here: HAMi would reject the A100 (GpuFilter.allows), Volcano takes it. The
    T4 (index 1, tried first) is not in the use list."""
    cards = [card(0), card(1, type="NVIDIA-T4")]
    annotations = "{nvidia.com/use-gputype: a100, nvidia.com/nouse-gputype: A100}"
    ssn = make_session(cards, VGPU_1, annotations=annotations)
    task = task_of(ssn)
    assert task.gpu_filter is not None
    assert not task.gpu_filter.allows(node(ssn).gpus[0].device)
    assert ids(fit(task, node(ssn), "")) == ["GPU-0"]


def test_nouse_gputype_alone_excludes() -> None:
    """§7.2: without use-gputype, nouse-gputype is a case-insensitive substring exclusion."""
    cards = [card(0, type="NVIDIA-T4"), card(1)]
    ssn = make_session(cards, VGPU_1, annotations="{nvidia.com/nouse-gputype: a100}")
    assert ids(fit(task_of(ssn), node(ssn), "")) == ["GPU-0"]


def test_device_type_must_contain_nvidia() -> None:
    """§7.3 rule 8: the type must contain "NVIDIA" (case-sensitive); "nvidia-a100" and
    "Tesla" are never used, so only GPU-0 qualifies."""
    cards = [card(0), card(1, type="nvidia-a100"), card(2, type="Tesla-V100")]
    ssn = make_session(cards, VGPU_1)
    assert ids(fit(task_of(ssn), node(ssn), "")) == ["GPU-0"]


def test_mode_annotation_must_equal_the_node_mode() -> None:
    """hami-gpu.md §2.3/§5.3: the node mode is the last device's, with mps read as hami-core.
    A pod asking for hami-core fits a node of mps cards; a pod asking for mps fits nowhere."""
    cards = [card(0, mode="mps"), card(1, mode="mps")]
    ok = make_session(cards, VGPU_1, annotations="{volcano.sh/vgpu-mode: hami-core}")
    assert ids(fit(task_of(ok), node(ok), "")) == ["GPU-1"]
    bad = make_session(cards, VGPU_1, annotations="{volcano.sh/vgpu-mode: mps}")
    failure = fit(task_of(bad), node(bad), "")
    assert isinstance(failure, FitFailure)
    assert "mode" in failure.reason


def test_mode_is_the_last_devices() -> None:
    """hami-gpu.md §2.3: only the last device decides the node mode; a mig card first and a
    hami-core card last make a hami-core node, so a mig pod is rejected."""
    cards = [card(0, mode="mig"), card(1)]
    ssn = make_session(cards, VGPU_1, annotations="{volcano.sh/vgpu-mode: mig}")
    assert isinstance(fit(task_of(ssn), node(ssn), ""), FitFailure)


def test_podgroup_spread_keeps_pods_of_one_job_apart() -> None:
    """§7.2: with volcano.sh/vgpu-podgroup-policy: spread a device that already holds a pod of
    the same PodGroup is skipped. Pod 0 of job j is allocated on GPU-1; pod 1 must then use
    GPU-0."""
    ssn = make_session(
        [card(0), card(1)],
        VGPU_1,
        annotations="{volcano.sh/vgpu-podgroup-policy: spread}",
        replicas=2,
    )
    first = task_of(ssn, index=0)
    placed = fit(first, node(ssn), "")
    assert ids(placed) == ["GPU-1"]
    assert isinstance(placed, DeviceFit)
    ssn.allocate(first, node(ssn), placed.gpus)
    assert ids(fit(task_of(ssn, index=1), node(ssn), "")) == ["GPU-0"]


def test_unhealthy_devices_are_skipped_unless_told_otherwise() -> None:
    """§9.13: Volcano never checks Health; vcopt skips unhealthy devices by default because its
    verifier rejects them (FIDELITY). check_health=False reproduces Volcano: GPU-1 is taken."""
    ssn = make_session([card(0), card(1, health="false")], VGPU_1)
    assert ids(fit(task_of(ssn), node(ssn), "")) == ["GPU-0"]
    assert ids(fit(task_of(ssn), node(ssn), "", check_health=False)) == ["GPU-1"]


def test_node_without_devices_fails() -> None:
    """A GPU task cannot use a node with no device inventory."""
    ssn = make_session([card(0)], VGPU_1)
    bare = dataclasses.replace(node(ssn), gpus=[])
    failure = fit(task_of(ssn), bare, "")
    assert isinstance(failure, FitFailure)
    assert failure.reason == "n1: no GPU devices"


# -- the deviceshare plugin ------------------------------------------------------------------


def test_plugin_sets_the_device_policy() -> None:
    """§7.1: deviceshare.SchedulePolicy becomes the session's device order when VGPUEnable."""
    plugins = (
        "[{name: deviceshare, arguments: {deviceshare.VGPUEnable: true, "
        "deviceshare.SchedulePolicy: spread}}]"
    )
    ssn = make_session([card(0)], VGPU_1, plugins=plugins)
    ssn.open({"deviceshare": DeviceSharePlugin})
    assert ssn.device_policy == "spread"
    assert not ssn.has_hook("node_order")


def test_plugin_does_nothing_without_vgpu_enable() -> None:
    """§7.1: VGPUEnable defaults to false in Volcano; without it the plugin sets no policy and
    registers no score, so the weight is ignored."""
    plugins = (
        "[{name: deviceshare, arguments: {deviceshare.SchedulePolicy: binpack, "
        "deviceshare.ScheduleWeight: 10}}]"
    )
    ssn = make_session([card(0)], VGPU_1, plugins=plugins)
    ssn.open({"deviceshare": DeviceSharePlugin})
    assert ssn.device_policy == ""
    assert not ssn.has_hook("node_order")


def test_plugin_node_score_rounds_and_weights() -> None:
    """§7.4: NodeOrder = ⌊Σ GPUScore + 0.5⌋ × ScheduleWeight. Binpack on a card holding 40000
    MiB with a 1000 MiB request: 100·41000/81920 = 50.05 → 50, × 3 = 150."""
    plugins = (
        "[{name: deviceshare, arguments: {deviceshare.VGPUEnable: true, "
        "deviceshare.SchedulePolicy: binpack, deviceshare.ScheduleWeight: 3}}]"
    )
    running = "  - {index: 0, node: n1, gpus: [{id: GPU-0, memory: 40000, cores: 0}]}"
    ssn = make_session([card(0)], VGPU_1, plugins=plugins, running=running)
    ssn.open({"deviceshare": DeviceSharePlugin})
    assert ssn.node_order(task_of(ssn), node(ssn)) == 150.0


# -- end to end ------------------------------------------------------------------------------


def solved_devices(plugins: str) -> dict[str, list[str]]:
    """Two 10000 MiB pods of one job on a node with two empty cards, through the engine. The
    node reports the vGPU scalars, which the generic node fit also checks (§7.1, §9.13)."""
    ssn = make_session(
        [card(0), card(1)],
        '{cpu: "1", volcano.sh/vgpu-number: 1, volcano.sh/vgpu-memory: 10000}',
        plugins=plugins,
        replicas=2,
        allocatable='{cpu: "64", memory: 256Gi, volcano.sh/vgpu-number: 20, '
        "volcano.sh/vgpu-memory: 163840, volcano.sh/vgpu-cores: 200}",
    )
    plan = solve(ssn.instance)
    return {p.pod: [g.id for g in p.gpus or ()] for p in plan.placements}


def test_engine_uses_the_configured_device_policy() -> None:
    """§7.3 end to end. With binpack the first pod takes GPU-0 (empty cards tie, lower index)
    and the second joins it (most UsedMem). Without deviceshare the policy is "" and both
    take GPU-1, the highest index, which still has room for the second."""
    binpack = (
        "[{name: gang}, {name: predicates}, {name: deviceshare, arguments: "
        "{deviceshare.VGPUEnable: true, deviceshare.SchedulePolicy: binpack}}]"
    )
    assert solved_devices(binpack) == {"default/j-w-0": ["GPU-0"], "default/j-w-1": ["GPU-0"]}
    plain = "[{name: gang}, {name: predicates}]"
    assert solved_devices(plain) == {"default/j-w-0": ["GPU-1"], "default/j-w-1": ["GPU-1"]}


# -- HAMi's mutex GPU policy --------------------------------------------------------------

MUTEX = '{hami.io/gpu-scheduler-policy: "mutex"}'


def test_mutex_policy_skips_devices_in_use() -> None:
    """HAMi's ``NvidiaGPUDevices.Fit`` step 7 (hami-gpu.md §3.3), which vcopt applies because
    it places GPU pods as HAMi would: a pod whose ``hami.io/gpu-scheduler-policy`` contains
    mutex gets no device with ``Used > 0``. GPU-2 (the default order's first) holds a running
    share, so the mutex pod gets GPU-1; without the annotation it shares GPU-2."""
    running = "  - {index: 0, node: n1, gpus: [{id: GPU-2, memory: 1000, cores: 0}]}"
    ssn = make_session([card(i) for i in range(3)], VGPU_1, running=running, annotations=MUTEX)
    assert ids(fit(task_of(ssn), node(ssn), "")) == ["GPU-1"]
    plain = make_session([card(i) for i in range(3)], VGPU_1, running=running)
    assert ids(fit(task_of(plain), node(plain), "")) == ["GPU-2"]


def test_mutex_pods_take_one_device_each() -> None:
    """Two mutex pods of a gang on two empty cards get one device each; plain pods would both
    take GPU-1 (the default order's first, which they may share). With three mutex pods the
    third finds no unused device, so the gang (minAvailable 3) stays pending. Every plan
    passes the verifier's gpu-exclusive."""
    from optimizer.verify import verify

    def devices(annotations: str, replicas: int) -> list[str]:
        ssn = make_session(
            [card(i) for i in range(2)],
            '{cpu: "1", nvidia.com/gpu: 1, nvidia.com/gpumem: 1000}',
            annotations=annotations,
            replicas=replicas,
            plugins="[{name: gang}, {name: predicates}]",
        )
        plan = solve(ssn.instance, seed=0)
        assert verify(ssn.instance, plan) == []
        return sorted(share.id for p in plan.placements for share in p.gpus or ())

    assert devices(MUTEX, 2) == ["GPU-0", "GPU-1"]
    assert devices("{}", 2) == ["GPU-1", "GPU-1"]
    assert devices(MUTEX, 3) == []


# -- evictions free devices -------------------------------------------------------------------

PREEMPT_FOR_A_CARD = f"""{HEADER}
scheduler:
  actions: "enqueue, allocate, preempt"
  tiers:
  - plugins: [{{name: priority}}, {{name: gang, enablePreemptable: false}}, {{name: conformance}}]
  - plugins:
    - {{name: predicates}}
    - {{name: deviceshare, arguments: {{deviceshare.VGPUEnable: true}}}}
nodes:
- name: n1
  allocatable: {{cpu: "64", memory: 256Gi}}
  gpus:
  - {card(0)}
queues: [{{name: q1}}]
jobs:
- name: low
  queue: q1
  priority: 1
  tasks: [{{name: w, replicas: 1, resources: {{cpu: "1", nvidia.com/gpu: 1}}}}]
  running: [{{index: 0, node: n1, gpus: [{{id: GPU-0, memory: 81920, cores: 100}}]}}]
- name: high
  queue: q1
  priority: 10
  tasks: [{{name: w, replicas: 1, resources: {{cpu: "1", nvidia.com/gpu: 1}}}}]
"""


def test_an_evicted_pod_frees_its_device_for_the_preemptor() -> None:
    """One card (81920 MiB) on n1, held whole by ``low``'s running pod; ``high`` (priority 10
    > 1, same queue) asks for a whole card too (a bare ``nvidia.com/gpu: 1``: all its memory
    and 100 cores, hami-gpu.md pitfall 4). The node reports 10 vGPU slots and CPU is ample, so
    only the device blocks it: allocate places nothing, and high starves. Preempt takes low
    (priority's victim; conformance keeps nothing in namespace default). Volcano's eviction
    turns low Releasing through ``NodeInfo.UpdateTask``, whose ``RemoveTask`` subtracts its
    share from the card and whose ``AddTask`` of a Releasing task books none: the card is
    free, ``preemptorFitsOnNode``'s PredicateFn (the device fit) passes, and high is
    pipelined on n1. Were the share kept, the fit would fail after the eviction and the
    statement would be discarded: no eviction at all."""
    instance = loads(PREEMPT_FOR_A_CARD)
    plan = solve(instance, seed=0)
    assert [(e.pod, e.node, e.reason) for e in plan.evictions] == [
        ("default/low-w-0", "n1", "preempt")
    ]
    assert [(q.pod, q.node) for q in plan.pipelined] == [("default/high-w-0", "n1")]


def test_an_undone_eviction_books_the_device_again() -> None:
    """A discarded eviction (``Statement.Discard`` → ``unevict``) puts the task back Running,
    and ``AddTask`` of a Running task books its share again: after evict and undo, the card
    holds low's 81920 MiB as before, and a whole-card request no longer fits."""
    ssn = Session(loads(PREEMPT_FOR_A_CARD), seed=0)
    low, high = task_of(ssn, "default/low"), task_of(ssn, "default/high")
    card_state = node(ssn).gpus[0]
    assert (card_state.used_num, card_state.used_mem) == (1, 81920)
    op = ssn.evict(low, "preempt")
    assert (card_state.used_num, card_state.used_mem) == (0, 0)
    assert ids(fit(high, node(ssn), "")) == ["GPU-0"]
    ssn.undo(op)
    assert (card_state.used_num, card_state.used_mem) == (1, 81920)
    assert isinstance(fit(high, node(ssn), ""), FitFailure)
