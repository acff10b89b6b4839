"""Preset files: solve options kept in a TOML file, for ``--preset`` and the API.

A preset has the shape of :class:`~optimizer.options.SolveOptions`: a table per part,
``[search]``, ``[objective]`` and ``[disruption]``, whose keys are the parts' field names
(``objective.weights`` and ``disruption.queue_eviction_budgets`` are tables of their own, and
``objective.typical_mix`` names a YAML mix file beside the preset). It is checked as strictly
as an instance: the shape by a pydantic schema (unknown tables and keys, wrong types), the
values by the options' own checks, and every problem names the file and the ``table.key`` as
written, e.g. ``fast.toml: search.time_limit: must be a positive number of seconds, got -1.0``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from models.errors import InputError, Problem, shown, shown_value
from models.fragmentation import TypicalTask
from models.io.errors import message, path
from models.yamlio import STDIN, read_text

from .typical_mix import load_mix

Int64 = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]
"""TOML's integers are 64-bit; a longer one would only reach a message as a wall of digits."""


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SearchIn(_Table):
    time_limit: StrictFloat | None = None
    workers: Int64 | None = None
    seed: Int64 | None = None
    deterministic: StrictBool | None = None
    gap: StrictFloat | None = None
    strategy: StrictStr | None = None
    bound: StrictBool | None = None
    aggregate: StrictBool | None = None
    parameters: dict[StrictStr, Any] | None = None
    dask: StrictStr | None = None


class ObjectiveIn(_Table):
    kind: StrictStr | None = None
    weights: dict[StrictStr, Int64] | None = None
    tdm_lookahead: StrictBool | None = None
    typical_mix: StrictStr | None = Field(default=None, min_length=1)


class DisruptionIn(_Table):
    max_evictions: Int64 | None = None
    queue_eviction_budgets: dict[StrictStr, Int64] | None = None


class PresetIn(_Table):
    search: SearchIn = Field(default_factory=SearchIn)
    objective: ObjectiveIn = Field(default_factory=ObjectiveIn)
    disruption: DisruptionIn = Field(default_factory=DisruptionIn)


TABLES: dict[str, type[_Table]] = {
    "search": SearchIn,
    "objective": ObjectiveIn,
    "disruption": DisruptionIn,
}


def read_preset(file: str | Path) -> dict[str, dict[str, Any]]:
    """The values a preset file sets, by table and key (``{"search": {"time_limit": 5.0}}``),
    their shape checked; :meth:`SolveOptions.from_toml` checks the values."""
    where = str(file)
    try:
        doc = tomllib.loads(read_text(file))
    except ValueError as err:  # TOMLDecodeError, or an integer too long for Python to read
        raise InputError([Problem(f"not a valid TOML file: {err}", file=where)]) from None
    try:
        preset = PresetIn.model_validate(doc)
    except ValidationError as err:
        raise InputError([_located(e, where) for e in err.errors()]) from None
    tables: dict[str, dict[str, Any]] = {}
    for table in TABLES:
        given = getattr(preset, table)
        tables[table] = {key: getattr(given, key) for key in sorted(given.model_fields_set)}
    search, objective = tables["search"], tables["objective"]
    if "parameters" in search:
        _check_parameters(search["parameters"], where)
    if "typical_mix" in objective:
        objective["typical_mix"] = _mix(objective["typical_mix"], where)
    return tables


def _located(error: Mapping[str, Any], file: str) -> Problem:
    """A schema error said for a preset: an unknown table or key lists the ones there are."""
    loc = list(error["loc"])
    said = message(error)
    if error["type"] == "extra_forbidden" and len(loc) == 1:
        said = f"not a table of a preset (tables: {', '.join(TABLES)})"
    elif error["type"] == "extra_forbidden" and len(loc) == 2:
        said = f"unknown key (keys: {', '.join(TABLES[str(loc[0])].model_fields)})"
    return Problem(said, field=path(loc), file=file)


def _check_parameters(parameters: Mapping[str, Any], file: str) -> None:
    """Each raw CP-SAT parameter set on a blank ``SatParameters``, as the engine will set it:
    a misspelt name or a value of the wrong kind is the preset's problem, not the search's."""
    from ortools.sat import sat_parameters_pb2

    known = sat_parameters_pb2.SatParameters.DESCRIPTOR.fields_by_name
    problems = []
    for name, value in parameters.items():
        said = "" if name in known else "not a CP-SAT parameter"
        if not said:
            try:
                setattr(sat_parameters_pb2.SatParameters(), name, value)
            except (AttributeError, TypeError, ValueError) as err:
                said = f"CP-SAT refuses {shown_value(value)}: {shown(str(err))}"
        if said:
            problems.append(Problem(said, field=f"search.parameters.{shown(name)}", file=file))
    if problems:
        raise InputError(problems)


def _mix(name: str, file: str) -> tuple[TypicalTask, ...]:
    """The typical mix the preset names; a problem in it names the preset's key, then the mix
    file's own place."""
    try:
        return load_mix(_beside(file, name))
    except InputError as err:
        raise InputError(
            [Problem(str(p), field="objective.typical_mix", file=file) for p in err.problems]
        ) from None


def _beside(preset: str, name: str) -> Path:
    """A file a preset names, read beside the preset (from the working directory when the
    preset is standard input)."""
    if preset == STDIN:
        return Path(name)
    return Path(preset).parent / name
