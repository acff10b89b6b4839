"""The Alibaba trace benchmark: arrival sequences, FGD/BestFit scores, the import, the CLI.

Expected values are worked by hand from ``spec/fgd-benchmark.md`` §4–§6; the reasoning is in
each docstring.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from benchmarks.alibaba import __main__ as alibaba_main
from benchmarks.alibaba import batches, policies, probe, replay, state, trace
from models.fragmentation import TypicalTask
from models.load import from_dict
from optimizer import trace_import as ti
from optimizer.options import SolveOptions
from optimizer.verify import verify

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "alibaba-gpu-v2023"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="trace CSVs not present")


def task(name: str, cpu: int = 1000, gpus: int = 1, milli: int = 1000, mem: int = 1024):
    return ti.TraceTask(name, cpu, mem, gpus, milli)


def one_node_state(
    free: list[int], typ: Sequence[TypicalTask], cpu: int = 64_000
) -> policies.Online:
    """A one-node cluster (8 devices, model G2) whose devices have ``free`` milli left."""
    nodes = [ti.TraceNode("n0", cpu, 262_144, len(free), "G2")]
    cluster = state.Cluster.of(nodes)
    cluster.gpus[0, : len(free)] = free
    return policies.Online(cluster, state.NodeClasses(cluster, typ, 8), np.array([0]), None)  # type: ignore[arg-type]


def mix(*specs: tuple[int, int, int, float]) -> tuple[TypicalTask, ...]:
    """A hand-made typical mix of (cpu, per-GPU milli, GPUs, p), any model."""
    return tuple(TypicalTask(c, q, k, (), p) for c, q, k, p in specs)


def frag(cpu: int, free: list[int], typ: Sequence[TypicalTask]) -> float:
    """F of a one-node G2 cluster's state, as the simulator's node classes compute it."""
    return float(one_node_state(free, typ, cpu).classes.total_frag())


# ---------------------------------------------------------------------------------- sequences


def test_draw_is_deterministic_per_seed_and_differs_across_seeds():
    """Same seed → same order and node ranks; another seed → another shuffle (20 tasks have
    20! orders, a collision is practically impossible). Ranks are a permutation."""
    tasks = [task(f"t{i:02d}", milli=100 * (i % 9 + 1)) for i in range(20)]
    a = ti.draw(tasks, 7, 42, 1.0, 20_000)
    b = ti.draw(list(reversed(tasks)), 7, 42, 1.0, 20_000)
    c = ti.draw(tasks, 7, 43, 1.0, 20_000)
    assert a == b, "input order must not matter: tasks are sorted by name first"
    assert [t.name for t in a.tasks] != [t.name for t in c.tasks]
    assert sorted(a.node_rank) == list(range(7))


def test_short_list_is_tuned_up_with_resampled_copies():
    """Three 1-GPU tasks (3,000 milli) against T = 1.0 × 10,000: draws of 1,000 milli are
    appended while total + 1,000 ≤ T, so exactly 7 copies: the total lands on T. The first
    three arrivals are the original tasks (shuffled), copies get ``-r<k>`` names."""
    tasks = [task("a"), task("b"), task("c")]
    seq = ti.draw(tasks, 1, 7, 1.0, 10_000).tasks
    assert len(seq) == 10
    assert sum(t.gpu_request for t in seq) == 10_000
    assert {t.name for t in seq[:3]} == {"a", "b", "c"}
    assert all("-r" in t.name for t in seq[3:])
    assert len({t.name for t in seq}) == 10


def test_tuning_checks_per_gpu_milli_so_an_8_gpu_draw_overshoots():
    """The simulator's quirk (§4 step 4): the stop test adds only the per-GPU milli. One
    8-GPU task (8,000) against T = 10,000: the draw passes 8,000 + 1,000 ≤ 10,000, is
    appended, and the total becomes 16,000 > T; then the loop ends (16,000 ≥ T)."""
    seq = ti.draw([task("big", gpus=8)], 1, 0, 1.0, 10_000).tasks
    assert [t.name for t in seq] == ["big", "big-r1"]
    assert sum(t.gpu_request for t in seq) == 16_000


def test_tuning_stops_at_the_first_draw_that_would_exceed():
    """One share of 600 against T = 1,000: the first draw fails 600 + 600 ≤ 1,000, so nothing
    is appended (no retry with another draw)."""
    seq = ti.draw([task("s", milli=600)], 1, 0, 1.0, 1_000).tasks
    assert [t.name for t in seq] == ["s"]


def test_long_list_loses_random_tasks_until_within_target():
    """Ten 1-GPU tasks (10,000) against T = 0.55 × 10,000 = 5,500: removal stops at the
    first total ≤ 5,500, i.e. 5 tasks (5,000) remain, all from the original list."""
    tasks = [task(f"t{i}") for i in range(10)]
    seq = ti.draw(tasks, 1, 3, 0.55, 10_000).tasks
    assert len(seq) == 5
    assert {t.name for t in seq} <= {t.name for t in tasks}


def test_typical_tasks_keep_the_most_common_specs_to_95_percent():
    """20 tasks: spec A × 12, B × 7, C × 1. A covers 60 %, A+B 95 % ≥ 95 %: C is dropped
    and the weights renormalise to 12/19 and 7/19."""
    tasks = [task(f"a{i}", cpu=1000) for i in range(12)]
    tasks += [task(f"b{i}", cpu=2000, milli=500) for i in range(7)]
    tasks += [task("c", cpu=3000, gpus=0, milli=0)]
    typ = trace.trace_mix(tasks)
    assert [t.cpu for t in typ] == [1000, 2000]
    assert [t.weight for t in typ] == pytest.approx([12 / 19, 7 / 19])


# ----------------------------------------------------------------------------- fragmentation


def test_frag_of_a_node_with_seven_free_gpus_and_one_partly_used():
    """Devices: 7 × 1,000 free and one with 300 free (7,300 free). Mix: a 500-milli share
    (p ½), a CPU-only task (p ¼), an 8-GPU task (p ¼).
    - share: fits (7 devices ≥ 500), fragment = devices below 500 = 300;
    - CPU-only: every free milli counts = 7,300;
    - 8 GPUs: only 7 whole devices, does not fit → 7,300.
    F = ½·300 + ¼·7,300 + ¼·7,300 = 150 + 3,650 = 3,800."""
    typ = mix((1000, 500, 1, 0.5), (1000, 0, 0, 0.25), (1000, 1000, 8, 0.25))
    assert frag(64_000, [1000] * 7 + [300], typ) == pytest.approx(3800.0)


def test_frag_counts_everything_when_cpu_or_model_rules_a_task_out():
    """Two free devices (2,000). A 500-share needing 32 cores on a 16-core node does not fit:
    2,000; the same share on a model it excludes: 2,000."""
    assert frag(16_000, [1000, 1000], mix((32_000, 500, 1, 1.0))) == pytest.approx(2000.0)
    t4_only = (TypicalTask(1000, 500, 1, ("T4",)),)
    assert frag(64_000, [1000, 1000], t4_only) == pytest.approx(2000.0)


# ---------------------------------------------------------------------------------- policies


def test_bestfit_raw_scores_and_min_max_normalisation():
    """Task 16 cores, 1 GPU. Node A: 64 cores, 8,000 milli free →
    L = ½·48k/128k + ½·7,000/8,000 = 0.1875 + 0.4375 = 0.625 → ⌊37.5⌋ = 37.
    Node B: 32 cores, 2,000 free → L = ½·16k/128k + ½·1,000/8,000 = 0.125 → 87.
    Min-max: A (37−37)·100/50 = 0, B 100. Equal scores all normalise to 100."""
    raw = policies.bestfit_raw(np.array([64_000, 32_000]), np.array([8000, 2000]), 16_000, 1000)
    assert raw.tolist() == [37, 87]
    assert policies.min_max_normalise(raw).tolist() == [0, 100]
    assert policies.min_max_normalise(np.array([5, 5])).tolist() == [100, 100]


def test_ties_go_to_the_lowest_permuted_name():
    """Nodes 0, 1, 2 score 7, 9, 9 with ranks 0, 5, 2: node 2 wins (rank 2 < 5)."""
    assert policies.pick(np.array([7, 9, 9]), np.array([0, 1, 2]), np.array([0, 5, 2])) == 2


def test_fgd_puts_a_share_where_fragmentation_grows_least():
    """The node of the Frag example (7 × 1,000 and one 300; F = 3,800), task: a 300-share.
    - on the 300 device: r = 0 → share 0, CPU-only 7,000, 8-GPU 7,000 → F = 3,500, Δ = −300,
      score ⌊100·σ(0.3)⌋ = ⌊57.44⌋ = 57;
    - on a whole device: 700 + 300 left → share 300, others 7,000 → F = 3,650, Δ = −150.
    FGD keeps the smallest Δ: device 7, score 57."""
    typ = mix((1000, 500, 1, 0.5), (1000, 0, 0, 0.25), (1000, 1000, 8, 0.25))
    state = one_node_state([1000] * 7 + [300], typ)
    fgd = policies.Fgd()
    share = task("s", milli=300)
    node, devices = fgd(state, share, np.array([0]))
    assert (node, devices) == (0, (7,))
    scores, deltas, _ = fgd.evaluate(state.classes, np.array([0]), share)
    assert deltas[0] == pytest.approx(-300.0)
    assert scores[0] == 57
    assert policies.fgd_score(np.array([-150.0, 0.0])).tolist() == [53, 50]


def test_best_devices_rule():
    """A share goes on the fitting device with least free (ties: lowest index); whole GPUs
    take the lowest-index completely free devices."""
    free = np.array([1000, 400, 300, 300, 1000, 1000])
    assert state.best_devices(free, task("s", milli=250)) == (2,)
    assert state.best_devices(free, task("w", gpus=2)) == (0, 4)


def test_volcano_score_is_nodeorder_plus_binpack():
    """One node, 100 cores / 100,000 MiB, empty; task 50 cores, 25,000 MiB, no GPU.
    LeastAllocated: cpu ⌊50·100/100⌋ = 50, memory 75 → ⌊(50·50 + 75·50)/100⌋ = 62;
    Balanced: |0.5 − 0.25|/2 = 0.125 → int(87.5) = 87; binpack (0.5 + 0.25)/2·100 = 37.5;
    TaintToleration 100 × 3 = 300 on every node. Total 486.5."""
    nodes = [ti.TraceNode("n0", 100_000, 100_000, 1, "T4")]
    cluster = state.Cluster.of(nodes)
    volcano = policies.VolcanoDefault(cluster, 0)
    t = ti.TraceTask("t", 50_000, 25_000, 0, 0)
    assert volcano.score(cluster, 0, t) == pytest.approx(486.5)


def test_online_run_drops_what_fits_nowhere():
    """One node with 2 GPUs: a 2-GPU task fills it, the next 1-GPU task is dropped, a
    CPU-only task still fits. Allocation 2,000 of 2,000 milli = 100 %."""
    nodes = [ti.TraceNode("n0", 64_000, 262_144, 2, "T4")]
    seq = [task("a", gpus=2), task("b"), ti.TraceTask("c", 1000, 10, 0, 0)]
    typ = trace.trace_mix(seq)
    result = replay.run_online(policies.Fgd(), "fgd", nodes, seq, [0], typ)
    assert result.placed.tolist() == [0, -1, 0]
    assert result.allocated.tolist() == [2000, 2000, 2000]
    assert result.arrived.tolist() == [2000, 3000, 3000]
    assert result.allocation_ratio == pytest.approx(100.0)


def test_discretised_allocation_at_an_arrival_percentage():
    """Capacity 1,000; arrived 400, 1,000, 1,040 with 400, 600, 600 allocated. Arrival
    100 % collects the points rounding to 100 (1,000 → 100, 1,040 → 104 no): 60 %. Arrival
    103 % has no point and falls back to 102 (none) then 104: 60 %."""
    result = replay.RunResult(
        "x", 0, 1.0, 1000, np.array([400, 1000, 1040]), np.array([400, 600, 600]),
        np.zeros(3), np.zeros(3, dtype=np.int64), 0.0,
    )  # fmt: skip
    assert result.at(100) == pytest.approx(60.0)
    assert result.at(103) == pytest.approx(60.0)
    assert result.at(40) == pytest.approx(40.0)


# --------------------------------------------------------------------- batches through vcopt


def test_batch_instance_holds_what_earlier_batches_placed():
    """One T4 node (15,109 MiB per device), 2 devices. Placed before: a 250-milli share on
    device 1 (HAMi books ⌊15,109 × 25 / 100⌋ = 3,777 MiB and 25 cores) with 2 cores and 1 GiB.
    The holder pod holds exactly that; a batch of one whole-GPU task can then only take
    device 0 (exclusive), and the plan read back says so."""
    nodes = [ti.TraceNode("n0", 16_000, 65_536, 2, "T4")]
    cluster = state.Cluster.of(nodes)
    builder = batches.BatchInstances(nodes)
    share = ti.TraceTask("s", 2000, 1024, 1, 250)
    cluster.place(0, share, (1,))
    builder.place(0, share, (1,))
    instance = builder.instance(cluster, [task("w")])
    (held,) = [p for p in instance.pods if p.running]
    (shares,) = held.gpus
    assert [(s.id, s.memory, s.cores) for s in shares] == [("GPU-n0-1", 3777, 25)]
    job = next(j for j in instance.jobs if j.name.startswith(batches.HOLDER))
    assert job.tasks[0].resources.get("cpu") == 2000
    options = SolveOptions.of(time_limit=5, workers=1, weights=replay.REPLAY_WEIGHTS)
    choices, _ = batches.solve_batch(builder, cluster, [task("w")], options)
    assert choices == [(0, (0,))]


def test_engine_batch_keeps_the_whole_device_an_8_gpu_task_needs():
    """Two idle 8-GPU G2 nodes (F = 0: both shapes fit); mix: 8-GPU tasks (p ½) and 1-GPU tasks
    (p ½). A batch of one 1-GPU task: wherever it goes, that node no longer fits an 8-GPU task,
    so F grows by ½ × 7,000 = 3,500 on either node. A second batch with one more 1-GPU task:
    on the same node F goes from 3,500 to ½ × 6,000 = 3,000 (Δ = −500), on the idle node
    Δ = +3,500, so it joins the first. Without the stage greedy's plan stands, and Volcano's
    LeastAllocated spreads it to the idle node (checked by hand)."""
    nodes = [ti.TraceNode(f"n{i}", 64_000, 262_144, 8, "G2") for i in range(2)]
    mix = trace.trace_mix([task("a", gpus=8), task("b")])
    options = SolveOptions.of(
        time_limit=5, workers=1, weights=replay.REPLAY_WEIGHTS, typical_mix=mix
    )
    cluster = state.Cluster.of(nodes)
    builder = batches.BatchInstances(nodes)
    (first,), _ = batches.solve_batch(builder, cluster, [task("t1")], options)
    assert first is not None
    cluster.place(first[0], task("t1"), first[1])
    builder.place(first[0], task("t1"), first[1])
    (second,), _ = batches.solve_batch(builder, cluster, [task("t2")], options)
    assert second is not None and second[0] == first[0]


@needs_data
def test_fgd_lookahead_is_fgd_on_a_copy_and_its_plan_verifies():
    """Three idle 2-GPU G2 nodes; a batch of a 1-GPU task, a 300-share and a 2-GPU task.
    The lookahead makes the choices FGD makes running the batch online, leaves the state as
    it was, and its plan of the batch's instance breaks no rule; the neighbourhood of one
    node per shape holds FGD's first choice for each shape."""
    nodes = [ti.TraceNode(f"n{i}", 64_000, 262_144, 2, "G2") for i in range(3)]
    batch = [task("w"), task("s", milli=300), task("d", gpus=2)]
    typ = trace.trace_mix(batch)
    online = replay.new_state(nodes, typ, [2, 0, 1], 0)
    expected = replay.run_online(policies.Fgd(), "fgd", nodes, batch, [2, 0, 1], typ)
    before = online.classes.of_node.copy()
    fgd = policies.Fgd()
    choices = batches.fgd_lookahead(online, batch, fgd)
    assert [c[0] if c else -1 for c in choices] == expected.placed.tolist()
    assert (online.classes.of_node == before).all() and online.cluster.allocated == 0
    near = batches.neighbourhood(online, batch, 1, fgd)
    first = [fgd(online, t, np.flatnonzero(online.cluster.feasible(t)))[0] for t in batch]
    assert set(first) <= set(near)
    builder = batches.BatchInstances(nodes)
    instance = builder.instance(online.cluster, batch)
    plan = builder.plan(instance, batch, choices)
    assert verify(instance, plan) == []
    assert builder.choices(instance, plan, batch) == choices


