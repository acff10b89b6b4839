"""``vcopt simulate``: the cluster over time, each scheduling cycle decided by an engine.

``events`` is the clock, ``state`` the cluster and the jobs' histories, ``cycle`` one
scheduling cycle (solve, verify, apply), ``run`` the event loop, ``fairness`` each queue
against what it deserves, ``results`` what comes out, ``variants`` one timeline under the
what-if variants of its cluster, on Dask.
"""

from .cycle import InvalidState
from .results import EngineRun, JobRecord, SeriesPoint, jobs_csv, series_csv, table, to_json
from .run import DEFAULT_GRACE, DEFAULT_PERIOD, Simulation, simulate
from .variants import BASE, Scenario, Setup, load_what_if, run_on_dask

__all__ = [
    "BASE",
    "DEFAULT_GRACE",
    "DEFAULT_PERIOD",
    "EngineRun",
    "InvalidState",
    "JobRecord",
    "Scenario",
    "SeriesPoint",
    "Setup",
    "Simulation",
    "jobs_csv",
    "load_what_if",
    "run_on_dask",
    "series_csv",
    "simulate",
    "table",
    "to_json",
]
