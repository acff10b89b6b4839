"""The network-topology-aware plugin (volcano-scheduler.md §4.5, §4.6, §9 items 6, 7, 8).

The cluster is Volcano's HyperNode reference tree: super-spine (tier 3) → spine-1, spine-2
(tier 2) → rack-1..rack-4 (tier 1) → node-1..node-8, two nodes per rack in order. Every node
has 16 CPUs and 64 GiB, so a rack holds 32 CPUs / 128 GiB, a spine 64 / 256 GiB and the
super-spine 128 / 512 GiB. The session adds the virtual top at tier 4 (§4.1).
"""

from __future__ import annotations

import pytest

from models.errors import Diagnostics
from models.load import loads
from models.scheduler_conf import parse_scheduler_conf
from models.topology import Topology
from optimizer.greedy.api import JobInfo, NodeInfo, TaskInfo
from optimizer.greedy.engine import solve
from optimizer.greedy.plugins.network_topology_aware import NetworkTopologyAwarePlugin
from optimizer.greedy.session import Session

TOP = Topology.TOP
NAME = "network-topology-aware"
RACKS = ["rack-1", "rack-2", "rack-3", "rack-4"]
SPINES = ["spine-1", "spine-2"]


def rack(i: int) -> str:
    a, b = 2 * i - 1, 2 * i
    return (
        f"- {{name: rack-{i}, tier: 1, members: ["
        f"{{type: Node, selector: {{exactMatch: {{name: node-{a}}}}}}}, "
        f"{{type: Node, selector: {{exactMatch: {{name: node-{b}}}}}}}]}}"
    )


def make_session(jobs: str, *, arguments: str = "{}", extra_node: bool = False) -> Session:
    """The reference tree with ``jobs`` (YAML list items) and the plugin opened.

    ``extra_node`` adds node-9, which no HyperNode lists (only the virtual top holds it).
    """
    nodes = "\n".join(
        f'- {{name: node-{i}, allocatable: {{cpu: "16", memory: 64Gi}}}}'
        for i in range(1, 10 if extra_node else 9)
    )
    racks = "\n".join(rack(i) for i in range(1, 5))
    spines = "\n".join(
        f"- {{name: {name}, tier: {tier}, members: [{{type: HyperNode, selector: "
        f'{{regexMatch: {{pattern: "{pattern}"}}}}}}]}}'
        for name, tier, pattern in (
            ("spine-1", 2, "^rack-[12]$"),
            ("spine-2", 2, "^rack-[34]$"),
            ("super-spine", 3, "^spine-"),
        )
    )
    text = f"""
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {{name: topology}}
now: "2026-11-30T14:00:00Z"
scheduler:
  tiers:
  - plugins: [{{name: {NAME}, arguments: {arguments}}}]
nodes:
{nodes}
hypernodes:
{racks}
{spines}
jobs:
{jobs}
"""
    ssn = Session(loads(text), seed=0)
    ssn.open({NAME: NetworkTopologyAwarePlugin})
    return ssn


def filler(node: int, cpu: int, name: str = "", memory: str = "") -> str:
    """A one-pod job running on ``node-<node>`` that uses ``cpu`` CPUs (and ``memory``)."""
    mem = f", memory: {memory}" if memory else ""
    return (
        f"- name: {name or f'fill-{node}'}\n"
        f"  tasks: [{{name: w, replicas: 1, resources: {{cpu: '{cpu}'{mem}}}}}]\n"
        f"  running: [{{index: 0, node: node-{node}}}]"
    )


def job(
    name: str,
    *,
    replicas: int = 2,
    cpu: int = 4,
    memory: str = "16Gi",
    topology: str = "",
    min_resources: str = "",
    running: str = "",
) -> str:
    lines = [f"- name: {name}", f"  minAvailable: {replicas}"]
    if topology:
        lines.append(f"  networkTopology: {topology}")
    if min_resources:
        lines.append(f"  minResources: {min_resources}")
    resources = f"{{cpu: '{cpu}', memory: {memory}}}"
    lines.append(f"  tasks: [{{name: w, replicas: {replicas}, resources: {resources}}}]")
    if running:
        lines.append(f"  running: {running}")
    return "\n".join(lines)


def the_job(ssn: Session, name: str) -> JobInfo:
    return ssn.jobs[f"default/{name}"]


def first_task(ssn: Session, name: str) -> TaskInfo:
    return next(iter(the_job(ssn, name).tasks.values()))


