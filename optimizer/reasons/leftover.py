"""What a plan leaves for the jobs being explained: free room on every node and device, what
every queue already holds, and which pods of other jobs could give their room back.

Amounts are in the CP-SAT engine's model units (``optimizer.cpsat.compile.units``: Volcano units,
memory in MiB), rounded so that what fits here fits the real cluster: free room down,
requests up.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from models.gpu import GpuDevice
from models.instance import Instance
from models.resources import PODS
from models.tdm import pod_preemptable
from models.workload import Job, Task

from ..cpsat.compile.candidates import device_pool
from ..cpsat.compile.units import model_units
from ..plan import Bound, Plan


def request_of(task: Task) -> dict[str, int]:
    """One pod's request in model units, its pod slot included."""
    return {**model_units(task.resources, round_up=True), PODS: 1}


@dataclass
class DeviceRoom:
    """One GPU after the plan: what is still free on it."""

    index: int
    device: GpuDevice
    memory: int
    cores: int
    slots: int
    usable: bool
    """Healthy, an NVIDIA card and not cordoned: HAMi's checks no change of a job can lift."""


@dataclass
class Holder:
    """Pods of one other job on one node whose room could be given back: running preemptable
    pods (``evictable``), or pods the plan itself places (``placed``)."""

    job: str
    node: int
    pods: list[str]
    request: dict[str, int]
    """Per pod (all pods of one task of a job ask the same)."""
    shares: list[list[tuple[int, int, int]]]
    """Per pod, its (device index, memory, cores) shares."""
    queues: tuple[str, ...]
    placed: bool


@dataclass
class Leftover:
    free: list[dict[str, int]]
    """Per node (instance order), the free amount of every resource, pods included."""
    devices: list[list[DeviceRoom]]
    queue_used: dict[str, dict[str, int]]
    """Per queue, what the pods of its subtree hold after the plan (hierarchically summed)."""
    holders: list[Holder] = field(default_factory=list)


def _queues_of(instance: Instance, job: Job) -> tuple[str, ...]:
    tree = instance.queue_tree
    if job.queue not in tree:
        return ()
    return (job.queue, *tree.ancestors(job.queue))


def _protected(job: Job) -> bool:
    return job.conformance_protection is not None


def leftover(instance: Instance, plan: Plan, targets: Collection[str]) -> Leftover:
    """The room ``plan`` leaves, as if the jobs in ``targets`` had none of their pending pods
    placed (their running pods stay where they are)."""
    index = {n.name: i for i, n in enumerate(instance.nodes)}
    free = []
    devices = []
    for node in instance.nodes:
        room = model_units(node.allocatable, round_up=False)
        room[PODS] = node.pod_capacity
        free.append(room)
        pool = set(device_pool(node))
        devices.append(
            [
                DeviceRoom(d, dev, dev.memory, dev.cores, dev.count, d in pool)
                for d, dev in enumerate(node.gpus)
            ]
        )
    used: dict[str, dict[str, int]] = {}
    holders: dict[tuple[str, str, int, bool], Holder] = {}
    _take_foreign(instance, index, free, devices)
    for bound in _holding(instance, plan):
        pod = instance.pod_by_key.get(bound.pod)
        if pod is None or bound.node not in index:
            continue
        job = instance.job_by_key[pod.job]
        if job.key in targets and not bound.running:
            continue
        task = job.task(pod.task)
        n = index[bound.node]
        request = request_of(task)
        for name, amount in request.items():
            free[n][name] = free[n].get(name, 0) - amount
        queues = _queues_of(instance, job)
        for q in queues:
            held = used.setdefault(q, {})
            for name, amount in request.items():
                held[name] = held.get(name, 0) + amount
        shares = _book(devices[n], bound.gpus or ())
        evictable = bound.running and pod_preemptable(task.annotations, task.labels)
        if job.key in targets or _protected(job) or not (evictable or not bound.running):
            continue
        key = (job.key, task.name, n, not bound.running)
        holder = holders.get(key)
        if holder is None:
            holder = Holder(job.key, n, [], request, [], queues, not bound.running)
            holders[key] = holder
        holder.pods.append(bound.pod)
        holder.shares.append(shares)
    return Leftover(free, devices, used, list(holders.values()))


def _take_foreign(
    instance: Instance,
    index: Mapping[str, int],
    free: list[dict[str, int]],
    devices: list[list[DeviceRoom]],
) -> None:
    """Other schedulers' pods take room that no queue counts and no change frees."""
    for job, pod in instance.foreign_pods:
        if pod.node not in index:
            continue
        n = index[pod.node]
        for name, amount in request_of(job.task(pod.task)).items():
            free[n][name] = free[n].get(name, 0) - amount
        _book(devices[n], tuple(d for c in pod.gpus for d in c))


def _holding(instance: Instance, plan: Plan) -> list[Bound]:
    """Every pod that holds room after the plan: bound ones, and pods the plan pipelines onto
    a node (Volcano nominates the node to them, so the room they wait for is theirs)."""
    held = list(plan.bound_pods(instance).values())
    held += [Bound(p.pod, p.node, None, running=False) for p in plan.pipelined]
    return held


def _book(rooms: list[DeviceRoom], shares: tuple) -> list[tuple[int, int, int]]:
    by_id = {r.device.id: r for r in rooms}
    booked = []
    for share in shares:
        room = by_id.get(share.id)
        if room is None:
            continue
        room.memory -= share.memory
        room.cores -= share.cores
        room.slots -= 1
        booked.append((room.index, share.memory, share.cores))
    return booked
