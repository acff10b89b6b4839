"""TDM windows, plugin arguments, revocable/preemptable marks and disruption budgets.

Expected values are worked out by hand from spec §6 (Volcano ``tdm.go``, ``pod_info.go``,
``job_info.go``) and seed 002; each test says how. Unless stated otherwise the clock is
2026-11-30 (a Monday) and the window is written in UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.errors import Diagnostics
from models.tdm import (
    PREEMPTABLE,
    ZONE_LABEL,
    TdmConfig,
    Window,
    job_eviction_budget,
    job_preemptable,
    max_evictable,
    node_zone,
    parse_go_bool,
    parse_go_duration,
    pod_preemptable,
    pod_revocable_zone,
    volcano_window_bounds,
    window_active,
    window_closes_at,
    window_next_opens_at,
)

SHANGHAI = ZoneInfo("Asia/Shanghai")  # UTC+8 all year, no DST
W_DAY = Window.parse("10:00-21:00")
W_NIGHT = Window.parse("22:00-06:00")
W_2359 = Window.parse("23:59-23:59")
W_0000 = Window.parse("00:00-00:00")


def utc(hour: int, minute: int, second: int = 0, *, day: int = 30, micro: int = 0) -> datetime:
    """An instant in UTC on 2026-11-<day>, days counting on past the month (31 = Dec 1)."""
    base = datetime(2026, 11, 30, tzinfo=UTC) + timedelta(days=day - 30)
    return base.replace(hour=hour, minute=minute, second=second, microsecond=micro)


# --- Window.parse -------------------------------------------------------------------------


def test_parse_reads_both_times_and_keeps_the_text() -> None:
    """``10:00-21:00`` splits at the dash into 10:00 and 21:00; the text is kept for messages."""
    window = Window.parse("10:00-21:00")
    assert window == Window((10, 0), (21, 0), "10:00-21:00")


def test_parse_accepts_a_one_digit_hour_like_go() -> None:
    """Go's layout element ``15`` reads one or two digits, so Volcano runs ``8:00-9:30``."""
    assert Window.parse("8:00-9:30") == Window((8, 0), (9, 30), "8:00-9:30")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("24:00-06:00", "hour 24 is out of range"),  # Go's "15" allows 0-23 only
        ("10:60-11:00", "minute 60 is out of range"),  # "04" allows 0-59 only
        ("10:0-11:00", "HH:MM-HH:MM"),  # "04" needs exactly two digits
        ("010:00-11:00", "HH:MM-HH:MM"),  # "15" reads at most two digits, then wants ':'
        ("10:00", "HH:MM-HH:MM"),  # Volcano splits on '-' and needs two parts
        ("10:00-11:00-12:00", "HH:MM-HH:MM"),  # three parts
        (" 10:00-21:00", "HH:MM-HH:MM"),  # strict: no surrounding spaces
        ("10.00-21.00", "HH:MM-HH:MM"),  # wrong separator
        ("", "HH:MM-HH:MM"),
        ("１０:00-21:00", "HH:MM-HH:MM"),  # full-width digits are not Go's ASCII digits
    ],
)
def test_parse_rejects_what_go_time_parse_rejects(text: str, fragment: str) -> None:
    """Each case breaks one rule of ``time.Parse("15:04", …)`` on a half of the split text."""
    with pytest.raises(ValueError, match=fragment):
        Window.parse(text)


def test_window_refuses_an_impossible_time_of_day() -> None:
    """Building a Window directly still cannot produce 25:00."""
    with pytest.raises(ValueError, match="not a time of day"):
        Window((25, 0), (6, 0), "25:00-06:00")


