"""TDM rules (volcano-scheduler.md §6): revocable nodes take new pods only while their zone's
window is active, and only revocable pods; when the window is closed and ``shuffle`` runs,
TDM evicts the zone's preemptable pods, one disruption budget per zone and job."""

from __future__ import annotations

from collections.abc import Iterator

from models.tdm import (
    SHUFFLE_REASON,
    closed_zones,
    node_zone,
    pod_preemptable,
    pod_revocable_zone,
    shuffle_round,
    shuffle_rounds,
)

from ..plan import Placement
from .context import Context, Violation

"""The reason a plan gives shuffle's evictions."""

ShuffleCounts = dict[tuple[str, str], int]
"""(closed zone, job key) → pods."""


def _tdm_placements(ctx: Context) -> Iterator[tuple[Placement, str]]:
    """New placements on revocable nodes with their zone, when the tdm plugin is configured."""
    if ctx.instance.tdm is None:
        return
    for p in ctx.plan.placements:
        zone = node_zone(ctx.node(p.node).labels)
        if zone:
            yield p, zone


def check_tdm_window(ctx: Context) -> Iterator[Violation]:
    """A revocable node takes new pods only while its zone's window is active at ``now``
    (Volcano's own reading of the window, §6); and a plan keeps no pod that ``shuffle``
    evicts: Volcano evicts what ``VictimTasks`` names whatever else the cycle does, so a plan
    that leaves fewer than :func:`shuffle_evictions` pods of a job gone from a closed zone is
    not a cycle Volcano runs."""
    tdm, now = ctx.instance.tdm, ctx.instance.now
    for p, zone in _tdm_placements(ctx):
        assert tdm is not None
        if not tdm.zone_active(zone, now, ctx.instance.tz):
            yield Violation(
                "tdm-window",
                (p.pod, p.node, zone),
                f"pod {p.pod} on node {p.node}: revocable zone {zone} ({_window(ctx, zone)}) is "
                f"not active at {now.isoformat()}",
            )
    made = tdm_evicted(ctx)
    for (zone, job), count in sorted(shuffle_evictions(ctx).items()):
        if made.get((zone, job), 0) < count:
            yield Violation(
                "tdm-window",
                (job, zone),
                f"job {job}: shuffle evicts {count} of its pods from revocable zone {zone} "
                f"({_window(ctx, zone)}, closed at {now.isoformat()}); the plan evicts "
                f"{made.get((zone, job), 0)} with reason {SHUFFLE_REASON}",
            )


def check_tdm_revocable_only(ctx: Context) -> Iterator[Violation]:
    """Only revocable pods (zone annotation ``*``, or ``volcano.sh/preemptable`` true) go to
    revocable nodes (§6 predicate)."""
    for p, zone in _tdm_placements(ctx):
        if pod_revocable_zone(ctx.members[p.pod].task.annotations) != "*":
            yield Violation(
                "tdm-revocable-only",
                (p.pod, p.node, zone),
                f"pod {p.pod} on node {p.node} (revocable zone {zone}) is not revocable",
            )


def _window(ctx: Context, zone: str) -> str:
    tdm = ctx.instance.tdm
    window = tdm.zones.get(zone) if tdm is not None else None
    return window.text if window is not None else "not configured"


def tdm_problem(ctx: Context, node: str) -> str | None:
    """Why TDM cannot evict a pod from ``node`` in this cycle (None: it can). Only ``shuffle``
    calls ``VictimTasks``, only the tdm plugin answers it, with its Victim hook on, at most
    once per ``tdm.evict.period``, and only from configured zones whose window is closed."""
    instance = ctx.instance
    conf, tdm = instance.scheduler, instance.tdm
    plugin = conf.plugin("tdm")
    if tdm is None or plugin is None:
        return "the tdm plugin is not configured"
    if "shuffle" not in conf.actions:
        return "TDM evicts only from the shuffle action, which is not configured"
    if not plugin.enabled("Victim"):
        return "the tdm plugin's Victim hook is off (enableVictim: false)"
    zone = node_zone(ctx.node(node).labels)
    if not zone:
        return f"node {node} is in no revocable zone"
    if zone not in tdm.zones:
        return f"revocable zone {zone} has no window, and TDM evicts only from configured zones"
    if zone not in closed_zones(tdm, instance.now, instance.tz):
        return f"revocable zone {zone} ({_window(ctx, zone)}) is open at {instance.now.isoformat()}"
    last = tdm.last_evict_at
    if last is not None and not shuffle_rounds(conf, tdm, instance.now):
        return (
            f"the last TDM round (vcopt.lastEvictAt {last.isoformat()}) is less than "
            "tdm.evict.period "
            f"({tdm.evict_period.total_seconds():g}s) before {instance.now.isoformat()}"
        )
    return None


