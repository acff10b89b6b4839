"""Resource vectors in Volcano's units and Volcano's comparison rules.

Units and rules come from spec/volcano-scheduler.md "Conventions": cpu in milli-cores, memory
in bytes, ``pods`` in whole units, every other scalar ×1000; ``LessEqual`` in Zero and Infinity
mode; ``LessEqualWithDimensionAndResourcesName`` (strict, only requested dimensions, missing
limit = 0, pods ignored); ``MinDimensionResource`` in Infinity mode.
"""

from __future__ import annotations

import pytest

from models.quantity import QuantityError
from models.resources import INFINITE, Resources, format_amount, parse_amount

GPU = "nvidia.com/gpu"


def test_units() -> None:
    assert Resources.parse(
        {"cpu": "500m", "memory": "1Gi", "pods": 110, GPU: 2, "ephemeral-storage": "1Ki"}
    ) == {"cpu": 500, "memory": 2**30, "pods": 110, GPU: 2000, "ephemeral-storage": 1024}


def test_parse_refuses_negative_and_bad_quantities_naming_the_resource() -> None:
    with pytest.raises(QuantityError, match="memory: must not be negative"):
        Resources.parse({"memory": "-1Gi"})
    with pytest.raises(QuantityError, match="cpu: 'lots' is not a quantity"):
        Resources.parse({"cpu": "lots"})


def test_parse_amount_keeps_text_ints_and_bools_apart() -> None:
    """Parsed values are remembered by (resource, value); ``True == 1`` must not make a YAML
    boolean pass as the number 1, and ``"1"`` and ``1`` mean the same amount."""
    assert parse_amount("cpu", 1) == 1000
    assert parse_amount("cpu", "1") == 1000
    assert parse_amount("memory", 1) == 1
    with pytest.raises(QuantityError):
        parse_amount("cpu", True)


def test_explicit_zeros_are_kept_but_do_not_change_equality() -> None:
    """An explicit 0 is a value (a limit of 0), so it stays in the mapping; as an amount it
    equals an absent dimension, so equality and hashing ignore it."""
    zero = Resources({"cpu": 0})
    assert "cpu" in zero
    assert len(zero) == 1
    assert zero == Resources()
    assert Resources({"cpu": 0, "memory": 5}) == {"memory": 5}


def test_an_explicit_zero_limit_is_not_an_absent_one_in_infinity_mode() -> None:
    """``capability: {nvidia.com/gpu: 0}`` forbids GPUs; no GPU entry leaves them unlimited."""
    request = Resources({GPU: 1000})
    assert not request.less_equal(Resources({GPU: 0}), missing_is_infinite=True)
    assert request.less_equal(Resources(), missing_is_infinite=True)


def test_arithmetic() -> None:
    a = Resources({"cpu": 3000, GPU: 1000})
    b = Resources({"cpu": 1000, "memory": 10})
    assert a + b == {"cpu": 4000, GPU: 1000, "memory": 10}
    assert a - b == {"cpu": 2000, GPU: 1000, "memory": -10}
    assert (a - b).clip_negative() == {"cpu": 2000, GPU: 1000}
    assert a.scaled(3) == {"cpu": 9000, GPU: 3000}


def test_is_empty_means_no_positive_dimension() -> None:
    assert Resources().is_empty()
    assert Resources({"cpu": -5}).is_empty()
    assert not Resources({"cpu": -5, GPU: 1}).is_empty()


def test_dims() -> None:
    r = Resources({"cpu": 1, "memory": -1, "pods": 3})
    assert r.dims() == {"cpu", "pods"}
    assert r.dims(ignore_pods=True) == {"cpu"}


def test_less_equal_zero_mode_counts_a_missing_scalar_as_zero() -> None:
    request = Resources({"cpu": 1000, GPU: 1000})
    assert not request.less_equal({"cpu": 2000})
    assert request.less_equal({"cpu": 1000, GPU: 1000})


def test_less_equal_infinity_mode_skips_a_missing_scalar_but_not_cpu_or_memory() -> None:
    """Infinity mode ignores a scalar the right side lacks; cpu and memory are always
    compared, a missing one counting as 0."""
    assert Resources({"cpu": 1000, GPU: 1000}).less_equal({"cpu": 2000}, missing_is_infinite=True)
    assert not Resources({"memory": 1}).less_equal({GPU: 5}, missing_is_infinite=True)
    assert not Resources({GPU: 3000}).less_equal({GPU: 2000}, missing_is_infinite=True)


def test_fits_quota_compares_only_requested_dimensions() -> None:
    """used cpu 2 = limit cpu 2 passes (strict: only > fails); the GPU dimension is over its
    missing (= 0) limit but does not matter while the request asks for no GPU."""
    used = Resources({"cpu": 2000, GPU: 3000})
    limit = Resources({"cpu": 2000})
    assert used.fits_quota(limit, {"cpu": 1})
    assert not used.fits_quota(limit, {GPU: 1})
    assert used.exceeding(limit, {GPU: 1, "cpu": 1}) == [GPU]


def test_fits_quota_is_strict() -> None:
    assert not Resources({"cpu": 2001}).fits_quota({"cpu": 2000}, {"cpu": 1})


def test_fits_quota_ignores_pods_and_non_positive_requests() -> None:
    used = Resources({"pods": 200, "cpu": 5000})
    limit = Resources({"pods": 100, "cpu": 1000})
    assert used.fits_quota(limit, {"pods": 1})
    assert used.fits_quota(limit, {"cpu": 0})
    assert not used.fits_quota(limit, {"pods": 1, "cpu": 1})


def test_min_dim_infinity_mode() -> None:
    """cpu/memory: minimum with absent = 0 (memory 10 vs absent → 0, dropped); a scalar of self
    that other lacks is kept (x); a scalar only other has is not added (y)."""
    a = Resources({"cpu": 4000, "memory": 10, GPU: 2000, "x": 5})
    b = Resources({"cpu": 2000, GPU: 1000, "y": 7})
    assert a.min_dim(b) == {"cpu": 2000, GPU: 1000, "x": 5}


def test_min_dim_with_infinite_cpu_and_memory_keeps_self() -> None:
    a = Resources({"cpu": 4000, "memory": 10})
    assert a.min_dim({"cpu": INFINITE, "memory": INFINITE}) == a


def test_max_dim_takes_every_dimension_of_both() -> None:
    a = Resources({"cpu": 4000, GPU: 1000})
    assert a.max_dim({"cpu": 1000, "memory": 7}) == {"cpu": 4000, GPU: 1000, "memory": 7}


def test_formatting() -> None:
    r = Resources({"cpu": 8000, "memory": 64 * 2**30, GPU: 2000})
    assert r.format() == "cpu=8, memory=64Gi, nvidia.com/gpu=2"
    assert r.to_k8s() == {"cpu": "8", "memory": "64Gi", GPU: "2"}
    assert Resources().format() == "none"
    assert format_amount("cpu", INFINITE) == "∞"
    assert format_amount("pods", 110) == "110"
    assert format_amount("cpu", 1500) == "1500m"


def test_hash_agrees_with_equality() -> None:
    assert hash(Resources({"cpu": 1, "memory": 0})) == hash(Resources({"cpu": 1}))
    assert len({Resources({"cpu": 1}), Resources({"cpu": 1, GPU: 0})}) == 1
