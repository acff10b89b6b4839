"""TDM (time-division multiplexing): revocable zones, their time windows and eviction budgets.

Volcano's ``tdm`` plugin lends nodes labelled ``volcano.sh/revocable-zone=<rz>`` to Kubernetes
only inside a daily window ``HH:MM-HH:MM`` and evicts revocable pods from them outside it
(``pkg/scheduler/plugins/tdm/tdm.go``, spec §6). This module holds what those rules *are*: the
window and when it is active, the plugin arguments, how pods and jobs are marked revocable or
preemptable, how many pods of a job may be evicted at once, and how many ``shuffle``'s rounds
of a cycle evict from each closed zone. The plugin's hooks live in the greedy engine.

Volcano anchors a window to *today*, which breaks cross-midnight windows (spec §9 item 12): with
``faithful=True`` (the default) the functions reproduce that; ``faithful=False`` gives the meaning
the configuration plainly intends, for what-if studies. Both compare instants in whole Unix
seconds with inclusive bounds, as Volcano does, so a window ``10:00-21:00`` is still active at
21:00:00.9 and inactive at 21:00:01.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from .errors import Diagnostics
from .golang import parse_go_bool, parse_go_duration
from .scheduler_conf import SchedulerConf
from .vocabulary import PREEMPTABLE, REVOCABLE_ZONE

ZONE_LABEL = REVOCABLE_ZONE
TDM_PLUGIN = "tdm"
ZONE_ARG_PREFIX = "tdm.revocable-zone."
EVICT_PERIOD_ARG = "tdm.evict.period"
LAST_EVICT_ARG = "vcopt.lastEvictAt"
DEFAULT_EVICT_PERIOD = timedelta(minutes=1)
SHUFFLE_ACTION = "shuffle"
SHUFFLE_REASON = "tdm"
"""The reason plans give a pod ``shuffle`` evicts for TDM (Volcano records "shuffle")."""
VICTIM_FLAG = "Victim"

# Two spellings circulate for the PodGroup disruption budget: Volcano's constants (spec §6) and
# the ones seed 002 prints. Both are accepted; Volcano's wins when a PodGroup carries both.
MAX_UNAVAILABLE_KEYS = (
    "volcano.sh/jdb-max-unavailable",
    "volcano.sh/job-disruption-budget-max-unavailable",
)
MIN_AVAILABLE_KEYS = (
    "volcano.sh/jdb-min-available",
    "volcano.sh/job-disruption-budget-min-available",
)
DEFAULT_EVICT_NUM = 1

_ANY_ZONE = "*"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)
_MIDNIGHT = (0, 0)

# Go's layout "15:04": "15" reads one or two digits, "04" exactly two (time.Parse, getnum).
_CLOCK = r"([0-9]{1,2}):([0-9]{2})"
_WINDOW = re.compile(rf"{_CLOCK}-{_CLOCK}")


@dataclass(frozen=True)
class Window:
    """A daily window ``HH:MM-HH:MM`` of one revocable zone, as the plugin argument spells it.

    ``start >= end`` marks a window that crosses midnight (``22:00-06:00``) or, for ``X-X``, one
    that lasts a whole day; how Volcano actually evaluates those is in :func:`window_active`.
    """

    start: tuple[int, int]
    end: tuple[int, int]
    text: str

    def __post_init__(self) -> None:
        for hour, minute in (self.start, self.end):
            if not (0 <= hour <= 23 and 0 <= minute <= 59):
                raise ValueError(f"{hour}:{minute:02d} is not a time of day")

    @classmethod
    def parse(cls, text: str) -> Window:
        """Read ``HH:MM-HH:MM`` exactly as Volcano's ``time.Parse("15:04", …)`` on each half does.

        A one-digit hour (``8:00``) is accepted because Go's ``15`` accepts it and Volcano would
        run with it; minutes need two digits. Surrounding spaces are rejected: the instance
        file is checked strictly, so a stray space is reported rather than guessed around.
        """
        match = _WINDOW.fullmatch(text)
        if match is None:
            raise ValueError(
                f'{text!r} is not a time window: expected HH:MM-HH:MM, e.g. "08:00-21:00"'
            )
        h1, m1, h2, m2 = (int(group) for group in match.groups())
        for hour, minute in ((h1, m1), (h2, m2)):
            if hour > 23:
                raise ValueError(f"{text!r}: hour {hour} is out of range 00-23")
            if minute > 59:
                raise ValueError(f"{text!r}: minute {minute} is out of range 00-59")
        return cls((h1, m1), (h2, m2), text)


def volcano_window_bounds(window: Window, now: datetime, tz: tzinfo) -> tuple[datetime, datetime]:
    """Volcano's ``parseRevocableZone``: start today at HH1:MM1, end today or tomorrow at HH2:MM2.

    "Today" is the calendar day of ``now`` in ``tz``, which is why a cross-midnight window is
    only active until midnight (its start jumps to the new day). On DST transitions the wall
    time is resolved by ``zoneinfo`` (``fold=0``); Go's ``time.Date`` may pick the other offset.
    """
    today = _local(now, tz).date()
    crosses_midnight = window.start >= window.end
    end_day = today + timedelta(days=1) if crosses_midnight else today
    return _at(today, window.start, tz), _at(end_day, window.end, tz)


def window_active(window: Window, now: datetime, tz: tzinfo, *, faithful: bool = True) -> bool:
    """Whether the zone may be used at ``now``, the window being written in ``tz``.

    Faithful: Volcano's start ≤ now ≤ end of :func:`volcano_window_bounds`, so ``22:00-06:00``
    is active 22:00–23:59:59 only, ``23:59-23:59`` 23:59:00–23:59:59 only, ``00:00-00:00``
    always. Intended: a cross-midnight window is also active from midnight to HH2:MM2, and
    ``X-X`` is active all day.
    """
    return _active_period(window, now, tz, faithful=faithful)[0]


def window_closes_at(
    window: Window, now: datetime, tz: tzinfo, *, faithful: bool = True
) -> datetime | None:
    """The last whole second of the active period that contains ``now`` (in ``tz``).

    The zone turns inactive one second later, and its revocable pods become eviction candidates.
    In faithful mode that is Volcano's ``end`` for a same-day window, but local midnight minus one
    second for a window that crosses midnight, not the ``end`` Volcano computes (tomorrow
    HH2:MM2), because its start moves to the new day first. ``None`` when the window is inactive
    at ``now`` or never closes (``00:00-00:00``; ``X-X`` in intended mode).
    """
    return _active_period(window, now, tz, faithful=faithful)[1]


def window_next_opens_at(
    window: Window, now: datetime, tz: tzinfo, *, faithful: bool = True
) -> datetime | None:
    """When an inactive window next becomes active: the next HH1:MM1 (``None`` if active now).

    Both modes agree: every inactive stretch ends at the next start time of day.
    """
    if window_active(window, now, tz, faithful=faithful):
        return None
    today = _local(now, tz).date()
    opens = _at(today, window.start, tz)
    if _unix(now) >= _unix(opens):
        opens = _at(today + timedelta(days=1), window.start, tz)
    return opens


def _active_period(
    window: Window, now: datetime, tz: tzinfo, *, faithful: bool
) -> tuple[bool, datetime | None]:
    """Whether ``now`` is active, and the last active second of its period (None: no end)."""
    start, end = volcano_window_bounds(window, now, tz)
    second = _unix(now)
    if window.start < window.end or faithful:
        if not _unix(start) <= second <= _unix(end):
            return False, None
        if window.start < window.end:
            return True, end
        if window.start == _MIDNIGHT:
            return True, None
        next_midnight = _at(_local(now, tz).date() + timedelta(days=1), _MIDNIGHT, tz)
        return True, (next_midnight.astimezone(UTC) - _SECOND).astimezone(tz)
    if window.start == window.end:
        return True, None
    if second >= _unix(start):
        return True, end
    today_end = _at(_local(now, tz).date(), window.end, tz)
    return (True, today_end) if second <= _unix(today_end) else (False, None)


def _local(now: datetime, tz: tzinfo) -> datetime:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"now must be timezone-aware, got {now.isoformat()}")
    return now.astimezone(tz)


def _at(day: date, hour_minute: tuple[int, int], tz: tzinfo) -> datetime:
    return datetime.combine(day, time(*hour_minute), tzinfo=tz)


def _unix(instant: datetime) -> int:
    """Go's ``Time.Unix()``: whole seconds, rounded down."""
    return (instant - _EPOCH) // _SECOND