# --- window_active ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "now", "faithful", "expected"),
    [
        # 10:00-21:00: start < end, a same-day window, identical in both modes.
        (W_DAY, utc(9, 59, 59), True, False),  # one second before start
        (W_DAY, utc(10, 0), True, True),  # start is inclusive
        (W_DAY, utc(15, 0), True, True),  # inside
        (W_DAY, utc(21, 0), True, True),  # end is inclusive
        (W_DAY, utc(21, 0, 0, micro=999_999), True, True),  # whole seconds: still 21:00:00
        (W_DAY, utc(21, 0, 1), True, False),  # one second after end
        (W_DAY, utc(3, 0, day=31), True, False),  # after midnight: before the new start
        (W_DAY, utc(9, 59, 59), False, False),
        (W_DAY, utc(10, 0), False, True),
        (W_DAY, utc(21, 0), False, True),
        (W_DAY, utc(21, 0, 1), False, False),
        # 22:00-06:00 faithful: start today 22:00, end tomorrow 06:00, so only 22:00-23:59:59.
        (W_NIGHT, utc(21, 59, 59), True, False),
        (W_NIGHT, utc(22, 0), True, True),
        (W_NIGHT, utc(23, 59, 59), True, True),
        (W_NIGHT, utc(0, 0, day=31), True, False),  # new day: start = Dec 1 22:00 > now
        (W_NIGHT, utc(3, 0, day=31), True, False),  # the spec's example
        (W_NIGHT, utc(6, 0, day=31), True, False),  # even at the configured end
        # 22:00-06:00 intended: 22:00 through 06:00:00 next morning.
        (W_NIGHT, utc(21, 59, 59), False, False),
        (W_NIGHT, utc(22, 0), False, True),
        (W_NIGHT, utc(0, 0, day=31), False, True),
        (W_NIGHT, utc(3, 0, day=31), False, True),
        (W_NIGHT, utc(6, 0, day=31), False, True),  # end inclusive
        (W_NIGHT, utc(6, 0, 1, day=31), False, False),
        (W_NIGHT, utc(12, 0), False, False),
        # 23:59-23:59 faithful: start today 23:59, end tomorrow 23:59 → 23:59:00-23:59:59.
        (W_2359, utc(23, 58, 59), True, False),
        (W_2359, utc(23, 59), True, True),
        (W_2359, utc(23, 59, 59), True, True),
        (W_2359, utc(0, 0, day=31), True, False),  # start moved to Dec 1 23:59
        (W_2359, utc(12, 0), True, False),
        # 23:59-23:59 intended: a whole day.
        (W_2359, utc(12, 0), False, True),
        (W_2359, utc(0, 0, day=31), False, True),
        # 00:00-00:00: start today 00:00 ≤ now ≤ tomorrow 00:00 at every instant.
        (W_0000, utc(0, 0), True, True),
        (W_0000, utc(12, 0), True, True),
        (W_0000, utc(23, 59, 59), True, True),
        (W_0000, utc(12, 0), False, True),
    ],
)
def test_window_active_in_utc(
    window: Window, now: datetime, faithful: bool, expected: bool
) -> None:
    """Faithful = Volcano's start-today rule; intended = what the configuration means.

    Reasoning per row is in the comments of the table above.
    """
    assert window_active(window, now, UTC, faithful=faithful) is expected


@pytest.mark.parametrize(
    ("window", "now", "faithful", "expected"),
    [
        (W_DAY, utc(1, 59, 59), True, False),  # 09:59:59 in Shanghai
        (W_DAY, utc(2, 0), True, True),  # 10:00 in Shanghai, though 02:00 in UTC
        (W_DAY, utc(13, 0), True, True),  # 21:00 in Shanghai: end inclusive
        (W_DAY, utc(13, 0, 1), True, False),  # 21:00:01 in Shanghai
        (W_NIGHT, utc(15, 30), True, True),  # 23:30 Nov 30 in Shanghai
        # 16:00 UTC is still Nov 30 in UTC but already 00:00 Dec 1 in Shanghai: "today" is
        # the Shanghai day, so the faithful start jumps to Dec 1 22:00.
        (W_NIGHT, utc(16, 0), True, False),
        (W_NIGHT, utc(16, 0), False, True),
        (W_NIGHT, utc(20, 0), False, True),  # 04:00 Dec 1 in Shanghai
        (W_NIGHT, utc(22, 0, 1), False, False),  # 06:00:01 Dec 1 in Shanghai
    ],
)
def test_window_is_read_in_the_configured_timezone(
    window: Window, now: datetime, faithful: bool, expected: bool
) -> None:
    """The window's HH:MM are Shanghai wall times (UTC+8): shift each UTC instant by 8 hours."""
    assert window_active(window, now, SHANGHAI, faithful=faithful) is expected


