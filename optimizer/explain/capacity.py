"""``vcopt capacity``: the fewest nodes of one shape to add so that the pending jobs of a
queue (or of the cluster) are admitted, as a count a person can act on.

The same dedicated model as ``explain`` (``model.py``), for the jobs at once against the rest
of the plan, with every rule held except the one that says the cluster has only its nodes;
the solver minimises the nodes it opens, per HyperNode leaf when the jobs' topology makes the
leaf matter.

A job that no number of such nodes admits (its queue's quota is held, its selector or a taint
rules the shape out, a pod is larger than the node, its TDM zone is closed…) would make the
answer "none" for every other job too; such a job is *set aside* with its reason, tried alone
and then behind the jobs ahead of it (in the order Volcano tries them), and the count is for
the rest. A queue limit that grows with the cluster (proportion's deserved share, capacity's
realCapability where no capability caps it) is lifted with the nodes, since adding nodes
raises it: the model cannot say by how much, and the check below finds out.

The count is then checked with the engine itself: the nodes added admit every admissible job
and one fewer does not. When the engine disagrees with the model (it places other pending
jobs first, or follows rules the model does not state) the count is moved until both hold, so
that the answer never contradicts its own check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from models.cluster import Node
from models.errors import InputError, Problem
from models.gpu import PLAIN_GPU_SHARE
from models.instance import Instance
from models.resources import NVIDIA_GPU, readable_amount
from models.workload import Job

from .. import whatif
from ..cpsat.compile.data import queue_tables
from ..options import SolveOptions
from ..plan import ADMITTED, PENDING, RUNNING, Plan
from ..reasons import rules as kinds
from ..reasons import search
from ..reasons.model import MAX_NEW_NODES, ExplainModel
from ..reasons.words import describe
from .plans import plan_of

Group = tuple[str, str | None]
"""(the node the new ones copy, the HyperNode leaf they join; None without HyperNodes)."""
SHOWN_AHEAD = 3
"""Jobs named in a reason that says which jobs ahead take the room; the rest are counted."""


@dataclass
class Capacity:
    """The answer, with what it leaves out said outright: the jobs set aside and why, and
    whether a count exists at all (``possible``; with no admissible job the count is 0)."""

    queue: str | None
    jobs: list[str]
    """Every pending job of the queue (or the cluster), in the order Volcano tries them."""
    like: str | None = None
    """The node the new ones copy (None: per HyperNode leaf, its most capable node)."""
    unadmittable: dict[str, str] = field(default_factory=dict)
    """Job → why no number of such nodes admits it: set aside, not counted."""
    added: dict[Group, int] = field(default_factory=dict)
    """(node like, HyperNode leaf or None) → how many to add."""
    possible: bool = True
    """Some number of such nodes admits every admissible job: :attr:`count` is that number."""
    reason: str = ""
    """Why there is no count (when not ``possible``)."""
    admits: bool | None = None
    """Solving again with the nodes added admits every admissible job (None: not checked)."""
    one_fewer_admits: bool | None = None
    """The same with one node fewer (None: not checked, or nothing is added)."""
    engine: str = "cpsat"

    @property
    def admissible(self) -> list[str]:
        """The pending jobs the count is for: those not set aside."""
        return [j for j in self.jobs if j not in self.unadmittable]

    @property
    def count(self) -> int | None:
        """How many nodes to add; None when no number admits every admissible job."""
        return sum(self.added.values()) if self.possible else None

    def variant(self, fewer: int = 0) -> whatif.Variant:
        """The instance with the nodes added (``fewer`` left out of the largest groups)."""
        return _with_nodes(_resized(self.added, sum(self.added.values()) - fewer, None))

    def to_dict(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "like": self.like,
            "jobs": list(self.jobs),
            "possible": self.possible,
            "nodes": self.count,
            "added": [
                {"like": node, "hypernode": leaf, "count": n}
                for (node, leaf), n in sorted(self.added.items(), key=_group_order)
            ],
            "admissible": self.admissible,
            "unadmittable": dict(self.unadmittable),
            "reason": self.reason,
            "admitsAfter": self.admits,
            "oneFewerAdmits": self.one_fewer_admits,
        }

    def to_text(self) -> str:
        scope = f"queue {self.queue}" if self.queue else "the cluster"
        if not self.jobs:
            return f"No pending jobs in {scope}: no nodes to add.\n"
        lines = [f"{len(self.jobs)} pending job(s) in {scope}: {', '.join(self.jobs)}"]
        nodes = f"nodes like {self.like}" if self.like else "nodes"
        admissible = len(self.admissible)
        if not admissible:
            lines.append(
                f"Fewest {nodes} to add: 0 (more nodes admit none of these jobs; every one is "
                "set aside below)"
            )
        elif not self.possible:
            lines.append(f"No number of {nodes} admits all {admissible} admissible job(s):")
            lines.append(f"  {self.reason}")
        else:
            lines.append(f"Fewest {nodes} to add: {self.count} ({self._verdict()})")
            lines.extend(
                f"  - {n} like {node}" + (f" in {leaf}" if leaf else "")
                for (node, leaf), n in sorted(self.added.items(), key=_group_order)
            )
        if self.unadmittable:
            lines.append("Set aside (no number of such nodes admits them):")
            lines.extend(
                f"  - {job} — {self.unadmittable[job]}"
                for job in self.jobs
                if job in self.unadmittable
            )
        return "\n".join(lines) + "\n"

    def _verdict(self) -> str:
        """What the count was checked against, in the words of the first line."""
        n, admissible = self.count or 0, self.admissible
        jobs = admissible[0] if len(admissible) == 1 else f"all {len(admissible)} admissible jobs"
        if self.admits is None:
            return (
                f"the model's count for {jobs} against the {self.engine} plan; not checked by "
                "solving again"
            )
        fewer = f", {n - 1} {'does' if n - 1 == 1 else 'do'} not" if n else ""
        return f"checked: {n} {'admits' if n == 1 else 'admit'} {jobs}{fewer}"


def _group_order(item: tuple[Group, int]) -> tuple[str, str]:
    (node, leaf), _ = item
    return node, leaf or ""


def _resized(added: dict[Group, int], total: int, spare: Group | None) -> dict[Group, int]:
    """``added`` grown or shrunk to ``total`` nodes, one at a time on its largest group (the
    first by name on a tie); ``spare`` takes the first when ``added`` has none."""
    out = dict(added)
    if not out and spare is not None:
        out[spare] = 0

    def largest() -> Group:
        return min(out, key=lambda g: (-out[g], g[0], g[1] or ""))

    while out and sum(out.values()) < total:
        out[largest()] += 1
    while sum(out.values()) > max(total, 0):
        out[largest()] -= 1
    return {g: n for g, n in out.items() if n > 0}


def _with_nodes(groups: dict[Group, int]) -> whatif.Variant:
    def apply(instance: Instance) -> Instance:
        for (node, leaf), n in sorted(groups.items(), key=_group_order):
            instance = whatif.with_nodes_like(instance, node, n, leaf)
        return instance

    return apply


def pending_jobs(instance: Instance, plan: Plan, queue: str | None) -> list[Job]:
    """The jobs ``plan`` leaves pending in ``queue`` (default: all), in the order Volcano
    would try them: by place in their queue, then as the plan lists them."""
    waiting = [d for d in plan.jobs if d.status == PENDING]
    order = sorted(range(len(waiting)), key=lambda i: (waiting[i].position or 0, i))
    jobs = [instance.job_by_key[waiting[i].job] for i in order]
    return [j for j in jobs if queue is None or j.queue == queue]


def all_admitted(plan: Plan, jobs: list[str]) -> bool:
    return not _left_pending(plan, jobs)


def _left_pending(plan: Plan, jobs: list[str]) -> list[str]:
    """The jobs among ``jobs`` that ``plan`` does not admit."""
    status = {d.job: d.status for d in plan.jobs}
    return [j for j in jobs if status.get(j) not in (ADMITTED, RUNNING)]


def capacity(
    instance: Instance,
    queue: str | None = None,
    like: str | None = None,
    engine: str = "cpsat",
    *,
    plan: Plan | None = None,
    options: SolveOptions | None = None,
    check: bool = True,
) -> Capacity:
    """The fewest nodes like ``like`` (default: per leaf, its most capable node) to add so that
    every job ``engine``'s plan leaves pending in ``queue`` (default: all) is admitted, the
    jobs no number of such nodes admits set aside; ``check`` solves again to prove the count
    (it admits them, one fewer does not)."""
    if queue is not None and queue not in instance.queue_tree:
        raise InputError([Problem("no such queue", f'Queue "{queue}"', "queue")])
    if like is not None and like not in instance.node_by_name:
        raise InputError([Problem("no such node", f'Node "{like}"', "node-like")])
    options = options or SolveOptions.of(time_limit=10.0)
    plan = plan or plan_of(instance, engine, options)
    jobs = pending_jobs(instance, plan, queue)
    out = Capacity(queue, [j.key for j in jobs], like, engine=engine)
    for job in jobs:
        if not job.pods:
            out.unadmittable[job.key] = (
                "none of its pods is in the input (a PodGroup alone): vcopt cannot place pods "
                "it cannot see"
            )
    placeable = [j for j in jobs if j.key not in out.unadmittable]
    if not placeable:
        return out
    fit = _fewest(instance, plan, placeable, like, out.unadmittable)
    if fit is None:
        return out
    if fit.found:
        for place in fit.em.new_places:
            if place.opened is not None and fit.solver.boolean_value(place.opened):
                key = (place.node.name, place.leaf)
                out.added[key] = out.added.get(key, 0) + 1
    elif not check:
        out.possible = False
        out.reason = (
            f"the count's model found no answer within {search.SECONDS:g} s (without "
            "--no-check, solving again with nodes added searches for it)"
        )
        return out
    if check:
        spare = next(((p.node.name, p.leaf) for p in fit.em.new_places), None)
        _check(instance, plan, engine, options, out, spare)
    return out


@dataclass
class _Fit:
    """One solve of the model for the fewest nodes: its verdict kept whole, since "no
    solution in the time allowed" proves nothing and must not set a job aside."""

    em: ExplainModel
    status: int
    solver: cp_model.CpSolver

    @property
    def found(self) -> bool:
        return self.status in (cp_model.OPTIMAL, cp_model.FEASIBLE)

    @property
    def refused(self) -> bool:
        """Proven: no number of nodes admits the jobs together."""
        return self.status == cp_model.INFEASIBLE