@dataclass(frozen=True)
class TdmConfig:
    """The ``tdm`` plugin arguments: zone windows and the eviction period."""

    zones: Mapping[str, Window] = field(default_factory=dict)
    evict_period: timedelta = DEFAULT_EVICT_PERIOD
    last_evict_at: datetime | None = None
    """vcopt extension (argument ``vcopt.lastEvictAt``): when TDM last evicted, so that a
    snapshot can say the evict period has not elapsed yet. Volcano keeps this in memory."""

    @classmethod
    def from_arguments(
        cls, arguments: Mapping[str, object], obj: str, diag: Diagnostics
    ) -> TdmConfig:
        """Read ``tdm.revocable-zone.<rz>`` and ``tdm.evict.period`` from the plugin arguments.

        Bad values are errors in ``diag``; the config returned then leaves the zone out (Volcano
        treats a malformed window as inactive, like an unknown zone) and keeps the default
        period, so callers that only read still get something usable.
        """
        zones: dict[str, Window] = {}
        period = DEFAULT_EVICT_PERIOD
        last: datetime | None = None
        for key, value in arguments.items():
            where = f"arguments.{key}"
            if key.startswith(ZONE_ARG_PREFIX):
                zone = key.removeprefix(ZONE_ARG_PREFIX)
                if not zone:
                    diag.error(obj, where, "the zone name after tdm.revocable-zone. is empty")
                elif not isinstance(value, str):
                    diag.error(obj, where, f'must be a string like "08:00-21:00", got {value!r}')
                else:
                    try:
                        zones[zone] = Window.parse(value)
                    except ValueError as exc:
                        diag.error(obj, where, str(exc))
            elif key == EVICT_PERIOD_ARG:
                if not isinstance(value, str):
                    diag.error(obj, where, f'must be a duration string like "1m", got {value!r}')
                    continue
                try:
                    period = parse_go_duration(value)
                except ValueError as exc:
                    diag.error(obj, where, str(exc))
            elif key == LAST_EVICT_ARG:
                last = parse_last_evict_at(value, obj, diag)
            else:
                diag.warn(obj, where, "unknown tdm argument; Volcano ignores it")
        return cls(zones, period, last)

    def zone_active(self, zone: str, now: datetime, tz: tzinfo, *, faithful: bool = True) -> bool:
        """Whether nodes of ``zone`` are usable at ``now``; an unconfigured zone never is."""
        window = self.zones.get(zone)
        return window is not None and window_active(window, now, tz, faithful=faithful)


