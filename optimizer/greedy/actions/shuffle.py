"""``shuffle`` (``actions/shuffle``): evict the running tasks the plugins name as victims.

It is the only caller of ``VictimTasks`` (spec §6), and in vcopt only ``tdm`` registers that
hook: it names the revocable pods of zones whose window is closed, within each job's
disruption budget, at most once per ``tdm.evict.period``. Volcano records the reason
"shuffle"; vcopt says "tdm", the reason the verifier accepts for evictions from closed zones.
"""

from __future__ import annotations

from ..session import Session

REASON = "tdm"


def execute(ssn: Session) -> None:
    stmt = ssn.statement()
    for victim in ssn.victim_tasks():
        stmt.evict(victim, REASON)
    stmt.commit()
