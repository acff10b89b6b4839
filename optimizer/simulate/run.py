"""The event loop: from the instance's ``now`` to ``until`` (or until nothing can change).

Events (arrivals, completions, evicted pods gone at the end of their grace period, TDM window
changes, eviction-round wake-ups) change the state; a scheduling cycle runs when something
changed and there is work a cycle could do (an unbound pod, or a preemptable pod on a closed
revocable zone), at most one per schedule period, as Volcano's scheduler loop would. A cycle
that changed nothing leaves the state as it was, and Volcano's next cycle on the same state
decides the same, so no cycle runs until the next event: time jumps from event to event,
never one simulated second at a time.

With ``optimize_every``, the engine runs only on cycles at least that long after its last
cycle and greedy (Volcano) on the cycles between, as a periodic optimiser beside Volcano
would. The first cycle is the engine's. The engine's cycle may decide what greedy's did not,
so while greedy's cycles change nothing, the engine's next cycle is still due, one period after
its last, whenever something changed since that one began (its own changes included) and a
cycle has work; an engine cycle that changes nothing is not repeated until something changes.
"""

from __future__ import annotations

import time as wall
from collections.abc import Callable
from datetime import datetime, timedelta

from models.instance import Instance
from models.tdm import SHUFFLE_ACTION, closed_zones

from ..options import SolveOptions
from ..plan import Plan
from .cycle import run_cycle
from .events import EventQueue, Kind, next_window_change
from .results import EngineRun, JobRecord, SeriesPoint
from .state import FUTURE, STARTED, SimState

DEFAULT_PERIOD = timedelta(seconds=1)
"""Volcano's ``--schedule-period`` default."""
DEFAULT_GRACE = timedelta(seconds=30)
"""How long an evicted pod holds its room: Kubernetes' default
``terminationGracePeriodSeconds``, which instances do not carry per pod."""
IDLE_DAY = timedelta(days=1)
"""Without ``until``, a run ends once only window changes are left and either no job is
pending or running, or a whole day of them has changed nothing: windows repeat daily, so
nothing ever will."""

Progress = Callable[[datetime, float, int, int], None]
"""Called after each cycle with (simulated time, wall seconds, events, cycles)."""


