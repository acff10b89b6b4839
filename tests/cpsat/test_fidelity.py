"""CP-SAT follows the same Volcano rules as the greedy engine where it evicts and places
(issue 16): ancestorReclaimLevel, disruption caps, soft topology, HAMi's mutex policy.

Each test names the Volcano or HAMi function whose rule it checks.
"""

from __future__ import annotations

from pathlib import Path

from cpsat_kit import cpsat, evicted

from models.load import loads

RECLAIM_DATA = Path(__file__).parent.parent / "data" / "reclaim"


def _case4(level: int) -> str:
    text = (RECLAIM_DATA / "case4.yaml").read_text()
    old = "ancestorReclaimLevel: 1}"
    assert old in text
    return text.replace(old, f"ancestorReclaimLevel: {level}}}")


def test_ancestor_reclaim_level_limits_cpsat_reclaim() -> None:
    """``plugins/capacity/capacity.go`` Reclaimable with ``ancestorReclaimLevel`` (seed 004
    case4): p1 runs in case4_child1 (no deserved: an immediate victim) under case4_parent1
    (deserved a100 2, holding p1 + p3 = 2, not above it); p2 waits in case4_child2 under
    case4_parent2. At level 1 the victim's parent differs from the reclaimer's and is not
    above its deserved, so p1 may not be reclaimed and p2 (n1 is full) stays pending. At
    level 0 only the leaf is checked: p1 is evicted and p2 placed."""
    blocked = cpsat(loads(_case4(1), "case4.yaml"))
    assert evicted(blocked) == []
    assert not blocked.placements
    allowed = cpsat(loads(_case4(0), "case4.yaml"))
    assert evicted(allowed) == [("default/pg1-p1-0", "reclaim")]
    assert [p.pod for p in allowed.placements] == ["default/pg2-p2-0"]
