"""The synthetic instance generator: shapes, validity, determinism, the load knob, the workload
mix and the file it writes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from models.instance import Instance
from models.load import from_dict, load
from models.tdm import node_zone, pod_revocable_zone
from optimizer.generate import RUNNING_SHARE, generate, stats, write_instance
from optimizer.greedy.engine import solve
from optimizer.verify import verify

SHAPE_NODES = {"S": 32, "M": 594, "L": 1280, "XL": 5000}
"""S: 4 racks × 8; M: 33 racks × 18; L: 2 blocks × 10 racks × 64; XL: 50 racks × 100."""

_cache: dict[tuple[str, int], Instance] = {}


def _instance(shape: str, seed: int = 1) -> Instance:
    """Loading XL takes about a second; each (shape, seed) is loaded once per test session."""
    if (shape, seed) not in _cache:
        _cache[shape, seed] = from_dict(generate(shape, seed), "<generated>")
    return _cache[shape, seed]


def _demand(instance: Instance, running_only: bool = False) -> float:
    """GPU-equivalents requested, computed from the loaded instance rather than the generator:
    each GPU a pod asks for counts max(cores share, memory share) on the smallest device, the
    way DESIGN §6 counts a share; a whole GPU is 1."""
    smallest = min(d.memory for n in instance.nodes for d in n.gpus)
    total = 0.0
    for job in instance.jobs:
        for pod in job.pods:
            if running_only and not pod.running:
                continue
            for request in job.task(pod.task).gpu:
                total += request.nums * request.share_of(smallest)
    return total


def _gpus(instance: Instance) -> int:
    return sum(len(n.gpus) for n in instance.nodes)


@pytest.mark.parametrize("shape", ["S", "M", "L", "XL"])
def test_every_shape_loads_without_errors_or_warnings(shape: str) -> None:
    """The generator promises instances that satisfy every validation rule (queue sums,
    capabilities, selectors, TDM zones, device bookings of running pods): ``from_dict`` raises
    on any error, and a clean document should not even warn, except XL about its size
    (8,930 pods × 5,000 nodes, minutes of greedy scanning, ``models.limits``). Node counts are
    the shapes'."""
    instance = _instance(shape)
    expected = ["8,930 pods × 5,000 nodes"] if shape == "XL" else []
    assert [w.message.split(" = ")[0] for w in instance.warnings] == expected
    assert len(instance.nodes) == SHAPE_NODES[shape]
    assert all(instance.topology.leaf_of(n.name) is not None for n in instance.nodes)


