"""The README's Python snippet runs as a user would paste it: a plain script, top-level code
and all (a local Dask cluster must not make its workers run the script again)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_snippet_runs_as_a_script(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert blocks, "the README shows Python"
    script = tmp_path / "snippet.py"
    script.write_text("\n".join(blocks) + '\nprint("snippet done")\n')
    run = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().endswith("snippet done")
    assert "Traceback" not in run.stderr
