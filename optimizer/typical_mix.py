"""A typical-task mix from a file, for the fragmentation stage (``--typical-mix FILE``).

The file is a YAML list, one shape per item: ``cpu`` (milli-CPU), ``gpuMilli`` (the share of
each GPU, 1000 = whole), ``gpus`` (0 = CPU-only), ``types`` (device types it may use, matched
as ``nvidia.com/use-gputype`` matches them; empty: any) and ``weight`` (how common it is, any
positive number: the weights are scaled to sum to 1). Without a file the mix is the instance's
own pods.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from models.errors import InputError, Problem

from .cpsat.fragmentation import MILLI, TypicalTask

FIELDS = ("cpu", "gpuMilli", "gpus", "types", "weight")


def load_mix(path: str | Path) -> tuple[TypicalTask, ...]:
    """The mix of ``path``; every problem found names the item and field."""
    file = str(path)
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as err:
        raise InputError([Problem(f"cannot read the typical mix: {err}", file=file)]) from None
    if not isinstance(doc, list) or not doc:
        raise InputError([Problem("expected a non-empty list of task shapes", file=file)])
    problems: list[Problem] = []
    shapes = [_shape(item, f"typical[{i}]", file, problems) for i, item in enumerate(doc)]
    if problems:
        raise InputError(problems)
    total = sum(s.weight for s in shapes)
    return tuple(TypicalTask(s.cpu, s.milli, s.gpus, s.types, s.weight / total) for s in shapes)


def _count(item: dict[str, Any], key: str, obj: str, file: str, problems: list[Problem]) -> int:
    value = item.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        problems.append(Problem(f"expected an integer ≥ 0, got {value!r}", obj, key, file))
        return 0
    return value


def _shape(item: object, obj: str, file: str, problems: list[Problem]) -> TypicalTask:
    if not isinstance(item, dict):
        problems.append(Problem(f"expected a mapping, got {item!r}", obj, file=file))
        return TypicalTask(0, 0, 0)
    unknown = sorted(set(item) - set(FIELDS))
    if unknown:
        problems.append(Problem(f"unknown field(s) {', '.join(map(str, unknown))}", obj, file=file))
    cpu = _count(item, "cpu", obj, file, problems)
    gpus = _count(item, "gpus", obj, file, problems)
    milli = _count(item, "gpuMilli", obj, file, problems) if gpus else 0
    if gpus and not 0 < milli <= MILLI:
        problems.append(
            Problem(f"expected 1 to {MILLI} for a GPU task, got {milli}", obj, "gpuMilli", file)
        )
    types = item.get("types", [])
    if not isinstance(types, list) or not all(isinstance(t, str) and t for t in types):
        problems.append(
            Problem(f"expected a list of device types, got {types!r}", obj, "types", file)
        )
        types = []
    weight = item.get("weight", 1)
    if (
        isinstance(weight, bool)
        or not isinstance(weight, int | float)
        or not (math.isfinite(weight) and weight > 0)
    ):
        problems.append(Problem(f"expected a positive number, got {weight!r}", obj, "weight", file))
        weight = 1
    return TypicalTask(cpu, milli, gpus, tuple(types), float(weight))
