"""Helpers of the verifier tests, one rule at a time.

Every test starts from ``tests/data/verify/base.yaml`` (read its header), changes one thing and
writes a plan that breaks exactly one rule, so the expected violation list is that one rule and
nothing else; the docstrings say why the other rules hold. Amounts: n1–n3 have 8 cpu, 32Gi and
two 40000 MiB GPUs with 10 slots and 100 cores; ``shared`` pods book 10000 MiB / 30 cores,
``whole`` pods 40000 MiB / 100 cores (HAMi's webhook makes a bare ``nvidia.com/gpu: 1`` a whole
card, hami-gpu.md pitfall 4). team-a's realCapability is research's 4 GPUs (inherited).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from models.instance import Instance
from models.load import from_dict
from models.workload import DeviceShare
from optimizer.plan import Eviction, Placement, Plan
from optimizer.verify import Violation, verify

TESTS = Path(__file__).resolve().parents[1]
BASE = TESTS / "data" / "verify" / "base.yaml"
DEMO = TESTS.parent / "instances" / "demo.yaml"

Doc = dict[str, Any]


def build(edit: Callable[[Doc], None] | None = None) -> Instance:
    """The base instance, after ``edit`` changed its document."""
    doc = yaml.safe_load(BASE.read_text())
    if edit is not None:
        edit(doc)
    return from_dict(doc, str(BASE))


def find(doc: Doc, section: str, name: str) -> Doc:
    return next(x for x in doc[section] if x["name"] == name)


def task(doc: Doc, job: str) -> Doc:
    return find(doc, "jobs", job)["tasks"][0]


def place(pod: str, node: str, *devices: tuple[str, int, int]) -> Placement:
    """A placement of ``default/<pod>``; devices given → explicit, none → left to the verifier."""
    shares = tuple(DeviceShare(i, m, c) for i, m, c in devices)
    return Placement(f"default/{pod}", node, shares or None)


def evict(pod: str, node: str, reason: str = "reclaim", namespace: str = "default") -> Eviction:
    return Eviction(f"{namespace}/{pod}", node, reason)


def rules(instance: Instance, *placements: Placement, **sections: Any) -> list[str]:
    plan = Plan(placements=placements, **sections)
    return [v.rule for v in verify(instance, plan)]


def violations(instance: Instance, *placements: Placement, **sections: Any) -> list[Violation]:
    return verify(instance, Plan(placements=placements, **sections))


SHARE = ("GPU-1a", 10000, 30)
WHOLE_1A = ("GPU-1a", 40000, 100)


def after_window(doc: Doc) -> None:
    """22:00 UTC: the zone's 08:00-21:00 window is closed."""
    doc["now"] = "2026-11-30T22:00:00Z"