class Simulation:
    """One engine over one timeline."""

    def __init__(
        self,
        instance: Instance,
        engine: str,
        options: SolveOptions,
        *,
        until: datetime | None = None,
        period: timedelta = DEFAULT_PERIOD,
        resume: bool = False,
        check: bool = True,
        keep_plans: bool = False,
        progress: Progress | None = None,
        optimize_every: timedelta | None = None,
        name: str | None = None,
        grace: timedelta = DEFAULT_GRACE,
    ) -> None:
        self.engine = engine
        self.name = name or engine
        self.every = optimize_every
        self.last_optimized: datetime | None = None
        """When the engine (not greedy in between) last ran a cycle."""
        self.stale = False
        """Something changed since the engine's last cycle began."""
        self.options = options
        self.until = until
        self.period = period
        self.check = check
        self.keep_plans = keep_plans
        self.progress = progress
        self.state = SimState(instance, resume, grace)
        self.queue = EventQueue()
        self.tdm = instance.tdm
        self.shuffles = SHUFFLE_ACTION in instance.scheduler.actions
        self.plans: list[tuple[datetime, Plan]] = []
        self.series: list[SeriesPoint] = []
        self.events = 0
        self.cycles = 0
        self.last_change = instance.now
        for key, run in self.state.runs.items():
            if run.status == FUTURE:
                self.queue.push(run.arrival, Kind.ARRIVAL, key)
            elif run.status == STARTED and run.left is not None:
                self.queue.push(instance.now + run.left, Kind.COMPLETION, key, run.generation)
        if self.tdm is not None:
            for zone in self.tdm.zones:
                self._next_window(zone, instance.now)

    def _next_window(self, zone: str, after: datetime) -> None:
        assert self.tdm is not None
        change = next_window_change(self.tdm.zones[zone], after, self.state.base.tz)
        if change is not None:
            self.queue.push(change, Kind.WINDOW, zone)

    def _evictable(self) -> bool:
        """A TDM round could evict: a preemptable pod on a zone closed now."""
        if self.tdm is None or not self.shuffles:
            return False
        closed = closed_zones(self.tdm, self.state.now, self.state.base.tz)
        return self.state.revocable_pods_on(closed)

    def _wake_for_tdm(self) -> None:
        """While preemptable pods stay on a closed zone, the next round is due one period
        after the last."""
        if self.tdm is None or self.state.last_evict_at is None or not self._evictable():
            return
        due = self.state.last_evict_at + self.tdm.evict_period
        self.queue.push(max(due, self.state.now + self.period), Kind.WAKE)

    def run(self) -> EngineRun:
        started = wall.perf_counter()
        state = self.state
        dirty = True
        last_cycle: datetime | None = None
        self._record()
        while True:
            cycle_at = None
            due = self._due(dirty, last_cycle)
            if due is not None and (state.pending_work() or self._evictable()):
                cycle_at = max(state.now, due)
            event_at = self.queue.peek()
            if cycle_at is not None and (event_at is None or cycle_at < event_at):
                if self.until is not None and cycle_at > self.until:
                    break
                dirty = self._cycle(cycle_at)
                last_cycle = cycle_at
                if self.progress is not None:
                    self.progress(cycle_at, wall.perf_counter() - started, self.events, self.cycles)
                continue
            if event_at is None or (self.until is not None and event_at > self.until):
                break
            idle = self.until is None and cycle_at is None and self.queue.only_windows()
            if idle and (not state.active() or event_at - self.last_change > IDLE_DAY):
                break
            changed = self._events(event_at)
            dirty = changed or dirty
            self.stale = changed or self.stale
        state.now = max(self.until or state.now, state.now)
        state.close()
        self._record()
        return EngineRun(
            engine=self.name,
            start=state.base.now,
            end=state.now,
            jobs=tuple(JobRecord.of(run) for run in state.runs.values()),
            series=tuple(self.series),
            events=self.events,
            cycles=self.cycles,
            wall_seconds=wall.perf_counter() - started,
            plans=tuple(self.plans),
            queue_names=state.queue_names,
            gpu_total=state.gpu_total,
        )

    def _due(self, dirty: bool, last_cycle: datetime | None) -> datetime | None:
        """The earliest time of the next cycle, should it have work: one period after the
        last cycle when something changed since; else, with ``optimize_every``, the engine's
        next cycle when something changed since its last; None when no cycle is due."""
        if dirty:
            return self.state.now if last_cycle is None else last_cycle + self.period
        if self.stale and self.every is not None and self.last_optimized is not None:
            assert last_cycle is not None
            return max(self.last_optimized + self.every, last_cycle + self.period)
        return None

    def _engine_at(self, at: datetime) -> str:
        """The engine of a cycle at ``at``: greedy between the optimising cycles."""
        last = self.last_optimized
        if self.every is None or last is None or at - last >= self.every:
            return self.engine
        return "greedy"

    def _cycle(self, at: datetime) -> bool:
        """Run a cycle at ``at``; whether it changed the state."""
        state = self.state
        state.now = at
        engine = self._engine_at(at)
        if engine == self.engine:
            self.last_optimized, self.stale = at, False
        cycle = run_cycle(state, engine, self.options, self.check)
        self.stale = cycle.change.changed or self.stale
        self.cycles += 1
        if self.keep_plans:
            self.plans.append((at, cycle.plan))
        for key in cycle.change.started:
            run = state.runs[key]
            if run.left is not None:
                self.queue.push(at + run.left, Kind.COMPLETION, key, run.generation)
        for when, key in cycle.change.releases:
            self.queue.push(when, Kind.RELEASE, key)
        if cycle.change.changed:
            self.last_change = at
        if cycle.tdm_round:
            self._wake_for_tdm()
        self._record()
        return cycle.change.changed

    def _events(self, at: datetime) -> bool:
        """Take every event at ``at``; whether one changed the state."""
        state = self.state
        state.now = at
        changed = False
        for event in self.queue.pop_at(at):
            self.events += 1
            if event.kind is Kind.ARRIVAL:
                state.arrive(event.subject)
            elif event.kind is Kind.COMPLETION:
                if not state.complete(event.subject, event.generation):
                    continue
            elif event.kind is Kind.RELEASE:
                if not state.release(event.subject):
                    continue
            elif event.kind is Kind.WINDOW:
                self._next_window(event.subject, at)
                changed = True
                continue
            changed = True
            self.last_change = at
        self._record()
        return changed

    def _record(self) -> None:
        """A point of the time series, when the numbers moved (one per instant)."""
        pending, running = self.state.counts()
        point = SeriesPoint(
            self.state.now,
            round(self.state.gpus_allocated, 6),
            pending,
            running,
            self.state.levels(),
        )
        if self.series and self.series[-1].time == point.time:
            self.series[-1] = point
        elif not self.series or self.series[-1][1:] != point[1:]:
            self.series.append(point)


def simulate(
    instance: Instance,
    engine: str,
    options: SolveOptions,
    *,
    until: datetime | None = None,
    period: timedelta = DEFAULT_PERIOD,
    resume: bool = False,
    check: bool = True,
    keep_plans: bool = False,
    progress: Progress | None = None,
    optimize_every: timedelta | None = None,
    name: str | None = None,
    grace: timedelta = DEFAULT_GRACE,
) -> EngineRun:
    """Run ``engine`` over the instance's timeline (the arguments as :class:`Simulation`'s:
    ``optimize_every`` runs it on cycles that far apart and greedy between, ``name`` names
    the run in every output, the engine's name by default, ``grace`` is how long an evicted
    pod holds its room)."""
    simulation = Simulation(
        instance,
        engine,
        options,
        until=until,
        period=period,
        resume=resume,
        check=check,
        keep_plans=keep_plans,
        progress=progress,
        optimize_every=optimize_every,
        name=name,
        grace=grace,
    )
    return simulation.run()