def test_same_instant_differs_between_timezones() -> None:
    """02:00Z is 10:00 in Shanghai (inside 10:00-21:00) but 02:00 in UTC (outside)."""
    assert window_active(W_DAY, utc(2, 0), SHANGHAI)
    assert not window_active(W_DAY, utc(2, 0), UTC)


def test_now_may_carry_any_offset() -> None:
    """10:00+08:00 is 02:00Z: the offset of ``now`` is irrelevant, only the instant counts."""
    now = datetime(2026, 11, 30, 10, 0, tzinfo=SHANGHAI)
    assert not window_active(W_DAY, now, UTC)
    assert window_active(W_DAY, now, SHANGHAI)


def test_naive_now_is_refused() -> None:
    """A wall time without offset is ambiguous; the instance file's ``now`` is RFC 3339."""
    with pytest.raises(ValueError, match="timezone-aware"):
        window_active(W_DAY, datetime(2026, 11, 30, 12, 0), UTC)


# --- bounds, closes_at, next_opens_at -----------------------------------------------------


def test_volcano_bounds_put_a_cross_midnight_end_on_tomorrow() -> None:
    """22:00-06:00 at 23:30: start Nov 30 22:00, end Dec 1 06:00 (t1 ≥ t2 → tomorrow)."""
    assert volcano_window_bounds(W_NIGHT, utc(23, 30), UTC) == (utc(22, 0), utc(6, 0, day=31))


def test_volcano_bounds_at_three_in_the_morning() -> None:
    """At Dec 1 03:00 "today" is Dec 1: start Dec 1 22:00, end Dec 2 06:00; start > now."""
    assert volcano_window_bounds(W_NIGHT, utc(3, 0, day=31), UTC) == (
        utc(22, 0, day=31),
        utc(6, 0, day=32),
    )


@pytest.mark.parametrize(
    ("window", "now", "tz", "faithful", "expected"),
    [
        (W_DAY, utc(15, 0), UTC, True, utc(21, 0)),  # same-day: Volcano's end
        (W_DAY, utc(15, 0), UTC, False, utc(21, 0)),
        (W_DAY, utc(21, 0, 1), UTC, True, None),  # inactive
        (W_NIGHT, utc(23, 30), UTC, True, utc(23, 59, 59)),  # start jumps at midnight
        (W_NIGHT, utc(23, 30), UTC, False, utc(6, 0, day=31)),
        (W_NIGHT, utc(3, 0, day=31), UTC, False, utc(6, 0, day=31)),  # opened yesterday 22:00
        (W_NIGHT, utc(3, 0, day=31), UTC, True, None),
        (W_2359, utc(23, 59, 30), UTC, True, utc(23, 59, 59)),  # the one-minute window
        (W_2359, utc(12, 0), UTC, False, None),  # all day: never closes
        (W_0000, utc(12, 0), UTC, True, None),  # always active
        (W_DAY, utc(5, 0), SHANGHAI, True, utc(13, 0)),  # 21:00 Shanghai = 13:00Z
        (W_NIGHT, utc(15, 30), SHANGHAI, True, utc(15, 59, 59)),  # 23:59:59 Shanghai
        (W_NIGHT, utc(20, 0), SHANGHAI, False, utc(22, 0)),  # Dec 1 06:00 Shanghai
    ],
)
def test_window_closes_at(
    window: Window, now: datetime, tz: ZoneInfo, faithful: bool, expected: datetime | None
) -> None:
    """The last active second of the period that contains ``now`` (see the table's comments)."""
    assert window_closes_at(window, now, tz, faithful=faithful) == expected


def test_closes_at_is_expressed_in_the_window_timezone() -> None:
    """Same instant as 13:00Z, but shown as 21:00 Shanghai time for reports."""
    closes = window_closes_at(W_DAY, utc(5, 0), SHANGHAI)
    assert closes is not None
    assert (closes.hour, closes.utcoffset()) == (21, timedelta(hours=8))


