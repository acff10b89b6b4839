"""Where vcopt makes a CP-SAT model and how it solves one.

Both of vcopt's models, the engine's snapshot model (``model.py``) and ``vcopt explain``'s
model of one job against a plan (``optimizer.reasons.model``), are :class:`Solvable`: the
model is made here and every solve runs through :meth:`Solvable.run`, on a worker thread
while the main thread waits. Python only runs signal handlers on the main thread, so this is
what lets Ctrl-C stop CP-SAT within a fraction of a second; CP-SAT's own SIGINT handler is
turned off for every solve, since it would swallow the Ctrl-C (the search would just end
early and its caller carry on with a verdict the search never reached).
"""

from __future__ import annotations

import threading

from ortools.sat.python import cp_model


class Solvable:
    """A CP-SAT model vcopt builds and solves."""

    def __init__(self) -> None:
        self.model = cp_model.CpModel()

    def run(
        self,
        solver: cp_model.CpSolver,
        callback: cp_model.CpSolverSolutionCallback | None = None,
    ) -> tuple[int, bool]:
        """Solve on a worker thread; a KeyboardInterrupt on the main thread stops the search
        and is reported as ``interrupted``. Anything else that ends the wait (a second Ctrl-C
        while stopping, SIGTERM) stops the search too and propagates; the thread is not a
        daemon, so the interpreter never exits while CP-SAT still runs.

        The wait is on an event, not ``Thread.join``: an exception raised inside ``join`` can
        leave the thread marked finished while it still runs (CPython issue 21822)."""
        solver.parameters.catch_sigint_signal = False
        outcome: list[int] = []
        done = threading.Event()

        def work() -> None:
            try:
                outcome.append(solver.solve(self.model, callback))
            finally:
                done.set()

        threading.Thread(target=work, name="cp-sat search").start()
        interrupted = False
        try:
            while not done.wait(0.1):
                pass
        except KeyboardInterrupt:
            interrupted = True
            solver.stop_search()
            while not done.wait(0.1):
                pass
        except BaseException:
            solver.stop_search()
            raise
        return (outcome[0] if outcome else cp_model.UNKNOWN), interrupted
