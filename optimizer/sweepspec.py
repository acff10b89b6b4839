"""Sweep files (``vcopt sweep``, ``vcopt simulate --what-if``): a base instance, solve settings
and named variants.

A sweep file is checked as strictly as an instance, and completely before Dask starts: its
shape by a pydantic schema (unknown fields, wrong types, out-of-range settings), then every
variant is built with :mod:`optimizer.whatif`'s modifiers, which apply the loader's rules. Each
problem names the sweep file, the variant and the field as written, e.g.
``sweep.yaml: variant "evening": at: expected an RFC 3339 time``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

from models.errors import InputError, Problem
from models.instance import Instance
from models.io.errors import message, path
from models.io.values import read_datetime
from models.limits import MAX_NODES
from models.load import load
from models.resources import Resources
from models.yamlio import load_documents, read_text

from . import whatif
from .options import MAX_SEED, MAX_WORKERS

Engine = Literal["greedy", "cpsat"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TdmWindowIn(_Strict):
    zone: StrictStr = Field(min_length=1)
    window: StrictStr = Field(min_length=1)


class QueueIn(_Strict):
    name: StrictStr = Field(min_length=1)
    deserved: dict[StrictStr, Any] | None = None
    capability: dict[StrictStr, Any] | None = None
    guarantee: dict[StrictStr, Any] | None = None
    weight: StrictInt | None = None


class TopologyLimitIn(_Strict):
    job: StrictStr = Field(default="all", min_length=1)
    tier: StrictInt | None = None
    mode: Literal["hard", "soft"] | None = None


class RemovedIn(_Strict):
    removed: list[StrictStr] = Field(default_factory=list)


class AddedNodesIn(_Strict):
    """``count`` copies of node ``like``, in HyperNode ``hypernode`` (default: ``like``'s
    rack), as :func:`optimizer.whatif.with_nodes_like` adds them."""

    like: StrictStr = Field(min_length=1)
    count: StrictInt = Field(ge=1, le=MAX_NODES)
    hypernode: StrictStr | None = Field(default=None, min_length=1)


class NodesIn(RemovedIn):
    added: list[AddedNodesIn] = Field(default_factory=list)


class VariantIn(_Strict):
    name: StrictStr = Field(min_length=1)
    at: Any = None
    tdmWindow: TdmWindowIn | None = None
    queue: QueueIn | None = None
    topologyLimit: TopologyLimitIn | None = None
    nodes: NodesIn | None = None
    jobs: RemovedIn | None = None
    arguments: dict[StrictStr, dict[StrictStr, Any]] = Field(default_factory=dict)

    @field_validator("at")
    @classmethod
    def _time(cls, value: object) -> datetime | None:
        when = value if value is None else read_datetime(value)
        if value is not None and when is None:
            raise ValueError("expected an RFC 3339 time, e.g. 2026-11-30T20:30:00Z")
        return when


class SweepIn(_Strict):
    instance: StrictStr | None = Field(default=None, min_length=1)
    """The base instance's file, beside the sweep file; omitted when the command line gives
    the base (``vcopt sweep SPEC FILE...``)."""
    engines: list[Engine] = Field(default_factory=lambda: ["greedy", "cpsat"], min_length=1)
    timeLimit: Any = 10.0
    workers: StrictInt = Field(default=1, ge=1, le=MAX_WORKERS)
    seed: StrictInt = Field(default=0, ge=0, le=MAX_SEED)
    variants: list[VariantIn] = Field(
        default_factory=lambda: [VariantIn(name="baseline")], min_length=1
    )

    @field_validator("timeLimit")
    @classmethod
    def _positive(cls, value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"expected a number, got {value!r}")
        if not math.isfinite(value) or value <= 0:
            raise ValueError("must be a positive number of seconds")
        return float(value)

    @field_validator("engines")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("an engine is listed twice")
        return value


@dataclass(frozen=True)
class Sweep:
    """A checked sweep file: the base instance, its built variants and the solve settings."""

    instance: Instance
    variants: list[tuple[str, Instance]]
    engines: tuple[str, ...]
    time_limit: float
    workers: int
    seed: int
    settings: frozenset[str] = frozenset()
    """The solve settings the file writes (``engines``, ``timeLimit``, ``workers``,
    ``seed``), beside the defaults it leaves: a command that takes them elsewhere can say
    which of the file's it does not use."""


