"""Plans: what an engine decides, read, written and rendered.

``records`` holds the plan and its entries, ``read`` reads plan files, ``write`` builds plan
documents, ``render`` turns a plan into a table, CSV, a DataFrame or HAMi annotations.
"""

from .read import derive_job_statuses, plan_from_dict, read_plan
from .records import (
    ADMITTED,
    JOB_STATUSES,
    PENDING,
    RUNNING,
    Bound,
    Eviction,
    JobDecision,
    Pipelined,
    Placement,
    Plan,
    SolverInfo,
)
from .render import FORMATS, format_for, plan_table

__all__ = [
    "ADMITTED",
    "FORMATS",
    "JOB_STATUSES",
    "PENDING",
    "RUNNING",
    "Bound",
    "Eviction",
    "JobDecision",
    "Pipelined",
    "Placement",
    "Plan",
    "SolverInfo",
    "derive_job_statuses",
    "format_for",
    "plan_from_dict",
    "plan_table",
    "read_plan",
]
