"""``allocate`` (spec §1.4–§1.6, §2, §3, §4.3–§4.5): place pending tasks, gang by gang.

The loop pops the best queue, then that queue's best job, places tasks until the job is ready
and commits; a ready job with tasks left goes back into its queue's heap and gets one more task
per pop, and the queue always goes back so that queue order is re-evaluated with the new
shares. A job that did not become ready is not retried in this action (§9.3), and a job that
is only pipelined keeps its tentative placements in the session without being bound (§9.1).
"""

from __future__ import annotations

from dataclasses import dataclass

from models.topology import Topology
from models.workload import INQUEUE, PENDING

from ..api import JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus, vle
from ..heap import GoHeap, SortedQueue
from ..nodes import best_node, device_fit, fits_idle
from ..scan import FitReport, RoleCache, predicate_nodes
from ..session import FitFailure, Operation, Session, Statement


@dataclass
class Worksheet:
    """A job's pending tasks in task order (``organizeJobWorksheet``).

    Volcano keeps them in a heap ordered by the TaskOrderFns. Task order is a strict total
    order that does not change during the session (pod priority, then index and UID), so the
    heap pops them in sorted order: they are sorted once (:class:`heap.SortedQueue`)."""

    tasks: SortedQueue[TaskInfo]

    def clone(self) -> Worksheet:
        """An independent copy for a dry run. Volcano's clone pushes every task into a new
        heap, which pops the same tasks in the same order."""
        return Worksheet(self.tasks.copy())

    def empty(self) -> bool:
        return self.tasks.empty()


def worksheet(ssn: Session, job: JobInfo) -> Worksheet:
    pending = [
        task
        for task in job.tasks.values()
        if task.status is TaskStatus.PENDING and not task.best_effort
    ]
    return Worksheet(SortedQueue(pending, ssn.task_order))


def _schedulable(ssn: Session) -> tuple[GoHeap, dict[str, GoHeap], dict[str, Worksheet]]:
    """The queues with jobs to allocate, each queue's job heap and each job's worksheet:
    jobs past enqueue (every job when enqueue is not configured), valid, with pending tasks."""
    enqueue_configured = "enqueue" in ssn.conf.actions
    queues: GoHeap = GoHeap(ssn.queue_order)
    jobs_by_queue: dict[str, GoHeap] = {}
    sheets: dict[str, Worksheet] = {}
    for job in sorted(ssn.jobs.values(), key=lambda j: (j.order, j.uid)):
        if job.phase in (PENDING, ""):
            if enqueue_configured:
                continue
            job.phase = INQUEUE
        reason = ssn.job_valid(job)
        if reason is not None:
            job.reason = job.reason or reason
            continue
        queue = ssn.queue_of(job)
        if queue is None:
            continue
        sheet = worksheet(ssn, job)
        if sheet.empty():
            continue
        sheets[job.uid] = sheet
        if queue.uid not in jobs_by_queue:
            jobs_by_queue[queue.uid] = GoHeap(ssn.job_order)
            queues.push(queue)
        jobs_by_queue[queue.uid].push(job)
    return queues, jobs_by_queue, sheets


def _skip_overused(queue: QueueInfo, heap: GoHeap) -> None:
    """Volcano quirk (§9.3): an overused queue is dropped for the rest of the action."""
    for job in heap.items():
        job.reason = job.reason or (
            f"queue {queue.name} is overused (allocated ≥ deserved), "
            "so allocate skipped it for the rest of the cycle"
        )


def _allocate_job(ssn: Session, job: JobInfo, sheet: Worksheet) -> tuple[Worksheet, bool]:
    """One turn of ``job``: its worksheet after the turn, and whether the job goes back on
    its queue's heap (committed and still has tasks). Volcano quirk (§9.1, §9.3): a job that
    is not ready is not pushed back, and a pipelined-only statement is neither committed nor
    discarded, so its placements keep holding node and queue resources for the rest of the
    cycle without being bound."""
    hard = job.tier_limit is not None
    if hard:
        stmt, sheet, hypernode = allocate_for_job(ssn, job, sheet)
    else:
        stmt = allocate_tasks(ssn, job, sheet, ssn.node_list)
    if stmt is None or not ssn.job_ready(job):
        return sheet, False
    if hard:
        record_hypernode(ssn, job, hypernode)
    stmt.commit()
    return sheet, not sheet.empty()


