"""Resource vectors in Volcano's units, with Volcano's comparison rules.

Volcano keeps CPU in milli-cores, memory in bytes, ``pods`` in whole units and every other
(scalar) resource ×1000, i.e. in milli-units (``api/resource_info.go:NewResource``). vcopt
keeps the same units, but as Python integers, so comparisons are exact; Volcano's 0.1
tolerance (``minResource``) then never changes an integer comparison and is not modelled.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType

from .quantity import QuantityError, format_bytes, format_milli, to_milli, to_units

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
NVIDIA_GPU = "nvidia.com/gpu"
INFINITE = 1 << 80
"""Stands for Volcano's MaxFloat64 / MaxInt64 "unlimited" values; far above any real amount."""

_BYTE_RESOURCES = frozenset({MEMORY, "ephemeral-storage", "storage"})
_UNIT_RESOURCES = frozenset({PODS})


def parse_amount(name: str, value: object) -> int:
    """One quantity in the integer unit vcopt uses for resource ``name``.

    Large instances repeat the same few quantities thousands of times, so written values
    (strings and integers) are parsed once and remembered.
    """
    if isinstance(value, str | int) and not isinstance(value, bool):
        return _remembered_amount(name, value)
    return _amount(name, value)


def _amount(name: str, value: object) -> int:
    if name in _BYTE_RESOURCES or name in _UNIT_RESOURCES:
        return to_units(value)
    return to_milli(value)


@functools.lru_cache(maxsize=4096)
def _remembered_amount(name: str, value: str | int) -> int:
    return _amount(name, value)


def format_amount(name: str, amount: int) -> str:
    """Human form of an amount of resource ``name`` (inverse of :func:`parse_amount`)."""
    if amount >= INFINITE // 2:
        return "∞"
    if name in _BYTE_RESOURCES:
        return format_bytes(amount)
    if name in _UNIT_RESOURCES:
        return str(amount)
    return format_milli(amount)


_READING_UNITS = (
    ("Ei", 2**60),
    ("Pi", 2**50),
    ("Ti", 2**40),
    ("Gi", 2**30),
    ("Mi", 2**20),
    ("Ki", 2**10),
    ("E", 10**18),
    ("P", 10**15),
    ("T", 10**12),
    ("G", 10**9),
    ("M", 10**6),
    ("k", 10**3),
)
LARGE_COUNT = 2**20
"""From here on a count reads better in a suffix it is an exact multiple of (``320Gi``,
``5M``) than as a row of digits: it was written that way."""


def _significant(value: float) -> str:
    """Three significant digits, no trailing zeros, no exponent: 3.73, 96, 0.5, 1536,
    12,500."""
    if value >= 100 or float(value).is_integer():
        return f"{value:,.0f}" if value >= 10_000 else f"{value:.0f}"
    return f"{value:.3g}"


def readable_bytes(amount: float) -> str:
    """``4000000000`` → ``3.73Gi``; exact binary amounts stay exact (``768Gi``)."""
    for suffix, unit in _READING_UNITS[:6]:
        if amount >= unit:
            return f"{_significant(amount / unit)}{suffix}"
    return f"{_significant(amount)}B" if amount else "0"


def _count(value: float) -> str:
    """A count; a large whole one in the shortest exact suffix form, if it has one."""
    if value < LARGE_COUNT or not float(value).is_integer():
        return _significant(value)
    whole = int(value)
    exact = [f"{whole // unit}{suffix}" for suffix, unit in _READING_UNITS if whole % unit == 0]
    return min(exact, key=len, default=_significant(value))


def readable_amount(name: str, amount: int) -> str:
    """An amount of resource ``name`` as people read it, not as the API server stores it:
    cores for CPU, binary units for memory-like resources (``320Gi``, ``3.73Gi`` for 4G),
    counts for the rest, ``∞`` for unlimited. Not a quantity to write back: see
    :func:`format_amount`. Only memory, storage and hugepages count bytes: an extended
    resource is a count whatever its name says (HAMi's ``nvidia.com/gpumem`` counts MiB)."""
    if amount >= INFINITE // 2:
        return "∞"
    if name in _BYTE_RESOURCES:
        return readable_bytes(amount)
    if name in _UNIT_RESOURCES:
        return str(amount)
    if name.startswith("hugepages-"):  # a scalar, so kept in milli-bytes
        return readable_bytes(amount / 1000)
    if name == CPU:
        return _significant(amount / 1000)
    return _count(amount / 1000)