def _fewest(
    instance: Instance,
    plan: Plan,
    jobs: Sequence[Job],
    like: str | None,
    unadmittable: dict[str, str],
) -> _Fit | None:
    """The solve of the admissible jobs for their fewest nodes; the others go to
    ``unadmittable`` with their reason (None: every job is set aside).

    All together first, which is the common answer. When that finds no count, each job is
    tried alone (what keeps it out for good), the rest together again, and only if they are
    proven not to fit, one by one behind the jobs kept so far (what the jobs ahead of it take).
    A job is set aside only on a proof, never because a search ran out of time."""
    growing: set[tuple[str, str]] | None = None

    def solved(group: Sequence[Job]) -> _Fit:
        nonlocal growing
        em = ExplainModel(instance, plan, group, like=like)
        if growing is None:
            growing = _growing_limits(instance, em)
        return _least_nodes(em, _lifted(em, growing))

    fit = solved(jobs)
    if fit.found:
        return fit
    for job in jobs:
        alone = solved([job])
        if alone.refused:
            unadmittable[job.key] = _why(alone.em, growing or set())
    rest = [j for j in jobs if j.key not in unadmittable]
    if not rest:
        return None
    fit = solved(rest)
    if not fit.refused:
        return fit
    kept: list[Job] = []
    last: _Fit | None = None
    for job in rest:
        if not kept:
            kept.append(job)
            continue
        trial = solved([*kept, job])
        if trial.refused:
            unadmittable[job.key] = f"{_ahead(kept)}: {_why(trial.em, growing or set())}"
        else:
            kept.append(job)
            last = trial
    return last or solved(kept)


