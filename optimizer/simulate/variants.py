"""``vcopt simulate --what-if``: one timeline under several clusters, every engine on each.

The variants come from a sweep file (``optimizer.sweepspec``, the format ``vcopt sweep``
reads), built from the simulated instance, which runs too under the name ``base``. A variant
changes the cluster the timeline runs on (nodes, queues, TDM windows, topology limits, plugin
arguments), never the timeline itself: the jobs and their arrivals are the same in every
variant, so that their waits compare. A variant field that would move them (``at``, the
start of the timeline; ``jobs``) is refused with the file, the variant and the field.

Simulations of several variants run side by side on Dask, as sweeps do
(:func:`optimizer.whatif.dask_client`): on a running scheduler given its address, or on a
local cluster started for them. Each simulation is the same computation wherever it runs, so
its result does not depend on where (wall seconds apart).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from models.errors import InputError, Problem
from models.instance import Instance

from ..options import SolveOptions
from .results import EngineRun
from .run import DEFAULT_GRACE, Progress, simulate

BASE = "base"
"""The variant name of the instance as given."""

TIMELINE_FIELDS = {
    "at": "a simulation's variants share its timeline, which starts at now; give --now to "
    "start it elsewhere",
    "jobs": "a simulation's variants share its jobs and their arrivals; change the timeline "
    "itself instead",
}
"""Variant fields of a sweep file that simulate refuses, with why."""

UNUSED_SETTINGS = "not used by simulate, whose --engines, --cycle-limit and --seed set them"


@dataclass(frozen=True)
class WhatIf:
    """The checked variants of a what-if file, the base first."""

    variants: list[tuple[str, Instance]]
    warnings: list[str]
    """What the file says that simulate does not use."""


def load_what_if(file: str, base: Instance) -> WhatIf:
    """The base and every variant of ``file`` built on it; an ``InputError`` naming the
    file, the variant and the field for a variant simulate cannot run."""
    from ..sweepspec import SETTINGS, load_sweep

    sweep = load_sweep(file, base, refused=TIMELINE_FIELDS)
    for i, (name, _) in enumerate(sweep.variants):
        if name == BASE:
            raise InputError(
                [
                    Problem(
                        f'"{BASE}" names the instance as given; call the variant otherwise',
                        f'variant "{BASE}"',
                        f"variants[{i}].name",
                        file,
                    )
                ]
            )
    warnings = []
    if sweep.settings:
        written = ", ".join(s for s in SETTINGS if s in sweep.settings)
        warnings.append(f"{file}: {written}: {UNUSED_SETTINGS}")
    return WhatIf([(BASE, base), *sweep.variants], warnings)


@dataclass(frozen=True)
class Setup:
    """What every simulation of one command shares beside its instance and engine."""

    options: SolveOptions
    until: datetime | None
    period: timedelta
    resume: bool
    check: bool
    grace: timedelta = DEFAULT_GRACE


@dataclass(frozen=True)
class Scenario:
    """One simulation: a variant's instance with one engine, under the run's name."""

    variant: str | None
    instance: Instance
    engine: str
    name: str
    optimize_every: timedelta | None = None

    def run(self, setup: Setup, progress: Progress | None = None) -> EngineRun:
        run = simulate(
            self.instance,
            self.engine,
            setup.options,
            until=setup.until,
            period=setup.period,
            resume=setup.resume,
            check=setup.check,
            progress=progress,
            optimize_every=self.optimize_every,
            name=self.name,
            grace=setup.grace,
        )
        return replace(run, variant=self.variant)


def _run(scenario: Scenario, setup: Setup) -> EngineRun:
    """What a Dask worker runs: a module function, so that it pickles by name."""
    return scenario.run(setup)


Finished = Callable[[Scenario, int, int, float], None]
"""Told of each simulation done on Dask: (the scenario, how many are done, of how many, wall
seconds since the first was sent)."""


def run_on_dask(
    scenarios: Sequence[Scenario],
    setup: Setup,
    scheduler_address: str | None = None,
    finished: Finished | None = None,
) -> list[EngineRun]:
    """Every scenario's run, in their order, computed side by side on Dask (a local
    cluster unless ``scheduler_address`` names a running scheduler)."""
    from dask.distributed import as_completed

    from ..whatif import dask_client

    started = time.perf_counter()
    with dask_client(scheduler_address, "--dask") as client:
        futures = [client.submit(_run, s, setup, pure=False) for s in scenarios]
        index = {future.key: i for i, future in enumerate(futures)}
        runs: list[EngineRun | None] = [None] * len(scenarios)
        for done, future in enumerate(as_completed(futures), start=1):
            i = index[future.key]
            runs[i] = future.result()
            if finished is not None:
                finished(scenarios[i], done, len(scenarios), time.perf_counter() - started)
    return [run for run in runs if run is not None]


def simulation_png(runs: Sequence[EngineRun], name: str) -> bytes:
    """The ``--plot`` PNG: the runs' figure (``optimizer.figures.simulation``); with
    variants, one such figure per variant, its engines side by side as without variants,
    stacked in the variants' order under titles that name them."""
    import io

    import numpy as np
    from matplotlib import image

    from ..figures import png_bytes
    from ..figures.simulation import simulation_figure

    order = list(dict.fromkeys(run.variant for run in runs))
    if order == [None]:
        return png_bytes(simulation_figure(runs, name))
    pictures = []
    for variant in order:
        figure = simulation_figure(
            [r for r in runs if r.variant == variant], f"{name}, variant {variant}"
        )
        pictures.append(image.imread(io.BytesIO(png_bytes(figure)), format="png"))
    width = max(p.shape[1] for p in pictures)
    stacked = np.vstack(
        [
            np.pad(p, ((0, 0), (0, width - p.shape[1]), (0, 0)), constant_values=1.0)
            for p in pictures
        ]
    )
    out = io.BytesIO()
    image.imsave(out, stacked, format="png")
    return out.getvalue()
