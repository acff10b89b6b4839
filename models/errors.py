"""Diagnostics for bad input.

Every complaint about an input names the file, the object and the field, so that a platform
engineer can fix the YAML without reading vcopt's code. Validators never raise on the first
problem: they collect everything into a :class:`Diagnostics` and the loader raises once.
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    """One complaint about an input: where it is and what is wrong."""

    message: str
    obj: str = ""
    field: str = ""
    file: str = ""

    def __str__(self) -> str:
        parts = [p for p in (self.file, self.obj, self.field) if p]
        return ": ".join([*parts, self.message])

    def in_file(self, file: str) -> Problem:
        """The same problem, attributed to ``file`` unless it already names one."""
        if self.file:
            return self
        return Problem(self.message, self.obj, self.field, file)


class InputError(Exception):
    """Raised when an input cannot be used; carries every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


@dataclass
class Diagnostics:
    """Collects errors (fatal) and warnings (what Volcano would only log)."""

    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def error(self, obj: str, field: str, message: str) -> None:
        self.errors.append(Problem(message, obj, field))

    def warn(self, obj: str, field: str, message: str) -> None:
        problem = Problem(message, obj, field)
        if problem not in self.warnings:
            self.warnings.append(problem)

    def raise_if_errors(self, file: str = "") -> None:
        if self.errors:
            raise InputError([p.in_file(file) for p in self.errors])


_SHOWN = 80


def shown(text: str) -> str:
    """Input text safe to print in a message: non-printable and non-ASCII characters escaped
    (a newline or an RTL override cannot forge or reorder lines), and cut short."""
    safe = text if text.isascii() and text.isprintable() else ascii(text)[1:-1]
    return safe if len(safe) <= _SHOWN else safe[: _SHOWN - 3] + "..."


class _BoundedRepr(reprlib.Repr):
    def repr_int(self, x: int, level: int) -> str:
        """An integer too long to print (Python refuses past 4,300 digits) by its size."""
        if x.bit_length() > 128:
            return f"<an integer of about {int(x.bit_length() * 0.30103)} digits>"
        return super().repr_int(x, level)


_REPR = _BoundedRepr()
_REPR.maxlevel = 3
_REPR.maxdict = _REPR.maxlist = _REPR.maxtuple = _REPR.maxset = 6
_REPR.maxstring = _REPR.maxother = 60
_REPR.maxlong = 40


def shown_value(value: object) -> str:
    """Any input value safe to print: its ``repr`` bounded in depth, items and digits before
    it is built (a value an alias bomb repeats, or a 5,000-digit integer, costs nothing to
    show), then escaped and cut as :func:`shown` does."""
    return shown(_REPR.repr(value))


def obj_name(kind: str, name: str, namespace: str = "") -> str:
    """The way messages name an object: ``HyperNode "spine-1"`` or ``Job "default/llm"``."""
    full = f"{namespace}/{name}" if namespace else name
    return f'{kind} "{shown(full)}"'
