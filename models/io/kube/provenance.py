"""Where each part of the compact form was written: problems found after translation are
reported against the object and field the user wrote.

A dump is translated into the compact ``kind: Instance`` document before the loader checks
it, so the loader's problems name compact objects and paths (``Job "default/bare":
tasks[0].topologySpreadConstraints[0].maxSkew``). While it translates, the kube reader records
for each compact path it writes the object and field it came from (``Pod "default/bare":
spec.topologySpreadConstraints``); :meth:`Provenance.written` then turns a problem back,
through the longest recorded prefix of its path. The same map carries the fields a command
line option or a second file replaces (``--now``, a ``volcano-scheduler.conf`` given beside
the dump).

An origin says how the rest of the compact path continues in the written form:

- ``PATH``: the same way (``tasks[0].tolerations[1].effect`` → ``spec.tolerations[1].effect``);
- ``INSIDE``: inside the text of the written field, as the YAML in a ConfigMap's
  ``data.volcano-scheduler.conf`` (the rest goes in front of the message);
- ``DERIVED``: not at all, since vcopt computed the value (containers summed, a task index
  from a pod's name): the field is the written one, and the compact path is a hint at the
  end of the message.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from ...errors import Problem

INSTANCE = "<instance>"
"""How the recorder names the compact document itself: its name is known only once every
file is read (``Instance "<stem>"``), so :attr:`Provenance.instance` names it then."""


class Rest(Enum):
    """How the part of a compact path below a recorded prefix is written."""

    PATH = "path"
    INSIDE = "inside"
    DERIVED = "derived"


@dataclass(frozen=True)
class Origin:
    """The written place of a compact path: an object (as problems name it, ``''`` for an
    option or a whole file), a field in it, and the file when it is not the input's."""

    obj: str
    field: str = ""
    rest: Rest = Rest.PATH
    file: str | None = None
    """The file to name instead of the input's; '' for none (a command-line option)."""


class Provenance:
    """Compact object → compact path prefix → :class:`Origin`, filled as the compact form is
    written; the first record of a place wins (an object written twice is an error that
    names its first writing)."""

    def __init__(self) -> None:
        self._origins: dict[str, dict[str, Origin]] = {}
        self.instance = ""
        """How problems name the compact document (``Instance "snap"``), set by the loader."""

    def add(self, obj: str, field: str, origin: Origin) -> None:
        """Record that ``field`` (and what is below it) of compact object ``obj`` comes from
        ``origin``; ``field`` '' is the object as a whole."""
        self._origins.setdefault(obj, {}).setdefault(field, origin)

    def override(self, obj: str, field: str, origin: Origin) -> None:
        """Record ``origin`` for ``field`` of ``obj`` over what the dump wrote there: a
        command-line option or another file replaces the dump's value."""
        self._origins.setdefault(obj, {})[field] = origin

    def add_object(self, obj: str, written: str, fields: Iterable[tuple[str, str]]) -> None:
        """Record compact object ``obj`` as object ``written``: each (compact, written) field
        pair continues path by path; any other field is derived from the object."""
        self.add(obj, "", Origin(written, "", Rest.DERIVED))
        for field, where in fields:
            self.add(obj, field, Origin(written, where))

    def written(self, problems: Iterable[Problem]) -> list[Problem]:
        """The problems as the user wrote their objects and fields, in order; two that become
        the same (a pod's priority read for both its job and its task) are one."""
        return list(dict.fromkeys(self._written(problem) for problem in problems))

    def _written(self, problem: Problem) -> Problem:
        key = INSTANCE if problem.obj and problem.obj == self.instance else problem.obj
        origins = self._origins.get(key)
        if not origins:
            return problem
        for prefix in _prefixes(problem.field):
            origin = origins.get(prefix)
            if origin is not None:
                return _placed(problem, origin, problem.field[len(prefix) :])
        return problem


def _prefixes(field: str) -> list[str]:
    """``field`` and every shorter path it continues, longest first, down to ''."""
    cuts = [i for i, char in enumerate(field) if char in ".[" and i > 0]
    return [field, *(field[:i] for i in reversed(cuts)), ""]


def _placed(problem: Problem, origin: Origin, rest: str) -> Problem:
    """``problem`` at ``origin``, ``rest`` being its compact path below the recorded prefix."""
    file = problem.file if origin.file is None else origin.file
    message = problem.message
    field = origin.field
    if origin.rest is Rest.PATH:
        field = _joined(origin.field, rest)
    elif origin.rest is Rest.INSIDE:
        inner = rest.removeprefix(".")
        message = f"{inner}: {message}" if inner else message
    elif problem.field:
        message = f"{message} (vcopt reads it as {problem.field})"
    return Problem(message, origin.obj, field, file)


def _joined(field: str, rest: str) -> str:
    """``field`` continued by ``rest``, the part of a path below a prefix (``.x``, ``[0]``,
    or a whole path below the object itself)."""
    if not field:
        return rest.removeprefix(".")
    if rest and rest[0] not in ".[":
        rest = f".{rest}"
    return field + rest