@pytest.mark.parametrize(
    ("window", "now", "faithful", "expected"),
    [
        (W_DAY, utc(9, 0), True, utc(10, 0)),  # later today
        (W_DAY, utc(21, 0, 1), True, utc(10, 0, day=31)),  # passed: tomorrow
        (W_DAY, utc(12, 0), True, None),  # active now
        (W_NIGHT, utc(3, 0, day=31), True, utc(22, 0, day=31)),  # faithful gap after midnight
        (W_NIGHT, utc(12, 0), False, utc(22, 0)),
        (W_2359, utc(0, 0, day=31), True, utc(23, 59, day=31)),
    ],
)
def test_window_next_opens_at(
    window: Window, now: datetime, faithful: bool, expected: datetime | None
) -> None:
    """An inactive window reopens at the next HH1:MM1 after ``now``."""
    assert window_next_opens_at(window, now, UTC, faithful=faithful) == expected


_hour_minute = st.tuples(st.integers(0, 23), st.integers(0, 59))
_instants = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
)


@given(_hour_minute, _hour_minute, _instants, st.sampled_from([UTC, SHANGHAI]), st.booleans())
def test_closes_and_opens_are_real_transitions(
    start: tuple[int, int],
    end: tuple[int, int],
    now: datetime,
    tz: ZoneInfo,
    faithful: bool,
) -> None:
    """closes_at is active and one second later is not; next_opens_at is the reverse."""
    window = Window(start, end, "generated")
    second = timedelta(seconds=1)
    closes = window_closes_at(window, now, tz, faithful=faithful)
    if closes is not None:
        assert window_active(window, closes, tz, faithful=faithful)
        assert not window_active(window, closes + second, tz, faithful=faithful)
    opens = window_next_opens_at(window, now, tz, faithful=faithful)
    if opens is not None:
        assert window_active(window, opens, tz, faithful=faithful)
        assert not window_active(window, opens - second, tz, faithful=faithful)


@given(_hour_minute, _hour_minute, _instants)
def test_intended_mode_is_time_of_day_membership(
    start: tuple[int, int], end: tuple[int, int], now: datetime
) -> None:
    """Intended meaning, restated on the clock face in whole seconds of the day.

    Same-day: start ≤ t ≤ end. Cross-midnight: t ≥ start or t ≤ end. Equal: always.
    """
    window = Window(start, end, "generated")
    t = now.hour * 3600 + now.minute * 60 + now.second
    s, e = start[0] * 3600 + start[1] * 60, end[0] * 3600 + end[1] * 60
    expected = s <= t <= e if s < e else (t >= s or t <= e)
    assert window_active(window, now, UTC, faithful=False) is expected


# --- TdmConfig ----------------------------------------------------------------------------

OBJ = 'Plugin "tdm"'


def test_config_reads_zones_and_period() -> None:
    """Seed 002 §9.1's example: two zones and a one-minute period, nothing to complain about."""
    diag = Diagnostics()
    config = TdmConfig.from_arguments(
        {
            "tdm.revocable-zone.rz1": "08:00-21:00",
            "tdm.revocable-zone.rz2": "10:00-18:00",
            "tdm.evict.period": "30s",
        },
        OBJ,
        diag,
    )
    assert dict(config.zones) == {
        "rz1": Window((8, 0), (21, 0), "08:00-21:00"),
        "rz2": Window((10, 0), (18, 0), "10:00-18:00"),
    }
    assert config.evict_period == timedelta(seconds=30)
    assert (diag.errors, diag.warnings) == ([], [])


def test_config_period_defaults_to_one_minute() -> None:
    """``evictPeriod`` is ``time.Minute`` unless ``tdm.evict.period`` is given."""
    config = TdmConfig.from_arguments({}, OBJ, Diagnostics())
    assert config.evict_period == timedelta(minutes=1)
    assert dict(config.zones) == {}


def test_config_malformed_window_is_an_error_on_its_argument() -> None:
    """The field is the argument key as written; the zone is left out (Volcano: inactive)."""
    diag = Diagnostics()
    config = TdmConfig.from_arguments({"tdm.revocable-zone.rz1": "25:00-06:00"}, OBJ, diag)
    assert [(p.obj, p.field) for p in diag.errors] == [(OBJ, "arguments.tdm.revocable-zone.rz1")]
    assert "hour 25 is out of range" in diag.errors[0].message
    assert "rz1" not in config.zones
    assert not config.zone_active("rz1", utc(3, 0), UTC)