@pytest.mark.parametrize(
    ("shape", "tiers"),
    [
        ("S", {1: 4, 2: 2}),
        ("M", {1: 33, 2: 3}),
        ("L", {1: 20, 2: 2}),
        ("XL", {1: 50, 2: 5, 3: 1}),
    ],
)
def test_shapes_have_their_hypernode_tiers(shape: str, tiers: dict[int, int]) -> None:
    """S: 4 racks under 2 spines; M: 33 racks, 3 spines of 11; L: 20 racks of 64 under 2
    blocks; XL: 50 racks of 100, 5 spines of 10, one super-spine. Every rack holds the same
    number of nodes (nodes / racks)."""
    instance = _instance(shape)
    counts = Counter(h.tier for h in instance.hypernodes)
    assert dict(counts) == tiers
    racks = [h.name for h in instance.hypernodes if h.tier == 1]
    sizes = {instance.topology.node_count(r) for r in racks}
    assert sizes == {SHAPE_NODES[shape] // tiers[1]}
    if shape == "L":
        assert {h.tier_name for h in instance.hypernodes} == {"rack", "block"}


def test_same_seed_gives_the_same_document() -> None:
    """One ``random.Random(seed)`` drives every choice, so two calls agree exactly."""
    assert generate("M", 7) == generate("M", 7)
    assert generate("custom", 3, nodes=50, pods=120) == generate("custom", 3, nodes=50, pods=120)


def test_different_seeds_give_different_workloads() -> None:
    """The workload mix is drawn from the seed; two seeds agreeing on every job of 30-odd would
    be astronomically unlikely."""
    assert generate("S", 1)["jobs"] != generate("S", 2)["jobs"]


@pytest.mark.parametrize("shape", ["S", "M"])
@pytest.mark.parametrize("load_factor", [0.6, 1.0, 1.3, 2.0])
def test_load_knob_sets_total_gpu_demand_within_five_percent(
    shape: str, load_factor: float
) -> None:
    """Running plus pending GPU demand over the GPUs is the requested load: the generator stops
    adding work at the budget and trims the last job to it, so it can only overshoot by less
    than one pod (8 GPUs, 3.6 % of S's 224)."""
    instance = from_dict(generate(shape, 5, load_factor), "<generated>")
    ratio = _demand(instance) / _gpus(instance)
    assert ratio == pytest.approx(load_factor, rel=0.05)


@pytest.mark.parametrize("shape", ["S", "M", "L"])
def test_about_thirty_percent_of_the_gpus_are_already_busy(shape: str) -> None:
    """Running jobs are added until 30 % of the GPUs are held (the last one trimmed), so the
    busy share lands just at or above 30 % — well within 27–33 %."""
    instance = _instance(shape)
    busy = _demand(instance, running_only=True) / _gpus(instance)
    assert RUNNING_SHARE - 0.03 <= busy <= RUNNING_SHARE + 0.03


def test_pods_target_gives_exactly_that_many_pods() -> None:
    """With ``pods`` the generator counts pods, not GPUs: the last job is cut to the count, and
    small pods are drawn whenever the GPUs per pod run high, so the load still holds loosely
    (±5 % at a few hundred pods)."""
    instance = from_dict(generate("custom", 4, nodes=100, pods=400), "<generated>")
    assert len(instance.nodes) == 100
    assert len(instance.pods) == 400
    assert _demand(instance) / _gpus(instance) == pytest.approx(1.3, rel=0.05)


def test_running_pods_respect_tdm_and_hard_topology() -> None:
    """Running pods were laid out as Volcano would have allowed: a pod that is not revocable
    never sits on a revocable-zone node, and a running hard-topology job lies inside one
    HyperNode of its highest allowed tier."""
    instance = _instance("M")
    nodes = instance.node_by_name
    hard_running = 0
    for job in instance.jobs:
        for pod in job.pods:
            if pod.running and node_zone(nodes[pod.node].labels):
                assert pod_revocable_zone(job.task(pod.task).annotations) == "*"
        topo = job.network_topology
        if job.running and topo is not None and topo.mode == "hard":
            hard_running += 1
            tier = instance.topology.lca_tier({r.node for r in job.running})
            assert tier <= topo.highest_tier
    assert hard_running > 0


def test_workload_mix_covers_every_feature() -> None:
    """M has a couple of hundred jobs, enough for every kind of the mix: hard and soft gangs,
    fractional-GPU pods, revocable (preemptable, any-zone) jobs, all three priority classes,
    running pods, a revocable zone, both rack selector kinds, and 2–3 departments of 2–3
    teams each with jobs only in teams."""
    doc = generate("M", 1)
    instance = _instance("M")
    modes = Counter(j.network_topology.mode for j in instance.jobs if j.network_topology)
    assert modes["hard"] > 0 and modes["soft"] > 0
    assert any(r.cores < 100 for j in instance.jobs for t in j.tasks for r in t.gpu)
    assert any(pod_revocable_zone(t.annotations) == "*" for j in instance.jobs for t in j.tasks)
    assert {j.priority_class for j in instance.jobs} == {"high", "normal", "low"}
    assert any(j.running for j in instance.jobs)
    assert any(node_zone(n.labels) for n in instance.nodes)
    selectors = Counter(
        next(k for k in ("labelMatch", "regexMatch", "exactMatch") if k in m["selector"])
        for h in doc["hypernodes"]
        for m in h["members"]
    )
    assert selectors["labelMatch"] > 0 and selectors["regexMatch"] > 0
    tree = instance.queue_tree
    departments = tree.children("root")
    assert 2 <= len(departments) <= 3
    assert all(2 <= len(tree.children(d)) <= 3 for d in departments)
    assert {j.queue for j in instance.jobs} <= {t for d in departments for t in tree.children(d)}


def test_gang_sizes_stay_between_two_and_sixty_four() -> None:
    """Gangs (jobs with topology) have 2 to 64 pods, except a last job trimmed to the budget,
    which may be cut to one pod."""
    doc = generate("L", 2)
    sizes = [j["minAvailable"] for j in doc["jobs"] if "networkTopology" in j]
    assert sizes and max(sizes) <= 64
    assert sum(1 for s in sizes if s < 2) <= 1


@pytest.mark.parametrize("seed", range(12))
def test_small_instances_load_for_many_seeds(seed: int) -> None:
    """Validity must not hinge on a lucky seed: rare draws (a department with tiny deserved, a
    rack of L40S only) still give valid queues, selectors and device bookings."""
    instance = from_dict(generate("S", seed), "<generated>")
    assert instance.warnings == ()
    assert stats(generate("S", seed)).pods == len(instance.pods)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_greedy_plan_on_s_passes_the_verifier(seed: int) -> None:
    """The generated instance is realistic enough for the engine to place work (S holds about
    1.3 × its GPUs in demand, so some pods must be placed) and the verifier, the independent
    oracle, finds nothing wrong with the plan."""
    instance = _instance("S", seed)
    plan = solve(instance, seed)
    assert plan.placements
    assert verify(instance, plan) == []


def test_write_instance_writes_loadable_yaml_atomically(tmp_path: Path) -> None:
    """The YAML reads back to the same document and loads as the same instance; the temporary
    file of the atomic write is gone."""
    doc = generate("S", 3)
    path = tmp_path / "s.yaml"
    write_instance(doc, path)
    assert yaml.safe_load(path.read_text()) == doc
    assert load(path) == from_dict(doc, str(path))
    assert [p.name for p in tmp_path.iterdir()] == ["s.yaml"]


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("XXL", 1), {}),
        (("custom", 1), {}),
        (("S", 1), {"nodes": 10}),
        (("S", 1, 0.0), {}),
        (("custom", 1), {"nodes": 10, "pods": 0}),
    ],
)
def test_bad_arguments_are_refused(args: tuple[object, ...], kwargs: dict[str, int]) -> None:
    """Unknown shape, custom without nodes, nodes for a named shape, a non-positive load and a
    non-positive pod count are caller mistakes, refused with ValueError."""
    with pytest.raises(ValueError):
        generate(*args, **kwargs)  # type: ignore[arg-type]
