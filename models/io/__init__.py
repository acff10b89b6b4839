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

from ..errors import InputError, Problem, obj_name
from ..instance import Instance
from ..vocabulary import API_GROUP, DEFAULT_NAMESPACE
from ..yamlio import STDIN, STDIN_NAME, load_documents, read_text
from .compact import from_dict, instance_name
from .kube import translate
from .kube.provenance import INSTANCE, Origin, Provenance
from .scheduler_conf_file import read_scheduler_conf

__all__ = ["STDIN", "from_dict", "from_documents", "load", "load_inputs", "loads"]


def load(path: str | Path) -> Instance:
    """Load and validate one instance file (either form). Raises :class:`InputError`."""
    file = str(path)
    docs = load_documents(read_text(path), file)
    return from_documents(docs, file)


def load_inputs(
    paths: Sequence[str | Path],
    *,
    scheduler_conf: str | Path | None = None,
    now: str | None = None,
) -> Instance:
    """One instance from several files (``-`` is standard input), as a user captures a
    cluster: the objects of every file form one dump, so a snapshot and the scheduler
    ConfigMap can come apart. A compact ``kind: Instance`` file stands alone.

    ``scheduler_conf`` is a raw ``volcano-scheduler.conf`` and ``now`` an RFC 3339 time; both
    replace the input's own before validation, so they are checked as if written there.
    """
    files = [str(p) for p in paths]
    if files.count(STDIN) > 1:
        raise InputError([Problem("standard input (-) is named twice; it can be read once")])
    per_file = [(file, _documents(file)) for file in files]
    confs = [f for f, docs in per_file if len(docs) == 1 and _is_scheduler_conf(docs[0])]
    if confs and len(files) > 1:
        if scheduler_conf is not None or len(confs) > 1:
            raise InputError(
                [Problem("a second scheduler configuration", file=(confs[1:] or confs)[0])]
            )
        scheduler_conf = confs[0]
        per_file = [(f, docs) for f, docs in per_file if f != confs[0]]
        files = [f for f in files if f != confs[0]]
    overrides: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    if scheduler_conf is not None:
        overrides["scheduler"] = _scheduler_conf(str(scheduler_conf))
        origins["scheduler"] = Origin("", "", file=str(scheduler_conf))
    if now is not None:
        overrides["now"] = now
        origins["now"] = Origin("", "--now", file="")
    compact = [
        f for f, docs in per_file if any(isinstance(d, Mapping) and _is_compact(d) for d in docs)
    ]
    if compact and len(files) > 1:
        raise InputError(
            [
                Problem(
                    "a kind: Instance file stands alone; several files are read as one "
                    "kubectl dump",
                    file=compact[0],
                )
            ]
        )
    docs = [doc for _, file_docs in per_file for doc in file_docs]
    if len(files) > 1:
        first = files[0]
        overrides["metadata"] = {"name": "stdin" if first == STDIN else Path(first).stem}
    name = ", ".join(STDIN_NAME if f == STDIN else f for f in files)
    if len(files) == 1:
        return from_documents(docs, name, overrides or None, origins)
    home = _object_files(per_file)
    try:
        instance = from_documents(docs, name, overrides or None, origins)
    except InputError as err:
        raise InputError([_attributed(p, home) for p in err.problems]) from None
    return instance.replace(warnings=tuple(_attributed(w, home) for w in instance.warnings))


def _object_files(per_file: Sequence[tuple[str, Sequence[object]]]) -> dict[str, str]:
    """How problems name each object of the files (``Pod "ns/x"``, as the dump writes it)
    → the file it is written in."""
    home: dict[str, str] = {}
    for file, docs in per_file:
        for doc in docs:
            items = (
                doc.get("items")
                if isinstance(doc, Mapping) and doc.get("kind") == "List"
                else [doc]
            )
            for item in items if isinstance(items, list) else []:
                if not isinstance(item, Mapping) or not isinstance(item.get("metadata"), Mapping):
                    continue
                kind, meta = str(item.get("kind", "")), item["metadata"]
                name, namespace = str(meta.get("name", "")), str(meta.get("namespace") or "")
                if kind in ("Pod", "PodGroup", "Job"):
                    namespace = namespace or DEFAULT_NAMESPACE
                home.setdefault(obj_name(kind, name, namespace), file)
    return home


