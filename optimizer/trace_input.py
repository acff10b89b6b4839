"""Checking the Alibaba trace files and options before ``vcopt import alibaba`` draws from them.

The import tunes the arrivals to ``--arrival × GPU capacity`` by drawing tasks until the GPU
demand is reached, so a file it cannot draw from (no task asking for a GPU, a negative
``num_gpu``, no node, no GPU) would make it loop without end or write an instance with no
work. Every row is checked here first, with the same standard as an instance file: one
problem per bad value, naming the CSV file, the row (its line) and the column; faults of the
node list name the node list, faults of an option name the option. The reading itself stays
in ``alibaba`` and runs only on files that passed.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from models.errors import InputError, Problem
from models.golang import parse_int64
from models.yamlio import read_text

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
MAX_ARRIVAL = 10.0
"""Arrived GPU demand at most ten times the capacity: beyond it the draw appends hundreds of
thousands of copies, more jobs than the engines handle (and no benchmark asks for it)."""
MAX_PROBLEMS = 20
"""A wrong file (another CSV, a text file) is bad on every row; a few lines say so."""
MILLI = 1000
MAX_NODE_GPUS = 8
BOM = "\ufeff"


def check_options(arrival: float, nodes_per_shape: int | None) -> None:
    problems = []
    if not (math.isfinite(arrival) and 0 < arrival <= MAX_ARRIVAL):
        problems.append(
            Problem(
                f"must be a number above 0 and at most {MAX_ARRIVAL:g}, got {arrival}",
                field="--arrival",
            )
        )
    if nodes_per_shape is not None and nodes_per_shape < 1:
        problems.append(
            Problem(f"must be at least 1, got {nodes_per_shape}", field="--nodes-per-shape")
        )
    if problems:
        raise InputError(problems)


def check_trace(pods_csv: str | Path, nodes_csv: str | Path, models: Mapping[str, int]) -> None:
    """Refuse trace files the import cannot draw from; ``models`` are the GPU models known."""
    nodes_file, pods_file = str(nodes_csv), str(pods_csv)
    problems: list[Problem] = []
    nodes = _rows(nodes_file, NODE_COLUMNS, problems)
    gpus = 0
    for line, row in nodes:
        gpus += _node_gpus(row, line, nodes_file, models, problems)
    pods = _rows(pods_file, POD_COLUMNS, problems)
    demand = 0
    for line, row in pods:
        demand += _pod_demand(row, line, pods_file, problems)
    if problems:
        raise InputError(problems[:MAX_PROBLEMS])
    if not nodes:
        problems.append(Problem("no node rows: nothing to place tasks on", file=nodes_file))
    elif gpus == 0:
        problems.append(Problem("no node has a GPU: the GPU capacity is 0", file=nodes_file))
    if not pods:
        problems.append(Problem("no task rows: nothing to draw arrivals from", file=pods_file))
    elif demand == 0:
        problems.append(
            Problem("no task asks for a GPU: arrivals are tuned to GPU demand", file=pods_file)
        )
    if problems:
        raise InputError(problems)


def _rows(
    file: str, columns: Sequence[str], problems: list[Problem]
) -> list[tuple[int, dict[str, str]]]:
    """The data rows with their line numbers; a missing column or a short row is reported."""
    # A spreadsheet's UTF-8 export begins with a byte-order mark: not part of the header.
    text = read_text(file).removeprefix(BOM)
    reader = csv.reader(text.splitlines())
    try:
        header = next(reader, None)
    except csv.Error as err:
        problems.append(Problem(f"not a CSV file: {err}", file=file))
        return []
    if header is None:
        problems.append(Problem("empty file: expected a CSV header", file=file))
        return []
    header = [h.strip() for h in header]
    missing = [c for c in columns if c not in header]
    if missing:
        problems.append(
            Problem(f"missing column(s) {', '.join(missing)} in the header", "", "line 1", file)
        )
        return []
    rows = []
    try:
        for values in reader:
            line = reader.line_num
            if not values:
                continue
            if len(values) < len(header):
                problems.append(
                    Problem(
                        f"has {len(values)} fields, the header {len(header)}",
                        "",
                        f"line {line}",
                        file,
                    )
                )
                continue
            rows.append((line, dict(zip(header, values, strict=False))))
    except csv.Error as err:
        problems.append(Problem(f"not a CSV row: {err}", "", f"line {reader.line_num}", file))
    return rows


def _integer(
    row: Mapping[str, str], column: str, where: Callable[[str, str], None], low: int, high: int
) -> int:
    text = row[column].strip()
    value = parse_int64(text)
    if value is None:
        where(column, "expected an integer")
        return 0
    if not low <= value <= high:
        where(column, f"must be between {low:,} and {high:,}, got {value:,}")
        return 0
    return value


def _reporter(
    file: str, line: int, name: str, problems: list[Problem]
) -> Callable[[str, str], None]:
    obj = f"line {line}" + (f' ("{name[:40]}")' if name.isprintable() and name else "")

    def where(column: str, message: str) -> None:
        problems.append(Problem(message, obj, column, file))

    return where


def _node_gpus(
    row: Mapping[str, str], line: int, file: str, models: Mapping[str, int], problems: list[Problem]
) -> int:
    where = _reporter(file, line, row["sn"].strip(), problems)
    if not row["sn"].strip():
        where("sn", "required: the node name")
    _integer(row, "cpu_milli", where, 1, 10**9)
    _integer(row, "memory_mib", where, 1, 10**12)
    gpus = _integer(row, "gpu", where, 0, MAX_NODE_GPUS)
    if row["model"].strip() not in models:
        where("model", f"unknown GPU model (known: {', '.join(sorted(models))})")
        return 0
    return gpus


def _pod_demand(row: Mapping[str, str], line: int, file: str, problems: list[Problem]) -> int:
    where = _reporter(file, line, row["name"].strip(), problems)
    if not row["name"].strip():
        where("name", "required: the task name")
    _integer(row, "cpu_milli", where, 0, 10**9)
    _integer(row, "memory_mib", where, 0, 10**12)
    num_gpu = _integer(row, "num_gpu", where, 0, MAX_NODE_GPUS)
    gpu_milli = _integer(row, "gpu_milli", where, 0, MILLI)
    if num_gpu > 0 and gpu_milli == 0:
        where("gpu_milli", f"is 0 for a task that asks for {num_gpu} GPU(s)")
    if num_gpu > 1 and gpu_milli != MILLI:
        where("gpu_milli", f"must be {MILLI} (whole GPUs) for a task of {num_gpu} GPUs")
    return num_gpu * gpu_milli
