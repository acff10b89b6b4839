"""Devices assumed for running GPU pods that name none (models/assumed_devices.py).

Every device below is an 80 GiB (81920 MiB) GPU with 100 cores and 10 time-slices unless a
test says otherwise; requests are normalised by ``container_gpu_request`` as HAMi's webhook
and parser would (a bare ``nvidia.com/gpu: n`` is n exclusive whole cards).
"""

from __future__ import annotations

from typing import Any

from models.assumed_devices import NeedsDevices, assume_devices, with_assumed_devices
from models.cluster import Node
from models.errors import Diagnostics, Problem
from models.gpu import GpuDevice, GpuFilter, container_gpu_request, gpu_filter, shorthand_devices
from models.workload import DeviceShare, Job, RunningPod, Task

FULL = 81920


def _node(
    *devices: GpuDevice, name: str = "gpu-3", annotations: dict[str, str] | None = None
) -> Node:
    return Node(name, gpus=devices, annotations=annotations or {})


def _dev(i: int, *, numa: int = 0, health: bool = True) -> GpuDevice:
    return GpuDevice(f"GPU-{i}", i, "NVIDIA-A100-SXM4-80GB", FULL, numa=numa, health=health)


def _needs(limits: dict[str, Any], gpu_filter: GpuFilter | None = None) -> NeedsDevices:
    request = container_gpu_request(limits, {})
    assert request is not None
    return NeedsDevices((request,), gpu_filter)


WHOLE_2 = {"nvidia.com/gpu": 2}
WHOLE_1 = {"nvidia.com/gpu": 1}
SHARE = {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 10000, "nvidia.com/gpucores": 10}


def test_whole_gpus_go_to_the_emptiest_devices_by_index() -> None:
    """GPU-1 holds a 30-core share, so an exclusive card cannot go there (HAMi needs Used 0);
    GPU-0, GPU-2 and GPU-3 are all empty, so the lowest indices win: GPU-0 and GPU-2, each
    booked whole (all memory, 100 cores)."""
    node = _node(_dev(0), _dev(1), _dev(2), _dev(3))
    result = assume_devices(node, [DeviceShare("GPU-1", 10000, 30)], [_needs(WHOLE_2)])
    assert result.shares == (((DeviceShare("GPU-0", FULL, 100), DeviceShare("GPU-2", FULL, 100)),),)
    assert result.message == "1 running pod names no devices; assumed devices GPU-0, GPU-2"


def test_a_whole_memory_request_prefers_the_emptiest_device_not_the_fullest() -> None:
    """Volcano's ``vgpu-number: 1`` without memory books all of a device's memory and no
    cores. GPU-0 has 50 cores in use but no memory, so it could take it; GPU-1 is empty and
    emptier, so it is chosen (binpack would have picked GPU-0)."""
    node = _node(_dev(0), _dev(1))
    result = assume_devices(
        node, [DeviceShare("GPU-0", 0, 50)], [_needs({"volcano.sh/vgpu-number": 1})]
    )
    assert result.shares == (((DeviceShare("GPU-1", FULL, 0),),),)


def test_a_share_binpacks_onto_the_fullest_device() -> None:
    """HAMi's binpack tries the highest device score first: GPU-2 (1 slot, 40 cores, 40000
    MiB in use) is fuller than GPU-0 (1 slot, 20 cores, 20000 MiB) and GPU-1 (empty)."""
    node = _node(_dev(0), _dev(1), _dev(2))
    held = [DeviceShare("GPU-0", 20000, 20), DeviceShare("GPU-2", 40000, 40)]
    result = assume_devices(node, held, [_needs(SHARE)])
    assert result.shares == (((DeviceShare("GPU-2", 10000, 10),),),)
    assert result.assumed == ("GPU-2",)


def test_binpack_ties_go_to_the_higher_numa_node_then_the_device_listed_last() -> None:
    """All three are empty: GPU-1 and GPU-2 sit on NUMA node 1, above GPU-0; of those two,
    HAMi's stable sort scanned from the end tries GPU-2, the one listed last, first."""
    node = _node(_dev(0, numa=0), _dev(1, numa=1), _dev(2, numa=1))
    result = assume_devices(node, [], [_needs(SHARE)])
    assert result.shares == (((DeviceShare("GPU-2", 10000, 10),),),)


def test_pods_are_served_in_order_and_see_each_other() -> None:
    """Two pods of one whole card each on two empty devices: the first takes GPU-0 (lowest
    index), which leaves GPU-1 for the second."""
    node = _node(_dev(0), _dev(1))
    result = assume_devices(node, [], [_needs(WHOLE_1), _needs(WHOLE_1)])
    assert result.shares == (
        ((DeviceShare("GPU-0", FULL, 100),),),
        ((DeviceShare("GPU-1", FULL, 100),),),
    )
    assert result.message == "2 running pods name no devices; assumed devices GPU-0, GPU-1"


def test_an_over_committed_node_is_filled_so_nothing_more_is_placed_there() -> None:
    """Two whole cards are wanted, but GPU-0 holds a 1000 MiB / 10-core share, so only GPU-1
    can be exclusive: the pod does not fit. It then books what is left of both devices
    (80920 MiB and 90 cores of GPU-0, all of GPU-1), and the message says so."""
    node = _node(_dev(0), _dev(1))
    result = assume_devices(node, [DeviceShare("GPU-0", 1000, 10)], [_needs(WHOLE_2)])
    assert result.shares == (
        ((DeviceShare("GPU-0", FULL - 1000, 90), DeviceShare("GPU-1", FULL, 100)),),
    )
    assert (result.unfit, result.assumed, result.filled) == (1, (), ("GPU-0", "GPU-1"))
    assert result.message == (
        "1 running pod names no devices; it does not fit the devices left: the node is "
        "over-committed, and nothing is placed on GPU-0, GPU-1"
    )