def _least_nodes(em: ExplainModel, lifted: set[str]) -> _Fit:
    """The fewest nodes ``em``'s jobs need with the rules in ``lifted`` given up and every
    other held, the nodes gathered in the first HyperNode leaves on a tie (``em.tiebreak``)."""
    model = em.model
    model.clear_objective()
    model.clear_assumptions()
    model.add_assumptions([r.keep for key, r in em.rules.items() if key not in lifted])
    leaves = sum(range(1, len(em.tiebreak) + 1))
    model.minimize((leaves + 1) * em.rules["nodes"].amount + sum(em.tiebreak))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = search.SECONDS
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    status, interrupted = em.run(solver)
    model.clear_assumptions()
    model.clear_objective()
    if interrupted:  # a search cut short proves nothing: the command ends (see plans.py)
        raise KeyboardInterrupt
    return _Fit(em, status, solver)


def _growing_limits(instance: Instance, em: ExplainModel) -> set[tuple[str, str]]:
    """(queue, resource) of the queue limits that rise when nodes of the shapes ``em`` may
    add join the cluster: the plugins derive them from the cluster's total, so one node of
    each distinct shape shows which do."""
    shapes: dict[tuple[tuple[str, int], ...], str] = {}
    for place in em.new_places:
        shapes.setdefault(tuple(sorted(place.node.allocatable.items())), place.node.name)
    grown = instance
    for shape in shapes.values():
        grown = whatif.with_nodes_like(grown, shape, 1)
    before, after = queue_tables(instance)[0], queue_tables(grown)[0]
    return {
        (queue, name)
        for queue, limit in before.items()
        for name, amount in limit.items()
        if after.get(queue, {}).get(name, amount) > amount
    }