def test_neighbourhood_counts_node_states_and_takes_copies_of_each():
    """Five idle 2-GPU G2 nodes, a 500-share placed on device 0 of n3 and of n4: two node
    states, idle (n0–n2) and half-used (n3, n4). For a batch of 300-shares the neighbourhood
    offers ``per_shape`` states with ``copies`` nodes of each: one state × 2 copies is two
    alike nodes, FGD's first choice among them; two states × 1 copy is one node of each;
    asking for more states or copies than there are gives what there is."""
    nodes = [ti.TraceNode(f"n{i}", 64_000, 262_144, 2, "G2") for i in range(5)]
    share = task("s", milli=300)
    typ = trace.trace_mix([share, task("h", milli=500)])
    online = replay.new_state(nodes, typ, [0, 1, 2, 3, 4], 0)
    for n in (3, 4):
        online.cluster.place(n, task(f"h{n}", milli=500), (0,))
        online.classes.update(online.cluster, n)
    of = online.classes.of_node
    assert len({int(of[n]) for n in range(3)}) == 1 and of[3] == of[4] != of[0]
    fgd = policies.Fgd()
    batch = [share, task("s2", milli=300)]
    first = fgd(online, share, np.flatnonzero(online.cluster.feasible(share)))[0]
    one = batches.neighbourhood(online, batch, 1, fgd, copies=2)
    assert len(one) == 2 and len({int(of[n]) for n in one}) == 1 and first in one
    two = batches.neighbourhood(online, batch, 2, fgd, copies=1)
    assert len(two) == 2 and {int(of[n]) for n in two} == {int(of[0]), int(of[3])}
    assert batches.neighbourhood(online, batch, 3, fgd, copies=5) == [0, 1, 2, 3, 4]


