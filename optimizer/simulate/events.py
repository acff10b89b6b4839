"""The simulation's clock: a queue of future events, taken in time order.

Events at the same instant are taken in a fixed order of kinds, so that a run is
reproducible and a cycle at an instant sees every change of that instant: completions and
releases first (their room is free for the cycle), then arrivals, TDM window changes and pacing
wake-ups. Within a kind, events keep the order they were scheduled in.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from enum import IntEnum

from models.tdm import Window, window_active, window_closes_at, window_next_opens_at

_SECOND = timedelta(seconds=1)


class Kind(IntEnum):
    """What happens; the value orders events of one instant."""

    COMPLETION = 0
    RELEASE = 1
    """Evicted pods of a job are gone, their grace period over."""
    ARRIVAL = 2
    WINDOW = 3
    WAKE = 4
    """A TDM eviction round is due again (``tdm.evict.period`` after the last one)."""


@dataclass(frozen=True, order=True)
class Event:
    time: datetime
    kind: Kind
    seq: int
    subject: str = field(compare=False, default="")
    """The job key (arrival, completion, release) or the zone (window)."""
    generation: int = field(compare=False, default=0)
    """For a completion: the run it ends; a restarted job's earlier completion is stale."""


class EventQueue:
    """Future events, earliest first."""

    def __init__(self) -> None:
        self._heap: list[Event] = []
        self._seq = 0
        self._counts = dict.fromkeys(Kind, 0)

    def push(self, time: datetime, kind: Kind, subject: str = "", generation: int = 0) -> None:
        heapq.heappush(self._heap, Event(time, kind, self._seq, subject, generation))
        self._seq += 1
        self._counts[kind] += 1

    def peek(self) -> datetime | None:
        return self._heap[0].time if self._heap else None

    def pop_at(self, time: datetime) -> list[Event]:
        """Every event at ``time`` (the earliest instant), in order."""
        out = []
        while self._heap and self._heap[0].time == time:
            event = heapq.heappop(self._heap)
            self._counts[event.kind] -= 1
            out.append(event)
        return out

    def only_windows(self) -> bool:
        """Nothing is queued but the daily window changes, which recur for ever."""
        return all(count == 0 for kind, count in self._counts.items() if kind is not Kind.WINDOW)


def next_window_change(window: Window, after: datetime, tz: tzinfo) -> datetime | None:
    """The first instant after ``after`` at which the zone's window turns active or inactive,
    as Volcano reads it (whole seconds, inclusive end: a window ending 21:00 is closed from
    21:00:01); None when it never changes again (``00:00-00:00`` is always active)."""
    if window_active(window, after, tz):
        last = window_closes_at(window, after, tz)
        return None if last is None else max(last + _SECOND, after + _SECOND)
    opens = window_next_opens_at(window, after, tz)
    return None if opens is None else max(opens, after + _SECOND)