def _lifted(em: ExplainModel, growing: set[tuple[str, str]]) -> set[str]:
    """The rules more nodes can lift: the node count, and the queue limits that grow with it."""
    return {"nodes"} | {
        key
        for key, rule in em.rules.items()
        if rule.kind == kinds.QUEUE
        and any((queue, rule.facts["resource"]) in growing for queue, _, _ in rule.facts["checks"])
    }


def _ahead(kept: Sequence[Job]) -> str:
    names = ", ".join(j.key for j in kept[:SHOWN_AHEAD])
    more = f" and {len(kept) - SHOWN_AHEAD} more" if len(kept) > SHOWN_AHEAD else ""
    return f"behind {names}{more}, which Volcano tries first"


def _cards(node: Node) -> int:
    """The GPUs a node offers: its devices, or the count the plain device plugin registers."""
    return node.allocatable.get(NVIDIA_GPU) // 1000 if node.plain_gpus else len(node.gpus)


def _why(em: ExplainModel, growing: set[tuple[str, str]]) -> str:
    """Why more nodes do not let ``em``'s jobs in: the rules that keep them out whatever is
    added, or, when none does, the size of their pods against the nodes that can be added."""
    lifted = _lifted(em, growing)
    core = search.blocking_core(em, lifted=lifted).rules
    words = [describe(em, r) for r in core if r.key not in lifted]
    if words:
        return "; ".join(words)
    nodes = {p.node.name: p.node for p in em.new_places}
    shape = f"node like {' or '.join(sorted(nodes))}" if nodes else "node"
    for target in em.targets:
        for task in target.job.tasks:
            if not target.pending.get(task.name):
                continue
            all_plain = bool(nodes) and all(n.plain_gpus for n in nodes.values())
            if all_plain and not all(r.whole for r in task.gpu):
                return f"each pod of task {task.name} asks for a share of a GPU: {PLAIN_GPU_SHARE}"
            cards = max((_cards(n) for n in nodes.values()), default=0)
            asked = max((r.nums for r in task.gpu), default=0)
            if asked > cards:
                return (
                    f"each pod of task {task.name} asks for {asked} GPUs, more than a {shape} has"
                )
            for name, amount in task.resources.items():
                if amount > max((n.allocatable.get(name) for n in nodes.values()), default=0):
                    return (
                        f"each pod of task {task.name} asks for {readable_amount(name, amount)} "
                        f"{name}, more than a {shape} has"
                    )
    return (
        f"no {shape} holds its pods, or more than {MAX_NEW_NODES} of them would be needed in "
        "one HyperNode leaf"
    )


