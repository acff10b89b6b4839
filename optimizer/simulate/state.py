"""The cluster as it stands at one instant of a simulation: which jobs have arrived, which run,
where their pods are, and what each job's history has been so far.

A job is *future* until it arrives, then *pending*; it *runs* once its gang is bound (at
least ``minAvailable`` pods, and at least one) and is *done* ``duration`` later. A plan's
evictions delete pods gracefully, as Kubernetes does: an evicted pod goes on holding its node,
its resources and its GPUs for the grace period (``terminationGracePeriodSeconds``), and is
gone only then. A running job that keeps its gang keeps running, and its evicted pods wait to
be placed again once they are gone (Volcano's job controller recreates a pod when the old one
has left). A job that falls below its gang stops: its run ends at once, its job controller
deletes its other pods too, and the job is pending again, restarting from scratch
(``resume``: keeping the work done, as with checkpointing), once the last of them is gone.

The instance a cycle sees is built from this state: the same
:class:`~models.instance.Instance` the snapshot commands read. Instances have no Releasing
pods, so a pod being released is shown as a pod of another scheduler: it holds its room and
devices and no action may evict it (Volcano's Releasing pods are no victims either), and its
job shows only its other pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from models.cluster import Node
from models.gpu import FULL_CORES
from models.instance import Instance
from models.resources import EMPTY, NVIDIA_GPU, Resources
from models.scheduler_conf import SchedulerConf
from models.tdm import LAST_EVICT_ARG, TDM_PLUGIN, node_zone, pod_preemptable
from models.workload import PENDING, RUNNING, DeviceShare, Job, RunningPod, Task

from ..plan import Plan
from .fairness import MILLI, QueueLevel, deserved_gpus, job_request

FUTURE, WAITING, STARTED, RESTARTING, DONE = "future", "pending", "running", "restarting", "done"
"""A job's states; a *restarting* job lost its gang and waits for its pods to be gone."""

RELEASING_SUFFIX = ":releasing"
"""Ends the name of the job that shows a job's pods being released in a snapshot: a name no
Kubernetes object has, so that no plan names it; its pods keep their own names."""

_SHARED = ("topology", "queue_tree", "node_by_name", "total_allocatable", "tz")
"""Derived structures of an instance that depend on nodes, HyperNodes and queues only: a
cycle's instance shares them with the first one instead of building them again."""


@dataclass
class BoundPod:
    node: str
    devices: tuple[DeviceShare, ...] | None
    since: datetime
    gpus: float
    """GPU-equivalents held: each device's share (cores or memory, the larger), or the
    requested count where the node lists no devices."""
    quota_gpus: int
    """Milli ``nvidia.com/gpu`` requested: what the pod counts for in its queue's quota."""
    gone_at: datetime | None = None
    """For a pod being released: when it is gone and its room free."""
    lost: bool = False
    """For a pod being released: its job restarted from scratch, so its GPU time is lost."""


@dataclass
class JobRun:
    """One job's state and history."""

    job: Job
    """The job as the next cycle sees it (running pods, phase)."""
    arrival: datetime
    left: timedelta | None
    """Run time still needed when the current (or next) run starts; None: runs for ever."""
    status: str = FUTURE
    run_start: datetime | None = None
    first_start: datetime | None = None
    end: datetime | None = None
    generation: int = 0
    bound: dict[tuple[str, int], BoundPod] = field(default_factory=dict)
    releasing: dict[tuple[str, int], BoundPod] = field(default_factory=dict)
    """Evicted or stopped pods still on their nodes until their ``gone_at``."""
    shown: Job | None = None
    """The job a cycle sees: :attr:`job` without its pods being released (None: :attr:`job`)."""
    held: Job | None = None
    """Its pods being released, as a job of another scheduler (None: there are none)."""
    run_gpu_s: float = 0.0
    """GPU-seconds held by the pods of the current run, which a restart throws away."""
    gpu_s: float = 0.0
    evictions: int = 0
    restarts: int = 0
    lost_gpu_s: float = 0.0
    nodes: set[str] = field(default_factory=set)

    @property
    def gang(self) -> int:
        return max(self.job.min_available, 1)