def all_nodes(ssn: Session) -> list[NodeInfo]:
    return list(ssn.node_list)


# -- gradients (§4.5) -----------------------------------------------------------------------


def test_tier_1_job_gets_the_racks() -> None:
    """§4.5: BFS from the virtual top; only HyperNodes with tier ≤ 1 are eligible, and with no
    minResources every one passes the pre-filter. One gradient: the four racks (BFS order)."""
    ssn = make_session(job("train", topology="{mode: hard, highestTierAllowed: 1}"))
    gradients = ssn.hypernode_gradient(the_job(ssn, "train"), TOP, "allocate", False)
    assert gradients == [RACKS]


def test_tier_2_job_gets_racks_then_spines() -> None:
    """§4.5: eligible HyperNodes grouped by tier ascending: racks first, then the spines; the
    super-spine (tier 3) and the top (tier 4) are above the limit."""
    ssn = make_session(job("train", topology="{mode: hard, highestTierAllowed: 2}"))
    gradients = ssn.hypernode_gradient(the_job(ssn, "train"), TOP, "allocate", False)
    assert gradients == [RACKS, SPINES]


def test_soft_job_searches_up_to_the_virtual_top() -> None:
    """§4.2: soft becomes hard with the top tier as the limit, so every tier is a gradient, the
    virtual top last."""
    ssn = make_session(job("train", topology="{mode: soft}"))
    gradients = ssn.hypernode_gradient(the_job(ssn, "train"), TOP, "allocate", False)
    assert gradients == [RACKS, SPINES, ["super-spine"], [TOP]]


def test_job_without_hard_limit_gets_the_root() -> None:
    """§9.6: a hard spec without highestTierAllowed is not hard; the gradient is [[root]]."""
    ssn = make_session(job("train", topology="{mode: hard}"))
    assert ssn.hypernode_gradient(the_job(ssn, "train"), TOP, "allocate", False) == [[TOP]]


def test_pre_filter_uses_session_start_idle() -> None:
    """§4.5 pre-filter: minResources (24 CPUs) must be ≤ the HyperNode's idle. Fillers use 16
    CPUs on node-1 and 8 on node-3, so idle is rack-1 16, rack-2 24, rack-3/4 32, spine-1 40:
    rack-1 drops out. §9.8 quirk: idle is taken at session open, so filling rack-3 during the
    session (two allocations of 16 CPUs) does not remove rack-3 from the gradient."""
    jobs = "\n".join(
        [
            filler(1, 16),
            filler(3, 8),
            job(
                "train",
                topology="{mode: hard, highestTierAllowed: 2}",
                min_resources="{cpu: '24'}",
            ),
            job("late", cpu=16, memory="1Gi"),
        ]
    )
    ssn = make_session(jobs)
    train = the_job(ssn, "train")
    expected = [["rack-2", "rack-3", "rack-4"], SPINES]
    assert ssn.hypernode_gradient(train, TOP, "allocate", False) == expected
    late = list(the_job(ssn, "late").tasks.values())
    ssn.allocate(late[0], ssn.nodes["node-5"], None)
    ssn.allocate(late[1], ssn.nodes["node-6"], None)
    assert ssn.hypernode_gradient(train, TOP, "allocate", False) == expected


def test_evict_gradient_tests_allocatable_and_reverses() -> None:
    """§4.5: for eviction the test is minResources ≤ allocatable (a full rack-1 still qualifies:
    24 ≤ 32 CPUs), the tiers come highest first, and the list is capped at
    hypernode.gradient.evict.max-hypernodes HyperNodes (3 here: both spines, then one rack)."""
    jobs = "\n".join(
        [
            filler(1, 16),
            filler(2, 16),
            job(
                "train",
                topology="{mode: hard, highestTierAllowed: 2}",
                min_resources="{cpu: '24'}",
            ),
        ]
    )
    ssn = make_session(jobs, arguments="{hypernode.gradient.evict.max-hypernodes: 3}")
    gradients = ssn.hypernode_gradient(the_job(ssn, "train"), TOP, "evict", False)
    assert gradients == [SPINES, ["rack-1"]]


