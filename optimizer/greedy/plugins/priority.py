"""``priority`` (``plugins/priority/priority.go``): PodGroup and pod priority decide the order,
and which running pods a pending pod may preempt (spec §1.6, §3, §8.1).

Volcano registers a PreemptableFn but no ReclaimableFn for this plugin (spec §8.1 only names
preemptable), so reclaim between queues ignores priorities unless another plugin checks them.
"""

from __future__ import annotations

from ..api import JobInfo, TaskInfo
from ..session import PERMIT, Plugin, Session


def _descending(left: int, right: int) -> int:
    """Higher value first, ties to the next plugin."""
    if left > right:
        return -1
    if left < right:
        return 1
    return 0


class PriorityPlugin(Plugin):
    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        jobs = ssn.jobs

        def job_order(left: JobInfo, right: JobInfo) -> int:
            return _descending(left.priority, right.priority)

        def task_order(left: TaskInfo, right: TaskInfo) -> int:
            return _descending(left.priority, right.priority)

        def preemptable(
            preemptor: TaskInfo, candidates: list[TaskInfo]
        ) -> tuple[list[TaskInfo], int]:
            """Between jobs the PodGroup priorities decide; inside one job the pod priorities
            do, so a gang can shed its own low-priority members for a more important one."""
            own = jobs[preemptor.job]
            victims: list[TaskInfo] = []
            for task in candidates:
                if task.job != own.uid:
                    if jobs[task.job].priority < own.priority:
                        victims.append(task)
                elif task.priority < preemptor.priority:
                    victims.append(task)
            return victims, PERMIT

        def job_starving(job: JobInfo) -> bool:
            """Starving until every task is placed; with gang in the same tier the AND makes
            gang's minAvailable condition the binding one (§3)."""
            return job.ready_task_num + job.waiting_task_num < len(job.tasks)

        ssn.add("job_order", self.name, job_order)
        ssn.add("task_order", self.name, task_order)
        ssn.add("preemptable", self.name, preemptable)
        ssn.add("job_starving", self.name, job_starving)
