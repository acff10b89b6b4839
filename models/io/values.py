"""Reading single values of an input file: resource lists and RFC 3339 times.

Both input forms, and every object kind in them, spell these values the same way, so one
reader serves them all and reports a bad value on the field it was written in.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..errors import Diagnostics, shown_value
from ..quantity import QuantityError, whole_amount_problem
from ..resources import Resources, parse_amount


def read_resources(
    raw: Mapping[str, Any] | None,
    obj: str,
    field: str,
    diag: Diagnostics,
    *,
    whole: bool = False,
) -> Resources:
    """A resource list in vcopt units; a bad or negative quantity is reported and left out.

    ``whole`` applies the API server's rule for what a node has and a container asks for:
    extended resources and ``pods`` in whole units (a Queue's or PodGroup's quota has no such
    rule)."""
    out: dict[str, int] = {}
    for name, value in (raw or {}).items():
        try:
            amount = parse_amount(name, value)
        except QuantityError as err:
            diag.error(obj, f"{field}.{name}", str(err))
            continue
        if amount < 0:
            diag.error(obj, f"{field}.{name}", f"must not be negative, got {shown_value(value)}")
            continue
        if whole and (problem := whole_amount_problem(name, value)):
            diag.error(obj, f"{field}.{name}", problem)
            continue
        out[name] = amount
    return Resources(out)


def read_datetime(raw: object) -> datetime | None:
    """An RFC 3339 time (YAML may already have made it a datetime), or None if it is not one."""
    if isinstance(raw, datetime):
        return raw
    if isinstance(raw, str):
        try:
            return datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def as_utc(when: datetime) -> datetime:
    """The instant in UTC; a time without offset is read as UTC."""
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