def test_candidates_pin_each_task_to_its_shapes_nodes_and_fgds_choice():
    """Five idle 2-GPU G2 nodes, a 500-share on device 0 of n3 and n4. A batch of two
    300-shares, a 1-GPU task and a 2-GPU G3 task (no G3 node: it fits nowhere). With one state
    × one copy per shape, each share may go to FGD's best node for a share and wherever FGD's
    choices put shares; the 1-GPU task to FGD's best for it and its own choice; the G3 task
    to nothing, so its job carries no pin while every other job's required node affinity names
    its candidates."""
    nodes = [ti.TraceNode(f"n{i}", 64_000, 262_144, 2, "G2") for i in range(5)]
    share = task("s", milli=300)
    typ = trace.trace_mix([share, task("h", milli=500)])
    online = replay.new_state(nodes, typ, [0, 1, 2, 3, 4], 0)
    for n in (3, 4):
        online.cluster.place(n, task(f"h{n}", milli=500), (0,))
        online.classes.update(online.cluster, n)
    fgd = policies.Fgd()
    batch = [share, task("s2", milli=300), task("g", gpus=1),
             ti.TraceTask("x", 1000, 1024, 2, 1000, ("G3",))]  # fmt: skip
    lookahead = batches.fgd_lookahead(online, batch, fgd)
    assert lookahead[3] is None
    allowed = batches.candidates(online, batch, 1, fgd, 1, lookahead)
    best_share = batches.shape_nodes(online, share, 1, fgd, 1)
    assert allowed[0] == allowed[1] == sorted(set(best_share) | {lookahead[0][0], lookahead[1][0]})
    assert set(allowed[2]) == set(batches.shape_nodes(online, batch[2], 1, fgd, 1)) | {
        lookahead[2][0]
    }
    assert allowed[3] == []
    builder = batches.BatchInstances(nodes)
    instance = batches.batch_instance(builder, online, batch, lookahead, fgd, 1, 1, True)
    assert {n.name for n in instance.nodes} == {f"n{i}" for a in allowed for i in a}
    pending = {j.name: j.tasks[0] for j in instance.jobs if not j.name.startswith("held")}
    for t, nodes_of in zip(batch, allowed, strict=True):
        terms = pending[t.name].required_affinity
        if not nodes_of:
            assert terms == ()
            continue
        ((requirement,),) = [term.match_expressions for term in terms]
        assert requirement.key == "kubernetes.io/hostname" and requirement.operator == "In"
        assert sorted(requirement.values) == [f"n{i}" for i in nodes_of]
    unpinned = batches.batch_instance(builder, online, batch, lookahead, fgd, 1, 1, False)
    assert all(j.tasks[0].required_affinity == () for j in unpinned.jobs)