def test_config_window_must_be_a_string() -> None:
    """YAML could give a number (e.g. ``800``); Volcano expects the string form."""
    diag = Diagnostics()
    TdmConfig.from_arguments({"tdm.revocable-zone.rz1": 800}, OBJ, diag)
    assert [p.field for p in diag.errors] == ["arguments.tdm.revocable-zone.rz1"]
    assert "must be a string" in diag.errors[0].message


def test_config_empty_zone_name_is_an_error() -> None:
    """``tdm.revocable-zone.`` names no zone: no node label can refer to it."""
    diag = Diagnostics()
    TdmConfig.from_arguments({"tdm.revocable-zone.": "08:00-21:00"}, OBJ, diag)
    assert [p.field for p in diag.errors] == ["arguments.tdm.revocable-zone."]


@pytest.mark.parametrize("value", ["1 minute", "60", "", 60])
def test_config_bad_period_is_an_error_and_keeps_the_default(value: object) -> None:
    """``1 minute`` has a space, ``60`` and ``""`` no unit, 60 is not a string; 1m remains."""
    diag = Diagnostics()
    config = TdmConfig.from_arguments({"tdm.evict.period": value}, OBJ, diag)
    assert [(p.obj, p.field) for p in diag.errors] == [(OBJ, "arguments.tdm.evict.period")]
    assert config.evict_period == timedelta(minutes=1)


def test_config_unknown_argument_is_a_warning() -> None:
    """A misspelt key (underscore) is ignored by Volcano: warn, do not fail."""
    diag = Diagnostics()
    config = TdmConfig.from_arguments({"tdm.revocable_zone.rz1": "08:00-21:00"}, OBJ, diag)
    assert diag.errors == []
    assert [p.field for p in diag.warnings] == ["arguments.tdm.revocable_zone.rz1"]
    assert dict(config.zones) == {}


def test_zone_active_uses_the_window_and_refuses_unknown_zones() -> None:
    """rz1 = 08:00-21:00: 12:00 inside, 22:00 outside; rz9 is not configured → inactive."""
    config = TdmConfig.from_arguments({"tdm.revocable-zone.rz1": "08:00-21:00"}, OBJ, Diagnostics())
    assert config.zone_active("rz1", utc(12, 0), UTC)
    assert not config.zone_active("rz1", utc(22, 0), UTC)
    assert not config.zone_active("rz9", utc(12, 0), UTC)


def test_zone_active_passes_the_mode_through() -> None:
    """rz = 22:00-06:00 at 03:00: inactive in Volcano, active as intended."""
    config = TdmConfig.from_arguments({"tdm.revocable-zone.rz": "22:00-06:00"}, OBJ, Diagnostics())
    assert not config.zone_active("rz", utc(3, 0), UTC)
    assert config.zone_active("rz", utc(3, 0), UTC, faithful=False)


# --- Go durations -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1m", timedelta(minutes=1)),
        ("30s", timedelta(seconds=30)),
        ("1h30m", timedelta(minutes=90)),
        ("500ms", timedelta(milliseconds=500)),
        ("0", timedelta(0)),  # the only unit-less value Go accepts
        ("-0", timedelta(0)),
        ("+2m", timedelta(minutes=2)),
        ("-1.5h", -timedelta(minutes=90)),
        ("1.5s", timedelta(milliseconds=1500)),
        (".5s", timedelta(milliseconds=500)),  # digits after the point suffice
        ("5.s", timedelta(seconds=5)),  # digits before the point suffice
        ("1us", timedelta(microseconds=1)),
        ("1µs", timedelta(microseconds=1)),  # U+00B5
        ("1μs", timedelta(microseconds=1)),  # U+03BC
        ("1500ns", timedelta(microseconds=1)),  # 1.5 µs truncated to timedelta's resolution
        ("1h1m1s1ms", timedelta(hours=1, minutes=1, seconds=1, milliseconds=1)),
        ("2562047h", timedelta(hours=2562047)),  # 9.2233692e18 ns < 2^63
    ],
)
def test_parse_go_duration(text: str, expected: timedelta) -> None:
    """Values as Go's ``time.ParseDuration`` reads them (sum of number-unit pairs)."""
    assert parse_go_duration(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "1", "m", "1 m", "1x", "1hm", "1.5.5s", ".s", "-", "+", "1m ", "2562048h"],
)
def test_parse_go_duration_rejects(text: str) -> None:
    """Go rejects: empty, unit-less (except 0), unknown unit (``x``, ``hm``), a number without
    digits (``.s``), a second point, spaces, and 2562048h = 9.2233728e18 ns > 2^63 − 1."""
    with pytest.raises(ValueError):
        parse_go_duration(text)


