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
from collections.abc import Sequence
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


NAME_MAX = 255
"""Bytes of one file name on the file systems vcopt writes to (ext4, xfs, tmpfs, overlay)."""
_TEMP_SUFFIX = 10
"""What ``mkstemp`` adds to the prefix: a dot is ours, eight random characters its own."""
KERNEL_FILE_SYSTEMS = frozenset(
    {"proc", "sysfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "bpf"}
)
"""File systems the kernel makes up as it is read: a file there is an interface, not data."""


def _temporary_prefix(target: Path) -> str:
    """The temporary file's name prefix: the target's name, cut so that the whole temporary
    name stays within :data:`NAME_MAX` (a legal 250-byte name must not fail for the 10 bytes
    the temporary name adds)."""
    room = NAME_MAX - _TEMP_SUFFIX - 1
    name = target.name.encode("utf-8")[:room].decode("utf-8", errors="ignore")
    return f".{name}."


def _special_file_system(folder: Path) -> str:
    """The kernel file system ``folder`` is on (``proc``, ``sysfs`` …), or "" for one that
    stores files. Read from the mount table; "" where there is none to read."""
    try:
        mounts = Path("/proc/self/mounts").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    where = str(folder.resolve())
    best, kind = "", ""
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = where == point or where.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best, kind = point, fields[2]
    return kind if kind in KERNEL_FILE_SYSTEMS else ""


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
        fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(target), dir=target.parent)
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


def write_all(outputs: Sequence[tuple[str | Path, str | bytes]]) -> None:
    """Write several outputs of one command all or none: each regular file is written to its
    temporary file first, and only when every one is complete are they renamed into place
    (streams, which cannot be staged, are written once the files are). A failure leaves every
    target as it was and names the target it was writing."""
    staged: list[tuple[str, Path]] = []
    streams: list[tuple[Path, bytes]] = []
    try:
        for path, data in outputs:
            target = Path(path)
            payload = data.encode("utf-8") if isinstance(data, str) else data
            if _stream(target):
                streams.append((target, payload))
                continue
            try:
                mode = _mode_for(target)
                fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(target), dir=target.parent)
                staged.append((tmp, target))
                with os.fdopen(fd, "wb") as handle:
                    handle.write(payload)
                    os.fchmod(handle.fileno(), mode)
            except OSError as err:
                raise OSError(err.errno, err.strerror, str(target)) from None
        for target, payload in streams:
            write_atomic(target, payload)
        for tmp, target in staged:
            os.replace(tmp, target)
    except BaseException:
        for tmp, _ in staged:
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
    special = _special_file_system(parent)
    if special:
        return f"{parent} is on a {special} file system, where no file can be written"
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(target), dir=parent)
    except OSError as err:
        return f"no file can be created in {parent} ({err.strerror})"
    os.close(fd)
    Path(tmp).unlink()
    return None
