"""``preempt`` (spec §8.1): starving jobs take resources from lower-priority work of their queue.

Phase A lets whole jobs preempt other jobs of the same queue, one statement per preemptor job,
committed only if the job becomes pipelined; phase B lets a starving job's pending tasks preempt
tasks of their own job, one statement per task. Nodes are tried best score first, and on each
node victims are evicted in victim order only until the preemptor fits (the shortest prefix, no
reprieve). Preemptors are pipelined onto the node they freed, never bound in this cycle, and
jobs with any network topology never preempt (§9.5).

With the action argument ``enableTopologyAwarePreemption`` (``configurations: [{name: preempt,
arguments: …}]``) each node is instead dry-run (``SelectVictimsOnNode``): victims come off in
victim order until the preemptor fits, then are reprieved in reverse where it still fits, and
"fits" reads InterPodAffinity on a state the removed pods no longer count in, so evicting the
pod whose anti-affinity blocked the node frees it. The candidate nodes are scanned from a
random offset until ``minCandidateNodesPercentage`` of them (at least
``minCandidateNodesAbsolute``, at most ``maxCandidateNodesAbsolute``) have worked, and the one
whose victims matter least (``pickOneNodeForPreemption``) is used.

The helpers shared with ``reclaim`` (preemptor tasks, candidate nodes, ``ValidateVictims``,
pipelining with GPU devices) live here too.
"""

from __future__ import annotations

from models.scheduler_conf import PreemptArguments
from models.workload import PENDING

from ..api import (
    PREEMPTABLE_STATUSES,
    JobInfo,
    NodeInfo,
    QueueInfo,
    TaskInfo,
    TaskStatus,
    vadd,
    vle,
)
from ..eviction_filters import may_free_mask
from ..heap import GoHeap
from ..nodes import check_node, device_fit
from ..plugins.interpod import PreemptionState, prefilter
from ..plugins.predicates import PredicatesPlugin
from ..session import FitFailure, Operation, Session, Statement
from ..victims import victim_order, victim_queue

NEVER = "Never"
REASON = "preempt"


def execute(ssn: Session) -> None:
    arguments = ssn.conf.preempt_arguments()
    queues: GoHeap[QueueInfo] = GoHeap(ssn.queue_order)
    seen: set[str] = set()
    preemptors: dict[str, GoHeap[JobInfo]] = {}
    tasks: dict[str, GoHeap[TaskInfo]] = {}
    starving: dict[str, list[JobInfo]] = {}
    for job in sorted(ssn.jobs.values(), key=lambda j: (j.order, j.uid)):
        if job.phase in (PENDING, "") or ssn.job_valid(job) is not None:
            continue
        queue = ssn.queue_of(job)
        if queue is None:
            continue
        if queue.uid not in seen:
            seen.add(queue.uid)
            queues.push(queue)
        # Volcano quirk (§9.5): a job with any network topology never preempts.
        if job.has_topology or not ssn.job_starving(job):
            continue
        preemptors.setdefault(queue.uid, GoHeap(ssn.job_order)).push(job)
        starving.setdefault(queue.uid, []).append(job)
        tasks[job.uid] = pending_tasks(ssn, job)
    while not queues.empty():
        # Unlike allocate and reclaim, preempt never asks Overused: every queue with starving
        # jobs runs both phases (``preempt.go:Execute``).
        queue = queues.pop()
        heap = preemptors.get(queue.uid)
        while heap is not None and not heap.empty():
            _between_jobs(ssn, heap, heap.pop(), tasks, arguments)
        for job in starving.get(queue.uid, []):
            _within_job(ssn, job, arguments)


def _between_jobs(
    ssn: Session,
    heap: GoHeap[JobInfo],
    job: JobInfo,
    tasks: dict[str, GoHeap[TaskInfo]],
    arguments: PreemptArguments,
) -> None:
    """Phase A for one popped preemptor job: its tasks preempt other jobs of its queue while it
    is starving; the statement stands only if the job is pipelined afterwards."""
    stmt = ssn.statement()
    assigned = False
    others = _other_jobs_of_queue(ssn, job)
    while ssn.job_starving(job) and not tasks[job.uid].empty():
        assigned = preempt(ssn, stmt, tasks[job.uid].pop(), others, arguments)
    if not ssn.job_pipelined(job):
        stmt.discard()
        return
    stmt.commit()
    if assigned:
        heap.push(job)


