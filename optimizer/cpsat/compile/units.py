"""Model units: the integer amounts every constraint of the model is written in.

Volcano units, except memory-like resources in MiB so that coefficients stay small. MiB
rounding always errs on the safe side: a pod's request is rounded up where it counts against a
limit and down where it counts towards a floor; limits are rounded down and floors up. The
verifier judges bytes, so a model-feasible plan passes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from math import ceil

from models.resources import INFINITE, MEMORY, PODS

MIB = 2**20
MIB_RESOURCES = frozenset({MEMORY, "ephemeral-storage"})
UNLIMITED = 2**62
"""Model stand-in for an unlimited quota (Volcano's infinity does not fit in int64)."""


def model_units(resources: Mapping[str, int], *, round_up: bool) -> dict[str, int]:
    """``resources`` in model units (``pods`` dropped); ``round_up`` says which way MiB round."""
    out = {}
    for name, amount in resources.items():
        if name == PODS:
            continue
        if amount >= INFINITE // 2:
            out[name] = UNLIMITED
        elif name in MIB_RESOURCES:
            out[name] = ceil(amount / MIB) if round_up else amount // MIB
        else:
            out[name] = amount
    return out
