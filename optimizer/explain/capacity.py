"""``vcopt capacity``: the fewest nodes of one shape to add so that every pending job of a
queue (or of the cluster) is admitted.

The same dedicated model as ``explain`` (``model.py``), for all those jobs at once against
the rest of the plan, with every rule held except the one that says the cluster has only its
nodes; the solver minimises the nodes it opens, per HyperNode leaf when the jobs' topology
makes the leaf matter. An optimal answer is a proof that one node fewer cannot admit them all
*against that plan*; solving again with both counts checks the answer with the engine itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from models.errors import InputError, Problem
from models.instance import Instance
from models.workload import Job

from .. import whatif
from ..options import SolveOptions
from ..plan import ADMITTED, PENDING, RUNNING, Plan
from . import search
from .model import MAX_NEW_NODES, ExplainModel
from .plans import plan_of
from .words import describe


@dataclass
class Capacity:
    queue: str | None
    jobs: list[str]
    """The pending jobs to admit."""
    added: dict[tuple[str, str | None], int] = field(default_factory=dict)
    """(node like, HyperNode leaf or None) → how many to add."""
    possible: bool = True
    reason: str = ""
    """Why no number of such nodes admits them (when not ``possible``)."""
    admits: bool | None = None
    """Solving again with the nodes added admits every job (None: not checked)."""
    one_fewer_admits: bool | None = None

    @property
    def count(self) -> int:
        return sum(self.added.values())

    def variant(self, fewer: int = 0) -> whatif.Variant:
        """The instance with the nodes added (``fewer`` left out of the largest group)."""
        groups = sorted(self.added.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1] or ""))
        counts = [[key, n] for key, n in groups]
        if fewer and counts:
            counts[0][1] = max(0, counts[0][1] - fewer)

        def apply(instance: Instance) -> Instance:
            for (node, leaf), n in counts:
                if n:
                    instance = whatif.with_nodes_like(instance, node, n, leaf)
            return instance

        return apply

    def to_dict(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "jobs": list(self.jobs),
            "nodes": self.count if self.possible else None,
            "added": [
                {"like": node, "hypernode": leaf, "count": n}
                for (node, leaf), n in sorted(
                    self.added.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")
                )
            ],
            "reason": self.reason,
            "admitsAfter": self.admits,
            "oneFewerAdmits": self.one_fewer_admits,
        }

    def to_text(self) -> str:
        scope = f"queue {self.queue}" if self.queue else "the cluster"
        if not self.jobs:
            return f"No pending jobs in {scope}: no nodes needed.\n"
        head = f"{len(self.jobs)} pending job(s) in {scope}: {', '.join(self.jobs)}"
        if not self.possible:
            return f"{head}\nNo number of such nodes admits them all: {self.reason}\n"
        lines = [head, f"Fewest nodes to add: {self.count}"]
        for (node, leaf), n in sorted(
            self.added.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")
        ):
            lines.append(f"  - {n} like {node}" + (f" in {leaf}" if leaf else ""))
        if self.admits is not None:
            lines.append(
                f"Solving again: with {self.count} added, "
                + ("all are admitted" if self.admits else "not all are admitted")
                + (
                    ""
                    if self.one_fewer_admits is None
                    else f"; with {self.count - 1}, "
                    + ("all are admitted" if self.one_fewer_admits else "not all are")
                )
                + "."
            )
        return "\n".join(lines) + "\n"


def pending_jobs(instance: Instance, plan: Plan, queue: str | None) -> list[Job]:
    keys = [d.job for d in plan.jobs if d.status == PENDING]
    jobs = [instance.job_by_key[k] for k in keys]
    return [j for j in jobs if queue is None or j.queue == queue]


def all_admitted(plan: Plan, jobs: list[str]) -> bool:
    status = {d.job: d.status for d in plan.jobs}
    return all(status.get(j) in (ADMITTED, RUNNING) for j in jobs)


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
    every job ``engine``'s plan leaves pending in ``queue`` (default: all) is admitted."""

    if queue is not None and queue not in instance.queue_tree:
        raise InputError([Problem("no such queue", f'Queue "{queue}"', "queue")])
    if like is not None and like not in instance.node_by_name:
        raise InputError([Problem("no such node", f'Node "{like}"', "node-like")])
    options = options or SolveOptions(time_limit=10.0, quiet=True)
    plan = plan or plan_of(instance, engine, options)
    jobs = pending_jobs(instance, plan, queue)
    out = Capacity(queue, [j.key for j in jobs])
    if not jobs:
        return out
    em = ExplainModel(instance, plan, jobs, like=like)
    held = [k for k in em.rules if k != "nodes"]
    found = search.correction(em, keep=held) if "nodes" in em.rules else None
    if found is None:
        core = search.blocking_core(em, lifted=("nodes",)).rules
        out.possible = False
        out.reason = "; ".join(describe(em, r) for r in core if r.key != "nodes") or (
            f"no node like that can hold their pods, or more than {MAX_NEW_NODES} per "
            "HyperNode leaf would be needed"
        )
        return out
    solver = found.solver
    for place in em.new_places:
        if place.opened is not None and solver.boolean_value(place.opened):
            key = (place.node.name, place.leaf)
            out.added[key] = out.added.get(key, 0) + 1
    if check:
        out.admits = all_admitted(plan_of(out.variant()(instance), engine, options), out.jobs)
        if out.count:
            fewer = plan_of(out.variant(1)(instance), engine, options)
            out.one_fewer_admits = all_admitted(fewer, out.jobs)
    return out