def _within_job(ssn: Session, job: JobInfo, arguments: PreemptArguments) -> None:
    """Phase B: each pending task (task order) may preempt tasks of its own job; every success
    is committed at once, the first failure ends the job's turn."""
    own = pending_tasks(ssn, job)
    itself = frozenset({job.uid})
    while not own.empty():
        stmt = ssn.statement()
        assigned = preempt(ssn, stmt, own.pop(), itself, arguments)
        stmt.commit()
        if not assigned:
            return


def pending_tasks(ssn: Session, job: JobInfo) -> GoHeap[TaskInfo]:
    """The job's Pending tasks in task order (the preemptor/reclaimer task heap)."""
    heap: GoHeap[TaskInfo] = GoHeap(ssn.task_order)
    for task in sorted(job.tasks.values(), key=lambda t: t.uid):
        if task.status is TaskStatus.PENDING:
            heap.push(task)
    return heap


def _other_jobs_of_queue(ssn: Session, job: JobInfo) -> frozenset[str]:
    """Phase A's victims come from the other jobs of the preemptor's queue."""
    return frozenset(uid for uid, j in ssn.jobs.items() if j.queue == job.queue and uid != job.uid)


def _preemptees(node: NodeInfo, jobs: frozenset[str], best_effort: bool) -> list[TaskInfo]:
    """The tasks on ``node`` a preemptor may consider: of one of ``jobs``, Bound or Running,
    marked preemptable, and not a non-BestEffort pod for a ``best_effort`` preemptor (Volcano:
    "BestEffort pod is not supported to preempt unBestEffort pod")."""
    return [
        t
        for t in node.tasks.values()
        if t.job in jobs
        and t.status in PREEMPTABLE_STATUSES
        and t.preemptable
        and (not best_effort or t.best_effort)
    ]


def candidate_nodes(ssn: Session, task: TaskInfo) -> list[NodeInfo]:
    """``PredicateForPreemptAction`` over all nodes, in node order (see :func:`may_free`),
    read from the fit cache's verdicts when the task's are cacheable."""
    mask = may_free_mask(ssn, task)
    if mask is None:
        return [node for node in ssn.node_list if may_free(ssn, task, node)]
    nodes = ssn.node_list
    return [nodes[i] for i in mask.nonzero()[0].tolist()]


def may_free(ssn: Session, task: TaskInfo, node: NodeInfo) -> bool:
    """Whether evicting could make ``node`` usable for ``task``: the node passes the
    predicates or fails them only with resolvable reasons (lack of room is exactly what
    eviction fixes); UnschedulableAndUnresolvable nodes, as they were in allocate, are out."""
    failure = ssn.predicate(task, node)
    return failure is None or failure.resolvable


def validate_victims(task: TaskInfo, node: NodeInfo, victims: list[TaskInfo]) -> bool:
    """``ValidateVictims``: there are victims, and all of them together would make room."""
    if not victims:
        return False
    freed = node.future_idle
    for victim in victims:
        freed = vadd(freed, victim.resreq)
    return vle(task.init_resreq, freed)


def pipeline(stmt: Statement, task: TaskInfo, node: NodeInfo) -> None:
    """Pipeline ``task`` on ``node``, booking the GPU devices it would get there, if any."""
    devices = device_fit(stmt.ssn, task, node)
    stmt.pipeline(task, node, getattr(devices, "gpus", None))


def _fits(ssn: Session, queue: QueueInfo, task: TaskInfo, node: NodeInfo) -> bool:
    """``preemptorFitsOnNode``: queue quota, ``InitResreq ≤ FutureIdle`` and every predicate."""
    return ssn.allocatable(queue, task) and check_node(ssn, task, node) is None