def _attributed(problem: Problem, home: Mapping[str, str]) -> Problem:
    """The problem, naming the file its object is written in when one file holds it."""
    file = home.get(problem.obj)
    if file is None:
        return problem
    return Problem(problem.message, problem.obj, problem.field, file)


def _documents(file: str) -> list[object]:
    return load_documents(read_text(file), STDIN_NAME if file == STDIN else file)


def _scheduler_conf(file: str) -> object:
    """A ``volcano-scheduler.conf`` file, or the ConfigMap holding it, checked on its own so
    that a problem in it names this file (``scheduler_conf_file.py``)."""
    return read_scheduler_conf(file)


def loads(text: str, file: str = "<string>") -> Instance:
    return from_documents(load_documents(text, file), file)


def from_documents(
    docs: Sequence[object],
    file: str,
    overrides: Mapping[str, Any] | None = None,
    origins: Mapping[str, Origin] | None = None,
) -> Instance:
    """Pick the form from the documents and build the instance.

    A document of vcopt's own API group (or of kind Instance) makes a compact file, which holds
    exactly that one document; anything else is read as Kubernetes objects. ``overrides``
    replace top-level fields; ``origins`` say where each was given (an option, another file),
    so that a problem in one names that place.
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
        doc = {**compact[0], **(overrides or {})}  # type: ignore[dict-item]
        return _built(doc, file, Provenance(), [], origins)
    missing = [n for n, doc in enumerate(docs, 1) if "kind" not in doc]  # type: ignore[operator]
    if missing and _is_scheduler_conf(docs[missing[0] - 1]):
        raise InputError(
            [
                Problem(
                    "a volcano-scheduler.conf, not an instance: give it beside the cluster's "
                    "objects (vcopt solve snap.yaml volcano-scheduler.conf) or with "
                    "--scheduler-conf",
                    file=file,
                )
            ]
        )
    if missing:
        where = f"document {missing[0]}: " if len(docs) > 1 else ""
        raise InputError(
            [Problem(f"{where}required field is missing (expected Instance)", "", "kind", file)]
        )
    dump = translate(docs, file)
    if dump.errors:
        raise InputError([p.in_file(file) for p in dump.errors])
    doc = {**dump.compact, **(overrides or {})}
    return _built(doc, file, dump.provenance, dump.warnings, origins)


def _built(
    doc: Mapping[str, Any],
    file: str,
    provenance: Provenance,
    warnings: Sequence[Problem],
    origins: Mapping[str, Origin] | None,
) -> Instance:
    """The instance of a compact document, its problems named where they were written: in
    the dump's objects (``provenance``), an option or another file (``origins``). The
    ``warnings`` of the dump's own reading come first."""
    for field, origin in (origins or {}).items():
        provenance.override(INSTANCE, field, origin)
    provenance.instance = obj_name("Instance", instance_name(doc, file))
    try:
        instance = from_dict(doc, file)
    except InputError as err:
        raise InputError(provenance.written(err.problems)) from None
    written = [*(w.in_file(file) for w in warnings), *provenance.written(instance.warnings)]
    return instance.replace(warnings=tuple(dict.fromkeys(written)))


def _is_scheduler_conf(doc: object) -> bool:
    """A raw ``volcano-scheduler.conf``: no kind, and Volcano's ``actions`` or ``tiers``."""
    return isinstance(doc, Mapping) and "kind" not in doc and bool({"actions", "tiers"} & set(doc))


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