def _check(
    instance: Instance,
    plan: Plan,
    engine: str,
    options: SolveOptions,
    out: Capacity,
    spare: Group | None,
) -> None:
    """Solve again until the count is proven: ``n`` added admit every admissible job and
    ``n - 1`` do not. The model's count comes first, then one fewer, which settles it when the
    engine agrees; otherwise the count halves down towards 0 (the plan itself, where the jobs
    are pending) or grows by doubling steps and halves back: a few solves, each a full solve of
    the grown instance. It grows by at most one node per pod still to place (at least
    :data:`MAX_NEW_NODES`): past that, more nodes of that shape are not what is missing."""
    jobs = out.admissible
    start = dict(out.added)
    left: dict[int, list[str]] = {0: _left_pending(plan, jobs)}
    """Count → the admissible jobs the engine leaves pending with that many added."""

    def admits(n: int) -> bool:
        if n not in left:
            grown = _with_nodes(_resized(start, n, spare))(instance)
            left[n] = _left_pending(plan_of(grown, engine, options), jobs)
        return not left[n]

    n: int | None = sum(start.values())
    if admits(n):
        if n and admits(n - 1):
            n = _fewest_admitting(0, n - 1, admits)
    else:
        bound = plan.bound_pods(instance)
        pods = sum(
            1 for key in jobs for pod in instance.job_by_key[key].pods if pod.key not in bound
        )
        n = _grown(n, n + max(MAX_NEW_NODES, pods), admits)
    if n is None:
        most = max(left)
        pending = left[most]
        named = ", ".join(pending[:SHOWN_AHEAD]) + (
            f" and {len(pending) - SHOWN_AHEAD} more" if len(pending) > SHOWN_AHEAD else ""
        )
        out.possible = False
        out.admits = False
        out.reason = (
            f"solving again with {most} such nodes added, the {engine} plan still leaves "
            f"{named} pending (it gives the room to other jobs first, or keeps a rule the "
            "count's model does not state)"
        )
        out.added = {}
        return
    out.added = _resized(start, n, spare)
    out.admits = True
    out.one_fewer_admits = not left[n - 1] if n else None


def _grown(low: int, limit: int, admits: Callable[[int], bool]) -> int | None:
    """The fewest count above ``low`` (which does not admit) that admits, by doubling steps up
    to ``limit`` and then halving back; None if none up to ``limit`` does."""
    step = 1
    high = None
    while low + step <= limit:
        if admits(low + step):
            high = low + step
            break
        low, step = low + step, step * 2
    if high is None:
        return None
    return _fewest_admitting(low, high, admits)


def _fewest_admitting(low: int, high: int, admits: Callable[[int], bool]) -> int:
    """Between ``low`` (does not admit) and ``high`` (admits), the count that admits with one
    fewer not admitting, by halving."""
    while high - low > 1:
        middle = (low + high) // 2
        if admits(middle):
            high = middle
        else:
            low = middle
    return high
