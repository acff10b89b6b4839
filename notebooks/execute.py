"""Execute the notebooks in place, keeping their outputs and figures, so they read without
running.

``make notebooks`` calls this for every notebook; ``python notebooks/execute.py FILE …`` runs
some. Each notebook runs in a fresh kernel of this interpreter from the ``notebooks/`` folder,
as Jupyter would, with figures drawn inline as PNG. A notebook is written back only when
every cell ran, and atomically, so a failure leaves the committed file as it was. The tests
use :func:`execute` too, so CI runs the notebooks exactly as they are produced.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
INLINE = "module://matplotlib_inline.backend_inline"
TIMEOUT_SECONDS = 300
"""Per cell; each notebook is written to run in about two minutes on 2 cores."""


def execute(path: Path, timeout: int = TIMEOUT_SECONDS) -> nbformat.NotebookNode:
    """The notebook at ``path`` after running every cell; raises on the first error."""
    nb = nbformat.read(path, as_version=4)
    env = {
        **os.environ,
        "MPLBACKEND": INLINE,
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(HERE)}},
    )
    client.execute(env=env)
    return nb


def save(nb: nbformat.NotebookNode, path: Path) -> None:
    """Replace ``path`` atomically, keeping its permissions (a temporary file is private)."""
    mode = path.stat().st_mode & 0o777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            nbformat.write(nb, handle)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: Sequence[str]) -> int:
    paths = [Path(a).resolve() for a in argv] or sorted(HERE.glob("*.ipynb"))
    for path in paths:
        started = time.perf_counter()
        save(execute(path), path)
        print(f"{path.name}: executed in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