def configured_zones(arguments: Mapping[str, object]) -> list[str]:
    """The zones the plugin arguments name a window for, well-formed or not."""
    return [
        key.removeprefix(ZONE_ARG_PREFIX) for key in arguments if key.startswith(ZONE_ARG_PREFIX)
    ]


def parse_last_evict_at(value: object, obj: str, diag: Diagnostics) -> datetime | None:
    """The ``vcopt.lastEvictAt`` argument: an RFC 3339 instant with a UTC offset."""
    if value is None:
        return None
    where = f"arguments.{LAST_EVICT_ARG}"
    if isinstance(value, datetime):
        instant = value
    elif isinstance(value, str):
        try:
            instant = datetime.fromisoformat(value)
        except ValueError:
            diag.error(obj, where, f'{value!r} is not an RFC 3339 time like "2026-11-30T13:59:00Z"')
            return None
    else:
        diag.error(obj, where, f"must be an RFC 3339 time string, got {value!r}")
        return None
    if instant.tzinfo is None or instant.utcoffset() is None:
        diag.error(obj, where, f"{value!r} needs a UTC offset (e.g. Z or +08:00)")
        return None
    return instant


def node_zone(labels: Mapping[str, str]) -> str:
    """The revocable zone of a node (``""``: an ordinary node that TDM leaves alone)."""
    return labels.get(ZONE_LABEL, "")


