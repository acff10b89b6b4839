"""``backfill`` (spec §1.7): place BestEffort tasks (empty requests) that allocate skipped.

There is no gang statement and no queue quota check: each task, in queue → job → task order,
is allocated directly on the best-scoring feasible node. Pending BestEffort tasks already count
as ready for gang (§9.17), so binding them never breaks a gang.
"""

from __future__ import annotations

from functools import cmp_to_key

from models.workload import PENDING

from ..api import Status
from ..nodes import FitReport, best_node, predicate_nodes
from ..session import Session


def _key(less):  # type: ignore[no-untyped-def]
    return cmp_to_key(lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0))


def execute(ssn: Session) -> None:
    queues = sorted(ssn.queues.values(), key=_key(ssn.queue_order))
    for queue in queues:
        jobs = [j for j in ssn.jobs.values() if j.queue == queue.uid]
        for job in sorted(jobs, key=_key(ssn.job_order)):
            if job.phase in (PENDING, "") or ssn.job_valid(job) is not None:
                continue
            pending = [
                t for t in job.tasks.values() if t.best_effort and t.status is Status.PENDING
            ]
            for task in sorted(pending, key=_key(ssn.task_order)):
                if ssn.pre_predicate(task) is not None:
                    continue
                feasible = predicate_nodes(ssn, task, ssn.node_list, FitReport())
                if not feasible:
                    continue
                stmt = ssn.statement()
                stmt.allocate(task, best_node(ssn, task, feasible), None)
                stmt.commit()