def _shape(doc: object, file: str) -> SweepIn:
    if not isinstance(doc, Mapping):
        raise InputError([Problem("expected a mapping with instance and variants", file=file)])
    if isinstance(doc.get("engines"), str):
        raise InputError(
            [Problem("expected a list of engines, e.g. [greedy, cpsat]", "", "engines", file)]
        )
    try:
        return SweepIn.model_validate(doc)
    except ValidationError as err:
        raise InputError([_located(e, doc, file) for e in err.errors()]) from None


def _located(error: Mapping[str, Any], doc: Mapping[str, Any], file: str) -> Problem:
    """A schema error named by variant (``variant "x"``) when it lies inside one."""
    loc = list(error["loc"])
    said = str(error["ctx"]["error"]) if error["type"] == "value_error" else message(error)
    if len(loc) >= 2 and loc[0] == "variants" and isinstance(loc[1], int):
        entries = doc.get("variants")
        entry = entries[loc[1]] if isinstance(entries, list) else None
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if isinstance(name, str) and name and loc[2:] != ["name"]:
            return Problem(said, f'variant "{name}"', path(loc[2:]), file)
    return Problem(said, "", path(loc), file)


def _duplicates(variants: Sequence[VariantIn], file: str) -> list[Problem]:
    seen: set[str] = set()
    problems = []
    for i, variant in enumerate(variants):
        if variant.name in seen:
            problems.append(
                Problem(f'duplicate variant name "{variant.name}"', "", f"variants[{i}].name", file)
            )
        seen.add(variant.name)
    return problems


def _steps(v: VariantIn) -> list[tuple[str, Callable[[Instance], Instance]]]:
    """The modifiers a variant applies, each with the field it comes from."""
    steps: list[tuple[str, Callable[[Instance], Instance]]] = []
    if v.at is not None:
        when = v.at
        steps.append(("at", lambda i: whatif.at(i, when)))
    if (tdm := v.tdmWindow) is not None:
        steps.append(("tdmWindow", lambda i: whatif.with_tdm_window(i, tdm.zone, tdm.window)))
    if (q := v.queue) is not None:
        for name in ("deserved", "capability", "guarantee"):
            if (raw := getattr(q, name)) is not None:
                steps.append((f"queue.{name}", _resources_checked(raw)))
        steps.append(
            (
                "queue",
                lambda i: whatif.with_queue(
                    i,
                    q.name,
                    deserved=q.deserved,
                    capability=q.capability,
                    guarantee=q.guarantee,
                    weight=q.weight,
                ),
            )
        )
    if (t := v.topologyLimit) is not None:
        steps.append(
            ("topologyLimit", lambda i: whatif.with_topology_limit(i, t.job, t.tier, t.mode))
        )
    if (n := v.nodes) is not None:
        steps.append(("nodes.removed", lambda i: whatif.with_nodes(i, removed=n.removed)))
        for k, add in enumerate(n.added):
            where = f"nodes.added[{k}]"
            steps.append((f"{where}.like", _named(add.like, "node", lambda i: i.node_by_name)))
            if add.hypernode is not None:
                steps.append(
                    (
                        f"{where}.hypernode",
                        _named(add.hypernode, "HyperNode", lambda i: i.topology.names),
                    )
                )
            steps.append(
                (where, lambda i, a=add: whatif.with_nodes_like(i, a.like, a.count, a.hypernode))
            )
    if (j := v.jobs) is not None:
        steps.append(("jobs.removed", lambda i: whatif.with_jobs(i, removed=j.removed)))
    for plugin, args in v.arguments.items():
        steps.append(
            (
                f"arguments.{plugin}",
                lambda i, p=plugin, a=args: whatif.with_scheduler_arguments(i, p, **a),
            )
        )
    return steps


