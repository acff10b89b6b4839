"""Shared vocabulary and the facts derived from it, each defined once in ``models``.

Expected values come from the specs the facts stand for: Volcano's Helm chart configuration,
volcano-scheduler.md §4.2 and §9.6 (topology limits), hami-gpu.md (device cordon, NUMA bind).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from models.cluster import Node
from models.instance import Instance
from models.scheduler_conf import HELM_DEFAULT, PluginOption, SchedulerConf
from models.topology import HyperNode, tiers_by_name
from models.vocabulary import (
    DEVICE_CORDON,
    NETWORK_TOPOLOGY_PLUGIN,
    NUMA_BIND,
    helm_default_scheduler,
)
from models.workload import HARD, SOFT, Job, NetworkTopology, Task

NOW = datetime(2026, 11, 30, 14, tzinfo=UTC)


def test_helm_default_is_the_charts_configuration() -> None:
    """installer/helm/chart/volcano/config/volcano-scheduler.conf: three actions, two tiers,
    gang and drf without Preemptable."""
    assert HELM_DEFAULT.actions == ("enqueue", "allocate", "backfill")
    assert [[p.name for p in tier] for tier in HELM_DEFAULT.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"],
    ]
    assert not HELM_DEFAULT.plugin("gang").enabled("Preemptable")
    assert not HELM_DEFAULT.plugin("drf").enabled("Preemptable")
    assert HELM_DEFAULT.plugin("proportion").enabled("Preemptable")


def test_helm_default_document_is_a_fresh_copy() -> None:
    """Generators extend the document; that must not change what an omitted configuration
    means for the next caller."""
    first = helm_default_scheduler()
    first["tiers"][1]["plugins"].append({"name": "deviceshare"})
    assert {"name": "deviceshare"} not in helm_default_scheduler()["tiers"][1]["plugins"]


def _conf(*names: str) -> SchedulerConf:
    return SchedulerConf(("allocate",), (tuple(PluginOption(n) for n in names),))


def test_topology_is_enforced_only_with_the_plugin() -> None:
    assert _conf("gang", NETWORK_TOPOLOGY_PLUGIN).enforces_topology
    assert not _conf("gang", "predicates").enforces_topology
    assert not HELM_DEFAULT.enforces_topology


@pytest.mark.parametrize(
    ("spec", "search", "hard"),
    [
        (NetworkTopology(HARD, 1), 1, 1),
        (NetworkTopology(HARD, None, "rack"), None, None),  # unresolved name: not hard (§4.2)
        (NetworkTopology(SOFT, 1), 3, None),  # soft = hard with the top tier (§9.6)
        (NetworkTopology(SOFT, None), 3, None),
    ],
)
def test_network_topology_limits(
    spec: NetworkTopology, search: int | None, hard: int | None
) -> None:
    """With a top tier of 3: the search limit Volcano's allocate uses, and the limit the
    placement must respect."""
    assert spec.search_limit(3) == search
    assert spec.hard_tier == hard


def test_instance_hard_topology_limit_needs_the_plugin() -> None:
    job = Job("llm", network_topology=NetworkTopology(HARD, 2), tasks=(Task("w", 2),))
    soft = Job("eval", network_topology=NetworkTopology(SOFT, 1), tasks=(Task("w", 2),))
    plain = Job("batch", tasks=(Task("w", 2),))
    with_plugin = Instance("i", NOW, scheduler=_conf("gang", NETWORK_TOPOLOGY_PLUGIN))
    without = Instance("i", NOW, scheduler=_conf("gang"))
    assert with_plugin.hard_topology_limit(job) == 2
    assert with_plugin.hard_topology_limit(soft) is None
    assert with_plugin.hard_topology_limit(plain) is None
    assert without.hard_topology_limit(job) is None


def test_tier_names_resolve_to_the_lowest_tier_using_them() -> None:
    hypernodes = [
        HyperNode("s1", 2, "spine"),
        HyperNode("r1", 1, "rack"),
        HyperNode("odd", 3, "rack"),
        HyperNode("anon", 4),
    ]
    assert tiers_by_name(hypernodes) == {"spine": 2, "rack": 1}


def test_cordoned_gpus_are_the_annotations_trimmed_ids() -> None:
    node = Node("n", annotations={DEVICE_CORDON: " GPU-1, GPU-2 ,,"})
    assert node.cordoned_gpus == frozenset({"GPU-1", "GPU-2"})
    assert Node("m").cordoned_gpus == frozenset()


@pytest.mark.parametrize(
    ("value", "bound"), [("true", True), ("T", True), ("0", False), ("yes", False)]
)
def test_numa_bind_reads_the_annotation_as_go_does(value: str, bound: bool) -> None:
    assert Task("w", 1, annotations={NUMA_BIND: value}).numa_bind is bound
    assert not Task("w", 1).numa_bind