def test_subjob_gradient_needs_the_pending_init_requests() -> None:
    """§4.5: for a subjob minResource is Σ InitResreq of its pending tasks: 2 × 16 = 32 CPUs.
    With node-1 using 16, rack-1 has 16 idle and drops out; rack-2 (32) and spine-1 (48) stay.
    The job level has no minResources, so there every HyperNode under spine-1 qualifies."""
    jobs = "\n".join(
        [filler(1, 16), job("train", cpu=16, topology="{mode: hard, highestTierAllowed: 2}")]
    )
    ssn = make_session(jobs)
    train = the_job(ssn, "train")
    assert ssn.hypernode_gradient(train, "spine-1", "allocate", True) == [["rack-2"], ["spine-1"]]
    assert ssn.hypernode_gradient(train, "spine-1", "allocate", False) == [
        ["rack-1", "rack-2"],
        ["spine-1"],
    ]


def test_partially_running_job_searches_from_its_allowed_ancestor() -> None:
    """§4.5 getSearchRoot: pod 0 runs on node-1, so AllocatedHyperNode = rack-1 (§4.2). The
    highest ancestor within tier 2 is spine-1: from the top the search starts there, and the
    resource pre-filter is skipped (minResources of 1000 CPUs fits nowhere). Searching from
    rack-2 (inside spine-1) starts at rack-2; from spine-2 (disjoint) there is no gradient."""
    jobs = job(
        "train",
        topology="{mode: hard, highestTierAllowed: 2}",
        min_resources="{cpu: '1000'}",
        running="[{index: 0, node: node-1}]",
    )
    ssn = make_session(jobs)
    train = the_job(ssn, "train")
    assert train.allocated_hypernode == "rack-1"
    assert ssn.hypernode_gradient(train, TOP, "allocate", False) == [
        ["rack-1", "rack-2"],
        ["spine-1"],
    ]
    assert ssn.hypernode_gradient(train, "rack-2", "allocate", True) == [["rack-2"]]
    assert ssn.hypernode_gradient(train, "spine-2", "allocate", True) == []


# -- HyperNode binpack (§4.6 HyperNodeOrderFn) ----------------------------------------------


def test_hypernode_binpack_with_tie_bonus() -> None:
    """§4.6 getSubJobHyperNodeBinPackingScore. The job has 2 tasks of 4 CPUs / 16 GiB, one
    running on node-1, so req = Σ over all tasks = 8 CPUs / 32 GiB (§9.8). A filler of the same
    size runs on node-3. rack-1 and rack-2: (4+8)/32 = 0.375 on both resources → s = 0.375;
    rack-3/4: 8/32 = 0.25. rack-1 and rack-2 tie at the maximum, so each adds
    (#job tasks in it)/(#job tasks): rack-1 1/2, rack-2 0. × 100 × weight (1):
    87.5, 37.5, 25, 25."""
    jobs = "\n".join(
        [
            filler(3, 4, memory="16Gi"),
            job("train", topology="{mode: soft}", running="[{index: 0, node: node-1}]"),
        ]
    )
    ssn = make_session(jobs)
    train = the_job(ssn, "train")
    scores = ssn.hypernode_order(train, {r: [] for r in RACKS})
    assert scores == pytest.approx({"rack-1": 87.5, "rack-2": 37.5, "rack-3": 25.0, "rack-4": 25.0})


def test_hypernode_binpack_follows_allocations_and_weight() -> None:
    """§4.6: ``used`` is updated by allocate events. An 8-CPU / 32 GiB allocation on node-5
    makes rack-3 (8+8)/32 = 0.5; the others stay at 8/32 = 0.25, so no tie, no bonus.
    weight 2 doubles the scale: 100 and 50. A rack that would overflow scores 0: a job of
    2 × 16 CPUs (32) does not fit rack-3 on top of its 8 used CPUs."""
    jobs = "\n".join(
        [
            job("train", topology="{mode: soft}"),
            job("other", replicas=1, cpu=8, memory="32Gi"),
            job("big", cpu=16, memory="1Gi", topology="{mode: soft}"),
        ]
    )
    ssn = make_session(jobs, arguments="{weight: 2}")
    ssn.allocate(first_task(ssn, "other"), ssn.nodes["node-5"], None)
    scores = ssn.hypernode_order(the_job(ssn, "train"), {"rack-3": [], "rack-4": []})
    assert scores == pytest.approx({"rack-3": 100.0, "rack-4": 50.0})
    assert ssn.hypernode_order(the_job(ssn, "big"), {"rack-3": []}) == {"rack-3": 0.0}


