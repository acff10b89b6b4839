"""Whole-cycle scenarios through ``engine.solve``: network topology, hierarchical queues, TDM,
vGPU and node scoring (volcano-scheduler.md §2.5, §4, §5.3–§5.4, §6, §7, §9 items 6, 9, 12,
13, 15).

Topology tests use a two-level tree: spine-1 (tier 2) over rack-1, rack-2 and spine-2 over
rack-3, rack-4 (tier 1), two nodes per rack (node-1, node-2 in rack-1, and so on), each node
16 CPUs and 64 GiB. The session adds the virtual top at tier 3 (§4.1).
"""

from __future__ import annotations

from models.load import loads
from models.topology import Topology
from optimizer.greedy import engine
from optimizer.plan import ADMITTED, PENDING, JobDecision, Plan
from optimizer.verify import verify

HEADER = """
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: scenarios}
"""


def solve(text: str, seed: int = 0, now: str = "2026-11-30T14:00:00Z") -> Plan:
    inst = loads(HEADER + f'now: "{now}"\n' + text)
    plan = engine.solve(inst, seed)
    assert verify(inst, plan) == []
    return plan


def decision(plan: Plan, name: str) -> JobDecision:
    found = plan.job(f"default/{name}")
    assert found is not None
    return found


def nodes_of(plan: Plan, name: str) -> set[str]:
    return {p.node for p in plan.placements if p.pod.startswith(f"default/{name}-")}


# -- network topology (§4, §9.6) -------------------------------------------------------------

TOPOLOGY_TIERS = """
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: nodeorder}, {name: network-topology-aware}]
"""
PLAIN_TIERS = """
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: nodeorder}]
"""


def tree() -> str:
    nodes = "".join(
        f'- {{name: node-{i}, allocatable: {{cpu: "16", memory: 64Gi}}}}\n' for i in range(1, 9)
    )
    racks = "".join(
        f"- {{name: rack-{r}, tier: 1, members: ["
        f"{{type: Node, selector: {{exactMatch: {{name: node-{2 * r - 1}}}}}}}, "
        f"{{type: Node, selector: {{exactMatch: {{name: node-{2 * r}}}}}}}]}}\n"
        for r in range(1, 5)
    )
    spines = "".join(
        f"- {{name: spine-{s}, tier: 2, members: ["
        f"{{type: HyperNode, selector: {{exactMatch: {{name: rack-{2 * s - 1}}}}}}}, "
        f"{{type: HyperNode, selector: {{exactMatch: {{name: rack-{2 * s}}}}}}}]}}\n"
        for s in (1, 2)
    )
    return "nodes:\n" + nodes + "hypernodes:\n" + racks + spines


def filler(node: int, cpu: int) -> str:
    """A running one-pod job holding ``cpu`` CPUs (and 4 GiB per CPU) of ``node-<node>``."""
    return (
        f"- name: fill-{node}\n"
        f"  tasks: [{{name: w, replicas: 1, resources: {{cpu: '{cpu}', memory: {4 * cpu}Gi}}}}]\n"
        f"  running: [{{index: 0, node: node-{node}}}]\n"
    )


def gang(name: str, pods: int, cpu: int, topology: str = "") -> str:
    spec = f"  networkTopology: {topology}\n" if topology else ""
    resources = f"{{cpu: '{cpu}', memory: {4 * cpu}Gi}}"
    return (
        f"- name: {name}\n  minAvailable: {pods}\n{spec}"
        f"  tasks: [{{name: w, replicas: {pods}, resources: {resources}}}]\n"
    )


def test_hard_tier_two_job_that_fits_a_rack_lands_in_one_rack() -> None:
    """§4.3–§4.4: the job-level gradient is tier ascending, so with highestTierAllowed 2 every
    rack is dry-run before any spine, and a rack that holds the gang wins at tier 1. Three
    8-CPU pods fit any rack; among the racks the HyperNode binpack (§4.6: (used + Σ job
    requests)/allocatable) prefers rack-3, whose node-5 already runs 8 CPUs / 32 GiB: (8 +
    24)/32 = 1.0 against 24/32 = 0.75 elsewhere. The plan reports rack-3 and LCA tier 1."""
    text = (
        TOPOLOGY_TIERS
        + tree()
        + "jobs:\n"
        + filler(5, 8)
        + gang("t", 3, 8, "{mode: hard, highestTierAllowed: 2}")
    )
    plan = solve(text)
    assert nodes_of(plan, "t") <= {"node-5", "node-6"}
    assert len([p for p in plan.placements if p.pod.startswith("default/t-")]) == 3
    t = decision(plan, "t")
    assert (t.status, t.hypernode, t.lca_tier) == (ADMITTED, "rack-3", 1)


