"""Stopping a run: signals sent to a real ``vcopt solve`` process in a chosen phase.

The first SIGINT during the CP-SAT search stops the search and the best verified plan so far
is the answer (status INTERRUPTED, said on stderr, exit 0); SIGINT outside the search, a
second SIGINT, or SIGTERM end the run at once: ``interrupted``, exit 130 / 143, and the
existing output file untouched (content and mode).

Every signal lands in the phase it is meant for, however fast or loaded the machine: the run
is started with ``VCOPT_PAUSE_AT`` (``optimizer.progress``), so on entering a named phase it
prints ``vcopt paused at PHASE`` and waits for the signal. No assertion reads a clock. Runs
are given ``--time-limit 3600``: one that ends was stopped by its signal, and the
``HANG`` seconds allowed for it only keep a hung run from stalling the suite. The demo
instance (8 nodes) goes through every phase of both strategies in a fraction of a second.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from optimizer.cli import main
from optimizer.progress import PAUSE_VARIABLE

ROOT = Path(__file__).resolve().parents[1]
INSTANCE = ROOT / "instances" / "demo.yaml"
OLD = "old plan\n"
PAUSED = "vcopt paused at "
HANG = 240.0
"""Seconds a run may take to do what a test waits for before it counts as hung (below
pytest's own 300 s timeout, so the failure says what the run was waiting on)."""
CLI = "import sys; from optimizer.cli import main; sys.exit(main())"
PAUSE_IN_IMPORTS = f"""
import signal, sys

class PauseOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == "optimizer.solve":
            sys.meta_path.remove(self)
            print("{PAUSED}import optimizer.solve", file=sys.stderr, flush=True)
            while True:
                signal.pause()
        return None

sys.meta_path.insert(0, PauseOnImport())
{CLI}
"""
"""``vcopt`` stopped mid-way through the imports ``optimizer.cli`` guards (``optimizer.solve``
comes in with OR-Tools, in the middle of them), until a signal comes."""


class _Run:
    """``vcopt solve`` (run by ``script``) in a subprocess that pauses on entering each phase
    of ``pause``; its stderr lines are collected as they come."""

    def __init__(
        self, output: Path, *options: str, pause: tuple[str, ...] = (), script: str = CLI
    ) -> None:
        env = {k: v for k, v in os.environ.items() if k != PAUSE_VARIABLE}
        if pause:
            env[PAUSE_VARIABLE] = ",".join(pause)
        cmd = ["solve", "--time-limit", "3600", "--format", "yaml", "-o", str(output), *options]
        self.proc = subprocess.Popen(
            [sys.executable, "-c", script, *cmd, str(INSTANCE)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            self._queue.put(line)
        self._queue.put(None)

    def _next(self, waiting_for: str) -> str | None:
        """The next line of stderr, None at its end."""
        try:
            return self._queue.get(timeout=HANG)
        except queue.Empty:
            self.proc.kill()
            pytest.fail(f"hung waiting for {waiting_for}: {''.join(self.lines)}")

    def paused(self, phase: str) -> None:
        """Wait until the run pauses on entering ``phase``."""
        while (line := self._next(f"the pause at {phase!r}")) != f"{PAUSED}{phase}\n":
            if line is None:
                pytest.fail(f"the run ended without pausing at {phase!r}: {''.join(self.lines)}")

    def finish(self, pausing_again: bool = False) -> tuple[int, str]:
        """Exit code and all of stderr once the run ends. Unless ``pausing_again`` is allowed,
        a run that pauses again went on past the signal, which it should have stopped for."""
        while (line := self._next("the run to end")) is not None:
            if line.startswith(PAUSED) and not pausing_again:
                self.proc.kill()
                pytest.fail(f"the run went on after the signal: {''.join(self.lines)}")
        self.proc.wait(HANG)
        return self.proc.returncode, "".join(self.lines)


def _old_output(tmp_path: Path) -> Path:
    output = tmp_path / "plan.yaml"
    output.write_text(OLD)
    output.chmod(0o644)
    return output


def _stopped_at_once(code: int, expected: int, err: str, output: Path) -> None:
    """The run ended with ``expected``, said only ``interrupted`` of it, left the old output
    as it was and no temporary file beside it."""
    assert code == expected, err
    assert err.rstrip().endswith("interrupted")
    assert "Traceback" not in err
    assert output.read_text() == OLD
    assert sorted(os.listdir(output.parent)) == ["plan.yaml"]


@pytest.mark.parametrize(
    ("strategy", "phase", "kept"),
    [
        # The first stage's line: CP-SAT has found nothing yet, so the greedy plan is the
        # answer.
        ("auto", "stage work", "interrupted before CP-SAT found a plan"),
        # The second stage's line: the first stage's proved optimum is kept.
        ("auto", "stage fairness", "work OPTIMAL"),
        # A round's stage line: the rounds end with the plan they started from.
        ("decompose", "stage weighted", "interrupted: best plan so far"),
    ],
)
def test_sigint_during_the_search_returns_the_best_plan_so_far(
    strategy: str, phase: str, kept: str, tmp_path: Path
) -> None:
    output = _old_output(tmp_path)
    run = _Run(output, "--strategy", strategy, pause=(phase,))
    run.paused(phase)
    run.proc.send_signal(signal.SIGINT)
    code, err = run.finish()
    assert code == 0, err
    assert "status INTERRUPTED" in err
    assert "Traceback" not in err
    plan = yaml.safe_load(output.read_text())
    assert plan["kind"] == "Plan"
    assert plan["solver"]["status"] == "INTERRUPTED"
    assert plan["metadata"]["engine"] == "cpsat"
    assert kept in plan["solver"]["message"]
    assert oct(output.stat().st_mode & 0o777) == oct(0o644)
    assert main(["verify", str(INSTANCE), str(output)]) == 0


def test_second_sigint_stops_at_once_and_writes_nothing(tmp_path: Path) -> None:
    """The first SIGINT stops the search; the second, as the plan is being expanded from the
    search's answer, ends the run."""
    output = _old_output(tmp_path)
    run = _Run(output, pause=("stage fairness", "expand"))
    run.paused("stage fairness")
    run.proc.send_signal(signal.SIGINT)
    run.paused("expand")
    run.proc.send_signal(signal.SIGINT)
    code, err = run.finish()
    assert "status INTERRUPTED" not in err
    _stopped_at_once(code, 130, err, output)


def test_ctrl_c_held_down_still_exits_130(tmp_path: Path) -> None:
    """A signal every 10 ms from the search on until the process ends: the last ones land
    while the interpreter frees the model and finalises, after it has put the default SIGINT
    handler back; the exit code must still be the one ``interrupted`` reports, not death by
    the signal (-2). The pause at ``expand`` keeps the run from finishing between two of
    them."""
    output = _old_output(tmp_path)
    run = _Run(output, pause=("stage fairness", "expand"))
    run.paused("stage fairness")
    for _ in range(int(HANG / 0.01)):
        if run.proc.poll() is not None:
            break
        run.proc.send_signal(signal.SIGINT)
        time.sleep(0.01)
    code, err = run.finish(pausing_again=True)
    _stopped_at_once(code, 130, err, output)


def test_sigterm_during_the_search_stops_at_once(tmp_path: Path) -> None:
    output = _old_output(tmp_path)
    run = _Run(output, pause=("stage fairness",))
    run.paused("stage fairness")
    run.proc.send_signal(signal.SIGTERM)
    code, err = run.finish()
    _stopped_at_once(code, 143, err, output)


@pytest.mark.parametrize("phase", ["greedy", "compile", "verify"])
def test_sigint_outside_the_search_stops_at_once(phase: str, tmp_path: Path) -> None:
    """Before the search (the greedy baseline, the model's compilation) and after it (the
    plan found, being verified), SIGINT ends the run."""
    output = _old_output(tmp_path)
    run = _Run(output, pause=(phase,))
    run.paused(phase)
    run.proc.send_signal(signal.SIGINT)
    code, err = run.finish()
    _stopped_at_once(code, 130, err, output)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_while_the_command_starts(signum: int, code: int, tmp_path: Path) -> None:
    """The first second is spent importing OR-Tools, pydantic and pandas; a signal there ends
    the run the same way, without a traceback."""
    output = _old_output(tmp_path)
    run = _Run(output, script=PAUSE_IN_IMPORTS)
    run.paused("import optimizer.solve")
    run.proc.send_signal(signum)
    returncode, err = run.finish()
    _stopped_at_once(returncode, code, err, output)
