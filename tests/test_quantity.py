"""Kubernetes quantities: every suffix, exponents, exactness and rounding.

Expected values are the definitions of apimachinery's ``resource.Quantity``: decimal SI
suffixes n u m k M G T P E are powers of 1000, binary suffixes Ki … Ei powers of 1024, and an
exponent ``eN`` multiplies by 10^N. ``MilliValue()`` and ``Value()`` round up.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from models.quantity import (
    QuantityError,
    format_bytes,
    format_milli,
    parse_quantity,
    to_milli,
    to_units,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1n", Fraction(1, 10**9)),
        ("1u", Fraction(1, 10**6)),
        ("1m", Fraction(1, 1000)),
        ("1", Fraction(1)),
        ("1k", Fraction(10**3)),
        ("1M", Fraction(10**6)),
        ("1G", Fraction(10**9)),
        ("1T", Fraction(10**12)),
        ("1P", Fraction(10**15)),
        ("1E", Fraction(10**18)),
        ("1Ki", Fraction(2**10)),
        ("1Mi", Fraction(2**20)),
        ("1Gi", Fraction(2**30)),
        ("1Ti", Fraction(2**40)),
        ("1Pi", Fraction(2**50)),
        ("1Ei", Fraction(2**60)),
    ],
)
def test_every_suffix(text: str, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("1e+3", Fraction(1000)),
        ("1e-3", Fraction(1, 1000)),
        ("1.5e2", Fraction(150)),
        ("5e0", Fraction(5)),
    ],
)
def test_exponent_forms(text: str, value: Fraction) -> None:
    """``1E3`` is an exponent, not the exa suffix followed by 3: the exa suffix ends the text."""
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1.5", Fraction(3, 2)),
        ("500m", Fraction(1, 2)),
        ("64Gi", Fraction(64 * 2**30)),
        ("2k", Fraction(2000)),
        (".5", Fraction(1, 2)),
        ("+1", Fraction(1)),
        ("0.25Gi", Fraction(2**28)),
        ("1.5Ki", Fraction(1536)),
    ],
)
def test_common_forms(text: str, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text",
    ["1.5.5", "Gi", "1 Gi", "--1", "1e999", "", "1gi", "1K", "1KiB", "e3", "1e", "1.2.3Gi", "0x10"],
)
def test_rejects(text: str) -> None:
    """Two dots, a suffix without a number, an inner space, a double sign, an exponent far
    beyond any resource, nothing, a lowercase binary suffix, an uppercase kilo, a unit with B,
    an exponent without digits on either side, and hex are all not quantities."""
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize("value", [None, True, False, [], {}, float("inf"), float("nan")])
def test_rejects_values_that_are_not_numbers_or_text(value: object) -> None:
    """A YAML ``true`` is a bool, not the integer 1."""
    with pytest.raises(QuantityError):
        parse_quantity(value)


def test_rejects_absurdly_long_text() -> None:
    with pytest.raises(QuantityError, match="too long"):
        parse_quantity("1" * 65)


def test_integers_and_floats_from_yaml() -> None:
    """YAML gives ``8`` as int and ``1.5`` / ``0.1`` as float; a float is read through its
    shortest repr, so 0.1 is exactly 1/10, not the binary double nearest to it."""
    assert parse_quantity(8) == 8
    assert parse_quantity(1.5) == Fraction(3, 2)
    assert parse_quantity(0.1) == Fraction(1, 10)


def test_exact_arithmetic() -> None:
    """0.1 + 0.2 CPU is 300m exactly, where floats give 0.30000000000000004."""
    assert parse_quantity("0.1") + parse_quantity("0.2") == parse_quantity("300m")
    assert to_milli("0.1") + to_milli("0.2") == 300
    assert to_milli(0.1) + to_milli(0.2) == to_milli(0.3) == 300


@pytest.mark.parametrize(
    ("value", "milli", "units"),
    [
        ("1.5", 1500, 2),
        ("500m", 500, 1),
        ("1n", 1, 1),
        ("2", 2000, 2),
        ("64Gi", 64 * 2**30 * 1000, 64 * 2**30),
        ("0", 0, 0),
    ],
)
def test_rounding_up_to_the_unit(value: str, milli: int, units: int) -> None:
    """MilliValue/Value round up: 1n is 1 milli-unit and 1 unit, 500m is 1 unit."""
    assert to_milli(value) == milli
    assert to_units(value) == units


@pytest.mark.parametrize(
    ("milli", "text"), [(1500, "1500m"), (2000, "2"), (0, "0"), (1, "1m"), (8000, "8")]
)
def test_format_milli(milli: int, text: str) -> None:
    assert format_milli(milli) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (64 * 2**30, "64Gi"),
        (2048, "2Ki"),
        (1536, "1536"),
        (1000, "1000"),
        (0, "0"),
        (3 * 2**40, "3Ti"),
    ],
)
def test_format_bytes_uses_the_largest_exact_binary_suffix(value: int, text: str) -> None:
    assert format_bytes(value) == text