def test_every_hypernode_of_a_gradient_is_a_fresh_dry_run() -> None:
    """§4.3 step 2 / §4.4 step 3: each HyperNode is tried on a cloned worksheet with reset fit
    errors. Every rack has one empty node and one with 10 of 16 CPUs used: 22 CPUs idle, so
    each passes the pre-filter for two 10-CPU pods (§4.5), yet only one pod fits per rack. At
    tier 2 the spine's own gradient is [[its two racks], [the spine]]: both racks fail, and
    the spine — two empty nodes — must still be tried, so the gang lands on the empty nodes of
    one spine (LCA tier 2). A failed role carried over from the racks would skip it."""
    fillers = "".join(filler(n, 10) for n in (2, 4, 6, 8))
    text = (
        TOPOLOGY_TIERS
        + tree()
        + "jobs:\n"
        + fillers
        + gang("t", 2, 10, "{mode: hard, highestTierAllowed: 2}")
    )
    plan = solve(text)
    assert nodes_of(plan, "t") in ({"node-1", "node-3"}, {"node-5", "node-7"})
    t = decision(plan, "t")
    assert t.status == ADMITTED and t.lca_tier == 2
    assert t.hypernode in ("spine-1", "spine-2")


def test_hard_job_too_big_for_its_tier_stays_pending_with_the_tiers_tried() -> None:
    """§4.3 step 6: five full-node pods fit no rack (2 nodes) and no spine (4 nodes), so with
    highestTierAllowed 2 no gradient has a solution and nothing is placed. The reason names the
    limit and the HyperNodes tried per tier."""
    text = (
        TOPOLOGY_TIERS
        + tree()
        + "jobs:\n"
        + gang("t", 5, 16, "{mode: hard, highestTierAllowed: 2}")
    )
    plan = solve(text)
    assert plan.placements == ()
    reason = decision(plan, "t").reason
    assert "no HyperNode of tier ≤ 2 could hold the gang" in reason
    assert "tier 1: rack-1, rack-2, rack-3, rack-4" in reason
    assert "tier 2: spine-1, spine-2" in reason


def test_soft_topology_falls_back_to_the_whole_cluster() -> None:
    """§4.2 / §9.6: soft mode is hard mode with the virtual top tier as the limit. The same
    five full-node pods fit no rack and no spine, so the search reaches the top tier and the
    gang spans both spines: admitted, LCA tier 3 (the cluster top)."""
    text = TOPOLOGY_TIERS + tree() + "jobs:\n" + gang("t", 5, 16, "{mode: soft}")
    plan = solve(text)
    assert len(nodes_of(plan, "t")) == 5
    t = decision(plan, "t")
    assert (t.status, t.hypernode, t.lca_tier) == (ADMITTED, Topology.TOP, 3)


def test_hard_topology_is_not_enforced_without_the_plugin() -> None:
    """§4.3 step 1 / §9.6: without network-topology-aware the only gradient is the cluster top.
    A hard tier-1 gang of three full-node pods cannot fit one rack (2 nodes) but is placed
    anyway, across racks (LCA tier ≥ 2)."""
    text = (
        PLAIN_TIERS + tree() + "jobs:\n" + gang("t", 3, 16, "{mode: hard, highestTierAllowed: 1}")
    )
    plan = solve(text)
    t = decision(plan, "t")
    assert t.status == ADMITTED
    assert len(nodes_of(plan, "t")) == 3 and t.lca_tier is not None and t.lca_tier >= 2


def test_hard_spec_without_a_tier_is_not_hard() -> None:
    """§4.2 / §9.6: IsHardTopologyMode needs mode hard AND highestTierAllowed. A hard spec with
    neither a tier nor a tier name takes the plain path even with the plugin, so the same gang
    is placed across racks."""
    text = TOPOLOGY_TIERS + tree() + "jobs:\n" + gang("t", 3, 16, "{mode: hard}")
    plan = solve(text)
    assert decision(plan, "t").status == ADMITTED
    assert len(nodes_of(plan, "t")) == 3


# -- hierarchical capacity (§5.3, §5.4, §9.9) -------------------------------------------------

HIERARCHY_TIERS = """
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
"""