def tdm_evicted(ctx: Context) -> ShuffleCounts:
    """What the plan evicts with reason ``tdm`` from closed zones, per zone and job: the
    preemptable pods among them, the only ones shuffle may take."""
    instance = ctx.instance
    tdm = instance.tdm
    if tdm is None:
        return {}
    closed = set(closed_zones(tdm, instance.now, instance.tz))
    out: ShuffleCounts = {}
    for e in ctx.valid_evictions:
        member = ctx.members[e.pod]
        zone = node_zone(ctx.node(e.node).labels)
        if (
            e.reason == SHUFFLE_REASON
            and zone in closed
            and pod_preemptable(member.task.annotations, member.task.labels)
        ):
            key = (zone, member.job.key)
            out[key] = out.get(key, 0) + 1
    return out


def shuffle_evictions(ctx: Context) -> ShuffleCounts:
    """How many pods of each job Volcano's ``shuffle`` evicts from each closed zone in the
    cycle the plan describes (§6 VictimTasks, ``getMaxPodEvictNum``).

    The actions are walked in order. A round takes, per closed zone and job, the job's
    Running preemptable pods on the zone's nodes, cut to the budget on the job's statuses at
    that moment: pods preempt or reclaim evicted before it (the plan's evictions with that
    reason, made where that action first runs) are no longer Running, so they are neither
    candidates nor counted as running. Which pods go is Volcano's map order, so only the
    counts are fixed. Evictions whose reason names no configured action are taken as made
    after every round.
    """
    instance = ctx.instance
    conf, tdm = instance.scheduler, instance.tdm
    if tdm is None:
        return {}
    rounds = shuffle_rounds(conf, tdm, instance.now)
    closed = set(closed_zones(tdm, instance.now, instance.tz))
    if not rounds or not closed:
        return {}
    state = _JobStates(ctx, closed)
    by_action: dict[str, list[str]] = {}
    for e in ctx.valid_evictions:
        if e.reason != SHUFFLE_REASON:
            by_action.setdefault(e.reason, []).append(e.pod)
    out: ShuffleCounts = {}
    done: set[str] = set()
    for action in conf.actions:
        if action == "shuffle" and rounds:
            rounds -= 1
            state.shuffle(out)
        elif action in by_action and action not in done:
            done.add(action)
            state.evicted(by_action[action])
    return out


class _JobStates:
    """Per job, its Running pods and, per closed zone, its candidates, as the cycle goes."""

    def __init__(self, ctx: Context, closed: set[str]) -> None:
        self.ctx = ctx
        self.closed = closed
        self.left: dict[str, dict[str, int]] = {}
        self.running: dict[str, int] = {}
        for job in ctx.instance.jobs:
            self.running[job.key] = sum(1 for p in job.pods if p.running)
            for pod in job.pods:
                zone = self.candidate_zone(pod.key)
                if zone is not None:
                    zones = self.left.setdefault(job.key, {})
                    zones[zone] = zones.get(zone, 0) + 1

    def candidate_zone(self, pod: str) -> str | None:
        """The closed zone a Running preemptable pod runs in (None: not a candidate)."""
        member = self.ctx.members[pod]
        if member.pod.node is None:
            return None
        if not pod_preemptable(member.task.annotations, member.task.labels):
            return None
        zone = node_zone(self.ctx.node(member.pod.node).labels)
        return zone if zone in self.closed else None

    def shuffle(self, out: ShuffleCounts) -> None:
        """One ``VictimTasks`` round, its counts added to ``out``."""
        for key, zones in self.left.items():
            job = self.ctx.instance.job_by_key[key]
            step = shuffle_round(job.annotations, len(job.pods), self.running[key], zones)
            for zone, count in step.items():
                out[(zone, key)] = out.get((zone, key), 0) + count
                zones[zone] -= count
            self.running[key] -= sum(step.values())

    def evicted(self, pods: list[str]) -> None:
        """Pods preempt or reclaim evicted. A pod is evicted once, so one on a closed zone was
        not a round's victim and is still among the zone's candidates."""
        for pod in pods:
            key = self.ctx.members[pod].job.key
            self.running[key] -= 1
            zone = self.candidate_zone(pod)
            if zone is not None:
                self.left[key][zone] = max(0, self.left[key][zone] - 1)
