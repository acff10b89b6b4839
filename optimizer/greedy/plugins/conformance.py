"""``conformance`` (``plugins/conformance/conformance.go``): never evict cluster-critical pods
(spec §8.1), whether for preemption or for reclaim.

Volcano reads the evictee pod's own ``priorityClassName``. vcopt's pods carry no class name of
their own, so the PodGroup's class stands in for it; the namespace test is Volcano's.
"""

from __future__ import annotations

from ..api import TaskInfo
from ..session import PERMIT, Plugin, Session


class ConformancePlugin(Plugin):
    name = "conformance"

    def on_session_open(self, ssn: Session) -> None:
        protected_jobs = {
            uid for uid, job in ssn.jobs.items() if job.job.conformance_protection is not None
        }

        def evictable(evictor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            victims = [t for t in candidates if t.job not in protected_jobs]
            return victims, PERMIT

        ssn.add("preemptable", self.name, evictable)
        ssn.add("reclaimable", self.name, evictable)
