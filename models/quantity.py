"""Kubernetes quantities (``500m``, ``64Gi``, ``1e3``), parsed exactly.

Quantities are kept as :class:`fractions.Fraction` until they are turned into the integer
units vcopt computes with (milli-units or bytes), so ``0.1 + 0.2`` CPU is exactly 300m and no
float ever reaches a capacity check. Rounding up to the next integer unit follows the
apimachinery ``Quantity.MilliValue()`` / ``Value()`` convention.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from fractions import Fraction

from .errors import shown_value
from .names import qualified_name_problem

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
    """A written value in a message, bounded before it is built (no 5,000-digit repr) and
    escaped (:func:`models.errors.shown_value`)."""
    return shown_value(value)


def _parse(value: object) -> Fraction:
    if isinstance(value, bool) or value is None:
        raise QuantityError(f"{_short(value)} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{_short(value)} is not a quantity")
        text = repr(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise QuantityError(f"{_short(value)} is not a quantity")
    if len(text) > _MAX_LENGTH:
        raise QuantityError(f"{_short(text[:20])}… is too long to be a quantity")
    match = _QUANTITY.match(text)
    if not match:
        raise QuantityError(
            f"{_short(text)} is not a quantity (expected e.g. 500m, 1.5, 64Gi, 2k, 1e3)"
        )
    number = Fraction(match["num"])
    if match["bin"]:
        return number * _BINARY[match["bin"]]
    if match["exp"] is not None:
        exponent = int(match["exp"])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"{_short(text)}: exponent out of range")
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


# -- the API server's rules on resource lists --------------------------------------------------


def extended_resource(name: str) -> bool:
    """``IsExtendedResourceName``: a domain-prefixed name outside ``kubernetes.io``
    (``nvidia.com/gpu``, HAMi's ``nvidia.com/gpumem``)."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})


def container_resource_problem(name: str) -> str:
    """Why a container cannot ask for resource ``name`` (``validateContainerResourceName``,
    '' when it can): a name without a domain is one of cpu, memory, ephemeral-storage and
    hugepages-<size>; one with a domain is a qualified name (an extended resource)."""
    if "/" not in name:
        if name in _CONTAINER_RESOURCES or name.startswith("hugepages-"):
            return ""
        return (
            "not a resource a container can ask for: cpu, memory, ephemeral-storage, "
            "hugepages-<size>, or a domain-prefixed extended resource (nvidia.com/gpu)"
        )
    return qualified_name_problem(name)


def _overcommittable(name: str) -> bool:
    """``IsOvercommitAllowed``: native resources except huge pages."""
    return not extended_resource(name) and not name.startswith("hugepages-")


def whole_amount_problem(name: str, value: object) -> str:
    """Why ``value`` cannot be an amount of ``name`` on a node or in a container ('' when it
    can, or when it is no quantity at all, which is reported on its own): extended resources
    and ``pods`` are counted in whole units (``ValidateResourceQuantityValue``)."""
    if not (extended_resource(name) or name == "pods"):
        return ""
    try:
        amount = parse_quantity(value)
    except QuantityError:
        return ""
    if amount.denominator != 1:
        return f"extended resources and pods are whole numbers, got {_short(value)}"
    return ""


def requirement_problems(
    requests: Mapping[str, object], limits: Mapping[str, object]
) -> list[tuple[str, str, str]]:
    """``ValidateResourceRequirements`` on one container's resources as written: a request
    at most its limit, equal to it for what cannot be overcommitted (extended resources, huge
    pages), and such a request only with its limit. Each problem is (``requests`` or
    ``limits``, resource name, message); values that are no quantity are left to the reader
    that reports them."""
    out: list[tuple[str, str, str]] = []
    for name, written in requests.items():
        try:
            request = parse_quantity(written)
        except QuantityError:
            continue
        if name not in limits:
            if not _overcommittable(name):
                out.append(
                    (
                        "limits",
                        name,
                        "must be set: a request of an extended resource or of huge pages "
                        "needs a limit equal to it",
                    )
                )
            continue
        try:
            limit = parse_quantity(limits[name])
        except QuantityError:
            continue
        if request != limit and not _overcommittable(name):
            out.append(
                (
                    "requests",
                    name,
                    f"must be equal to the {name} limit of {_short(limits[name])}, got "
                    f"{_short(written)} (extended resources and huge pages are not overcommitted)",
                )
            )
        elif request > limit:
            out.append(
                (
                    "requests",
                    name,
                    f"{_short(written)} is above the {name} limit of {_short(limits[name])}",
                )
            )
    return out