# --- nodes, pods and jobs -----------------------------------------------------------------


def test_node_zone() -> None:
    """The label's value is the zone; a node without it is ordinary ("")."""
    assert node_zone({ZONE_LABEL: "rz1", "pool": "a"}) == "rz1"
    assert node_zone({"pool": "a"}) == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        *[(t, True) for t in ["1", "t", "T", "TRUE", "true", "True"]],
        *[(f, False) for f in ["0", "f", "F", "FALSE", "false", "False"]],
        ("yes", None),  # Go does not know yes/no
        ("TrUe", None),  # nor mixed case beyond the three spellings
        (" true", None),  # nor spaces
        ("", None),
    ],
)
def test_parse_go_bool(text: str, expected: bool | None) -> None:
    """The exact accept lists of ``strconv.ParseBool``; anything else is an error (None)."""
    assert parse_go_bool(text) is expected


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, ""),
        ({ZONE_LABEL: "*"}, "*"),
        ({ZONE_LABEL: "rz1"}, ""),  # must be exactly "*"
        ({ZONE_LABEL: "rz1", PREEMPTABLE: "true"}, ""),  # present zone is not overridden
        ({ZONE_LABEL: "*", PREEMPTABLE: "false"}, "*"),  # preemptable is only a fallback
        ({PREEMPTABLE: "true"}, "*"),  # absent zone + preemptable → any zone
        ({PREEMPTABLE: "True"}, "*"),  # ParseBool spelling
        ({PREEMPTABLE: "false"}, ""),
        ({PREEMPTABLE: "yes"}, ""),  # not a Go bool → not true
    ],
)
def test_pod_revocable_zone(annotations: dict[str, str], expected: str) -> None:
    """``GetPodRevocableZone``: zone annotation decides if present, else preemptable=true → *."""
    assert pod_revocable_zone(annotations) == expected


@pytest.mark.parametrize(
    ("annotations", "labels", "expected"),
    [
        ({}, {}, True),  # pods are preemptable by default
        ({PREEMPTABLE: "false"}, {}, False),
        ({PREEMPTABLE: "0"}, {}, False),
        ({}, {PREEMPTABLE: "false"}, False),  # label when no annotation
        ({PREEMPTABLE: "false"}, {PREEMPTABLE: "true"}, False),  # annotation first
        ({PREEMPTABLE: "true"}, {PREEMPTABLE: "false"}, True),
        ({PREEMPTABLE: "yes"}, {PREEMPTABLE: "false"}, True),  # unparsable → default
    ],
)
def test_pod_preemptable(
    annotations: dict[str, str], labels: dict[str, str], expected: bool
) -> None:
    """Annotation, then label; the first that carries the key decides; default true."""
    assert pod_preemptable(annotations, labels) is expected


@pytest.mark.parametrize(
    ("annotations", "labels", "expected"),
    [
        ({}, {}, False),  # PodGroups are not preemptable by default
        ({}, {PREEMPTABLE: "true"}, True),
        ({PREEMPTABLE: "T"}, {}, True),
        ({PREEMPTABLE: "false"}, {PREEMPTABLE: "true"}, False),  # annotation first
        ({PREEMPTABLE: "maybe"}, {}, False),  # unparsable → default
    ],
)
def test_job_preemptable(
    annotations: dict[str, str], labels: dict[str, str], expected: bool
) -> None:
    """Same reading as for pods, with the opposite default."""
    assert job_preemptable(annotations, labels) is expected


# --- disruption budget --------------------------------------------------------------------

