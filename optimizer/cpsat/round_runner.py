"""Where decomposition rounds are solved: in this process, or on a Dask cluster.

A round's sub-solve needs only the snapshot, the round's view and the plan it starts from, so
a batch of rounds on disjoint parts can be solved at once by Dask workers — the snapshot is
sent to them once per solve — for users whose snapshots outgrow one machine
(``vcopt solve --dask ADDRESS``). The answers come back in the batch's order and are merged
in that order (``decompose.py``). The in-process runner solves the same batch one round after
another, so both give the same plan for the same seed and rounds whenever each round's search
is deterministic (``--deterministic``, or rounds small enough to be solved to optimality).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from models.errors import shown_value
from models.instance import Instance

from ..options import OptionError, SolveOptions
from ..plan import Plan
from ..progress import Progress
from ..result import Status
from .compile.view import View
from .search import CpsatModel
from .solution.expand import expand
from .solution.extract import plan_from

if TYPE_CHECKING:
    from distributed import Client

CONNECT_SECONDS = 10
"""How long to wait for the Dask scheduler to answer before giving up on it."""
CLOSE_SECONDS = 3.0
"""Kept back from the rounds for closing the Dask client and its threads as the command exits
(measured on one machine: 1.3 s past the rounds, up to 2.4 s for ``Client.close`` alone), so
that the solve still ends within the user's limit."""


@dataclass(frozen=True)
class RoundTask:
    """One round to solve: which decisions it may change, from which plan, for how long."""

    view: View
    start: Plan
    seconds: float


@dataclass(frozen=True)
class RoundAnswer:
    plan: Plan | None
    """The free jobs' placements the round found (None: its search found nothing)."""
    exhausted: bool
    """The search proved the neighbourhood: every stage optimal and every count dealt out to
    nodes, so there is nothing better to find there."""
    interrupted: bool = False


def solve_round(
    instance: Instance,
    options: SolveOptions,
    task: RoundTask,
    progress: Progress | None = None,
    check: Callable[[], None] | None = None,
) -> RoundAnswer:
    """Build the round's model, hint it with the start plan, search it and read the answer
    back. ``check`` raises :class:`~optimizer.budget.TimeUp` when the caller's budget is gone
    while the model is built (in-process only: a Dask worker runs the round to its end)."""
    model = CpsatModel(instance, options, check=check or _unchecked, view=task.view)
    hint = model.hint_plan(task.start)
    result = model.search(hint, task.seconds, progress or Progress(task.seconds))
    optimal = all(s == Status.OPTIMAL for s in result.statuses.values())
    if result.values is None:
        return RoundAnswer(None, optimal, result.interrupted)
    expansion = expand(model.vars, result.values)
    answer = plan_from(model.vars, result.values, expansion, instance, options.search.seed)
    return RoundAnswer(answer, optimal and not expansion.failed_classes, result.interrupted)


def _unchecked() -> None:
    """No budget to check: the round runs to the end of its own search time."""


class Runner(Protocol):
    width: int
    """Rounds solved side by side in one batch."""
    reserve: float
    """Seconds the rounds leave at the end of the budget for :meth:`close`."""

    def run(
        self,
        options: SolveOptions,
        tasks: Sequence[RoundTask],
        progress: Progress,
        check: Callable[[], None],
        timeout: float,
    ) -> list[RoundAnswer]: ...

    def close(self) -> None: ...


class InProcess:
    """The rounds of a batch one after another in this process, with the caller's progress
    line and Ctrl-C handling."""

    def __init__(self, instance: Instance, width: int = 1) -> None:
        self.instance = instance
        self.width = width
        self.reserve = 0.0

    def run(
        self,
        options: SolveOptions,
        tasks: Sequence[RoundTask],
        progress: Progress,
        check: Callable[[], None],
        timeout: float,
    ) -> list[RoundAnswer]:
        del timeout  # each round's own search time and ``check`` bound it
        answers = []
        for task in tasks:
            answers.append(solve_round(self.instance, options, task, progress, check))
            if answers[-1].interrupted:
                break
        return answers

    def close(self) -> None:
        """Nothing to release."""


@contextmanager
def runner_for(instance: Instance, options: SolveOptions) -> Iterator[Runner]:
    """The runner the options ask for: the Dask scheduler at ``options.search.dask``, or this
    process; closed after the rounds."""
    address = options.search.dask
    runner: Runner = OnDask(instance, address) if address else InProcess(instance)
    try:
        yield runner
    finally:
        runner.close()


class OnDask:
    """The rounds of a batch side by side on the workers of a Dask scheduler, one round per
    worker thread. A batch that is not back within the caller's remaining budget is given up
    (its rounds are cancelled and the plan so far kept); a Ctrl-C while waiting does the same
    and ends the rounds, as it ends an in-process search."""

    def __init__(self, instance: Instance, address: str, width: int | None = None) -> None:
        from distributed import Client

        try:
            self.client: Client = Client(address, timeout=CONNECT_SECONDS)
        except (OSError, TimeoutError, ValueError) as err:
            raise OptionError(
                "dask", f"no Dask scheduler answers at {shown_value(address)}: {err}"
            ) from None
        self.instance = instance
        self.snapshot: Any = self.client.scatter(instance, broadcast=True)
        self.width = width or max(1, sum(self.client.nthreads().values()))
        self.reserve = CLOSE_SECONDS

    def run(
        self,
        options: SolveOptions,
        tasks: Sequence[RoundTask],
        progress: Progress,
        check: Callable[[], None],
        timeout: float,
    ) -> list[RoundAnswer]:
        del progress, check  # the workers show nothing; the wait below keeps the budget
        from distributed import wait

        futures = [
            self.client.submit(solve_round, self.snapshot, options, task, pure=False)
            for task in tasks
        ]
        try:
            wait(futures, timeout=max(0.1, timeout))
            answers: list[RoundAnswer] = self.client.gather(futures)
        except TimeoutError:
            self.client.cancel(futures)
            return []
        except KeyboardInterrupt:
            self.client.cancel(futures)
            return [RoundAnswer(None, False, interrupted=True)]
        return answers

    def close(self) -> None:
        self.client.close()