@needs_data
def test_import_trace_loads_and_books_shares_as_hami_percentages():
    """A slice (one node per shape: 15 nodes) of gpuspec33. Every job is one pod; a share of
    m milli asks ``gpumem-percentage`` = ``gpucores`` = m/10, which HAMi books as ⌊memory ×
    m/1000⌋ MiB and m/10 cores, so its GPU-equivalent share is m/1000; a whole GPU books
    100 cores (exclusive). gpu_spec becomes ``nvidia.com/use-gputype``."""
    doc = ti.import_trace(
        DATA / "openb_pod_list_gpuspec33.csv",
        DATA / "openb_node_list_gpu_node.csv",
        42,
        1.3,
        nodes_per_shape=1,
    )
    instance = from_dict(doc, "alibaba-slice")
    assert len(instance.nodes) == 15
    assert len(instance.jobs) == len(doc["jobs"]) == len(instance.pods)
    node = next(n for n in instance.nodes if n.labels[ti.GPU_MODEL_LABEL] == "T4")
    device = node.gpus[0]
    assert device.type == "NVIDIA-T4"
    assert device.memory == 15109
    checked = Counter()
    for job, raw in zip(instance.jobs, doc["jobs"], strict=True):
        res = raw["tasks"][0]["resources"]
        (spec,) = job.tasks
        requests = spec.gpu
        if "nvidia.com/gpumem-percentage" in res:
            pct = res["nvidia.com/gpumem-percentage"]
            (req,) = requests
            assert req.memory_on(device.memory) == device.memory * pct // 100
            assert req.booked_cores == pct
            assert req.share_of(device.memory) == pytest.approx(pct / 100)
            checked["share"] += 1
        elif "nvidia.com/gpu" in res:
            (req,) = requests
            assert req.nums == res["nvidia.com/gpu"]
            assert req.exclusive
            checked["whole"] += 1
        if "annotations" in raw["tasks"][0]:
            assert spec.annotations[ti.USE_GPU_TYPE]
            checked["spec"] += 1
    assert checked["share"] and checked["whole"] and checked["spec"]


