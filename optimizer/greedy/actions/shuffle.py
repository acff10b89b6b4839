"""``shuffle`` (``actions/shuffle/shuffle.go``): evict the running tasks the plugins name as
victims.

It is the only caller of ``VictimTasks`` (spec §6), and in vcopt only ``tdm`` registers that
hook: it names the revocable pods of zones whose window is closed, within each job's
disruption budget, at most once per ``tdm.evict.period``. Volcano evicts each victim on its
own (``Session.Evict``, no statement to discard), so every eviction stands; a victim whose job
is not in the session is never named (``tdm`` skips it, as Volcano's ``ssn.Jobs`` lookup does).
Volcano records the reason "shuffle"; vcopt says "tdm", the reason its verifier and plans use
for evictions from closed zones.
"""

from __future__ import annotations

from models.tdm import SHUFFLE_REASON

from ..session import Session


def execute(ssn: Session) -> None:
    """One ``VictimTasks`` round, every victim evicted and committed at once."""
    stmt = ssn.statement()
    for victim in ssn.victim_tasks():
        stmt.evict(victim, SHUFFLE_REASON)
    stmt.commit()
