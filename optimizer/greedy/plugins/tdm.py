"""The ``tdm`` plugin: revocable zones lent to revocable pods only inside their daily window.

Volcano's ``plugins/tdm/tdm.go`` (spec §6). The rules themselves (windows, who is preemptable,
disruption budgets) are in :mod:`models.tdm`; this module wires them into the session's hooks.
Windows are read on the instance's clock (``now`` in ``timezone``) where Volcano reads
``time.Now()`` in the scheduler's local zone, with Volcano's today-anchored evaluation
(``faithful=True``, spec §9 item 12).

Volcano keeps the time of the last eviction round in a package variable (``lastEvictAt``) that
survives across sessions and starts at Go's zero time, so the first cycle after the scheduler
starts always may evict. vcopt simulates one cycle of a snapshot, which carries no memory of
earlier cycles: by default it is that first cycle. The vcopt extension argument
``vcopt.lastEvictAt`` (RFC 3339) gives the time of the previous round, to ask what a cycle
within ``tdm.evict.period`` of it does (nothing). Within the session the round's time is this
plugin's ``last_evict_at``, so a second ``shuffle`` in the same cycle evicts nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from models.errors import Diagnostics, obj_name
from models.tdm import TdmConfig, job_eviction_budget

from ..api import JobInfo, NodeInfo, TaskInfo, TaskStatus
from ..session import (
    PERMIT,
    REJECT,
    UNRESOLVABLE,
    FitFailure,
    Plugin,
    ScoreSkip,
    Session,
)

MAX_NODE_SCORE = 100.0


class TdmPlugin(Plugin):
    name = "tdm"

    def on_session_open(self, ssn: Session) -> None:
        diag = Diagnostics()
        obj = obj_name("Plugin", self.name)
        self.config = TdmConfig.from_arguments(self.arguments, obj, diag)
        self.last_evict_at = self.config.last_evict_at
        diag.raise_if_errors()
        self._ssn = ssn
        zones = set(self.config.zones) | {n.revocable_zone for n in ssn.node_list}
        self.active = {
            zone: self.config.zone_active(zone, ssn.now, ssn.instance.tz, faithful=True)
            for zone in zones
            if zone
        }
        ssn.add("predicate", self.name, self.predicate)
        ssn.add("predicate_key", self.name, lambda task: task.revocable_zone)
        ssn.add("node_order", self.name, self.node_order)
        ssn.add("node_order_key", self.name, lambda task: task.revocable_zone)
        ssn.add("preemptable", self.name, self.preemptable)
        ssn.add("victim_tasks", self.name, self.victim_tasks)
        ssn.add("job_order", self.name, self.job_order)
        ssn.add("job_pipelined", self.name, self.job_pipelined)
        ssn.add("job_starving", self.name, self.job_starving)

    def _window(self, zone: str) -> str:
        window = self.config.zones.get(zone)
        return window.text if window is not None else "not configured"

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitFailure | None:
        """Ordinary nodes pass; a revocable node needs an active zone and a revocable task."""
        zone = node.revocable_zone
        if not zone:
            return None
        if not self.active[zone]:
            reason = f"node(s) in revocable zone {zone} outside its window ({self._window(zone)})"
            return FitFailure(UNRESOLVABLE, reason, self.name)
        if not task.revocable_zone:
            reason = 'node(s) revocable, and the pod lacks volcano.sh/revocable-zone: "*"'
            return FitFailure(UNRESOLVABLE, reason, self.name)
        return None

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        """100 for a revocable task on an active revocable node, else 0; an inactive zone is
        Volcano's error return, which drops the node's whole NodeOrder part."""
        zone = node.revocable_zone
        if not zone:
            return 0.0
        if not self.active[zone]:
            raise ScoreSkip(zone)
        return MAX_NODE_SCORE if task.revocable_zone else 0.0

    def _budgeted(self, tasks: Iterable[TaskInfo]) -> list[TaskInfo]:
        """Group by job in the order received and keep each job's first ``maxVictims``.

        Volcano groups through a Go map, so its job order is random, but the *set* it returns
        is the same; the victims are re-ordered by the action anyway.
        """
        by_job: dict[str, list[TaskInfo]] = {}
        for task in tasks:
            by_job.setdefault(task.job, []).append(task)
        victims: list[TaskInfo] = []
        for uid, candidates in by_job.items():
            job = self._ssn.jobs.get(uid)
            if job is not None:
                victims.extend(candidates[: min(self.budget(job), len(candidates))])
        return victims

    def budget(self, job: JobInfo) -> int:
        """``getMaxPodEvictNum`` on the job's current task statuses and its budget as
        ``JobInfo.extractBudget`` reads it."""
        running = finished = 0
        for task in job.tasks.values():
            if task.status is TaskStatus.RUNNING:
                running += 1
            elif task.status in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
                finished += 1
        return job_eviction_budget(job.job.annotations, len(job.tasks), running, finished)

    def preemptable(
        self, preemptor: TaskInfo, candidates: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        """A preemptable or revocable preemptor may not preempt: an empty result, which only
        hands the decision to the next tier (spec §9 item 4). Otherwise: Running, preemptable
        victims on ordinary nodes, within each job's disruption budget."""
        if preemptor.preemptable or preemptor.revocable_zone:
            return [], REJECT
        eligible = (
            t
            for t in candidates
            if t.preemptable
            and t.status is TaskStatus.RUNNING
            and t.node in self._ssn.nodes
            and not self._ssn.nodes[t.node].revocable_zone
        )
        return self._budgeted(eligible), PERMIT

    def victim_tasks(self) -> list[TaskInfo]:
        """Running preemptable pods on revocable nodes of every configured zone that is closed
        now, per zone and job within the budget; nothing if the last round was less than
        ``tdm.evict.period`` ago. Each call counts as a round, as in Volcano."""
        now = self._ssn.now
        last = self.last_evict_at
        if last is not None and last + self.config.evict_period > now:
            return []
        victims: list[TaskInfo] = []
        for zone in self.config.zones:
            if self.active[zone]:
                continue
            on_zone = (
                task
                for node in self._ssn.node_list
                if node.revocable_zone == zone
                for task in node.tasks.values()
                if task.preemptable and task.status is TaskStatus.RUNNING
            )
            victims.extend(self._budgeted(on_zone))
        self.last_evict_at = now
        return victims

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        """Non-preemptable jobs first."""
        if left.preemptable == right.preemptable:
            return 0
        return 1 if left.preemptable else -1

    def job_pipelined(self, job: JobInfo) -> int:
        return PERMIT if job.is_pipelined() else REJECT

    def job_starving(self, job: JobInfo) -> bool:
        """A preemptable job never starves; another starves while it has Pending tasks."""
        if job.preemptable:
            return False
        return any(t.status is TaskStatus.PENDING for t in job.tasks.values())
