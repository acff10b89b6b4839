"""``gang`` (``plugins/gang/gang.go``, ``api/job_info.go``): all-or-nothing placement of a
PodGroup's ``minAvailable`` pods, with per-role minimums from ``minTaskMember`` (spec §3).

The role checks (``CheckTaskValid``/``CheckTaskReady``/``CheckTaskPipelined``) are skipped when
``minAvailable < Σ minTaskMember``: Volcano then trusts ``minAvailable`` alone. Sub-group
policies (``CheckSubJobValid``/``CheckSubJobReady``) are not modelled by vcopt's jobs, so those
checks always pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from ..api import READY_STATUSES, JobInfo, TaskInfo, TaskStatus, vempty
from ..session import PERMIT, REJECT, Event, EventHandler, Plugin, Session

VALID_STATUSES = READY_STATUSES | {TaskStatus.PIPELINED, TaskStatus.PENDING}
"""What ``CheckTaskValid`` and ``ValidTaskNum`` count: every task that may still run."""
OCCUPIED_STATUSES = READY_STATUSES | {TaskStatus.PIPELINED}


def role_checks_apply(job: JobInfo) -> bool:
    """False when ``minAvailable < Σ minTaskMember`` (Volcano skips the per-role checks)."""
    return job.min_available >= sum(job.min_task_member.values())


def roles_valid(job: JobInfo) -> bool:
    """``CheckTaskValid``: each role still has at least its minimum of tasks that are
    placed, pipelined or pending."""
    if not role_checks_apply(job):
        return True
    actual = Counter(t.role for t in job.tasks.values() if t.status in VALID_STATUSES)
    return all(actual[role] >= need for role, need in job.min_task_member.items())


def roles_occupied(job: JobInfo, statuses: frozenset[TaskStatus]) -> bool:
    """``CheckTaskReady`` (``statuses`` = ready) and ``CheckTaskPipelined`` (ready + pipelined):
    a pending task whose ``InitResreq`` is empty counts as placed, since only backfill will
    place it and it needs nothing."""
    if not role_checks_apply(job):
        return True
    occupied: Counter[str] = Counter()
    for task in job.tasks.values():
        if task.status in statuses or (
            task.status is TaskStatus.PENDING and vempty(task.init_resreq)
        ):
            occupied[task.role] += 1
    return all(occupied[role] >= need for role, need in job.min_task_member.items())


def unschedulable_message(job: JobInfo) -> str:
    """The PodGroup condition of a job that is not ready at session close, shaped like
    Volcano's ``"x/y tasks in gang unschedulable: " + JobInfo.FitError()``: a status
    histogram sorted as strings, then the pending tasks, which ``TaskSchedulingReason`` calls
    ``Unschedulable`` with or without a recorded fit error."""
    missing = job.min_available - job.ready_task_num
    histogram = Counter(t.status.value for t in job.tasks.values())
    parts = sorted(
        [f"{n} {status}" for status, n in histogram.items()] + [f"{job.min_available} minAvailable"]
    )
    text = (
        f"{missing}/{len(job.tasks)} tasks in gang unschedulable: "
        f"pod group is not ready, {', '.join(parts)}"
    )
    pending = histogram.get(TaskStatus.PENDING.value, 0)
    if pending:
        text += f"; {TaskStatus.PENDING.value}: {pending} Unschedulable"
    return text


def job_valid(job: JobInfo) -> str | None:
    if not roles_valid(job):
        return "Not enough valid pods of each task for gang-scheduling"
    valid = job.valid_task_num()
    if valid < job.min_available:
        return (
            f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_available}"
        )
    return None


def job_ready(job: JobInfo) -> bool:
    return job.is_ready() and roles_occupied(job, READY_STATUSES)


def job_pipelined(job: JobInfo) -> int:
    if job.is_pipelined() and roles_occupied(job, OCCUPIED_STATUSES):
        return PERMIT
    return REJECT


def job_starving(job: JobInfo) -> bool:
    """Preemption looks at ``minAvailable`` only, never at the per-role minimums."""
    return job.waiting_task_num + job.ready_task_num < job.min_available


def gang_victims(
    jobs: Mapping[str, JobInfo], candidates: list[TaskInfo]
) -> tuple[list[TaskInfo], int]:
    """Keep a victim only while its job would still hold more than ``minAvailable`` ready
    tasks: eviction may shrink a gang to its minimum, never break it."""
    budget: dict[str, int] = {}
    victims: list[TaskInfo] = []
    for task in candidates:
        job = jobs[task.job]
        left = budget.setdefault(job.uid, job.ready_task_num)
        if left > job.min_available:
            budget[job.uid] = left - 1
            victims.append(task)
    return victims, PERMIT


class GangPlugin(Plugin):
    name = "gang"

    def on_session_open(self, ssn: Session) -> None:
        jobs = ssn.jobs
        ready_cache: dict[str, bool] = {}
        """Job uid → ``IsReady``, dropped by every task event of the job. JobOrder runs at
        every heap sift, and counting a large job's tasks each time would dominate the cycle;
        the status changes that fire no event (commit: Allocated → Binding) keep readiness."""

        def forget(event: Event) -> None:
            ready_cache.pop(event.task.job, None)

        def is_ready(job: JobInfo) -> bool:
            ready = ready_cache.get(job.uid)
            if ready is None:
                ready = ready_cache[job.uid] = job.is_ready()
            return ready

        def job_order(left: JobInfo, right: JobInfo) -> int:
            """Jobs still short of their gang go before ready ones, so elastic replicas of a
            ready job wait behind every unready gang (§9.2)."""
            left_ready, right_ready = is_ready(left), is_ready(right)
            if left_ready == right_ready:
                return 0
            return 1 if left_ready else -1

        def evictable(evictor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            return gang_victims(jobs, candidates)

        ssn.add("job_valid", self.name, job_valid)
        ssn.add("reclaimable", self.name, evictable)
        ssn.add("preemptable", self.name, evictable)
        ssn.add("job_order", self.name, job_order)
        ssn.add("job_ready", self.name, job_ready)
        ssn.add("job_pipelined", self.name, job_pipelined)
        ssn.add("job_starving", self.name, job_starving)
        ssn.add_event_handler(EventHandler(allocate=forget, deallocate=forget))

    def on_session_close(self, ssn: Session) -> None:
        """Record why each unready job did not start, unless an action already said why."""
        for job in ssn.jobs.values():
            if not job.reason and not job.is_ready():
                job.reason = unschedulable_message(job)