def test_discarded_allocations_are_taken_back() -> None:
    """§2.6 / §4.6: Statement.Discard fires the deallocate events, so a dry run leaves no
    ``used`` behind: after allocating 8 CPUs / 32 GiB on node-5 and discarding, rack-3 scores
    for the 1-pod job as an empty rack again, 8/32 = 0.25 → 25."""
    jobs = "\n".join(
        [
            job("train", replicas=1, cpu=8, memory="32Gi", topology="{mode: soft}"),
            job("other", replicas=1, cpu=8, memory="32Gi"),
        ]
    )
    ssn = make_session(jobs)
    train = the_job(ssn, "train")
    stmt = ssn.statement()
    stmt.allocate(first_task(ssn, "other"), ssn.nodes["node-5"])
    assert ssn.hypernode_order(train, {"rack-3": []}) == pytest.approx({"rack-3": 50.0})
    stmt.discard()
    assert ssn.hypernode_order(train, {"rack-3": []}) == pytest.approx({"rack-3": 25.0})


# -- node scores (§4.6 BatchNodeOrderFn) ----------------------------------------------------


def test_node_lca_score_counts_the_virtual_top() -> None:
    """§4.6 with the job's running LCA at rack-1 (pod 0 on node-1); maxTier = 4 (virtual top,
    §9.7 quirk), minTier = 1. node-1/2 (leaf rack-1 = LCA) score 1; node-3/4 (LCA spine-1, tier
    2) (4−2)/3; node-5..8 (LCA super-spine, tier 3) (4−3)/3 — not 0, as it would be without
    the virtual top. node-1 and node-2 tie at the maximum and each adds (#job tasks on
    rack-1)/(#job tasks) = 1/4. node-9 is in no rack: unknown leaf, 0. × 100."""
    jobs = job(
        "train",
        replicas=4,
        topology="{mode: hard, highestTierAllowed: 3}",
        running="[{index: 0, node: node-1}]",
    )
    ssn = make_session(jobs, extra_node=True)
    train = the_job(ssn, "train")
    train.running_lca = train.allocated_hypernode
    pending = list(train.tasks.values())[1]
    scores = ssn.batch_node_order(pending, all_nodes(ssn))
    third = 100 / 3
    expected = {
        "node-1": 125.0,
        "node-2": 125.0,
        "node-3": 2 * third,
        "node-4": 2 * third,
        "node-5": third,
        "node-6": third,
        "node-7": third,
        "node-8": third,
        "node-9": 0.0,
    }
    assert scores == pytest.approx(expected)


def test_node_lca_score_is_zero_before_the_job_is_anywhere() -> None:
    """§4.6: with JobAllocatedHyperNode empty every node scores 0 (no tier scores either)."""
    ssn = make_session(job("train", topology="{mode: hard, highestTierAllowed: 1}"))
    scores = ssn.batch_node_order(first_task(ssn, "train"), all_nodes(ssn))
    assert scores == {f"node-{i}": 0.0 for i in range(1, 9)}


def test_topology_spec_without_limit_still_gets_lca_scoring() -> None:
    """§4.2 / §9.6: a hard spec without highestTierAllowed takes the plain path "with only the
    node-level LCA scoring": the plugin asks whether the spec exists, so with no running LCA
    the nodes score 0 instead of getting the normal-pod tier score."""
    ssn = make_session(job("train", topology="{mode: hard}"))
    train = the_job(ssn, "train")
    assert train.tier_limit is None
    scores = ssn.batch_node_order(first_task(ssn, "train"), all_nodes(ssn))
    assert set(scores.values()) == {0.0}


def tier_score(factors: list[float], terms: list[float]) -> float:
    return 100 * sum(f * t for f, t in zip(factors, terms, strict=True)) / sum(factors)