SHARES = """nodes:
- {name: n1, allocatable: {cpu: "3", memory: 64Gi}}
queues:
- {name: root}
- {name: a, parent: root, deserved: {cpu: '4'}}
- {name: a1, parent: a, deserved: {cpu: '2'}}
- {name: a2, parent: a, deserved: {cpu: '2'}}
- {name: b, parent: root, deserved: {cpu: '4'}}
- {name: b1, parent: b, deserved: {cpu: '4'}}
jobs:
- name: r
  queue: a2
  tasks: [{name: w, replicas: 1, resources: {cpu: '2'}}]
  running: [{index: 0, node: n1}]
- name: x
  queue: a1
  tasks: [{name: w, replicas: 1, resources: {cpu: '1'}}]
- name: y
  queue: b1
  tasks: [{name: w, replicas: 1, resources: {cpu: '1'}}]
"""


def test_leaves_compare_the_shares_of_their_lca_children() -> None:
    """§5.4 QueueOrderFn, hierarchical: two leaves compare the children of their deepest common
    ancestor. a1 and b1 both have share 0, and a1 comes first in the file, but their LCA is
    root, so a (2 of 4 CPUs used by a2: 0.5) is compared with b (0): b1 goes first. The node
    has 1 CPU left, so y (in b1) is placed and x (in a1) is not."""
    plan = solve(HIERARCHY_TIERS + SHARES)
    assert {p.pod for p in plan.placements} == {"default/y-w-0"}
    assert decision(plan, "x").status == PENDING


def test_a_leaf_goes_before_a_non_leaf_and_non_leaves_compare_their_own_shares() -> None:
    """§5.4 QueueOrderFn, hierarchical: a leaf goes before a non-leaf whatever the shares —
    a2 (share 2/2 = 1) before b (share 0) — and two non-leaves compare their own shares: b (0)
    before a (0.5)."""
    ssn = engine.run_session(
        loads(HEADER + 'now: "2026-11-30T14:00:00Z"\n' + HIERARCHY_TIERS + SHARES)
    )
    q = ssn.queues
    assert ssn.queue_order(q["a2"], q["b"]) and not ssn.queue_order(q["b"], q["a2"])
    assert ssn.queue_order(q["b"], q["a"]) and not ssn.queue_order(q["a"], q["b"])


def test_real_capability_of_an_ancestor_blocks_allocation() -> None:
    """§5.3 / §5.4 Allocatable: the leaf and every ancestor must keep allocated + Resreq ≤
    realCapability. Parent p has capability 4 CPUs; leaf l1 inherits it (realCapability 4) and
    has nothing allocated, so a 2-CPU pod passes at l1 — but p already carries l2's 3 running
    CPUs: 3 + 2 = 5 > 4 at p. The pod stays pending and the reason names p and the amounts."""
    text = (
        HIERARCHY_TIERS
        + """nodes:
- {name: n1, allocatable: {cpu: "16", memory: 64Gi}}
queues:
- {name: root}
- {name: p, parent: root, capability: {cpu: '4'}}
- {name: l1, parent: p}
- {name: l2, parent: p}
jobs:
- name: run
  queue: l2
  tasks: [{name: w, replicas: 1, resources: {cpu: '3'}}]
  running: [{index: 0, node: n1}]
- name: new
  queue: l1
  tasks: [{name: w, replicas: 1, resources: {cpu: '2'}}]
"""
    )
    plan = solve(text)
    assert plan.placements == ()
    assert "queue p: cpu 5 > realCapability 4" in decision(plan, "new").reason


# -- TDM (§6, §9.12) --------------------------------------------------------------------------

TDM = """
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins:
    - {name: predicates}
    - {name: nodeorder}
    - {name: tdm, arguments: {tdm.revocable-zone.rz1: "10:00-21:00"}}
nodes:
- {name: rz, labels: {volcano.sh/revocable-zone: rz1}, allocatable: {cpu: "8", memory: 64Gi}}
jobs:
- name: j
  tasks:
  - name: w
    replicas: 1
    resources: {cpu: '1'}
    annotations: {volcano.sh/revocable-zone: "*"}
- name: plain
  tasks: [{name: w, replicas: 1, resources: {cpu: '1'}}]
"""


def test_revocable_node_is_used_inside_its_window() -> None:
    """§6 Predicate: at 14:00 the window 10:00-21:00 is active, so the revocable pod of j may
    use the revocable node; a pod without ``volcano.sh/revocable-zone: "*"`` may not."""
    plan = solve(TDM, now="2026-11-30T14:00:00Z")
    assert {p.pod: p.node for p in plan.placements} == {"default/j-w-0": "rz"}
    assert "volcano.sh/revocable-zone" in decision(plan, "plain").reason


def test_revocable_node_is_closed_outside_its_window() -> None:
    """§6 Predicate: at 22:00 the same window is inactive (start today 10:00, end today 21:00),
    so the node is UnschedulableAndUnresolvable for every pod and j stays pending."""
    plan = solve(TDM, now="2026-11-30T22:00:00Z")
    assert plan.placements == ()
    assert "outside its window (10:00-21:00)" in decision(plan, "j").reason


