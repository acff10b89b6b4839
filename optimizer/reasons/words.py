"""Blocking rules in plain words: what holds the job back, with the numbers that show it."""

from __future__ import annotations

from models.admission import EnqueueLimit, enqueue_minimum
from models.resources import EMPTY, format_amount
from models.vocabulary import UNSCHEDULABLE_TAINT

from ..cpsat.compile.units import MIB, MIB_RESOURCES
from . import rules as kinds
from .leftover import request_of
from .model import ExplainModel, Target
from .rules import Rule


def _amount(name: str, amount: int) -> str:
    return format_amount(name, amount * MIB if name in MIB_RESOURCES else amount)


def _asks(targets: list[Target], name: str) -> int:
    return sum(
        request_of(t.job.task(task)).get(name, 0) * n
        for t in targets
        for task, n in t.pending.items()
    )


def _in_queue(em: ExplainModel, queue: str) -> list[Target]:
    tree = em.instance.queue_tree
    return [
        t
        for t in em.targets
        if t.job.queue == queue or (t.job.queue in tree and queue in tree.ancestors(t.job.queue))
    ]


def _pods(target: Target) -> str:
    return f"{target.need} pod(s)"


def describe(em: ExplainModel, rule: Rule) -> str:
    """Why ``rule`` blocks, in one sentence."""
    facts = rule.facts
    target = next((t for t in em.targets if t.job.key == rule.job), em.targets[0])
    kind = rule.kind
    if kind == kinds.QUEUE:
        name = str(facts["resource"])
        queue, limit, used = facts["checks"][0]
        conf = em.instance.scheduler
        field = "realCapability" if conf.has("capacity") else "deserved"
        return (
            f"queue {queue} already holds {_amount(name, used)} of its {_amount(name, limit)} "
            f"{name} ({field}), and {'the job asks' if len(em.targets) == 1 else 'the jobs ask'} "
            f"for {_amount(name, _asks(_in_queue(em, queue), name))} more"
        )
    if kind == kinds.ENQUEUE:
        return _enqueue(em, rule)
    if kind == kinds.TOPOLOGY:
        spec = target.job.network_topology
        named = f" ({spec.highest_tier_name})" if spec and spec.highest_tier_name else ""
        return (
            f"no HyperNode of tier ≤ {facts['limit']}{named} (its hard network topology limit) "
            f"has room for its {_pods(target)}"
        )
    if kind == kinds.TDM_WINDOW:
        zone = facts["zone"]
        tdm = em.instance.tdm
        window = tdm.zones.get(str(zone)) if tdm is not None else None
        shown = f"window {window.text}" if window else "no window configured"
        return f"revocable zone {zone} is closed now ({shown}), and its nodes are where room is"
    if kind == kinds.TDM_REVOCABLE:
        return (
            f"the nodes with room are revocable, and task {facts['task']}'s pods lack "
            'volcano.sh/revocable-zone: "*"'
        )
    if kind == kinds.SELECTOR:
        task = target.job.task(str(facts["task"]))
        sel = ", ".join(f"{k}={v}" for k, v in task.node_selector.items())
        what = f"nodeSelector {sel}" if sel else "required node affinity"
        return f"task {task.name}'s {what} matches none of the nodes with room"
    if kind == kinds.TAINT:
        key, value, effect = facts["taint"]  # type: ignore[misc]
        if key == UNSCHEDULABLE_TAINT:
            return "the nodes with room are cordoned (unschedulable)"
        shown = f"{key}={value}:{effect}" if value else f"{key}:{effect}"
        return (
            f"the nodes with room carry taint {shown}, which task {facts['task']} does not tolerate"
        )
    if kind == kinds.GPU_FILTER:
        return f"task {facts['task']}'s GPU type/UUID filter excludes every GPU with room"
    if kind == kinds.EVICT:
        return f"running pods of job {rule.job} hold the room it needs"
    if kind == kinds.PLACED:
        return f"the plan gives the room it needs to job {rule.job}"
    requests = "; ".join(
        f"{n} × {target.job.task(t).resources.format()}" for t, n in sorted(target.pending.items())
    )
    return f"no node has room left for its {_pods(target)} ({requests})"


def _enqueue(em: ExplainModel, rule: Rule) -> str:
    """Why Volcano's enqueue refuses: the resources its limit does not have at all (a
    realCapability holds only what the nodes offer and the guarantees name, and overcommit's
    room only what the nodes offer), then those whose limit the minimums pass."""
    limit: EnqueueLimit = rule.facts["limit"]
    short = [(name, need) for name, need, _ in rule.facts["short"]]
    offered = em.instance.total_allocatable
    cluster = limit.queue is None
    absent = [n for n, _ in short if limit.missing(n) or (cluster and offered.get(n) <= 0)]
    jobs = [t.job for t in em.targets if t.job.key in limit.jobs]
    asked = sum((enqueue_minimum(j) for j in jobs), EMPTY)
    one = len(jobs) == 1
    it, its = ("it", "this job's") if one else ("them", "these jobs'")
    gates = " and ".join(limit.gates)
    parts = []
    if absent:
        names = _either(absent)
        amounts = ", ".join(f"{n} {format_amount(n, asked.get(n))}" for n in absent)
        where = (
            f"no node offers {names}"
            if cluster
            else f"queue {limit.queue} has no {names} in its realCapability (which holds only "
            "what the nodes offer and the guarantees name, whatever its capability says)"
        )
        parts.append(
            f"{where}, so Volcano's {gates} refuses at enqueue every job whose minResources "
            f"ask for {'it' if len(absent) == 1 else 'them'} ({'it asks' if one else 'they ask'} "
            f"for {amounts})"
        )
    for name, need in short:
        if name in absent:
            continue
        room = format_amount(name, limit.limit.get(name, 0))
        total = format_amount(name, need)
        if cluster:
            parts.append(
                f"the cluster's allocatable × overcommit-factor, less what is used, leaves room "
                f"for {name} {room} of Inqueue minResources; with {its} they come to {name} "
                f"{total}: Volcano's overcommit does not enqueue {it}"
            )
        else:
            parts.append(
                f"queue {limit.queue}: minResources + allocated + inqueue − elastic come to "
                f"{name} {total} > realCapability {room}, so Volcano's {gates} does not "
                f"enqueue {it}"
            )
    return "; ".join(parts)


def _either(names: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


HOLDERS = (kinds.EVICT, kinds.PLACED)


def dominant(em: ExplainModel, core: list[Rule], first: Rule | None = None) -> str:
    """The one sentence to read first: the first blocking rule (``first``, or the core's
    first by kind), or — when the room is what is missing and several other jobs hold it —
    who holds it, counted."""
    lead = first or (core[0] if core else None)
    if lead is None:
        return ""
    holders = [r for r in core if r.kind in HOLDERS]
    if lead.kind not in HOLDERS or len(holders) < 2:
        return describe(em, lead)
    running = sorted(r.job for r in holders if r.kind == kinds.EVICT)
    started = sorted(r.job for r in holders if r.kind == kinds.PLACED)
    parts = []
    if running:
        parts.append(f"{len(running)} running job(s) ({_some(running)})")
    if started:
        parts.append(f"{len(started)} job(s) the plan starts ({_some(started)})")
    return f"the room it needs is held by other jobs: {' and '.join(parts)}"


def _some(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