@dataclass(frozen=True)
class Change:
    """What applying a plan or an event did, for the loop's bookkeeping."""

    started: tuple[str, ...] = ()
    releases: tuple[tuple[datetime, str], ...] = ()
    """(when, job key): pods of the job are gone then, which frees room."""
    changed: bool = False


class SimState:
    """Everything that changes while the simulated clock runs."""

    def __init__(
        self, instance: Instance, resume: bool = False, grace: timedelta = timedelta(0)
    ) -> None:
        self.base = instance
        self.resume = resume
        self.grace = grace
        """How long an evicted pod goes on holding its room."""
        self.now = instance.now
        self.last_evict_at = instance.tdm.last_evict_at if instance.tdm else None
        self.runs: dict[str, JobRun] = {}
        self.pod_index: dict[str, tuple[str, str, int]] = {}
        """Pod key → (job key, task, index)."""
        self.gpus_allocated = 0.0
        self.requests: dict[str, Resources] = {}
        """Job key → every pod's request summed (proportion's view of the job)."""
        self.queue_held: dict[str, int] = {}
        """Queue → milli ``nvidia.com/gpu`` its bound pods request."""
        self.queue_requests: dict[str, Resources] = {}
        """Queue → :attr:`requests` summed over its pending, running and restarting jobs."""
        self.queue_jobs: dict[str, int] = {}
        """Queue → how many of its jobs are pending, running or restarting."""
        self._deserved: dict[str, int] | None = None
        timeline = (*instance.jobs, *instance.arrivals)
        ranked = sorted(timeline, key=lambda j: (j.arrives_at(instance.now), j.order))
        order = {job.key: rank for rank, job in enumerate(ranked)}
        for job in timeline:
            for pod in job.pods:
                self.pod_index[pod.key] = (job.key, pod.task, pod.index)
            self.requests[job.key] = job_request(job)
            self.queue_held.setdefault(job.queue, 0)
            self.runs[job.key] = run = self._first_run(replace(job, order=order[job.key]))
            if run.status in (WAITING, STARTED):
                self._enter_queue(run)
        self._jobs_cache: tuple[tuple[Job, ...], tuple[Job, ...]] | None = None
        """(jobs, other schedulers' jobs) of the snapshot, until the state changes."""
        self.queue_names = tuple(sorted(self.queue_held))
        """The queues of the timeline's jobs, in the order of every per-queue output."""

    def _first_run(self, job: Job) -> JobRun:
        now = self.now
        arrival = job.arrives_at(now)
        if not job.running:
            status = WAITING if arrival <= now else FUTURE
            return JobRun(job, arrival, job.duration, status)
        run = JobRun(
            job, min(arrival, job.started_at or now), job.remaining_at(now), STARTED, run_start=now
        )
        run.first_start = job.started_at or now
        tasks = {t.name: t for t in job.tasks}
        for pod in job.running:
            devices = tuple(d for c in pod.gpus for d in c)
            self._bind(run, tasks[pod.task], pod.task, pod.index, pod.node, devices)
        return run

    # -- the instance a cycle sees ---------------------------------------------------------

    def instance(self) -> Instance:
        """The snapshot at :attr:`now`: arrived jobs that are not done, their pods where they
        are, the pods being released as other schedulers' pods, and the last TDM round's time
        in ``vcopt.lastEvictAt``."""
        if self._jobs_cache is None:
            runs = self.runs.values()
            self._jobs_cache = (
                tuple(r.shown or r.job for r in runs if r.status in (WAITING, STARTED)),
                (*self.base.foreign_jobs, *(r.held for r in runs if r.held is not None)),
            )
        jobs, foreign = self._jobs_cache
        snapshot = self.base.replace(
            now=self.now,
            jobs=jobs,
            arrivals=(),
            foreign_jobs=foreign,
            scheduler=self._scheduler(),
        )
        for name in _SHARED:
            snapshot.__dict__[name] = getattr(self.base, name)
        return snapshot

    def _scheduler(self) -> SchedulerConf:
        conf = self.base.scheduler
        base_last = self.base.tdm.last_evict_at if self.base.tdm else None
        if self.last_evict_at is None or self.last_evict_at == base_last:
            return conf
        stamp = self.last_evict_at.isoformat()
        tiers = tuple(
            tuple(
                replace(p, arguments={**p.arguments, LAST_EVICT_ARG: stamp})
                if p.name == TDM_PLUGIN
                else p
                for p in tier
            )
            for tier in conf.tiers
        )
        return replace(conf, tiers=tiers)

    # -- what the loop asks ----------------------------------------------------------------

    def pending_work(self) -> bool:
        """Some arrived job has a pod that is neither bound nor being released."""
        return any(
            r.status in (WAITING, STARTED) and len(r.bound) + len(r.releasing) < r.job.replicas
            for r in self.runs.values()
        )

    def revocable_pods_on(self, zones: Iterable[str]) -> bool:
        """Some preemptable bound pod sits on a node of one of ``zones``."""
        closed = set(zones)
        if not closed:
            return False
        nodes = self.base.node_by_name
        for run in self.runs.values():
            for (task_name, _), pod in run.bound.items():
                if node_zone(nodes[pod.node].labels) not in closed:
                    continue
                task = run.job.task(task_name)
                if pod_preemptable(task.annotations, task.labels):
                    return True
        return False

    def active(self) -> bool:
        """Some arrived job is pending, running or restarting."""
        return any(r.status in (WAITING, STARTED, RESTARTING) for r in self.runs.values())

    def counts(self) -> tuple[int, int]:
        """(pending jobs, running jobs)."""
        pending = sum(1 for r in self.runs.values() if r.status == WAITING)
        running = sum(1 for r in self.runs.values() if r.status == STARTED)
        return pending, running

    @property
    def gpu_total(self) -> int:
        """Healthy GPUs, and the GPUs of nodes without a device inventory (as the metrics
        count them): the most :attr:`gpus_allocated` can reach."""
        nodes = self.base.nodes
        healthy = sum(1 for n in nodes for d in n.gpus if d.health)
        return healthy + sum(n.allocatable.get(NVIDIA_GPU) // MILLI for n in nodes if n.plain_gpus)

    def levels(self) -> tuple[QueueLevel, ...]:
        """Each queue's GPUs held, deserved and waiting, in :attr:`queue_names` order. Only
        pending and running jobs hold pods in its quota, so what waits is what its pending,
        running and restarting jobs request less what the queue holds."""
        if self._deserved is None:
            requests = {q: self.queue_requests[q] for q, n in self.queue_jobs.items() if n}
            self._deserved = deserved_gpus(self.base, requests)
        deserved = self._deserved
        out = []
        for q in self.queue_names:
            held = self.queue_held[q]
            wanted = self.queue_requests.get(q, EMPTY).get(NVIDIA_GPU)
            deserves = deserved.get(q, 0)
            out.append(QueueLevel(held / MILLI, deserves / MILLI, (wanted - held) / MILLI))
        return tuple(out)

    # -- changes ---------------------------------------------------------------------------

    def _enter_queue(self, run: JobRun) -> None:
        """The job is pending from now, until it is done: its queue requests what it does."""
        queue, request = run.job.queue, self.requests[run.job.key]
        self.queue_requests[queue] = self.queue_requests.get(queue, EMPTY) + request
        self.queue_jobs[queue] = self.queue_jobs.get(queue, 0) + 1
        self._deserved = None

    def arrive(self, key: str) -> None:
        run = self.runs[key]
        run.status = WAITING
        self._enter_queue(run)
        self._jobs_cache = None

    def complete(self, key: str, generation: int) -> bool:
        """End the run ``generation`` of the job; False when that run was already cut short.
        Its pods stop at once (they are done); any being released still go at their time."""
        run = self.runs[key]
        if run.status != STARTED or run.generation != generation:
            return False
        for pod_id in list(run.bound):
            self._unbind(run, pod_id)
        self._refresh(run)
        run.status, run.end = DONE, self.now
        queue = run.job.queue
        self.queue_requests[queue] = self.queue_requests[queue] - self.requests[key]
        self.queue_jobs[queue] -= 1
        self._jobs_cache = self._deserved = None
        return True

    def apply(self, plan: Plan) -> Change:
        """Evict the evicted pods (they are released after the grace period), bind the placed
        ones, then start the jobs whose gang is bound and stop the running ones that lost it."""
        touched: dict[str, JobRun] = {}
        for eviction in plan.evictions:
            key, task, index = self.pod_index[eviction.pod]
            run = self.runs[key]
            self._evict(run, (task, index))
            run.evictions += 1
            touched[key] = run
        for placement in plan.placements:
            key, task, index = self.pod_index[placement.pod]
            run = self.runs[key]
            devices = placement.gpus
            self._bind(run, run.job.task(task), task, index, placement.node, devices)
            touched[key] = run
        started, releases = [], []
        for key, run in touched.items():
            if run.status == STARTED and (len(run.bound) < run.job.min_available or not run.bound):
                self._stop(run)
            elif run.status == WAITING and len(run.bound) >= run.gang:
                run.status, run.run_start = STARTED, self.now
                run.first_start = run.first_start or self.now
                run.generation += 1
                started.append(key)
            gone_at = self.now + self.grace
            evicted = any(pod.gone_at == gone_at for pod in run.releasing.values())
            if evicted and self.grace:
                releases.append((gone_at, key))
            elif evicted:
                self._release_due(run)
            self._refresh(run)
        if touched:
            self._jobs_cache = None
        return Change(tuple(started), tuple(releases), bool(touched))

    def release(self, key: str) -> bool:
        """The job's pods whose grace period is over are gone; a restarting job whose last
        pod is gone is pending again. False when none was due (released already)."""
        run = self.runs[key]
        if not self._release_due(run):
            return False
        self._refresh(run)
        self._jobs_cache = None
        return True

    def _release_due(self, run: JobRun) -> bool:
        """Let the pods whose grace period is over go; whether there were any."""
        gone = 0
        for pod_id, pod in list(run.releasing.items()):
            if pod.gone_at is None or pod.gone_at > self.now:
                continue
            del run.releasing[pod_id]
            self._held_until(run, pod, pod.gone_at)
            self.gpus_allocated -= pod.gpus
            gone += 1
        if gone and run.status == RESTARTING and not run.releasing:
            run.status = WAITING
            run.restarts += 1
        return gone > 0

    def _evict(self, run: JobRun, pod_id: tuple[str, int], lost: bool = False) -> None:
        """The pod is being released: it holds its node, resources and GPUs until the grace
        period is over, but no longer counts in its queue's quota (Volcano's queue allocation
        counts no Releasing pod)."""
        pod = run.bound.pop(pod_id)
        pod.gone_at, pod.lost = self.now + self.grace, lost
        run.releasing[pod_id] = pod
        self.queue_held[run.job.queue] -= pod.quota_gpus

    def _stop(self, run: JobRun) -> None:
        """The job fell below its gang: the run ends now, and its other pods are deleted
        too. From scratch, the GPU time of the run is lost, its pods' up to their release."""
        if self.resume and run.left is not None and run.run_start is not None:
            run.left = max(timedelta(0), run.left - (self.now - run.run_start))
        else:
            run.lost_gpu_s += run.run_gpu_s
            run.left = run.job.duration if run.job.duration is not None else run.left
            for pod in run.releasing.values():
                pod.lost = True
        run.run_gpu_s = 0.0
        for pod_id in list(run.bound):
            self._evict(run, pod_id, lost=not self.resume)
        run.status, run.run_start = RESTARTING, None
        run.generation += 1

    def _refresh(self, run: JobRun) -> None:
        """The job as the next cycle sees it: its bound pods and its PodGroup phase."""
        pods = tuple(
            RunningPod(index, pod.node, task, _containers(run.job.task(task), pod.devices))
            for (task, index), pod in sorted(run.bound.items())
        )
        phase = RUNNING if run.status == STARTED else run.job.phase
        if run.restarts and run.status == WAITING:
            phase = PENDING
        run.job = replace(run.job, running=pods, phase=phase)
        run.shown = _without(run.job, run.releasing) if run.releasing else None
        run.held = _releasing(run.job, run.releasing) if run.releasing else None

    def _bind(
        self,
        run: JobRun,
        task: Task,
        task_name: str,
        index: int,
        node: str,
        devices: tuple[DeviceShare, ...] | None,
    ) -> None:
        gpus = _gpu_equivalents(self.base.node_by_name[node], task, devices)
        quota = task.resources.get(NVIDIA_GPU)
        run.bound[(task_name, index)] = BoundPod(node, devices, self.now, gpus, quota)
        run.nodes.add(node)
        self.queue_held[run.job.queue] += quota
        self.gpus_allocated += gpus

    def _unbind(self, run: JobRun, pod_id: tuple[str, int]) -> None:
        """The pod stops now (its job is done)."""
        pod = run.bound.pop(pod_id)
        self._held_until(run, pod, self.now)
        self.queue_held[run.job.queue] -= pod.quota_gpus
        self.gpus_allocated -= pod.gpus

    def _held_until(self, run: JobRun, pod: BoundPod, end: datetime) -> None:
        """Count the pod's GPU time up to ``end``: lost, or part of the current run."""
        held = pod.gpus * (end - pod.since).total_seconds()
        run.gpu_s += held
        if pod.lost:
            run.lost_gpu_s += held
        else:
            run.run_gpu_s += held

    def close(self) -> None:
        """Count the GPU time of pods still bound, or still being released, at the end of the
        simulation."""
        for run in self.runs.values():
            for pod in (*run.bound.values(), *run.releasing.values()):
                held = pod.gpus * (self.now - pod.since).total_seconds()
                run.gpu_s += held
                if pod.lost:
                    run.lost_gpu_s += held
                pod.since = self.now


def _without(job: Job, gone: Mapping[tuple[str, int], BoundPod]) -> Job:
    """``job`` without the pods of ``gone``: each task keeps its other pods under their own
    names (``pod_names``), numbered anew in order; a task left with none is dropped."""
    tasks, renumbered = [], {}
    for task in job.tasks:
        kept = [i for i in range(task.replicas) if (task.name, i) not in gone]
        if len(kept) == task.replicas:
            tasks.append(task)
            continue
        if kept:
            names = tuple(task.pod_name(job.name, i) for i in kept)
            tasks.append(replace(task, replicas=len(kept), pod_names=names))
        renumbered.update({(task.name, i): n for n, i in enumerate(kept)})
    running = tuple(
        replace(pod, index=renumbered.get((pod.task, pod.index), pod.index)) for pod in job.running
    )
    return replace(job, tasks=tuple(tasks), running=running)


def _releasing(job: Job, pods: Mapping[tuple[str, int], BoundPod]) -> Job:
    """The pods of ``pods`` as a job of another scheduler (``Instance.foreign_jobs``): running
    where they are with their devices, under their own names, in no queue and no plan."""
    tasks, running = [], []
    for task in job.tasks:
        indices = sorted(i for name, i in pods if name == task.name)
        if not indices:
            continue
        names = tuple(task.pod_name(job.name, i) for i in indices)
        tasks.append(replace(task, replicas=len(indices), pod_names=names))
        for n, i in enumerate(indices):
            pod = pods[(task.name, i)]
            running.append(RunningPod(n, pod.node, task.name, _containers(task, pod.devices)))
    return replace(
        job,
        name=job.name + RELEASING_SUFFIX,
        min_available=0,
        min_task_member={},
        network_topology=None,
        tasks=tuple(tasks),
        running=tuple(running),
    )


def _containers(
    task: Task, devices: tuple[DeviceShare, ...] | None
) -> tuple[tuple[DeviceShare, ...], ...]:
    """A pod's devices per GPU container, as a running pod lists them: in container order,
    each taking as many devices as it requests."""
    if not devices:
        return ()
    if len(task.gpu) <= 1 or sum(r.nums for r in task.gpu) != len(devices):
        return (devices,)
    out, at = [], 0
    for request in task.gpu:
        out.append(devices[at : at + request.nums])
        at += request.nums
    return tuple(out)


def _gpu_equivalents(node: Node, task: Task, devices: tuple[DeviceShare, ...] | None) -> float:
    if devices:
        total = 0.0
        for share in devices:
            device = node.device(share.id)
            memory = share.memory / device.memory if device is not None and device.memory else 0
            total += max(share.cores / FULL_CORES, memory)
        return total
    return float(sum(r.nums for r in task.gpu))


def by_queue(runs: Mapping[str, JobRun]) -> dict[str, list[JobRun]]:
    out: dict[str, list[JobRun]] = {}
    for run in runs.values():
        out.setdefault(run.job.queue, []).append(run)
    return out
