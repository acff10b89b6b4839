"""TDM rules (volcano-scheduler.md §6): revocable nodes take new pods only while their zone's
window is active, and only revocable pods."""

from __future__ import annotations

from collections.abc import Iterator

from models.tdm import (
    node_zone,
    pod_revocable_zone,
)

from ..plan import Placement
from .context import Context, Violation


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
    (Volcano's own reading of the window, §6)."""
    tdm, now = ctx.instance.tdm, ctx.instance.now
    for p, zone in _tdm_placements(ctx):
        assert tdm is not None
        if not tdm.zone_active(zone, now, ctx.instance.tz):
            window = tdm.zones[zone].text if zone in tdm.zones else "not configured"
            yield Violation(
                "tdm-window",
                (p.pod, p.node, zone),
                f"pod {p.pod} on node {p.node}: revocable zone {zone} ({window}) is not active "
                f"at {now.isoformat()}",
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