def execute(ssn: Session) -> None:
    queues, jobs_by_queue, sheets = _schedulable(ssn)
    while not queues.empty():
        queue = queues.pop()
        heap = jobs_by_queue[queue.uid]
        if ssn.overused(queue):
            _skip_overused(queue, heap)
            continue
        if heap.empty():
            continue
        job = heap.pop()
        sheets[job.uid], again = _allocate_job(ssn, job, sheets[job.uid])
        if again:
            heap.push(job)
        queues.push(queue)


def record_hypernode(ssn: Session, job: JobInfo, hypernode: str) -> None:
    """``UpdateDecisionToJob``: the job's HyperNode becomes LCA(old, chosen job-level one)."""
    old = job.allocated_hypernode
    job.allocated_hypernode = ssn.topology.lca(old, hypernode) if old else hypernode
    ssn.hypernode_decisions[job.uid] = job.allocated_hypernode


def need_continue(job: JobInfo) -> bool:
    """``JobInfo.NeedContinueAllocating`` (§2.1) for a job without subGroupPolicy."""
    if job.min_available == len(job.tasks):
        return False
    members = sum(job.min_task_member.values())
    if job.min_available < members:
        open_roles = sum(
            1
            for t in job.tasks.values()
            if t.status is TaskStatus.PENDING and t.role not in job.role_fit_failed
        )
        return job.ready_task_num + open_roles >= job.min_available
    for role in job.role_fit_failed:
        allocated = sum(1 for t in job.tasks.values() if t.role == role and t.status in _HOLDING)
        if allocated < job.min_task_member.get(role, 0):
            return False
    return True


_HOLDING = frozenset(
    {
        TaskStatus.ALLOCATED,
        TaskStatus.PIPELINED,
        TaskStatus.BINDING,
        TaskStatus.BOUND,
        TaskStatus.RUNNING,
    }
)


def _task_failed(job: JobInfo, task: TaskInfo, reason: str) -> bool:
    """Record why ``task`` found no node and whether the job goes on with its other tasks.
    Volcano quirk (§9.18): minAvailable == #tasks stops at the first failure."""
    job.fit_errors[task.uid] = reason
    if task.role:
        job.role_fit_failed.add(task.role)
    return need_continue(job)


def allocate_tasks(
    ssn: Session, job: JobInfo, sheet: Worksheet, nodes: list[NodeInfo]
) -> Statement | None:
    """``allocateResourcesForTasks`` for the job's default subjob on ``nodes`` (§2.1)."""
    stmt = ssn.statement()
    queue = ssn.queue_of(job)
    role_cache = RoleCache(ssn)
    job.running_lca = job.subjob_hypernode
    topology: Topology = ssn.topology
    while not sheet.empty():
        task: TaskInfo = sheet.tasks.pop()
        if queue is None or not ssn.allocatable(queue, task):
            job.fit_errors[task.uid] = quota_reason(ssn, job, task)
            continue
        if task.role and task.role in job.role_fit_failed:
            job.fit_errors[task.uid] = f"task role {task.role!r} already failed in this job"
            continue
        failure = ssn.pre_predicate(task)
        if failure is not None:
            if _task_failed(job, task, failure.reason):
                continue
            break
        report = FitReport(ssn.fit_cache)
        candidates = nominated(ssn, task, nodes)
        feasible = predicate_nodes(ssn, task, candidates or nodes, report, role_cache)
        if not feasible and candidates:
            feasible = predicate_nodes(ssn, task, nodes, report, role_cache)
        if not feasible:
            if _task_failed(job, task, report.summary(len(nodes))):
                continue
            break
        node = best_node(ssn, task, feasible)
        place(ssn, stmt, task, node)
        if job.has_topology:
            leaf = topology.leaf_of(node.name) or ""
            job.running_lca = topology.lca(job.running_lca, leaf) if job.running_lca else leaf
        # Volcano quirk (§9.2): the loop ends at the first task placed once the job is ready,
        # so the first pop stops at minAvailable and every later pop adds one task.
        if ssn.job_ready(job):
            break
    if ssn.job_ready(job) or ssn.job_pipelined(job):
        return stmt
    stmt.discard()
    return None