@needs_data
def test_committed_slice_is_the_import_of_its_stated_command():
    """instances/alibaba-slice.yaml is regenerated by the import it names in its header."""
    import yaml

    text = (REPO / "instances" / "alibaba-slice.yaml").read_text()
    doc = yaml.safe_load(text)
    fresh = ti.import_trace(
        DATA / "openb_pod_list_default.csv",
        DATA / "openb_node_list_gpu_node.csv",
        42,
        1.3,
        nodes_per_shape=1,
    )
    assert doc == fresh
    assert from_dict(doc, "alibaba-slice").jobs


# ------------------------------------------------------------------------------ the benchmark


@needs_data
def test_benchmark_cli_smoke_on_a_slice():
    """Every online policy and a tiny cpsat batch run on a 15-node slice; each prints one JSON
    object with a ratio in (0, 100] and never allocates more than arrived."""
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.alibaba",
        "--policy",
        "bestfit,fgd,volcano,random,dotprod,cpsat-batch",
        "--seeds",
        "42",
        "--nodes-per-shape",
        "1",
        "--batch",
        "32",
        "--time-limit",
        "3",
        "--data",
        str(DATA),
        "--json",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True, cwd=REPO)
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["policy"] for r in rows] == ["bestfit", "fgd", "volcano", "random", "dotprod",
                                           "cpsat-batch"]  # fmt: skip
    for row in rows:
        assert 0 < row["allocation_ratio"] <= 100
        assert row["seed"] == 42 and row["arrival"] == 1.3
        assert row["wall_seconds"] >= 0
        assert not any(isinstance(v, float) and math.isnan(v) for v in row["alloc_at"].values())


