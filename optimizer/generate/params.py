"""The generator's knobs: the clock, the zone, the scheduler configuration and the sizes
that make generated clusters look like the GPU clusters vcopt is for."""

from __future__ import annotations

from typing import Any

from models.vocabulary import helm_default_scheduler

NOW = "2026-11-30T14:00:00Z"
"""Inside the zone's window: revocable nodes are lendable at this instant."""
ZONE = "rz1"
WINDOW = "08:00-21:00"
RACK_LABEL = "topology.kubernetes.io/rack"
PRODUCT_LABEL = "nvidia.com/gpu.product"
RUNNING_SHARE = 0.3
"""Share of the GPUs busy before the cycle, as in a cluster that is never empty."""
MAX_GANG = 64
CENTI = 100
"""Demand is kept in hundredths of a GPU so that sums are exact."""
CPU_PER_GPU = 12
MEMORY_GI_PER_GPU = 96
FRACTIONAL_CPU = 4
FRACTIONAL_MEMORY_GI = 16
FRACTIONS = ((8000, 20), (10000, 25), (16000, 40), (20000, 50))
"""(gpumem MiB, gpucores): the cores share is ≥ the memory share on 48 and 80 GB devices."""
NODE_PODS = 110
SLICES = 10
"""HAMi's default time-slices per device."""
RUNNING_FAILURES = 200
"""Running jobs that may fail to find room before the cluster counts as full."""

SCHEDULER: dict[str, Any] = {
    "actions": "enqueue, allocate, backfill, reclaim",
    "tiers": [
        helm_default_scheduler()["tiers"][0],
        {
            "plugins": [
                {"name": "drf", "enablePreemptable": False},
                {"name": "predicates"},
                {
                    "name": "capacity",
                    "enableHierarchy": True,
                    "arguments": {"ancestorReclaimLevel": 1},
                },
                {"name": "nodeorder"},
                {"name": "binpack"},
                {
                    "name": "tdm",
                    "arguments": {f"tdm.revocable-zone.{ZONE}": WINDOW, "tdm.evict.period": "1m"},
                },
                {
                    "name": "deviceshare",
                    "arguments": {
                        "deviceshare.VGPUEnable": True,
                        "deviceshare.SchedulePolicy": "binpack",
                    },
                },
                {"name": "network-topology-aware"},
            ]
        },
    ],
}
"""Volcano's Helm-chart first tier (priority, gang, conformance), then hierarchical capacity,
TDM, GPU sharing and network topology: every feature vcopt models."""
PRIORITY_CLASSES = (
    {"name": "high", "value": 1000},
    {"name": "normal", "value": 100},
    {"name": "low", "value": 10},
)
DEPARTMENTS = (
    ("research", ("llm", "vision", "speech")),
    ("product", ("search", "ads", "recsys")),
    ("platform", ("infra", "eval", "batch")),
)