def nominated(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
    """The nominated-node fast path (§2.1 step 5)."""
    if not task.nominated_node:
        return []
    for node in nodes:
        if node.name == task.nominated_node and vle(task.init_resreq, node.future_idle):
            return [node]
    return []


def place(ssn: Session, stmt: Statement, task: TaskInfo, node: NodeInfo) -> None:
    """Allocate when the task fits the node's idle resources, else pipeline (§2.6)."""
    devices = device_fit(ssn, task, node)
    gpus = None if devices is None or isinstance(devices, FitFailure) else devices.gpus
    if fits_idle(task, node):
        stmt.allocate(task, node, gpus)
    else:
        stmt.pipeline(task, node, gpus)


def quota_reason(ssn: Session, job: JobInfo, task: TaskInfo) -> str:
    """Why ``Allocatable`` refused the task, from the quota plugin when it can say.

    A resource no node offers makes every quota derived from the cluster total zero, so the
    quota refusal is true but hides the cause: the reason then names the missing resource.
    """
    total = ssn.instance.total_allocatable
    absent = [r for r in task.task.resources if task.task.resources.get(r) > 0 and not total.get(r)]
    note = f" (no node offers {', '.join(absent)})" if absent else ""
    for name in ("capacity", "proportion"):
        plugin = ssn.plugins.get(name)
        explain = getattr(plugin, "quota_reason", None)
        if explain is not None:
            queue = ssn.queue_of(job)
            reason = explain(queue, task) if queue is not None else None
            if reason:
                return reason + note
    return f"queue {job.queue}: not allocatable{note}"


# -- hard topology (§4.3–§4.5) -------------------------------------------------------------


@dataclass
class Solution:
    operations: list[Operation]
    score: float
    sheet: Worksheet
    hypernode: str
    subjob_hypernode: str


def allocate_for_job(
    ssn: Session, job: JobInfo, sheet: Worksheet
) -> tuple[Statement | None, Worksheet, str]:
    """``allocateForJob``: dry-run every HyperNode of each gradient, keep the best (§4.3).

    Returns the replayed statement, the winner's leftover worksheet and the job-level HyperNode
    it was found in; (None, the untouched worksheet, "") when no gradient has a solution.
    """
    saved_job, saved_subjob = job.allocated_hypernode, job.subjob_hypernode
    job.fit_errors.clear()
    job.topology_reason = ""
    gradients = ssn.hypernode_gradient(job, Topology.TOP, "allocate", False)
    for gradient in gradients:
        solutions: list[Solution] = []
        for hypernode in gradient:
            trial = sheet.clone()
            job.role_fit_failed.clear()
            stmt, score = allocate_for_subjob(ssn, job, trial, hypernode)
            if (
                stmt is not None
                and stmt.operations
                and (ssn.job_ready(job) or ssn.job_pipelined(job))
            ):
                solutions.append(
                    Solution(list(stmt.operations), score, trial, hypernode, job.subjob_hypernode)
                )
            if stmt is not None:
                stmt.discard()
            job.allocated_hypernode, job.subjob_hypernode = saved_job, saved_subjob
        if solutions:
            top = max(s.score for s in solutions)
            best = [s for s in solutions if s.score == top]
            # Volcano quirk (§9.14): ties fall to Go map order, effectively random.
            winner = best[0] if len(best) == 1 else ssn.rng.choice(best)
            stmt = ssn.statement()
            stmt.recover(winner.operations)
            job.subjob_hypernode = winner.subjob_hypernode
            return stmt, winner.sheet, winner.hypernode
    job.topology_reason = topology_reason(ssn, job, gradients)
    return None, sheet, ""


def allocate_for_subjob(
    ssn: Session, job: JobInfo, sheet: Worksheet, root: str
) -> tuple[Statement | None, float]:
    """``allocateForSubJob``: inside ``root``, the lowest-tier HyperNode that fits wins (§4.4).

    Every HyperNode is a fresh dry run: the worksheet is cloned and the failed roles are
    forgotten, or a role that failed in one rack would be skipped in the next.
    """
    for gradient in ssn.hypernode_gradient(job, root, "allocate", True):
        if len(gradient) == 1:
            stmt, score = _only_candidate(ssn, job, sheet, gradient[0])
            if stmt is not None:
                return stmt, score
            continue
        found: dict[str, tuple[list[Operation], Worksheet]] = {}
        for hypernode in gradient:
            trial = sheet.clone()
            job.role_fit_failed.clear()
            stmt = allocate_tasks(ssn, job, trial, ssn.nodes_in(hypernode))
            if stmt is not None and stmt.operations:
                found[hypernode] = (list(stmt.operations), trial)
            if stmt is not None:
                stmt.discard()
        if found:
            scores = ssn.hypernode_order(job, {h: ssn.nodes_in(h) for h in found})
            top = max(scores.get(h, 0.0) for h in found)
            best = [h for h in found if scores.get(h, 0.0) == top]
            # Volcano quirk (§9.14): SelectBestHyperNodeAndScore breaks ties at random.
            chosen = best[0] if len(best) == 1 else ssn.rng.choice(best)
            operations, trial = found[chosen]
            stmt = ssn.statement()
            stmt.recover(operations)
            _chosen(ssn, job, sheet, trial, chosen)
            return stmt, top
    return None, 0.0


def _only_candidate(
    ssn: Session, job: JobInfo, sheet: Worksheet, hypernode: str
) -> tuple[Statement | None, float]:
    """A gradient of one HyperNode: its dry run, if it finds a placement, is the one chosen.

    Volcano discards the dry run, scores the HyperNodes that found one (on the session as it
    was before the dry runs) and replays the winner's operations. With one candidate the
    winner is known, so the dry run is kept instead of discarded and replayed (the same
    session state, with the same operations), and the score is read before it, on the same
    state the discard would have restored. The HyperNode order reads only such state (the
    HyperNodes' usage and the job's placed tasks, which the discard restores)."""
    scores = ssn.hypernode_order(job, {hypernode: ssn.nodes_in(hypernode)})
    trial = sheet.clone()
    job.role_fit_failed.clear()
    stmt = allocate_tasks(ssn, job, trial, ssn.nodes_in(hypernode))
    if stmt is None:
        return None, 0.0
    if not stmt.operations:
        stmt.discard()
        return None, 0.0
    _chosen(ssn, job, sheet, trial, hypernode)
    return stmt, scores.get(hypernode, 0.0)


def _chosen(ssn: Session, job: JobInfo, sheet: Worksheet, trial: Worksheet, chosen: str) -> None:
    """The subjob goes on with the chosen dry run's worksheet, its HyperNode joined in."""
    sheet.tasks = trial.tasks
    old = job.subjob_hypernode
    job.subjob_hypernode = ssn.topology.lca(old, chosen) if old else chosen


def topology_reason(ssn: Session, job: JobInfo, gradients: list[list[str]]) -> str:
    """Which tiers the HyperNode search tried, for the pending reason."""
    spec = job.job.network_topology
    mode = spec.mode if spec is not None else "hard"
    if not ssn.conf.enforces_topology:
        return (
            f"{mode} network topology not enforced (network-topology-aware is not configured): "
            "the whole cluster was searched and could not hold the gang"
        )
    limit = "any tier up to the whole cluster" if mode == "soft" else f"tier ≤ {job.tier_limit}"
    if not gradients:
        return (
            f"{mode} network topology: no HyperNode of {limit} had the job's minResources idle "
            "at session start"
        )
    tried = []
    for gradient in gradients:
        tier = ssn.topology.tier(gradient[0])
        names = ", ".join(gradient[:4]) + (
            f" and {len(gradient) - 4} more" if len(gradient) > 4 else ""
        )
        tried.append(f"tier {tier}: {names}")
    return (
        f"{mode} network topology: no HyperNode of {limit} could hold the gang "
        f"(tried {'; '.join(tried)})"
    )
