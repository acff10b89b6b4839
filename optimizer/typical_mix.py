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

from models.errors import InputError, Problem, shown_value
from models.fragmentation import MILLI, TypicalTask
from models.yamlio import STDIN, STDIN_NAME, load_documents, read_text

FIELDS = ("cpu", "gpuMilli", "gpus", "types", "weight")
MAX_CPU = 10**9
"""Milli-CPU of one task: a million cores, far beyond any node."""
MAX_GPUS = 1024
"""GPUs of one task: far beyond any node (HAMi's device count per node is a few dozen)."""
MAX_WEIGHT = 1e12
"""Weights are relative: the largest may be a trillion times the smallest, and their sum
stays a finite float."""
MAX_SHAPES = 10_000


def load_mix(path: str | Path) -> tuple[TypicalTask, ...]:
    """The mix of ``path`` (``-``: standard input), read as every input is (bounded size,
    depth and aliases, UTF-8, no duplicate keys); every problem found names the item and
    field."""
    file = STDIN_NAME if str(path) == STDIN else str(path)
    docs = load_documents(read_text(path), file)
    if len(docs) > 1:
        raise InputError([Problem("expected one YAML document, a list of task shapes", file=file)])
    doc = docs[0] if docs else None
    if not isinstance(doc, list) or not doc:
        raise InputError([Problem("expected a non-empty list of task shapes", file=file)])
    if len(doc) > MAX_SHAPES:
        raise InputError(
            [Problem(f"{len(doc):,} task shapes, more than {MAX_SHAPES:,}", file=file)]
        )
    problems: list[Problem] = []
    shapes = [_shape(item, f"typical[{i}]", file, problems) for i, item in enumerate(doc)]
    if problems:
        raise InputError(problems)
    total = sum(s.weight for s in shapes)
    return tuple(TypicalTask(s.cpu, s.milli, s.gpus, s.types, s.weight / total) for s in shapes)


def _count(
    item: dict[str, Any], key: str, limit: int, obj: str, file: str, problems: list[Problem]
) -> int:
    value = item.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        problems.append(
            Problem(
                f"expected an integer from 0 to {limit:,}, got {shown_value(value)}", obj, key, file
            )
        )
        return 0
    return value


def _shape(item: object, obj: str, file: str, problems: list[Problem]) -> TypicalTask:
    if not isinstance(item, dict):
        problems.append(Problem(f"expected a mapping, got {shown_value(item)}", obj, file=file))
        return TypicalTask(0, 0, 0)
    unknown = [str(k) for k in item if k not in FIELDS]
    if unknown:
        names = ", ".join(shown_value(k) for k in unknown[:5])
        problems.append(Problem(f"unknown field(s) {names}", obj, file=file))
    cpu = _count(item, "cpu", MAX_CPU, obj, file, problems)
    gpus = _count(item, "gpus", MAX_GPUS, obj, file, problems)
    milli = _count(item, "gpuMilli", MILLI, obj, file, problems) if gpus else 0
    if gpus and not 0 < milli <= MILLI:
        problems.append(
            Problem(f"expected 1 to {MILLI} for a GPU task, got {milli}", obj, "gpuMilli", file)
        )
    types = item.get("types", [])
    if not isinstance(types, list) or not all(isinstance(t, str) and t for t in types):
        problems.append(
            Problem(
                f"expected a list of device types, got {shown_value(types)}", obj, "types", file
            )
        )
        types = []
    weight = item.get("weight", 1)
    if (
        isinstance(weight, bool)
        or not isinstance(weight, int | float)
        or (isinstance(weight, int) and weight.bit_length() > 64)
        or not (math.isfinite(weight) and 0 < weight <= MAX_WEIGHT)
    ):
        problems.append(
            Problem(
                f"expected a number above 0, at most {MAX_WEIGHT:g}, got {shown_value(weight)}",
                obj,
                "weight",
                file,
            )
        )
        weight = 1
    return TypicalTask(cpu, milli, gpus, tuple(types), float(weight))
