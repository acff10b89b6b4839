"""``vcopt simulate``: the cluster over time, each scheduling cycle decided by an engine.

``events`` is the clock, ``state`` the cluster and the jobs' histories, ``cycle`` one
scheduling cycle (solve, verify, apply), ``run`` the event loop, ``fairness`` each queue
against what it deserves, ``results`` what comes out.
"""

from .cycle import InvalidState
from .results import EngineRun, JobRecord, SeriesPoint, jobs_csv, series_csv, table, to_json
from .run import DEFAULT_PERIOD, Simulation, simulate

__all__ = [
    "DEFAULT_PERIOD",
    "EngineRun",
    "InvalidState",
    "JobRecord",
    "SeriesPoint",
    "Simulation",
    "jobs_csv",
    "series_csv",
    "simulate",
    "table",
    "to_json",
]