MAX = "volcano.sh/jdb-max-unavailable"
MIN = "volcano.sh/jdb-min-available"
SEED_MAX = "volcano.sh/job-disruption-budget-max-unavailable"
SEED_MIN = "volcano.sh/job-disruption-budget-min-available"


@pytest.mark.parametrize(
    ("annotations", "total", "running", "finished", "expected"),
    [
        # maxUnavailable "3", 5 tasks all running: unavailable 0 < 3 → 3 − 0 = 3.
        ({MAX: "3"}, 5, 5, 0, 3),
        # "30%" of 10 = 3.0 → 3; all running → 3.
        ({MAX: "30%"}, 10, 10, 0, 3),
        # "25%" of 10 = 2.5, rounded up → 3; all running → 3.
        ({MAX: "25%"}, 10, 10, 0, 3),
        # "30%" of 7 = 2.1 → 3.
        ({MAX: "30%"}, 7, 7, 0, 3),
        # 10 tasks, 6 running, 2 finished → 2 unavailable; 3 − 2 = 1.
        ({MAX: "3"}, 10, 6, 2, 1),
        # same but m = 2: unavailable 2 ≥ 2 → 0.
        ({MAX: "2"}, 10, 6, 2, 0),
        # minAvailable "3", 5 running → 5 − 3 = 2.
        ({MIN: "3"}, 5, 5, 0, 2),
        # minAvailable "6", 5 running: 5 < 6 falls through to the default 1 (surprise).
        ({MIN: "6"}, 6, 5, 0, 1),
        # both set: maxUnavailable 1 wins (minAvailable would allow 5 − 2 = 3).
        ({MAX: "1", MIN: "2"}, 5, 5, 0, 1),
        # no budget → 1.
        ({}, 5, 5, 0, 1),
        # seed 002's spelling works the same: 30% of 10 → 3.
        ({SEED_MAX: "30%"}, 10, 10, 0, 3),
        ({SEED_MIN: "3"}, 5, 5, 0, 2),
        # both spellings of maxUnavailable: Volcano's jdb key wins → 1, not 4.
        ({MAX: "1", SEED_MAX: "4"}, 5, 5, 0, 1),
        # an empty maxUnavailable is unset, so minAvailable applies: 5 − 3 = 2.
        ({MAX: "", MIN: "3"}, 5, 5, 0, 2),
        # parse errors give m = 0: maxUnavailable → unavailable 0 ≥ 0 → 0 ...
        ({MAX: "abc"}, 5, 5, 0, 0),
        ({MAX: "3.5"}, 5, 5, 0, 0),  # neither int nor percent
        ({MAX: " 2"}, 5, 5, 0, 0),  # Atoi does not trim
        # ... and minAvailable → every running pod: 5 − 0 = 5.
        ({MIN: "abc"}, 5, 5, 0, 5),
        # Atoi accepts a sign: "+2" → 2.
        ({MAX: "+2"}, 5, 5, 0, 2),
    ],
)
def test_max_evictable(
    annotations: dict[str, str], total: int, running: int, finished: int, expected: int
) -> None:
    """Volcano ``getMaxPodEvictNum`` with ``parseIntStr``; each row's arithmetic is above it."""
    assert max_evictable(annotations, total, running, finished) == expected


def test_job_budget_with_both_annotations_follows_extract_budget() -> None:
    """Volcano's ``extractBudget`` keeps only the minAvailable budget when a PodGroup has both
    (spec §6), so getMaxPodEvictNum never sees the maxUnavailable one: minAvailable "3" with
    5 running → 5 − 3 = 2, although maxUnavailable "30%" alone would give ⌈0.3·10⌉ − 5 = 0
    (10 tasks, 5 running, none finished: 5 already unavailable ≥ 3). ``max_evictable`` given
    both directly still lets maxUnavailable win (the function-level rule of seed 002 Q3)."""
    both = {
        "volcano.sh/jdb-min-available": "3",
        "volcano.sh/jdb-max-unavailable": "30%",
    }
    assert job_eviction_budget(both, total_tasks=10, running=5, finished=0) == 2
    assert max_evictable(both, total_tasks=10, running=5, finished=0) == 0
