"""Go's standard-library parsers, as Volcano reads annotation and argument values with them.

Volcano parses booleans with ``strconv.ParseBool`` and durations with ``time.ParseDuration``;
reading the same strings the same way keeps vcopt's reading of a snapshot Volcano's.
"""

from __future__ import annotations

import re
from datetime import timedelta
from fractions import Fraction

_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_go_bool(text: str) -> bool | None:
    """Go's ``strconv.ParseBool``; ``None`` where Go returns an error (so callers can warn)."""
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    return None


_DURATION_UNITS_NS = {
    "ns": 1,
    "us": 10**3,
    "µs": 10**3,  # U+00B5 micro sign
    "μs": 10**3,  # U+03BC Greek mu
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
_MAX_DURATION_NS = 2**63 - 1


def parse_go_duration(text: str) -> timedelta:
    """Go's ``time.ParseDuration`` (``1m``, ``30s``, ``1h30m``, ``500ms``, ``-1.5h``, ``0``).

    Like Go, a unit is required except for a bare ``0``, and magnitudes beyond int64 nanoseconds
    are rejected. The result has the microsecond resolution of :class:`timedelta`: sub-microsecond
    parts are truncated toward zero.
    """
    rest = text[1:] if text[:1] in ("+", "-") else text
    negative = text[:1] == "-"
    if rest == "0":
        return timedelta(0)
    if not rest:
        raise ValueError(f"{text!r} is not a duration (expected e.g. 1m, 30s, 1h30m, 500ms)")
    total_ns = Fraction(0)
    position = 0
    while position < len(rest):
        part = _DURATION_PART.match(rest, position)
        assert part is not None  # every group may be empty, so the pattern always matches
        whole, fraction, unit = part.groups()
        if not whole and not fraction:
            raise ValueError(f"{text!r} is not a duration (expected e.g. 1m, 30s, 1h30m, 500ms)")
        if unit not in _DURATION_UNITS_NS:
            raise ValueError(f"{text!r}: unknown unit {unit!r} (use ns, us, ms, s, m or h)")
        value = Fraction(int(whole or "0"))
        if fraction:
            value += Fraction(int(fraction), 10 ** len(fraction))
        total_ns += value * _DURATION_UNITS_NS[unit]
        position = part.end()
    nanoseconds = int(total_ns)
    if nanoseconds > _MAX_DURATION_NS + negative:
        raise ValueError(f"{text!r} is out of range (Go durations stop near 292 years)")
    microseconds = nanoseconds // 1000
    return timedelta(microseconds=-microseconds if negative else microseconds)


_GO_INT = re.compile(r"[+-]?[0-9]{1,19}\Z")
INT64_MAX = 2**63 - 1


def parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: the integers Kubernetes, Volcano and HAMi read
    from strings (label values under ``Gt``/``Lt``, pod indices, device amounts in annotations);
    None where Go returns an error. The digits are bounded before Python converts them, so a
    5,000-digit value costs nothing and never reaches ``int``'s own limit."""
    if not _GO_INT.match(text):
        return None
    value = int(text)
    return value if -INT64_MAX - 1 <= value <= INT64_MAX else None
