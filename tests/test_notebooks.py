"""The what-if notebooks (DESIGN §1, job 3) run top to bottom and conclude from their own run.

Each notebook is executed the way ``make notebooks`` does it (``notebooks/execute.py``: a
fresh kernel of this interpreter, run from ``notebooks/``, figures inline) and must finish
within its time budget. Executing them takes a few minutes, so those tests carry the
``notebooks`` mark: ``pytest -m "not notebooks"`` skips them.

A conclusion is a code cell that writes its text from the variables the notebook computed
and displays it as Markdown, so a re-run can never leave a conclusion that contradicts the
tables and plots above it.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
TRACE_DATA = Path(
    os.environ.get(
        "VCOPT_ALIBABA_DATA", NOTEBOOKS.parent.parent / "shared" / "data" / "alibaba-gpu-v2023"
    )
)
"""Where the trace notebook reads the public trace (as the notebook itself looks for it)."""
BUDGET_SECONDS = 300
"""Per notebook; each is written to run in about two minutes on 2 cores."""


def _executor():
    spec = importlib.util.spec_from_file_location("notebook_execute", NOTEBOOKS / "execute.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _code(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code"]


def _markdown_outputs(cell: nbformat.NotebookNode) -> list[str]:
    return [
        "".join(o["data"]["text/markdown"])
        for o in cell.get("outputs", [])
        if "text/markdown" in o.get("data", {})
    ]


def test_there_are_six_notebooks() -> None:
    """Quick start, TDM windows, topology, queues, the Alibaba trace, and a week simulated."""
    assert [p.name[:3] for p in PATHS] == ["01-", "02-", "03-", "04-", "05-", "06-"]


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_conclusion_is_written_by_code(path: Path) -> None:
    """The last cell is code that displays Markdown, and no Markdown cell states a
    conclusion of its own."""
    nb = nbformat.read(path, as_version=4)
    last = nb.cells[-1]
    assert last.cell_type == "code"
    assert "display(Markdown(" in last.source
    assert '"## Conclusion"' in last.source
    assert not [c for c in nb.cells if c.cell_type == "markdown" and "## Conclusion" in c.source]


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_stored_outputs_come_from_one_complete_run(path: Path) -> None:
    """A committed notebook is either not run at all or run top to bottom in one kernel
    without an error (``make notebooks``): never half-run, never failing, never re-ordered."""
    nb = nbformat.read(path, as_version=4)
    counts = [c.get("execution_count") for c in _code(nb)]
    if all(c is None for c in counts) and not any(c.outputs for c in _code(nb)):
        return
    assert counts == list(range(1, len(counts) + 1))
    outputs = [o for c in _code(nb) for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert _markdown_outputs(nb.cells[-1])[0].startswith("## Conclusion")


@pytest.mark.notebooks
@pytest.mark.timeout(BUDGET_SECONDS + 60)
@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(path: Path) -> None:
    """Every cell runs without raising (nbclient stops at the first error), it shows at least
    one figure — each notebook's point is a plot, so a run that draws nothing has lost it —
    and its last cell renders a conclusion that quotes numbers of the run."""
    if "alibaba" in path.stem and not TRACE_DATA.is_dir():
        pytest.skip(f"trace CSVs not present in {TRACE_DATA}")
    nb = _executor().execute(path, timeout=BUDGET_SECONDS)
    outputs = [o for c in _code(nb) for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    (conclusion,) = _markdown_outputs(nb.cells[-1])
    assert conclusion.startswith("## Conclusion\n")
    assert any(ch.isdigit() for ch in conclusion)