def test_pods_that_fit_keep_their_devices_when_a_later_one_does_not() -> None:
    """The first pod takes GPU-1 whole (GPU-0 holds a share, so it cannot be exclusive); the
    second finds no empty device left. Only GPU-0 has anything left to book (GPU-1 is
    wholly taken), so the second pod fills GPU-0 alone."""
    node = _node(_dev(0), _dev(1))
    result = assume_devices(
        node, [DeviceShare("GPU-0", 1000, 10)], [_needs(WHOLE_1), _needs(WHOLE_1)]
    )
    assert result.shares == (
        ((DeviceShare("GPU-1", FULL, 100),),),
        ((DeviceShare("GPU-0", FULL - 1000, 90),),),
    )
    assert result.message == (
        "2 running pods name no devices; assumed devices GPU-1; 1 of them does not fit the "
        "devices left: the node is over-committed, and nothing is placed on GPU-0"
    )


def test_unhealthy_cordoned_and_filtered_devices_are_not_assumed() -> None:
    """GPU-0 is unhealthy and GPU-1 cordoned (HAMi gives neither to a pod); the pod's
    use-gpuuuid annotation allows GPU-2 and GPU-3 only, so GPU-2, the lowest index left,
    is its card."""
    node = _node(
        _dev(0, health=False),
        _dev(1),
        _dev(2),
        _dev(3),
        annotations={"hami.io/device-cordon": "GPU-1"},
    )
    only = gpu_filter({"nvidia.com/use-gpuuuid": "GPU-1,GPU-2,GPU-3"})
    result = assume_devices(node, [], [_needs(WHOLE_1, only)])
    assert result.shares == (((DeviceShare("GPU-2", FULL, 100),),),)


def test_held_shares_of_unknown_devices_are_left_out() -> None:
    """A share of a device the node does not have (reported by the loader) books nothing:
    GPU-0 stays empty and takes the whole card."""
    node = _node(_dev(0))
    result = assume_devices(node, [DeviceShare("GPU-9", FULL, 100)], [_needs(WHOLE_1)])
    assert result.shares == (((DeviceShare("GPU-0", FULL, 100),),),)


def _job(name: str, node: str, limits: dict[str, Any], gpus: tuple = (), **extra: Any) -> Job:
    request = container_gpu_request(limits, {})
    task = Task("w", 1, gpu=(request,) if request else ())
    return Job(name, tasks=(task,), running=(RunningPod(0, node, "w", gpus),), **extra)


def test_jobs_of_both_kinds_share_a_nodes_devices_and_get_one_warning_per_node() -> None:
    """n1 has three 40960 MiB cards GPU-n1-0..2. Job a holds GPU-n1-0 whole (named); job b
    wants a whole card and names none: GPU-n1-1 and -2 are empty, the lower index wins. The
    DaemonSet-like pod c of default-scheduler wants a 10000 MiB / 10-core share: GPU-n1-0 and
    -1 are taken exclusively, so binpack can only use GPU-n1-2. Job d runs on n2, which has no
    device inventory, so nothing is assumed there. One warning, on n1."""
    n1 = Node("n1", gpus=shorthand_devices("n1", 3, "NVIDIA-A100", 40960))
    n2 = Node("n2")
    held = ((DeviceShare("GPU-n1-0", 40960, 100),),)
    jobs = (
        _job("a", "n1", WHOLE_1, held),
        _job("b", "n1", WHOLE_1),
        _job("c", "n1", SHARE, scheduler_name="default-scheduler"),
        _job("d", "n2", WHOLE_1),
    )
    diag = Diagnostics()
    out = with_assumed_devices([n1, n2], jobs, diag)
    assert out[0] is jobs[0] and out[3] is jobs[3]
    assert out[1].running[0].gpus == ((DeviceShare("GPU-n1-1", 40960, 100),),)
    assert out[2].running[0].gpus == ((DeviceShare("GPU-n1-2", 10000, 10),),)
    assert diag.warnings == [
        Problem("2 running pods name no devices; assumed devices GPU-n1-1, GPU-n1-2", 'Node "n1"')
    ]


def test_many_nodes_say_it_in_one_line() -> None:
    """Past five nodes whose running GPU pods name no devices, one warning sums them up (a
    large dump's summary stays short): seven nodes of two cards, one whole-card pod each."""
    from models.assumed_devices import PER_NODE_WARNINGS

    count = PER_NODE_WARNINGS + 2
    nodes = [
        Node(f"n{i}", gpus=shorthand_devices(f"n{i}", 2, "NVIDIA-A100", FULL)) for i in range(count)
    ]
    request = container_gpu_request(WHOLE_1, {})
    assert request is not None
    task = Task("w", 1, gpu=(request,))
    jobs = [
        Job(f"j{i}", tasks=(task,), running=(RunningPod(0, f"n{i}", "w"),)) for i in range(count)
    ]
    diag = Diagnostics()
    out = with_assumed_devices(nodes, jobs, diag)
    assert [job.running[0].gpus for job in out] == [
        ((DeviceShare(f"GPU-n{i}-0", FULL, 100),),) for i in range(count)
    ]
    assert [w.message for w in diag.warnings] == [
        "7 running GPU pods on 7 nodes (n0, n1, n2, n3, n4 and 2 more) name no devices; each "
        "holds devices assumed for it (whole GPUs on the emptiest cards, shares by HAMi's "
        "binpack), and no plan places onto them"
    ]