def _by_score(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
    """``PrioritizeNodes`` then ``SortNodes``: best total score first; equal scores keep the
    predicate order (Volcano appends nodes of one score in that order)."""
    batch = ssn.batch_node_order(task, nodes)
    scores = {n.name: ssn.node_order(task, n) + batch.get(n.name, 0.0) for n in nodes}
    return sorted(nodes, key=lambda n: -scores[n.name])


def preempt(
    ssn: Session,
    stmt: Statement,
    task: TaskInfo,
    jobs: frozenset[str],
    arguments: PreemptArguments,
) -> bool:
    """``preempt(task)``: on the best-scored node where the preemptable tasks of ``jobs`` could
    make room, evict them in victim order until ``task`` fits, then pipeline it there (with
    topology-aware preemption: :func:`_topology_aware_preempt`).

    Victims are chosen for every node before any node is tried. Volcano chooses them node by
    node, but a node that does not work out is discarded, which restores every state the
    Preemptable hooks read, so the choice is the same; choosing first lets a task with no
    possible victims, or victims on one node only, skip the scoring of every node.
    """
    if task.preemption_policy == NEVER or ssn.pre_predicate(task) is not None:
        return False
    nodes = candidate_nodes(ssn, task)
    if arguments.topology_aware:
        return _topology_aware_preempt(ssn, stmt, task, jobs, nodes, arguments)
    best_effort = task.best_effort
    choices: dict[str, list[TaskInfo]] = {}
    for node in nodes:
        preemptees = _preemptees(node, jobs, best_effort)
        # Victims are a subset of the preemptees: if all of them cannot make room, asking the
        # plugins is wasted work.
        if not validate_victims(task, node, preemptees):
            continue
        victims = ssn.preemptable(task, preemptees)
        if validate_victims(task, node, victims):
            choices[node.name] = victims
    if not choices:
        return False
    queue = ssn.queues[ssn.jobs[task.job].queue]
    ranked = _by_score(ssn, task, nodes) if len(choices) > 1 else nodes
    for node in ranked:
        if node.name not in choices:
            continue
        local = ssn.statement()
        order = victim_queue(ssn, choices[node.name], task)
        while not _fits(ssn, queue, task, node) and not order.empty():
            local.evict(order.pop(), REASON)
        if _fits(ssn, queue, task, node):
            stmt.merge(local)
            pipeline(stmt, task, node)
            return True
        local.discard()
    return False


# -- topology-aware preemption (``enableTopologyAwarePreemption``) ------------------------------


def _topology_aware_preempt(
    ssn: Session,
    stmt: Statement,
    task: TaskInfo,
    jobs: frozenset[str],
    nodes: list[NodeInfo],
    arguments: PreemptArguments,
) -> bool:
    """``topologyAwarePreempt``: dry-run the candidate nodes, evict the victims of the best one
    and pipeline ``task`` there.

    ``DryRunPreemption`` checks the nodes with 16 workers from a random offset and keeps the
    first ``numCandidates`` that work, so which ones it keeps depends on timing; vcopt checks
    them one by one from the (seeded) offset. Nodes are not scored on this path.
    """
    if not nodes:
        return False
    queue = ssn.queues[ssn.jobs[task.job].queue]
    affinity = _preemption_state(ssn, task)
    offset = ssn.rng.randrange(len(nodes))
    wanted = candidate_count(len(nodes), arguments)
    candidates: list[tuple[NodeInfo, list[TaskInfo]]] = []
    for i in range(len(nodes)):
        if len(candidates) >= wanted:
            break
        node = nodes[(offset + i) % len(nodes)]
        victims = select_victims_on_node(ssn, task, queue, node, jobs, affinity)
        if victims:
            candidates.append((node, victims))
    if not candidates:
        return False
    node, victims = select_candidate(candidates)
    local = ssn.statement()
    for victim in victims:
        local.evict(victim, REASON)
    pipeline(local, task, node)
    stmt.merge(local)
    return True


def candidate_count(nodes: int, arguments: PreemptArguments) -> int:
    """``calculateNumCandidates``: ``nodes × minCandidateNodesPercentage / 100`` (integer),
    raised to ``minCandidateNodesAbsolute``, cut to ``maxCandidateNodesAbsolute`` and to the
    number of nodes. Settings that make it 0 or less leave no candidate (Volcano's list of
    that size holds none)."""
    count = nodes * arguments.min_candidates_percentage // 100
    count = max(count, arguments.min_candidates_absolute)
    count = min(count, arguments.max_candidates_absolute, nodes)
    return max(count, 0)


def _preemption_state(ssn: Session, task: TaskInfo) -> PreemptionState | None:
    """The preemptor's InterPodAffinity state as PreFilter left it for this attempt (it has
    just run, in ``preempt``), or None when the dry run's Filter does not run: no
    ``predicates`` plugin with its Predicate hook on, no inter-pod term in the instance, the
    filter switched off, or PreFilter skipped it for this task (sticky, §6.1)."""
    plugin = ssn.plugins.get("predicates")
    option = ssn.conf.plugin("predicates")
    if not isinstance(plugin, PredicatesPlugin) or option is None:
        return None
    filters = plugin.pod_filters
    if filters is None or not filters.affinity or not option.enabled("Predicate"):
        return None
    if task.uid in filters.sticky_skip:
        return None
    state = prefilter(task, ssn.node_list, filters.pods, filters.book)
    updates = option.enabled("Preemptable") or option.enabled("Allocatable")
    return PreemptionState(task, state, filters.book, updates)


class _DryRun:
    """One node's ``SelectVictimsOnNode``: victims taken off the node, put back, and "does the
    preemptor fit" asked in between, all undone at the end.

    Pods are taken off with session evictions that are always undone, so the queue hooks
    (``SimulateAllocatable``), the node's future idle resources and the device fit see them
    gone; the preemptor's InterPodAffinity state is updated as ``RemovePod`` / ``AddPod`` do.
    Volcano's ``SimulateAllocatable`` of proportion and capacity skips the queue's Open check;
    the session's ``Allocatable`` used here keeps it.
    """

    def __init__(
        self,
        ssn: Session,
        task: TaskInfo,
        queue: QueueInfo,
        node: NodeInfo,
        affinity: PreemptionState | None,
    ) -> None:
        self.ssn, self.task, self.queue, self.node = ssn, task, queue, node
        self.affinity = affinity.copy() if affinity is not None else None
        self.removed: dict[str, Operation] = {}

    def remove(self, victim: TaskInfo) -> None:
        self.removed[victim.uid] = self.ssn.evict(victim, REASON)
        if self.affinity is not None:
            self.affinity.remove_pod(victim, self.node)

    def add(self, victim: TaskInfo) -> None:
        self.ssn.undo(self.removed.pop(victim.uid))
        if self.affinity is not None:
            self.affinity.add_pod(victim, self.node)

    def predicate_passes(self) -> bool:
        """``SimulatePredicate``: InterPodAffinity's Filter on the simulated state and the
        device fit, and nothing else (no spread, taint or pod-count filter)."""
        if self.affinity is not None and self.affinity.filter(self.node) is not None:
            return False
        return not isinstance(device_fit(self.ssn, self.task, self.node), FitFailure)

    def fits(self) -> bool:
        """Queue quota, ``InitResreq ≤ FutureIdle``, then the simulated predicate."""
        return (
            self.ssn.allocatable(self.queue, self.task)
            and vle(self.task.init_resreq, self.node.future_idle)
            and self.predicate_passes()
        )

    def undo(self) -> None:
        """Put every pod still off the node back, latest first."""
        for op in reversed(list(self.removed.values())):
            self.ssn.undo(op)
        self.removed.clear()


def select_victims_on_node(
    ssn: Session,
    task: TaskInfo,
    queue: QueueInfo,
    node: NodeInfo,
    jobs: frozenset[str],
    affinity: PreemptionState | None,
) -> list[TaskInfo]:
    """``SelectVictimsOnNode``: the fewest victims of ``jobs`` on ``node`` after which ``task``
    fits, or none when the node does not work.

    The victims (``Preemptable``, then ``ValidateVictims``) are taken off in victim order,
    read on the session as it is (nothing is evicted in Volcano's dry run), until the preemptor
    fits. If it still fails the predicate with all of them off, the node does not work;
    otherwise each is put back, the last taken first, and stays a victim only if the preemptor
    no longer fits with it. The victims are returned in that reprieve order. Volcano does not
    ask again whether the queue or the resources fit after taking all victims off: the
    reprieve then keeps every one of them as a victim.
    """
    victims = ssn.preemptable(task, _preemptees(node, jobs, task.best_effort))
    if not validate_victims(task, node, victims):
        return []
    run = _DryRun(ssn, task, queue, node, affinity)
    try:
        potential: list[TaskInfo] = []
        for victim in victim_order(ssn, victims, task):
            potential.append(victim)
            run.remove(victim)
            if run.fits():
                break
        if not run.predicate_passes():
            return []
        chosen = []
        for victim in reversed(potential):
            run.add(victim)
            if not run.fits():
                run.remove(victim)
                chosen.append(victim)
        return chosen
    finally:
        run.undo()


def select_candidate(
    candidates: list[tuple[NodeInfo, list[TaskInfo]]],
) -> tuple[NodeInfo, list[TaskInfo]]:
    """``SelectCandidate`` / ``pickOneNodeForPreemption``: the lowest priority of the first
    victim (Volcano takes the first as the highest), then the lowest sum of priorities (each
    raised by 2³¹), then the fewest victims. The next rule, the latest start time of the
    highest-priority victims, cannot separate nodes in vcopt (instances carry no start times),
    and Volcano's last tie-break is Go map order; vcopt takes the candidate found first."""
    return min(
        candidates,
        key=lambda c: (
            c[1][0].priority,
            sum(v.priority + 2**31 for v in c[1]),
            len(c[1]),
        ),
    )
