"""Rows of the CSV tables the importers read (the spot trace, a history of jobs), each cell
checked where it is written.

The Alibaba trace files' checks (``trace_input``) read their rows here too. A bad value is one
problem naming the CSV file, the row by its line (the number a spreadsheet shows: the header is
line 1) and the column as the header writes it. Every row is checked before anything is built,
so a bad file writes nothing; a wrong file (another CSV, a text file) is bad on every row, and
:data:`MAX_PROBLEMS` lines say so.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TypeVar

from models.errors import InputError, Problem, shown
from models.golang import parse_go_bool, parse_go_duration, parse_int64
from models.io.values import as_utc, read_datetime
from models.quantity import QuantityError
from models.resources import parse_amount
from models.yamlio import read_text

T = TypeVar("T")

MAX_SECONDS = (2**63 - 1) // 10**9
"""The longest span a Go duration holds (int64 nanoseconds), in whole seconds: the bound on a
time or run time in seconds, which the instance writes as a duration."""
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\Z")
_TIME_EXAMPLE = "2026-11-30T14:00:00Z"
MAX_PROBLEMS = 20
"""A wrong file (another CSV, a text file) is bad on every row; a few lines say so."""
BOM = "\ufeff"


def rows(
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
    out = []
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
            out.append((line, dict(zip(header, values, strict=False))))
    except csv.Error as err:
        problems.append(Problem(f"not a CSV row: {err}", "", f"line {reader.line_num}", file))
    return out


def integer(
    row: Mapping[str, str], column: str, where: Callable[[str, str], None], low: int, high: int
) -> int:
    """The column's integer within [low, high]; 0 after reporting it when it is not."""
    text = row[column].strip()
    value = parse_int64(text)
    if value is None:
        where(column, "expected an integer")
        return 0
    if not low <= value <= high:
        where(column, f"must be between {low:,} and {high:,}, got {value:,}")
        return 0
    return value


def reporter(
    file: str, line: int, name: str, problems: list[Problem]
) -> Callable[[str, str], None]:
    """What reports a problem of one row: the file, the row's line and name, the column."""
    obj = f"line {line}" + (f' ("{name[:40]}")' if name.isprintable() and name else "")

    def where(column: str, message: str) -> None:
        problems.append(Problem(message, obj, column, file))

    return where


@dataclass(frozen=True)
class Row:
    """One data row: its cells by column and the line it is on. Every reader returns None
    for a bad cell, after saying why in :attr:`problems`. The readers of required cells
    (integer, number, seconds, duration, time) say an empty cell is required; those of
    optional ones (optional_integer, boolean, quantity) read an empty cell, or a column the
    file does not have, as None."""

    line: int
    cells: Mapping[str, str]
    problems: list[Problem]
    where: Callable[[str, str], None]

    def text(self, column: str) -> str:
        return self.cells.get(column, "").strip()

    def fail(self, column: str, message: str) -> None:
        self.where(column, message)

    def _got(self, column: str) -> str:
        return f'got "{shown(self.text(column))}"'

    def integer(self, column: str, low: int, high: int) -> int | None:
        if not self.text(column):
            return self._missing(column, "an integer")
        count = len(self.problems)
        value = integer(self.cells, column, self.where, low, high)
        return None if len(self.problems) > count else value

    def optional_integer(self, column: str, low: int, high: int) -> int | None:
        return self.integer(column, low, high) if self.text(column) else None

    def number(self, column: str, high: Decimal) -> Decimal | None:
        """A decimal number from 0 to ``high`` (``1.5``, ``20``)."""
        text = self.text(column)
        if not text:
            return self._missing(column, "a number")
        if not _DECIMAL.match(text):
            self.fail(column, f"expected a number, {self._got(column)}")
            return None
        value = Decimal(text)
        if value < 0:
            self.fail(column, f"must not be negative, got {text}")
            return None
        if value > high:
            self.fail(column, f"must be at most {high:,}, got {text}")
            return None
        return value

    def seconds(self, column: str) -> Decimal | None:
        return self.number(column, Decimal(MAX_SECONDS))

    def duration(self, column: str) -> timedelta | None:
        """A run time: a Go duration (``90m``, ``1h30m``) or a number of seconds."""
        text = self.text(column)
        if not text:
            return self._missing(column, "a Go duration (90m) or a number of seconds")
        if _DECIMAL.match(text):
            seconds = self.seconds(column)
            return None if seconds is None else timedelta(seconds=float(seconds))
        try:
            span = parse_go_duration(text)
        except ValueError:
            self.fail(
                column,
                f"expected a Go duration (90m, 1h30m) or a number of seconds, {self._got(column)}",
            )
            return None
        if span < timedelta(0):
            self.fail(column, f"must not be negative, got {text}")
            return None
        return span

    def time(self, column: str) -> datetime | None:
        """An RFC 3339 time with its UTC offset, as an instant in UTC."""
        text = self.text(column)
        if not text:
            return self._missing(column, f"an RFC 3339 time such as {_TIME_EXAMPLE}")
        when = read_datetime(text)
        if when is None:
            self.fail(
                column, f"expected an RFC 3339 time such as {_TIME_EXAMPLE}, {self._got(column)}"
            )
            return None
        if when.utcoffset() is None:
            self.fail(column, f"{text} needs a UTC offset (Z or +08:00)")
            return None
        return as_utc(when)

    def boolean(self, column: str) -> bool | None:
        """``true`` or ``false`` in any spelling Go's ``strconv.ParseBool`` reads; empty: None."""
        text = self.text(column)
        if not text:
            return None
        value = parse_go_bool(text)
        if value is None:
            self.fail(column, f"expected true or false, {self._got(column)}")
        return value

    def quantity(self, column: str, resource: str) -> str | None:
        """A Kubernetes quantity of ``resource`` (``4``, ``500m``, ``16Gi``) as written; empty:
        None."""
        text = self.text(column)
        if not text:
            return None
        try:
            amount = parse_amount(resource, text)
        except QuantityError as err:
            self.fail(column, str(err))
            return None
        if amount < 0:
            self.fail(column, f"must not be negative, got {text}")
            return None
        return text

    def _missing(self, column: str, what: str) -> None:
        self.fail(column, f"required: {what}")