def _resources_checked(raw: Mapping[str, Any]) -> Callable[[Instance], Instance]:
    """A step that changes nothing and fails on a bad quantity, so that the problem names the
    resource list it is in rather than the whole ``queue``."""

    def check(instance: Instance) -> Instance:
        Resources.parse(raw)
        return instance

    return check


def _named(
    name: str, kind: str, names: Callable[[Instance], Collection[str]]
) -> Callable[[Instance], Instance]:
    """A step that changes nothing and fails when ``name`` is not among the instance's
    ``names``, so that the problem names the field that says it."""

    def check(instance: Instance) -> Instance:
        if name not in names(instance):
            raise ValueError(f"no such {kind}: {name}")
        return instance

    return check


def _build(base: Instance, v: VariantIn, file: str) -> Instance:
    """The variant's instance; a refused change names the variant and the field it is in."""
    instance = base
    where = f'variant "{v.name}"'
    for field, step in _steps(v):
        try:
            instance = step(instance)
        except InputError as err:
            raise InputError(
                [Problem(_inner(p), where, field, file) for p in err.problems]
            ) from None
        except (ValueError, TypeError) as err:
            raise InputError(
                [Problem(str(err) or type(err).__name__, where, field, file)]
            ) from None
    return instance


def _inner(problem: Problem) -> str:
    """What a modifier said, without the ``what-if`` file it names for API callers."""
    parts = [p for p in (problem.obj, problem.field) if p]
    return ": ".join([*parts, problem.message])


def _refused(variants: Sequence[VariantIn], refused: Mapping[str, str], file: str) -> list[Problem]:
    """A problem for each field a variant writes that the caller does not take."""
    return [
        Problem(refused[name], f'variant "{v.name}"', name, file)
        for v in variants
        for name in VariantIn.model_fields
        if name in refused and name in v.model_fields_set
    ]


SETTINGS = ("engines", "timeLimit", "workers", "seed")
"""The solve settings of a sweep file, in the order a message lists them."""


def load_sweep(
    file: str, base: Instance | None = None, *, refused: Mapping[str, str] | None = None
) -> Sweep:
    """Read and check a sweep file, building every variant (nothing is solved yet). ``base``
    is the base instance when the command line gives it (several files, a dump, ``-``); the
    file must then name none. ``refused`` maps the variant fields a caller does not take to
    why (a simulation's variants may not move its timeline): a variant writing one is a
    problem, found before any variant is built."""
    docs = load_documents(read_text(file), file)
    if len(docs) != 1:
        raise InputError(
            [Problem("expected one YAML document with instance and variants", file=file)]
        )
    spec = _shape(docs[0], file)
    problems = _duplicates(spec.variants, file) + _refused(spec.variants, refused or {}, file)
    if problems:
        raise InputError(problems)
    if base is not None and spec.instance is not None:
        raise InputError(
            [
                Problem(
                    "the base instance is given on the command line too; name it in one place",
                    field="instance",
                    file=file,
                )
            ]
        )
    if base is None:
        if spec.instance is None:
            raise InputError(
                [
                    Problem(
                        "required: the base instance's file (or give it on the command line: "
                        "vcopt sweep SPEC FILE...)",
                        field="instance",
                        file=file,
                    )
                ]
            )
        base = load(Path(file).parent / spec.instance)
    variants = [(v.name, _build(base, v, file)) for v in spec.variants]
    return Sweep(
        base,
        variants,
        tuple(spec.engines),
        float(spec.timeLimit),
        spec.workers,
        spec.seed,
        frozenset(SETTINGS) & spec.model_fields_set,
    )