def test_replay_solves_name_no_reasons_and_keep_the_bound_unless_told(monkeypatch):
    """A batch's solve names no pending reasons (the replay reads only placements) and, like
    ``vcopt solve``, proves a bound unless ``--no-bound`` says otherwise."""
    tasks = [task("a"), task("b", milli=500)]
    plain = replay.engine_options(tasks, replay.BatchOptions())
    assert plain.search.bound
    assert not replay.engine_options(tasks, replay.BatchOptions(bound=False)).search.bound
    asked: dict[str, object] = {}

    class Asked(Exception):
        pass

    def solve(instance, engine, options, **keywords):
        asked.update(keywords)
        raise Asked

    monkeypatch.setattr(replay, "solve", solve)
    with pytest.raises(Asked):
        replay._solve_child(None, None, None, [], "cpsat", plain)
    assert asked == {"reasons": False}


def test_mix_coverage_decides_which_specs_the_batches_typical_mix_holds():
    """19 one-GPU tasks and one eight-GPU task: the one-GPU spec alone covers 95 % of the list,
    so FGD's coverage leaves the eight-GPU spec out and full coverage takes it in, at 1/20."""
    tasks = [task(f"a{i}") for i in range(19)] + [task("big", cpu=8000, gpus=8)]
    default = replay.engine_options(tasks, replay.BatchOptions()).objective.typical_mix
    full = replay.engine_options(tasks, replay.BatchOptions(mix_coverage=1.0)).objective.typical_mix
    assert [(t.gpus, t.weight) for t in default] == [(1, 1.0)]
    assert sorted((t.gpus, t.weight) for t in full) == [(1, 0.95), (8, 0.05)]


