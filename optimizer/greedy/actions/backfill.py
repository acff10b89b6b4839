"""``backfill`` (spec §1.7): place BestEffort tasks (empty requests) that allocate skipped.

There is no gang statement and no queue quota check: each task, in queue → job → task order
fixed before the first placement, is allocated directly on the best-scoring feasible node.
Pending BestEffort tasks already count as ready for gang (§9.17), so binding them never breaks
a gang; but ``ssn.Allocate`` binds only once the job is ready, so the BestEffort pods of a job
that allocate could not make ready stay allocated in the session without being bound.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cmp_to_key
from typing import Any

from models.workload import PENDING

from ..api import TaskInfo, TaskStatus
from ..nodes import best_node, device_fit
from ..scan import FitReport, predicate_nodes
from ..session import FitFailure, Operation, Session


def _key(less: Callable[[Any, Any], bool]) -> Callable[[Any], Any]:
    return cmp_to_key(lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0))


def best_effort_tasks(ssn: Session) -> list[TaskInfo]:
    """``pickUpPendingTasks``: the Pending and Pipelined BestEffort tasks of every non-pending,
    valid job, queue by queue, job by job, in the session's orders."""
    out: list[TaskInfo] = []
    for queue in sorted(ssn.queues.values(), key=_key(ssn.queue_order)):
        jobs = [j for j in ssn.jobs.values() if j.queue == queue.uid]
        for job in sorted(jobs, key=_key(ssn.job_order)):
            if job.phase in (PENDING, "") or ssn.job_valid(job) is not None:
                continue
            tasks = [
                t
                for t in job.tasks.values()
                if t.best_effort and t.status in (TaskStatus.PENDING, TaskStatus.PIPELINED)
            ]
            out.extend(sorted(tasks, key=_key(ssn.task_order)))
    return out


def execute(ssn: Session) -> None:
    for task in best_effort_tasks(ssn):
        job = ssn.jobs[task.job]
        if task.status is TaskStatus.PIPELINED:
            ssn.undo(Operation("pipeline", task, task.node))
        failure = ssn.pre_predicate(task)
        if failure is not None:
            job.fit_errors[task.uid] = failure.reason
            continue
        report = FitReport(ssn.fit_cache)
        feasible = predicate_nodes(ssn, task, ssn.node_list, report)
        if not feasible:
            job.fit_errors[task.uid] = report.summary(len(ssn.node_list))
            continue
        node = best_node(ssn, task, feasible)
        devices = device_fit(ssn, task, node)
        gpus = None if devices is None or isinstance(devices, FitFailure) else devices.gpus
        ssn.allocate(task, node, gpus)
        job.fit_errors.pop(task.uid, None)
        if ssn.job_ready(job):
            # ``Session.Allocate`` dispatches every Allocated task of a ready job.
            for ready in job.tasks_with(TaskStatus.ALLOCATED):
                ssn.commit_op(Operation("allocate", ready, ready.node, gpus=ready.gpus))
