"""Stopping a run: signals sent to a real ``vcopt solve`` process mid-solve.

The first SIGINT during the CP-SAT search stops the search and the best verified plan so far
is the answer (status INTERRUPTED, said on stderr, exit 0); SIGINT outside the search, a
second SIGINT, or SIGTERM end the run at once: ``interrupted``, exit 130 / 143, and the
existing output file untouched (content and mode).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from optimizer.generate import generate, write_instance

ROOT = Path(__file__).resolve().parents[1]
OLD = "old plan\n"


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """594 nodes at 1.3× load (shape M): greedy and the compile take seconds, then CP-SAT
    searches for the whole time limit without proving its optimum (docs/BENCHMARKS.md)."""
    path = tmp_path_factory.mktemp("interrupts") / "busy.yaml"
    write_instance(generate("M", 1, 1.3), path)
    return path


class _Run:
    """``vcopt solve`` in a subprocess whose stderr lines are collected as they come."""

    def __init__(
        self, instance: Path, output: Path, *options: str, env: dict[str, str] | None = None
    ) -> None:
        cmd = [sys.executable, "-c", "import sys; from optimizer.cli import main; sys.exit(main())"]
        cmd += ["solve", "--time-limit", "120", "--format", "yaml", "-o", str(output), *options]
        self.proc = subprocess.Popen(
            [*cmd, str(instance)],
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def wait_for(self, fragment: str, timeout: float = 90) -> None:
        end = time.monotonic() + timeout
        while not any(fragment in line for line in self.lines):
            if time.monotonic() > end or self.proc.poll() is not None:
                self.proc.kill()
                pytest.fail(f"never saw {fragment!r}: {self.lines}")
            time.sleep(0.05)

    def finish(self, timeout: float = 60) -> tuple[int, str, float]:
        """Exit code, all of stderr, seconds from now until the process ended."""
        start = time.monotonic()
        self.proc.wait(timeout)
        seconds = time.monotonic() - start
        self._reader.join(5)
        return self.proc.returncode, "".join(self.lines), seconds


def _old_output(tmp_path: Path) -> Path:
    output = tmp_path / "plan.yaml"
    output.write_text(OLD)
    output.chmod(0o644)
    return output


@pytest.mark.parametrize("strategy", ["auto", "decompose"])
def test_sigint_during_the_search_returns_the_best_plan_so_far(
    strategy: str, busy: Path, tmp_path: Path
) -> None:
    output = _old_output(tmp_path)
    run = _Run(busy, output, "--strategy", strategy)
    run.wait_for("stage ")
    run.proc.send_signal(signal.SIGINT)
    code, err, seconds = run.finish()
    assert code == 0, err
    assert "status INTERRUPTED" in err
    assert "Traceback" not in err
    # The search stops within a fraction of a second; expanding, verifying and writing the
    # plan follow. 120 s were allowed: ending this soon means the signal was honoured.
    assert seconds < 15
    plan = yaml.safe_load(output.read_text())
    assert plan["kind"] == "Plan"
    assert plan["solver"]["status"] == "INTERRUPTED"
    assert plan["metadata"]["engine"] == "cpsat"
    assert oct(output.stat().st_mode & 0o777) == oct(0o644)


def test_second_sigint_stops_at_once_and_writes_nothing(busy: Path, tmp_path: Path) -> None:
    output = _old_output(tmp_path)
    run = _Run(busy, output)
    run.wait_for("stage ")
    run.proc.send_signal(signal.SIGINT)
    time.sleep(0.05)  # two signals at once are one: Python keeps a single pending flag
    run.proc.send_signal(signal.SIGINT)
    code, err, _ = run.finish()
    assert code == 130, err
    assert err.rstrip().endswith("interrupted")
    assert "Traceback" not in err
    assert output.read_text() == OLD


def test_ctrl_c_held_down_still_exits_130(busy: Path, tmp_path: Path) -> None:
    """A signal every 10 ms until the process ends: the last ones land while the interpreter
    frees the model and finalises, after it has put the default SIGINT handler back; the exit
    code must still be the one ``interrupted`` reports, not death by the signal (-2)."""
    output = _old_output(tmp_path)
    run = _Run(busy, output)
    run.wait_for("stage ")
    while run.proc.poll() is None:
        run.proc.send_signal(signal.SIGINT)
        time.sleep(0.01)
    code, err, _ = run.finish()
    assert code == 130, err
    assert err.rstrip().endswith("interrupted")
    assert "Traceback" not in err
    assert output.read_text() == OLD


def test_sigterm_during_the_search_stops_at_once(busy: Path, tmp_path: Path) -> None:
    output = _old_output(tmp_path)
    run = _Run(busy, output)
    run.wait_for("stage ")
    run.proc.send_signal(signal.SIGTERM)
    code, err, seconds = run.finish()
    assert code == 143, err
    assert err.rstrip().endswith("interrupted")
    assert "Traceback" not in err
    assert seconds < 10
    assert output.read_text() == OLD
    assert sorted(os.listdir(tmp_path)) == ["plan.yaml"]


def test_sigint_outside_the_search_stops_at_once(busy: Path, tmp_path: Path) -> None:
    """With a line at every phase change, the greedy line is printed as the greedy baseline
    starts, before anything of CP-SAT exists: a signal sent on it lands outside the search
    (greedy of 594 nodes places thousands of pods, which outlasts a signal's delivery on any
    machine)."""
    output = _old_output(tmp_path)
    run = _Run(busy, output, env={"VCOPT_PROGRESS_INTERVAL": "0"})
    run.wait_for("/120s  greedy\n")
    run.proc.send_signal(signal.SIGINT)
    code, err, seconds = run.finish()
    assert code == 130, err
    assert err.rstrip().endswith("interrupted")
    assert "Traceback" not in err
    assert seconds < 10
    assert output.read_text() == OLD
    assert sorted(os.listdir(tmp_path)) == ["plan.yaml"]


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_while_the_command_starts(
    signum: int, code: int, busy: Path, tmp_path: Path
) -> None:
    """The first second is spent importing OR-Tools, pydantic and pandas; a signal there ends
    the run the same way, without a traceback."""
    output = _old_output(tmp_path)
    run = _Run(busy, output)
    time.sleep(0.4)
    run.proc.send_signal(signum)
    returncode, err, _ = run.finish()
    assert returncode == code, err
    assert err.rstrip().endswith("interrupted")
    assert "Traceback" not in err
    assert output.read_text() == OLD