@pytest.mark.parametrize("bad", ["0", "1.5", "-0.1", "nan", "most"])
def test_bad_mix_coverage_is_refused_with_exit_code_2(bad, capsys):
    with pytest.raises(SystemExit) as stop:
        alibaba_main.main(["--policy", "cpsat-batch", "--mix-coverage", bad])
    assert stop.value.code == 2
    assert "--mix-coverage" in capsys.readouterr().err


@needs_data
def test_volcano_fast_path_makes_the_greedy_engines_choices_on_the_slice():
    """The ``volcano`` policy is a fast path of Volcano's Helm-default scores. On the committed
    slice's cluster and arrivals (15 nodes, 103 tasks, seed 42), one pod per cycle through
    ``optimizer.greedy`` (each cycle an instance of the state so far) picks, every cycle, a
    node among the fast path's top-scoring ones (exact ties are broken at random by both, with
    different generators), the same devices on it, and drops the same tasks. Both continue
    from the engine's choice."""
    nodes = ti.shape_sample(ti.read_nodes(DATA / "openb_node_list_gpu_node.csv"), 1)
    tasks = ti.read_tasks(DATA / "openb_pod_list_default.csv")
    seq = ti.draw(tasks, len(nodes), 42, 1.3, ti.capacity_milli(nodes)).tasks
    cluster = state.Cluster.of(nodes)
    volcano = policies.VolcanoDefault(cluster, 42)
    builder = batches.BatchInstances(nodes)
    options = SolveOptions()
    ties = placed = 0
    for t in seq:
        best = volcano.best(cluster, t, np.flatnonzero(cluster.feasible(t)))
        (choice,), _ = batches.solve_batch(builder, cluster, [t], options, "greedy")
        if not best:
            assert choice is None, t.name
            continue
        assert choice is not None and choice[0] in best, t.name
        assert volcano.commit(cluster, choice[0], t) == choice[1], t.name
        cluster.place(choice[0], t, choice[1])
        builder.place(choice[0], t, choice[1])
        ties += len(best) > 1
        placed += 1
    print(f"{placed} placed, {ties} with tied top scores")
    assert placed and ties < placed


@needs_data
def test_probe_puts_batches_from_fgds_states_to_the_engine_on_the_slice():
    """Two probes on the 15-node slice: one row per point, in order; FGD's choices are the
    engine's start plan, so the engine places at least as much GPU as FGD in every batch,
    and the table's total counts the batches it improved."""
    nodes = ti.shape_sample(ti.read_nodes(DATA / "openb_node_list_gpu_node.csv"), 1)
    tasks = ti.read_tasks(DATA / "openb_pod_list_default.csv")
    batch = replay.BatchOptions(8, 3.0, 1, 42)
    rows = probe.probe(nodes, tasks, 42, [40, 16], batch, {})
    assert [r.at for r in rows] == [16, 40]
    for r in rows:
        assert 0 < r.nodes <= len(nodes) and r.status in ("OPTIMAL", "FEASIBLE")
        assert r.allocated_engine >= r.allocated_fgd > 0
    improved = sum(1 for r in rows if r.gain > 0)
    assert probe.table(rows).endswith(
        f"improved {improved} of 2 batches; F saved in all: {sum(r.gain for r in rows):,.1f} milli"
    )
