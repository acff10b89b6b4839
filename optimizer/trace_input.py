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

import math
from collections.abc import Mapping
from pathlib import Path

from models.errors import InputError, Problem

from .csv_rows import MAX_PROBLEMS, integer, reporter, rows

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
MAX_ARRIVAL = 10.0
"""Arrived GPU demand at most ten times the capacity: beyond it the draw appends hundreds of
thousands of copies, more jobs than the engines handle (and no benchmark asks for it)."""
MILLI = 1000
MAX_NODE_GPUS = 8


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
    nodes = rows(nodes_file, NODE_COLUMNS, problems)
    gpus = 0
    for line, row in nodes:
        gpus += _node_gpus(row, line, nodes_file, models, problems)
    pods = rows(pods_file, POD_COLUMNS, problems)
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


def _node_gpus(
    row: Mapping[str, str], line: int, file: str, models: Mapping[str, int], problems: list[Problem]
) -> int:
    where = reporter(file, line, row["sn"].strip(), problems)
    if not row["sn"].strip():
        where("sn", "required: the node name")
    integer(row, "cpu_milli", where, 1, 10**9)
    integer(row, "memory_mib", where, 1, 10**12)
    gpus = integer(row, "gpu", where, 0, MAX_NODE_GPUS)
    if row["model"].strip() not in models:
        where("model", f"unknown GPU model (known: {', '.join(sorted(models))})")
        return 0
    return gpus


def _pod_demand(row: Mapping[str, str], line: int, file: str, problems: list[Problem]) -> int:
    where = reporter(file, line, row["name"].strip(), problems)
    if not row["name"].strip():
        where("name", "required: the task name")
    integer(row, "cpu_milli", where, 0, 10**9)
    integer(row, "memory_mib", where, 0, 10**12)
    num_gpu = integer(row, "num_gpu", where, 0, MAX_NODE_GPUS)
    gpu_milli = integer(row, "gpu_milli", where, 0, MILLI)
    if num_gpu > 0 and gpu_milli == 0:
        where("gpu_milli", f"is 0 for a task that asks for {num_gpu} GPU(s)")
    if num_gpu > 1 and gpu_milli != MILLI:
        where("gpu_milli", f"must be {MILLI} (whole GPUs) for a task of {num_gpu} GPUs")
    return num_gpu * gpu_milli
