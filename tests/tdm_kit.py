"""Jobs for the TDM window-close tests of both engines (tests/greedy/test_shuffle.py and
tests/cpsat/test_tdm_close.py): revocable pods, each running on a node named in a list."""

from __future__ import annotations

from typing import Any

REVOCABLE = {"volcano.sh/revocable-zone": "*"}
MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
CLOSED = "2026-11-30T21:05:00Z"
"""Five minutes after an 08:00-21:00 window closed."""


def job(
    name: str,
    running: list[str],
    *,
    replicas: int | None = None,
    budget: dict[str, str] | None = None,
    preemptable: str = "true",
    cpu: str = "2",
    **fields: Any,
) -> dict[str, Any]:
    """A job of revocable pods of ``cpu`` CPUs, pod i running on ``running[i]``; its
    ``volcano.sh/preemptable`` annotation is copied to its pods (as the vcjob controller
    does)."""
    return {
        "name": name,
        "queue": "default",
        "minAvailable": 1,
        "annotations": {"volcano.sh/preemptable": preemptable, **(budget or {})},
        "tasks": [
            {
                "name": "w",
                "replicas": replicas or len(running),
                "resources": {"cpu": cpu, "memory": "1Gi"},
                "annotations": REVOCABLE,
            }
        ],
        "running": [{"index": i, "node": node} for i, node in enumerate(running)],
        **fields,
    }