# -- vGPU (§7.3, §9.13) -----------------------------------------------------------------------

GPU_TIERS = """
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: nodeorder}]
"""


def gpu_cluster(cards: int) -> str:
    devices = "".join(
        f"  - {{id: GPU-{i}, index: {i}, type: NVIDIA-A100, memory: 81920}}\n" for i in range(cards)
    )
    return f"""nodes:
- name: n1
  allocatable: {{cpu: "16", memory: 64Gi}}
  gpus:
{devices}jobs:
- name: shared
  tasks: [{{name: w, replicas: 1, resources: {gpu_request(10)}}}]
  running: [{{index: 0, node: n1, gpus: [{{id: GPU-{cards - 1}, memory: 1000, cores: 10}}]}}]
- name: whole
  tasks: [{{name: w, replicas: 1, resources: {gpu_request(100)}}}]
"""


def gpu_request(cores: int) -> str:
    """One GPU with 1000 MiB and ``cores`` % of its cores, in HAMi's resource names."""
    return f"{{cpu: '1', nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, nvidia.com/gpucores: {cores}}}"


def test_full_core_request_needs_an_empty_card() -> None:
    """§7.3 rule 6: ``Coresreq == 100`` rejects a card with ``UsedNum > 0``. The default order
    tries the highest index first (§9.13), GPU-1, which holds a 10-core pod, so the exclusive
    pod gets GPU-0 although GPU-1 has memory and cores to spare."""
    plan = solve(GPU_TIERS + gpu_cluster(2))
    [placement] = plan.placements
    assert placement.pod == "default/whole-w-0"
    assert [g.id for g in placement.gpus or ()] == ["GPU-0"]


def test_full_core_request_waits_when_every_card_is_shared() -> None:
    """§7.3 rule 6 with a single card already shared: no device can take the exclusive pod, so
    it stays pending, and the reason says the node lacks the GPU devices."""
    plan = solve(GPU_TIERS + gpu_cluster(1))
    assert plan.placements == ()
    assert "node(s) without the free GPU devices requested" in decision(plan, "whole").reason


# -- node scoring (§2.5, §9.15) ---------------------------------------------------------------

SCORING_CLUSTER = """nodes:
- {name: n1, allocatable: {cpu: "16", memory: 64Gi}}
- {name: n2, allocatable: {cpu: "16", memory: 64Gi}}
jobs:
- name: fill
  tasks: [{name: w, replicas: 1, resources: {cpu: '8', memory: 32Gi}}]
  running: [{index: 0, node: n1}]
- name: j
  tasks: [{name: w, replicas: 1, resources: {cpu: '2', memory: 8Gi}}]
"""


def scheduler(*plugins: str) -> str:
    listed = ", ".join(f"{{name: {p}}}" for p in plugins)
    return f"""
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{{name: priority}}, {{name: gang}}]
  - plugins: [{{name: predicates}}, {listed}]
"""


def node_of_j(plugins: tuple[str, ...], seed: int = 0) -> str:
    plan = solve(scheduler(*plugins) + SCORING_CLUSTER, seed)
    return {p.pod: p.node for p in plan.placements}["default/j-w-0"]


def test_leastrequested_spreads_to_the_emptier_node() -> None:
    """§2.5 nodeorder: LeastAllocated for a 2-CPU / 8 GiB pod gives n1 (half full) ⌊(16−10)·
    100/16⌋ = 37 and n2 ⌊14·100/16⌋ = 87; BalancedAllocation (100) and TaintToleration (3 ×
    100) are equal. n2 wins."""
    assert node_of_j(("nodeorder",)) == "n2"


def test_binpack_packs_onto_the_fuller_node() -> None:
    """§2.5 binpack: (used + req)/allocatable averaged over cpu and memory, × 100: n1 (10/16 +
    40/64)/2 = 62.5, n2 12.5. n1 wins."""
    assert node_of_j(("binpack",)) == "n1"


def test_helm_default_scores_cancel_and_the_tie_is_random() -> None:
    """§9.15: with both, n1 = 37 + 62.5 and n2 = 87 + 12.5, plus the same 100 + 300: exactly
    499.5 each, so ``SelectBestNodeAndScore`` draws at random. Over 20 seeds both nodes are
    chosen (one node every time has probability 2·2⁻²⁰)."""
    chosen = {node_of_j(("nodeorder", "binpack"), seed) for seed in range(20)}
    assert chosen == {"n1", "n2"}