@dataclass(frozen=True)
class Table:
    """A CSV file's data rows; their problems, and the file's own, in one list."""

    file: str
    rows: list[Row]
    problems: list[Problem]

    def fail(self, message: str) -> None:
        """A problem of the whole file (no rows, nothing to build)."""
        self.problems.append(Problem(message, file=self.file))

    def check(self) -> None:
        """Raise every problem said so far (at most MAX_PROBLEMS of them)."""
        if self.problems:
            raise InputError(self.problems[:MAX_PROBLEMS])

    def built(self, build: Callable[[Row], T | None], what: str) -> list[T]:
        """What ``build`` makes of each row, in file order (None: the row was bad and said
        so); a file without rows has no ``what``; every problem is raised at the end."""
        out = [item for item in map(build, self.rows) if item is not None]
        if not self.rows:
            self.fail(f"no {what} rows: nothing to simulate")
        self.check()
        return out


def read_table(
    file: str | Path, columns: Sequence[str], name_column: str, optional: Sequence[str] = ()
) -> Table:
    """The data rows of ``file``; ``columns`` must all be in its header, ``optional`` ones may
    be. Problems of the file itself (empty, not a CSV, a column missing, a short row, a column
    spelled like a known one but not as it) raise at once; a row's problems name it by the
    cell of ``name_column`` too."""
    name = str(file)
    problems: list[Problem] = []
    lines = rows(name, columns, problems)
    if lines:
        problems.extend(_misspelled(name, list(lines[0][1]), [*columns, *optional]))
    table = Table(name, [], problems)
    table.check()
    for line, cells in lines:
        where = reporter(name, line, cells[name_column].strip(), problems)
        table.rows.append(Row(line, cells, problems, where))
    return table


def _misspelled(file: str, header: Sequence[str], known: Sequence[str]) -> list[Problem]:
    """Columns the reader would ignore although they differ from a known one only in case,
    spaces or ``-`` for ``_``: an optional column spelled so would be silently left out."""
    by_key = {_key(k): k for k in known}
    return [
        Problem(
            f"column {shown(h)} is read as nothing: did you mean {by_key[_key(h)]}?",
            "",
            "line 1",
            file,
        )
        for h in header
        if h not in known and _key(h) in by_key
    ]


def _key(column: str) -> str:
    return re.sub(r"[\s_-]+", "_", column.strip().lower())


def utc_text(when: datetime) -> str:
    """An instant as the instance file writes it: RFC 3339 in UTC, ``Z``."""
    return as_utc(when).isoformat().replace("+00:00", "Z")