class Resources(Mapping[str, int]):
    """An immutable resource vector: resource name → amount in vcopt units.

    Explicit zero entries are kept, because Volcano's scalar maps keep them and an explicit
    ``capability: {nvidia.com/gpu: 0}`` is a limit of 0 while an absent scalar is unlimited
    (Infinity comparisons). Equality and hashing ignore zeros: they describe the same amounts.
    """

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Mapping[str, int] | Iterable[tuple[str, int]] = ()) -> None:
        items = data.items() if isinstance(data, Mapping) else data
        self._data = MappingProxyType(dict(sorted((k, int(v)) for k, v in items)))
        self._hash: int | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, object]) -> Resources:
        """From a Kubernetes resource list such as ``{cpu: "8", memory: 64Gi}``.

        Raises ``QuantityError`` naming the resource on a bad quantity.
        """
        out: dict[str, int] = {}
        for name, value in raw.items():
            try:
                amount = parse_amount(name, value)
            except QuantityError as err:
                raise QuantityError(f"{name}: {err}") from None
            if amount < 0:
                raise QuantityError(f"{name}: must not be negative, got {value!r}")
            out[name] = amount
        return cls(out)

    def __reduce__(self) -> tuple[type[Resources], tuple[dict[str, int]]]:
        return (Resources, (dict(self._data),))

    def __getitem__(self, key: str) -> int:
        return self._data[key]

    def get(self, key: str, default: int = 0) -> int:  # type: ignore[override]
        return self._data.get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def _nonzero(self) -> dict[str, int]:
        return {k: v for k, v in self._data.items() if v}

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self._nonzero().items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Resources):
            return self._nonzero() == other._nonzero()
        if isinstance(other, Mapping):
            return self._nonzero() == Resources(other)._nonzero()
        return NotImplemented

    def __repr__(self) -> str:
        return f"Resources({self.format()})"

    def format(self) -> str:
        """``cpu=8, memory=64Gi, nvidia.com/gpu=2``."""
        return ", ".join(f"{k}={format_amount(k, v)}" for k, v in self._nonzero().items()) or "none"

    def to_k8s(self) -> dict[str, str]:
        """Back to a Kubernetes resource list (strings)."""
        return {k: format_amount(k, v) for k, v in self._data.items()}

    def __add__(self, other: Mapping[str, int]) -> Resources:
        out = dict(self._data)
        for k, v in other.items():
            out[k] = out.get(k, 0) + v
        return Resources(out)

    def __sub__(self, other: Mapping[str, int]) -> Resources:
        out = dict(self._data)
        for k, v in other.items():
            out[k] = out.get(k, 0) - v
        return Resources(out)

    def scaled(self, factor: int) -> Resources:
        return Resources({k: v * factor for k, v in self._data.items()})

    def clip_negative(self) -> Resources:
        """``max₀`` per dimension."""
        return Resources({k: max(v, 0) for k, v in self._data.items()})

    def is_empty(self) -> bool:
        """True when no dimension but ``pods`` is positive (Volcano's ``IsEmpty``, which skips
        the ``pods`` slot every pod request carries)."""
        return all(v <= 0 for k, v in self._data.items() if k != PODS)

    def dims(self, *, ignore_pods: bool = False) -> frozenset[str]:
        """Names of the positive dimensions."""
        return frozenset(
            k for k, v in self._data.items() if v > 0 and not (ignore_pods and k == PODS)
        )

    def less_equal(self, other: Mapping[str, int], *, missing_is_infinite: bool = False) -> bool:
        """Volcano ``LessEqual``: every dimension of ``self`` ≤ ``other``.

        A scalar absent from ``other`` counts as 0 (``Zero`` mode) or is skipped
        (``Infinity`` mode, ``missing_is_infinite=True``). CPU and memory are always compared.
        """
        for name, amount in self._data.items():
            if name not in other and missing_is_infinite and name not in (CPU, MEMORY):
                continue
            if amount > other.get(name, 0):
                return False
        return True

    def fits_quota(self, limit: Mapping[str, int], request: Mapping[str, int]) -> bool:
        """Volcano ``LessEqualWithDimensionAndResourcesName(self, limit, request)``.

        Only the dimensions where ``request`` is positive are compared, strictly (``self >
        limit`` fails), a dimension absent from ``limit`` counts as 0 and ``pods`` is ignored.
        """
        for name, req in request.items():
            if req <= 0 or name == PODS:
                continue
            if self.get(name) > limit.get(name, 0):
                return False
        return True

    def exceeding(self, limit: Mapping[str, int], request: Mapping[str, int]) -> list[str]:
        """The dimensions that make :meth:`fits_quota` fail, for messages."""
        return [
            name
            for name, req in request.items()
            if req > 0 and name != PODS and self.get(name) > limit.get(name, 0)
        ]

    def min_dim(self, other: Mapping[str, int]) -> Resources:
        """Volcano ``MinDimensionResource(other, Infinity)``.

        CPU and memory take the minimum (absent = 0, so callers spell "unlimited" as
        :data:`INFINITE`); a scalar of ``self`` that ``other`` lacks is kept (unlimited on the
        other side); a scalar only ``other`` has is not added.
        """
        out = dict(self._data)
        for name in (CPU, MEMORY):
            out[name] = min(self.get(name), other.get(name, 0))
        for name, amount in self._data.items():
            if name not in (CPU, MEMORY) and name in other:
                out[name] = min(amount, other[name])
        return Resources(out)

    def max_dim(self, other: Mapping[str, int]) -> Resources:
        out = dict(self._data)
        for k, v in other.items():
            out[k] = max(out.get(k, 0), v)
        return Resources(out)


EMPTY = Resources()
