"""Kubernetes quantities (``500m``, ``64Gi``, ``1e3``), parsed exactly.

Quantities are kept as :class:`fractions.Fraction` until they are turned into the integer
units vcopt computes with (milli-units or bytes), so ``0.1 + 0.2`` CPU is exactly 300m and no
float ever reaches a capacity check. Rounding up to the next integer unit follows the
apimachinery ``Quantity.MilliValue()`` / ``Value()`` convention.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)"
_QUANTITY = re.compile(
    rf"^(?P<num>{_NUMBER})(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exp>[+-]?\d+)|(?P<dec>[numkMGTPE]?))$"
)
_MAX_EXPONENT = 60
_MAX_LENGTH = 64


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity."""


MAX_QUANTITY = 2**63 - 1
"""The largest value a Kubernetes quantity holds: apimachinery keeps it in an int64."""


def parse_quantity(value: object) -> Fraction:
    """Exact value of a quantity given as a YAML string, int or float, within the range of
    Kubernetes quantities."""
    number = _parse(value)
    if abs(number) > MAX_QUANTITY:
        raise QuantityError(
            f"{_short(value)} is out of the range of Kubernetes quantities (at most 2^63-1)"
        )
    return number


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 30 else text[:27] + "..."


def _parse(value: object) -> Fraction:
    if isinstance(value, bool) or value is None:
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a quantity")
        text = repr(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise QuantityError(f"{value!r} is not a quantity")
    if len(text) > _MAX_LENGTH:
        raise QuantityError(f"{text[:20]!r}… is too long to be a quantity")
    match = _QUANTITY.match(text)
    if not match:
        raise QuantityError(f"{text!r} is not a quantity (expected e.g. 500m, 1.5, 64Gi, 2k, 1e3)")
    number = Fraction(match["num"])
    if match["bin"]:
        return number * _BINARY[match["bin"]]
    if match["exp"] is not None:
        exponent = int(match["exp"])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"{text!r}: exponent out of range")
        return number * Fraction(10) ** exponent
    return number * _DECIMAL[match["dec"] or ""]


def ceil_int(value: Fraction) -> int:
    """The smallest integer ≥ ``value``: apimachinery rounds quantities up."""
    return math.ceil(value)


def to_milli(value: object) -> int:
    """Milli-units of a quantity (``MilliValue``): ``"1.5"`` → 1500, ``"500m"`` → 500."""
    return ceil_int(parse_quantity(value) * 1000)


def to_units(value: object) -> int:
    """Whole units of a quantity (``Value``): ``"64Gi"`` → 68719476736."""
    return ceil_int(parse_quantity(value))


def format_milli(milli: int) -> str:
    """A compact quantity string for milli-units: 1500 → ``1500m``, 2000 → ``2``."""
    if milli % 1000 == 0:
        return str(milli // 1000)
    return f"{milli}m"


def format_bytes(value: int) -> str:
    """A compact quantity string for bytes, using the largest exact binary suffix."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _BINARY[suffix]
        if value and value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(value)