def pod_revocable_zone(annotations: Mapping[str, str]) -> str:
    """``*`` if a pod (or PodGroup) may use revocable nodes, else ``""`` (``GetPodRevocableZone``).

    The zone annotation counts only as exactly ``*``; any other value, even a zone name, makes the
    pod non-revocable and is not overridden. Only when it is absent does a true
    ``volcano.sh/preemptable`` annotation (Go ``ParseBool``) make the pod revocable.
    """
    if ZONE_LABEL in annotations:
        return _ANY_ZONE if annotations[ZONE_LABEL] == _ANY_ZONE else ""
    return _ANY_ZONE if parse_go_bool(annotations.get(PREEMPTABLE, "")) else ""


def pod_preemptable(annotations: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """Whether a pod may be a victim: annotation, then label, **true** by default.

    Volcano ``GetPodPreemptable``; the default is the opposite of the job's (spec §9 item 12).
    """
    return _preemptable(annotations, labels, default=True)


def job_preemptable(annotations: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """The same rule for a PodGroup, but **false** by default (``JobInfo.extractPreemptable``)."""
    return _preemptable(annotations, labels, default=False)


def _preemptable(
    annotations: Mapping[str, str], labels: Mapping[str, str], *, default: bool
) -> bool:
    """The first source that carries the key decides; a value Go cannot parse gives the default."""
    for source in (annotations, labels):
        if PREEMPTABLE in source:
            parsed = parse_go_bool(source[PREEMPTABLE])
            return default if parsed is None else parsed
    return default


def max_evictable(
    annotations: Mapping[str, str], total_tasks: int, running: int, finished: int
) -> int:
    """How many running pods of a job may be evicted now (Volcano ``getMaxPodEvictNum``).

    ``total_tasks`` counts the job's pods in every status, ``finished`` the Succeeded and Failed
    ones. ``maxUnavailable`` m allows m minus the pods already unavailable (neither running nor
    finished), never below 0. ``minAvailable`` m allows running − m, but a job already below m
    falls through to the default 1 [Volcano quirk, spec §9 item 12]. Without a budget: 1. A value
    that does not parse counts as 0. When both are set maxUnavailable wins, as seed 002 Q3 and
    the feature issue say.
    """
    max_unavailable = _budget_value(annotations, MAX_UNAVAILABLE_KEYS)
    if max_unavailable:
        allowed = _int_or_percent(max_unavailable, total_tasks)
        unavailable = total_tasks - finished - running
        return 0 if unavailable >= allowed else allowed - unavailable
    min_available = _budget_value(annotations, MIN_AVAILABLE_KEYS)
    if min_available:
        required = _int_or_percent(min_available, total_tasks)
        if running >= required:
            return running - required
    return DEFAULT_EVICT_NUM


def has_disruption_budget(annotations: Mapping[str, str]) -> bool:
    """Whether a PodGroup sets a disruption budget: a non-empty value under any spelling of
    maxUnavailable or minAvailable (an empty one counts as unset, as in Volcano)."""
    return any(annotations.get(key) for key in (*MAX_UNAVAILABLE_KEYS, *MIN_AVAILABLE_KEYS))


def extract_budget(annotations: Mapping[str, str]) -> Mapping[str, str]:
    """The budget annotations Volcano keeps (``JobInfo.extractBudget``, spec §6): a PodGroup
    that carries a minAvailable budget has its maxUnavailable budget ignored, even when the
    minAvailable value is empty (then the default of one pod applies). So when a job sets both,
    minAvailable decides, although :func:`max_evictable` on its own prefers maxUnavailable."""
    if not any(key in annotations for key in MIN_AVAILABLE_KEYS):
        return annotations
    return {k: v for k, v in annotations.items() if k not in MAX_UNAVAILABLE_KEYS}


def job_eviction_budget(
    annotations: Mapping[str, str], total_tasks: int, running: int, finished: int
) -> int:
    """How many pods of a job TDM may evict now: ``getMaxPodEvictNum`` on the budget Volcano
    extracted from the PodGroup's annotations."""
    return max_evictable(extract_budget(annotations), total_tasks, running, finished)


def shuffle_rounds(conf: SchedulerConf, config: TdmConfig | None, now: datetime) -> int:
    """How many times one scheduling cycle runs TDM's victim search (``VictimTasks``).

    Volcano calls it from the ``shuffle`` action alone, and only the tdm plugin answers it
    (with ``enableVictim`` on). A round runs unless the previous one (``vcopt.lastEvictAt``, or
    an earlier round of this cycle) was less than ``tdm.evict.period`` ago, and every round sets
    that time to ``now``: so a cycle has one round, or none, whatever the number of
    ``shuffle`` entries, except with a period of zero or less, when each entry is a round.
    """
    plugin = conf.plugin(TDM_PLUGIN)
    shuffles = conf.actions.count(SHUFFLE_ACTION)
    if config is None or plugin is None or not plugin.enabled(VICTIM_FLAG) or not shuffles:
        return 0
    last = config.last_evict_at
    if last is not None and last + config.evict_period > now:
        return 0
    return shuffles if config.evict_period <= timedelta(0) else 1


def closed_zones(config: TdmConfig, now: datetime, tz: tzinfo) -> list[str]:
    """The configured zones whose window is closed at ``now`` (Volcano's today-anchored
    reading), the only ones ``VictimTasks`` takes pods from. Nodes labelled with a zone that
    has no window are not in it: Volcano walks the configured zones."""
    return [zone for zone in config.zones if not config.zone_active(zone, now, tz)]


def shuffle_round(
    annotations: Mapping[str, str], total_tasks: int, running: int, candidates: Mapping[str, int]
) -> dict[str, int]:
    """How many of one job's pods one ``VictimTasks`` round evicts from each closed zone.

    ``candidates`` counts, per closed zone, the job's Running preemptable pods on the zone's
    nodes. Volcano groups them per zone and then per job and cuts each group to
    ``getMaxPodEvictNum`` on the job's statuses at the round (:func:`job_eviction_budget`), so a
    job spread over two closed zones loses up to its budget in each; which pods of a group go is
    Go map order.
    """
    allowed = job_eviction_budget(annotations, total_tasks, running, 0)
    return {zone: min(allowed, count) for zone, count in candidates.items()}


def shuffle_victims(
    annotations: Mapping[str, str],
    total_tasks: int,
    running: int,
    candidates: Mapping[str, int],
    rounds: int,
) -> dict[str, int]:
    """What ``rounds`` rounds with nothing else evicted in between take from one job, per
    closed zone: each round's victims are Releasing, no longer Running, for the next."""
    taken = dict.fromkeys(candidates, 0)
    for _ in range(rounds):
        left = {zone: count - taken[zone] for zone, count in candidates.items()}
        step = shuffle_round(annotations, total_tasks, running, left)
        for zone, count in step.items():
            taken[zone] += count
        running -= sum(step.values())
    return taken


def _budget_value(annotations: Mapping[str, str], keys: tuple[str, ...]) -> str:
    """The first non-empty spelling; Volcano treats an empty budget string as unset."""
    return next((annotations[key] for key in keys if annotations.get(key)), "")


_GO_INT = re.compile(r"[+-]?[0-9]+")


def _int_or_percent(text: str, total: int) -> int:
    """Volcano ``parseIntStr``: ``intstr.Parse``, percents of ``total`` rounded up, errors → 0."""
    if _GO_INT.fullmatch(text):
        return int(text)
    number = text.removesuffix("%")
    if number != text and _GO_INT.fullmatch(number):
        return -(-int(number) * total // 100)
    return 0
