"""Safe, bounded YAML reading.

Input files come from users and from scripts, so reading one must never run code, hang or
exhaust memory: only YAML's safe tags are constructed, and before anything is built the event
stream is scanned once (libyaml, no recursion) to refuse deep nesting and alias bombs, whose
expanded size is computed without expanding them.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from .errors import InputError, Problem

try:
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - pyyaml built without libyaml
    _Loader = yaml.SafeLoader

MAX_BYTES = 256 * 2**20
MAX_DEPTH = 64
MAX_EXPANDED_NODES = 20_000_000
"""Roughly 50× the node count of a 5,000-node, 50,000-pod instance."""


def _refuse(file: str, message: str) -> InputError:
    return InputError([Problem(message, file=file)])


def _check_events(text: str, file: str) -> None:
    """Reject nesting deeper than MAX_DEPTH and documents that expand beyond the limit."""
    anchors: dict[str, int] = {}
    stack: list[list[int | str | None]] = []
    total = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
                size = 1 if isinstance(event, yaml.ScalarEvent) else anchors.get(event.anchor, 1)
                if isinstance(event, yaml.ScalarEvent) and event.anchor:
                    anchors[event.anchor] = 1
                total += size
                if stack:
                    stack[-1][0] += size  # type: ignore[operator]
            elif isinstance(event, yaml.CollectionStartEvent):
                if len(stack) >= MAX_DEPTH:
                    line = event.start_mark.line + 1 if event.start_mark else 0
                    raise _refuse(file, f"line {line}: nesting deeper than {MAX_DEPTH} levels")
                stack.append([1, event.anchor])
            elif isinstance(event, yaml.CollectionEndEvent):
                size, anchor = stack.pop()
                total += 1
                if anchor:
                    anchors[str(anchor)] = int(size)  # type: ignore[arg-type]
                if stack:
                    stack[-1][0] += size  # type: ignore[operator]
            if total > MAX_EXPANDED_NODES:
                raise _refuse(
                    file,
                    f"the document expands to more than {MAX_EXPANDED_NODES:,} YAML nodes "
                    "(alias bomb or far too large an instance)",
                )
    except yaml.YAMLError as err:
        raise _refuse(file, f"not valid YAML: {_yaml_message(err)}") from None


def _yaml_message(err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    if mark is not None:
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return str(problem)


def read_text(path: str | Path) -> str:
    """The file's text, refusing unreadable, binary and oversized files."""
    file = str(path)
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError as err:
        raise _refuse(file, f"cannot read: {err.strerror}") from None
    if p.is_dir():
        raise _refuse(file, "is a directory, not an instance file")
    if size > MAX_BYTES:
        raise _refuse(
            file, f"file is {size / 2**20:.0f} MiB; the limit is {MAX_BYTES // 2**20} MiB"
        )
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _refuse(file, "not a UTF-8 text file") from None
    except OSError as err:
        raise _refuse(file, f"cannot read: {err.strerror}") from None


def load_documents(text: str, file: str) -> list[object]:
    """Every non-empty YAML document in ``text``."""
    _check_events(text, file)
    try:
        docs = list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as err:
        raise _refuse(file, f"not valid YAML: {_yaml_message(err)}") from None
    except RecursionError:
        raise _refuse(file, "nesting too deep") from None
    return [d for d in docs if d is not None]