def test_normal_pod_tier_score_with_fading() -> None:
    """§4.6 last bullet, for a pod without topology (8 CPUs / 32 GiB). Tiers 1..4 weigh
    0.8^(t−1) = 1, 0.8, 0.64, 0.512. A filler of 8 CPUs / 32 GiB runs on node-1. Binpack terms
    (cpu and memory give equal ratios here): node-1/2: rack-1 16/32, spine-1 16/64, super-spine
    16/128, top 16/128; node-3/4: rack 8/32, spine-1 16/64, then 16/128 twice; node-5..8: rack
    8/32, spine-2 8/64, then 16/128 twice. So packing next to the filler wins, and the spine
    breaks the tie between racks 2 and 3."""
    jobs = "\n".join([filler(1, 8, memory="32Gi"), job("web", replicas=1, cpu=8, memory="32Gi")])
    ssn = make_session(jobs)
    scores = ssn.batch_node_order(first_task(ssn, "web"), all_nodes(ssn))
    f = [1, 0.8, 0.64, 0.512]
    assert scores["node-1"] == pytest.approx(tier_score(f, [0.5, 0.25, 0.125, 0.125]))
    assert scores["node-3"] == pytest.approx(tier_score(f, [0.25, 0.25, 0.125, 0.125]))
    assert scores["node-5"] == pytest.approx(tier_score(f, [0.25, 0.125, 0.125, 0.125]))
    assert scores["node-1"] > scores["node-3"] > scores["node-5"]


def test_normal_pod_fading_argument_and_missing_tiers() -> None:
    """§4.6: fading 0.5 gives weights 1, 0.5, 0.25, 0.125. node-9 is in no HyperNode of tiers
    1–3, so those tiers score 1; at the top (9 nodes: 144 CPUs, 576 GiB) an 8 CPU / 32 GiB pod
    fills 8/144 = 32/576 = 1/18. node-1 (empty cluster): 8/32, 8/64, 8/128, 1/18."""
    ssn = make_session(
        job("web", replicas=1, cpu=8, memory="32Gi"),
        arguments="{hypernode.binpack.normal-pod.fading: 0.5}",
        extra_node=True,
    )
    scores = ssn.batch_node_order(first_task(ssn, "web"), all_nodes(ssn))
    f = [1, 0.5, 0.25, 0.125]
    assert scores["node-9"] == pytest.approx(tier_score(f, [1, 1, 1, 1 / 18]))
    assert scores["node-1"] == pytest.approx(tier_score(f, [0.25, 0.125, 0.0625, 1 / 18]))


def test_normal_pod_scoring_can_be_switched_off() -> None:
    """§4.6: hypernode.binpack.normal-pod.enable false → pods without topology get no score."""
    ssn = make_session(
        job("web", replicas=1),
        arguments="{hypernode.binpack.normal-pod.enable: false}",
    )
    assert ssn.batch_node_order(first_task(ssn, "web"), all_nodes(ssn)) == {}


def test_extra_binpack_resources_count_in_the_weights() -> None:
    """§4.6: hypernode.binpack.resources adds weighted resources. A resource no node has adds a
    0 term but its weight (2) still divides: rack-3 for an 8 CPU / 32 GiB job of 1 pod
    (req 8/32 on both) scores (1·0.25 + 1·0.25 + 2·0)/4 = 0.125 → 12.5."""
    ssn = make_session(
        job("train", replicas=1, cpu=8, memory="32Gi", topology="{mode: soft}"),
        arguments="{hypernode.binpack.resources: example.com/fpga, "
        "hypernode.binpack.resources.example.com/fpga: 2}",
    )
    assert ssn.hypernode_order(the_job(ssn, "train"), {"rack-3": []}) == pytest.approx(
        {"rack-3": 12.5}
    )


# -- end to end ------------------------------------------------------------------------------


def test_engine_puts_a_hard_tier_1_job_in_the_fullest_rack() -> None:
    """§4.3–§4.6 end to end. A filler uses 8 CPUs on node-3. The tier-1 job (2 × 8 CPUs) fits
    every rack; among the racks HyperNodeOrder prefers the fullest after placement: rack-2
    (8+16)/32 = 0.75 on CPU against 0.5 elsewhere (memory ties), so both pods land in rack-2."""
    jobs = "\n".join(
        [
            filler(3, 8),
            job("train", cpu=8, memory="1Gi", topology="{mode: hard, highestTierAllowed: 1}"),
        ]
    )
    ssn = make_session(jobs)
    instance = ssn.instance.replace(
        scheduler=parse_scheduler_conf(
            {"tiers": [{"plugins": [{"name": "gang"}, {"name": "predicates"}, {"name": NAME}]}]},
            "scheduler",
            Diagnostics(),
        )
    )
    plan = solve(instance)
    nodes = {p.pod: p.node for p in plan.placements}
    assert set(nodes) == {"default/train-w-0", "default/train-w-1"}
    assert set(nodes.values()) <= {"node-3", "node-4"}
    decision = next(d for d in plan.jobs if d.job == "default/train")
    assert decision.hypernode == "rack-2"
