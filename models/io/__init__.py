"""Reading instance files: either input form, into one validated :class:`Instance`.

A file is either vcopt's compact ``kind: Instance`` document (``models.io.compact``) or a
stream of Kubernetes objects as ``kubectl get -o yaml`` prints them (``models.io.kube``, which
translates them into the compact form). This module picks the form; both end in the same
builder and the same validation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, Problem
from ..instance import Instance
from ..vocabulary import API_GROUP
from ..yamlio import load_documents, read_text
from .compact import from_dict
from .kube import compact_from_objects

__all__ = ["from_dict", "from_documents", "load", "loads"]


def load(path: str | Path) -> Instance:
    """Load and validate one instance file (either form). Raises :class:`InputError`."""
    file = str(path)
    docs = load_documents(read_text(path), file)
    return from_documents(docs, file)


def loads(text: str, file: str = "<string>") -> Instance:
    return from_documents(load_documents(text, file), file)


def from_documents(docs: Sequence[object], file: str) -> Instance:
    """Pick the form from the documents and build the instance.

    A document of vcopt's own API group (or of kind Instance) makes a compact file, which holds
    exactly that one document; anything else is read as Kubernetes objects.
    """
    if not docs:
        raise InputError([Problem("empty file: expected a kind: Instance document", file=file)])
    for number, doc in enumerate(docs, 1):
        if not isinstance(doc, Mapping):
            where = f"document {number}: " if len(docs) > 1 else ""
            raise InputError(
                [
                    Problem(
                        f"{where}expected a mapping (a kind: Instance document or Kubernetes "
                        f"objects), got {_type_name(doc)}",
                        file=file,
                    )
                ]
            )
    compact = [doc for doc in docs if _is_compact(doc)]  # type: ignore[arg-type]
    if compact and len(docs) > 1:
        raise InputError(
            [
                Problem(
                    f"an instance file holds one kind: Instance document, found {len(docs)} "
                    "documents",
                    file=file,
                )
            ]
        )
    if compact:
        return from_dict(compact[0], file)  # type: ignore[arg-type]
    missing = [n for n, doc in enumerate(docs, 1) if "kind" not in doc]  # type: ignore[operator]
    if missing:
        where = f"document {missing[0]}: " if len(docs) > 1 else ""
        raise InputError(
            [Problem(f"{where}required field is missing (expected Instance)", "", "kind", file)]
        )
    compact_doc, problems, warnings = compact_from_objects(docs, file)
    if problems:
        raise InputError([p.in_file(file) for p in problems])
    return from_dict(compact_doc, file, warnings)


def _is_compact(doc: Mapping[str, Any]) -> bool:
    api_version = doc.get("apiVersion")
    return doc.get("kind") == "Instance" or (
        isinstance(api_version, str) and api_version.split("/")[0] == API_GROUP
    )


def _type_name(value: object) -> str:
    """What the document is, never what it says: a file given by mistake (a key, a .env
    file) would otherwise have its first line printed on the terminal and in CI logs."""
    if isinstance(value, str):
        return f"plain text ({len(value):,} characters), not YAML objects"
    if isinstance(value, list):
        return "a list"
    return f"a single {type(value).__name__} value"
