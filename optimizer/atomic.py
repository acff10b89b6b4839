"""Writing output files so that an existing file is only ever replaced by a complete one.

Every output vcopt writes (plans, instances, CSV, JSON, PNG, Parquet) goes through
:func:`write_atomic`. The content goes to a fresh ``mkstemp`` file in the target's own folder
(so the final rename stays on one file system and cannot be raced through a predictable name),
and the rename replaces a symlink at the target rather than writing through it. The new file
keeps the mode of the file it replaces, or gets the user's umask, as ``open()`` would have
given it. A device or pipe (``-o /dev/stdout``) is written in place: nothing can be renamed
over a stream. A failure names the target the user asked for, never the temporary file.
:func:`unwritable` asks the same questions up front, so a command refuses an output it could
not write before it does any work.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def _umask() -> int:
    """The process umask; reading it means setting it, so it is put back at once."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(target: Path) -> int:
    """The mode the new file takes: the replaced regular file's, else what umask allows."""
    try:
        info = target.lstat()
    except FileNotFoundError:
        return 0o666 & ~_umask()
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(21, "Is a directory, not a file to write", str(target))
    if stat.S_ISREG(info.st_mode):
        return stat.S_IMODE(info.st_mode)
    return 0o666 & ~_umask()


def _stream(target: Path) -> bool:
    """Whether ``target`` is (or links to) a device, pipe or socket, such as ``/dev/stdout``:
    a stream is written in place, since renaming over it would replace the device node."""
    try:
        info = target.stat()
    except OSError:
        return False
    return not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode))


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` atomically; OSError names ``path``."""
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if _stream(target):
        try:
            with target.open("wb") as handle:
                handle.write(payload)
        except OSError as err:
            raise OSError(err.errno, err.strerror, str(target)) from None
        return
    try:
        mode = _mode_for(target)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as err:
        raise OSError(err.errno, err.strerror, str(target)) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            os.fchmod(handle.fileno(), mode)
        os.replace(tmp, target)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(err.errno, err.strerror, str(target)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def unwritable(path: str | Path) -> str | None:
    """Why :func:`write_atomic` could not write ``path``, or None when it can.

    Asked before any work starts, so that a long solve never ends in "no such directory". It
    tries what the write will do: a stream is written in place; anything else needs a new file
    in the target's folder (a folder in ``/proc`` or ``/sys``, read-only or missing, has none).
    """
    target = Path(path)
    if not str(path):
        return "an empty file name"
    if _stream(target):
        return None
    if not target.is_symlink() and target.is_dir():
        return "is a directory"
    parent = target.parent
    if not parent.exists():
        return f"the directory {parent} does not exist"
    if not parent.is_dir():
        return f"{parent} is not a directory"
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=parent)
    except OSError as err:
        return f"no file can be created in {parent} ({err.strerror})"
    os.close(fd)
    Path(tmp).unlink()
    return None
