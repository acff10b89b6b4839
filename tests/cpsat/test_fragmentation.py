"""The fragmentation stage: FGD's F of a node state, the typical mix of an instance, and the
agreement of the model's stage expression with :func:`evaluate` on plans.

F is worked by hand from the definition in ``models.fragmentation`` (FGD benchmark spec §6).
"""

from __future__ import annotations

import dataclasses
import json
import types
from pathlib import Path

import pytest
from cpsat_kit import BASE, checked, greedy, instance, options
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from models.errors import InputError
from models.fragmentation import (
    TypicalTask,
    fragmentation,
    instance_mix,
    most_common,
    share_milli,
)
from models.gpu import GpuDevice, GpuRequest
from models.load import load
from models.workload import DeviceShare
from optimizer.cli import main
from optimizer.cpsat.compile.fragmentation import SCALE
from optimizer.cpsat.model.frag_stage import curve_of, share_load_bound
from optimizer.cpsat.model.objective import evaluate
from optimizer.cpsat.model.variables import value_of
from optimizer.cpsat.params import parameters
from optimizer.cpsat.search import CpsatModel
from optimizer.cpsat.solution.expand import expand
from optimizer.cpsat.solution.extract import plan_from
from optimizer.options import OptionError, SolveOptions
from optimizer.plan import Placement, Plan
from optimizer.progress import Progress
from optimizer.solve import solve
from optimizer.typical_mix import load_mix
from optimizer.verify import verify

SLICE = Path(__file__).resolve().parents[2] / "instances" / "alibaba-slice.yaml"
ON = {"fragmentation": 1}
TWO_T4 = """
    nodes:
      - name: n0
        allocatable: {cpu: 16, memory: 64Gi, pods: 110}
        gpus: {count: 2, type: NVIDIA-T4, memory: 15109}
    """
"""One node with two idle T4 devices."""


def test_frag_of_a_node_with_seven_free_gpus_and_one_partly_used() -> None:
    """Devices: 7 × 1,000 free and one with 300 free (7,300 free). Mix: a 500-milli share
    (p ½), a CPU-only task (p ¼), an 8-GPU task (p ¼).
    - share: fits (7 devices ≥ 500), fragment = devices below 500 = 300;
    - CPU-only: every free milli counts = 7,300;
    - 8 GPUs: only 7 whole devices, does not fit → 7,300.
    F = ½·300 + ¼·7,300 + ¼·7,300 = 3,800. With 4 cores free the share (8 cores) no longer
    fits either: F = 7,300."""
    mix = (
        TypicalTask(8000, 500, 1, (), 0.5),
        TypicalTask(1000, 0, 0, (), 0.25),
        TypicalTask(1000, 1000, 8, (), 0.25),
    )
    types = ("NVIDIA-A10",) * 8
    assert fragmentation(64_000, (1000,) * 7 + (300,), types, mix) == pytest.approx(3800)
    assert fragmentation(4000, (1000,) * 7 + (300,), types, mix) == pytest.approx(7300)


def test_frag_counts_everything_on_devices_of_a_type_the_task_excludes() -> None:
    """Two free A10 devices; a share that may only use V100 types cannot fit: F = 2,000.
    Allowed on ``A10`` (a substring of ``NVIDIA-A10``): fits, nothing below 500, F = 0."""
    state = (64_000, (1000, 1000), ("NVIDIA-A10", "NVIDIA-A10"))
    assert fragmentation(*state, (TypicalTask(1000, 500, 1, ("V100",)),)) == pytest.approx(2000)
    assert fragmentation(*state, (TypicalTask(1000, 500, 1, ("A10",)),)) == pytest.approx(0)


def test_share_milli_reads_percentages_and_whole_devices() -> None:
    """A HAMi share of 25 % memory and 25 cores is 250 milli on any device; an exclusive
    request (100 cores) is the whole device; an absolute 8,192 MiB on a 32,768 MiB device with
    10 cores is max(0.1, 0.25) = 250 milli."""
    assert share_milli(GpuRequest(1, 0, 25, 25, "hami"), 15109) == 250
    assert share_milli(GpuRequest(1, 0, None, 100, "hami"), 15109) == 1000
    assert share_milli(GpuRequest(1, 8192, None, 10, "hami"), 32768) == 250


def test_most_common_keeps_specs_to_the_coverage_and_breaks_ties_by_spec() -> None:
    """Counts a × 12, b × 7, c × 1 (20): a covers 60 %, a + b 95 %: c is cut. Equal counts go
    to the smaller spec first, whatever the input order."""
    assert most_common(["a"] * 12 + ["c"] + ["b"] * 7) == [("a", 12), ("b", 7)]
    assert most_common(["y", "x"], coverage=0.5) == [("x", 1)]


def test_instance_mix_is_the_instances_own_pods() -> None:
    """Three pods of 25 % shares and one whole GPU: 75 % are shares, so both shapes are
    needed to cover 95 %; weights ¾ and ¼, per-GPU milli 250 and 1,000."""
    inst = instance(
        TWO_T4,
        """
        jobs:
          - name: s
            tasks:
              - name: t
                replicas: 3
                resources: {cpu: 1, memory: 1Gi, nvidia.com/gpu: 1,
                            nvidia.com/gpumem-percentage: 25, nvidia.com/gpucores: 25}
          - name: w
            tasks:
              - {name: t, resources: {cpu: 2, memory: 1Gi, nvidia.com/gpu: 1}}
        """,
    )
    mix = instance_mix(inst)
    assert [(t.cpu, t.milli, t.gpus) for t in mix] == [(1000, 250, 1), (2000, 1000, 1)]
    assert [t.weight for t in mix] == pytest.approx([0.75, 0.25])


def test_the_stage_is_off_by_default_and_named_in_weights() -> None:
    assert "fragmentation" not in SolveOptions().objective.active_stages
    assert SolveOptions.of(weights=ON).objective.active_stages == [
        "work", "fairness", "topology", "fragmentation", "packing"
    ]  # fmt: skip
    with pytest.raises(OptionError, match="unknown stage 'fragment'"):
        SolveOptions.of(weights={"fragment": 1})


def test_hinted_stage_value_agrees_with_evaluate_on_the_trace_slice() -> None:
    """The stage is linear in the counts and device uses, so at the hint of the greedy plan
    (15 nodes, 103 arrivals of the trace) the expression equals ``evaluate`` of that plan, on
    the class model and the per-node model alike; and greedy places pods, so it is not 0."""
    inst = load(str(SLICE))
    floor = greedy(inst)
    for aggregate in (True, False):
        model = CpsatModel(inst, options(weights=ON, aggregate=aggregate))
        hint = model.hint_plan(floor)
        expected = evaluate(model.data, floor).fragmentation
        assert value_of(model.stages["fragmentation"], hint) == expected != 0


def test_solution_stage_value_agrees_with_evaluate_on_the_trace_slice() -> None:
    """At any solution (not only an optimum), read back through the auxiliaries' derivations
    as the engine reads it, the expression equals ``evaluate`` of the plan expanded from it,
    device classes included: the plan puts shares on the devices the solution chose."""
    inst = load(str(SLICE))
    model = CpsatModel(inst, options(weights=ON, objective="weighted", aggregate=False))
    assert model.step_terms  # presolve off: the search starts from the complete hint
    result = model.search(model.hint_plan(greedy(inst)), 5.0, Progress())
    assert result.values is not None
    expansion = expand(model.vars, result.values)
    assert not expansion.failed_units
    plan = checked(inst, plan_from(model.vars, result.values, expansion, inst, 0))
    assert plan.placements
    value = value_of(model.stages["fragmentation"], result.values)
    assert value == evaluate(model.data, plan).fragmentation


def test_presolve_is_off_exactly_when_the_step_terms_are_in_the_model() -> None:
    """The stage on with a mix: presolve off; the stage on without any GPU pod (no mix, no
    terms) or the stage off: CP-SAT's default (on). Options' own parameters come last."""
    solver = cp_model.CpSolver()
    parameters(solver, options(), 1.0, 100, step_terms=True)
    assert solver.parameters.cp_model_presolve is False
    solver = cp_model.CpSolver()
    parameters(solver, options(), 1.0, 100, step_terms=False)
    assert solver.parameters.cp_model_presolve is True
    solver = cp_model.CpSolver()
    parameters(solver, options(parameters={"cp_model_presolve": True}), 1.0, 100, True)
    assert solver.parameters.cp_model_presolve is True
    shares = instance(BASE, TWO_T4, _shares(2, 30))
    assert CpsatModel(shares, options(weights=ON)).step_terms
    assert not CpsatModel(shares, options()).step_terms
    assert not CpsatModel(instance(BASE, TWO_T4), options(weights=ON)).step_terms


def test_typical_mix_file_is_read_and_its_weights_scaled(tmp_path: Path) -> None:
    """Weights 3 and 1 become ¾ and ¼; a CPU-only shape keeps milli 0 whatever it says."""
    path = tmp_path / "mix.yaml"
    path.write_text(
        "- {cpu: 8000, gpuMilli: 500, gpus: 1, types: [A10], weight: 3}\n"
        "- {cpu: 2000, gpus: 0, weight: 1}\n"
    )
    assert load_mix(path) == (
        TypicalTask(8000, 500, 1, ("A10",), 0.75),
        TypicalTask(2000, 0, 0, (), 0.25),
    )


def test_bad_typical_mix_names_file_item_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every problem of the file, each with the item and field, and the CLI exits 2 with no
    traceback: a share above 1,000 milli, a negative CPU, a zero weight, an unknown field."""
    path = tmp_path / "mix.yaml"
    path.write_text(
        "- {cpu: 1000, gpuMilli: 1500, gpus: 1}\n- {cpu: -1, gpus: 0, weight: 0, gpu: 1}\n"
    )
    with pytest.raises(InputError) as err:
        load_mix(path)
    found = {(p.obj, p.field) for p in err.value.problems}
    assert found == {
        ("typical[0]", "gpuMilli"),
        ("typical[1]", "cpu"),
        ("typical[1]", "weight"),
        ("typical[1]", ""),
    }
    assert all(p.file == str(path) for p in err.value.problems)
    code = main(["solve", str(SLICE), "--weights", "fragmentation=1", "--typical-mix", str(path)])
    assert code == 2
    out = capsys.readouterr()
    assert "typical[0]: gpuMilli" in out.err and "Traceback" not in out.err


def test_cli_solves_with_the_stage_and_a_given_mix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--weights fragmentation=1 --typical-mix FILE`` runs the stage: the JSON plan reports
    its value among the solver's stages."""
    path = tmp_path / "mix.yaml"
    path.write_text("- {cpu: 4000, gpuMilli: 1000, gpus: 1}\n")
    args = ["solve", str(SLICE), "--weights", "fragmentation=1", "--typical-mix", str(path)]
    assert main([*args, "--time-limit", "10", "--format", "json", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "fragmentation" in doc["solver"]["stages"]


# -- F per device ----------------------------------------------------------------------------


def _shares(n: int, percent: int) -> str:
    """``n`` one-pod jobs, each a share of ``percent`` % memory and cores."""
    jobs = "".join(
        f"""
      - name: s{i}
        tasks:
          - name: t
            resources: {{cpu: 1, memory: 1Gi, nvidia.com/gpu: 1,
                        nvidia.com/gpumem-percentage: {percent}, nvidia.com/gpucores: {percent}}}"""
        for i in range(n)
    )
    return "jobs:" + jobs


def test_device_curve_adds_up_to_f_of_the_example_node() -> None:
    """The node of the first test (7 × 1,000 free and one 300): of the mix only the share
    fits the node (the CPU-only task never does, the 8-GPU one finds 7 whole devices), so
    φ(r) = r below 500 and r·½ from 500 on: 7 × 500 + 300 = 3,800 = F, in SCALE units."""
    mix = [TypicalTask(8000, 500, 1, (), 0.5), TypicalTask(1000, 0, 0, (), 0.25),
           TypicalTask(1000, 1000, 8, (), 0.25)]  # fmt: skip
    curve = curve_of(mix, [True, False, False], "NVIDIA-A10")
    assert curve.starts == (0, 500)
    assert sum(curve.value(r) for r in (1000,) * 7 + (300,)) == 3800 * SCALE


def test_shares_stacked_on_one_device_are_valued_together() -> None:
    """Two idle T4 devices, two pods of 30 % shares, typical mix: one whole GPU (p 1). Both on
    one device leave 400 + 1,000 free: F = 400 (the 1,000 device takes the task). One on each
    leaves 700 + 700: F = 1,400. Before, F = 0. Valued pod by pod against the snapshot, both
    placements cost the same (+700 each); per device the stage is −400 stacked, −1,400
    spread, and CP-SAT stacks them."""
    inst = instance(BASE, TWO_T4, _shares(2, 30))
    mix = (TypicalTask(1000, 1000, 1),)
    plan = checked(inst, solve(inst, "cpsat", options(weights=ON, typical_mix=mix,
                                                      objective="weighted")))  # fmt: skip
    devices = {share.id for p in plan.placements for share in p.gpus or ()}
    assert len(plan.placements) == 2 and len(devices) == 1
    model = CpsatModel(inst, options(weights=ON, typical_mix=mix))
    assert evaluate(model.data, plan).fragmentation == -400 * SCALE
    spread = Plan(
        placements=tuple(
            Placement(p.pod, "n0", (DeviceShare(f"GPU-n0-{i}", s.memory, s.cores),))
            for i, (p, s) in enumerate((p, p.gpus[0]) for p in plan.placements if p.gpus)
        )
    )
    checked(inst, spread)
    assert evaluate(model.data, spread).fragmentation == -1400 * SCALE
    assert value_of(model.stages["fragmentation"], model.hint_plan(spread)) == -1400 * SCALE


def test_the_plan_puts_shares_on_the_devices_the_solution_chose() -> None:
    """Three T4 devices: device 0 idle, devices 1 and 2 each hold a running 30 % share (700
    free); mix: a 50 % share (p 1); pending: one 40 % share. Before, every device takes the
    typical share: F = 0. On device 0 the new share leaves 600 (takes it): stage 0; on 1 or 2
    it leaves 300 (< 500, fragment): stage −300. The model picks device 0 and the plan must
    put it there: greedy takes the last device that fits (2), and the expansion's own
    preference, the fullest device first, would be device 1."""
    node = """
        nodes:
          - name: n0
            allocatable: {cpu: 16, memory: 64Gi, pods: 110}
            gpus: {count: 3, type: NVIDIA-T4, memory: 15109}
    """
    share = """
              - name: t
                resources: {cpu: 1, memory: 1Gi, nvidia.com/gpu: 1,
                            nvidia.com/gpumem-percentage: %d, nvidia.com/gpucores: %d}"""
    held = "".join(
        f"""
          - name: held{d}
            tasks:{share % (30, 30)}
            running:
              - {{index: 0, node: n0, gpus: [{{id: GPU-n0-{d}, memory: 4532, cores: 30}}]}}"""
        for d in (1, 2)
    )
    jobs = f"""
        jobs:{held}
          - name: s
            tasks:{share % (40, 40)}
    """
    inst = instance(BASE, node, jobs)
    mix = (TypicalTask(1000, 500, 1),)
    opts = options(weights=ON, typical_mix=mix, objective="weighted")
    plan = checked(inst, solve(inst, "cpsat", opts))
    assert plan.engine == "cpsat"
    (placed,) = plan.placements
    assert [share.id for share in placed.gpus] == ["GPU-n0-0"]
    model = CpsatModel(inst, opts)
    assert evaluate(model.data, plan).fragmentation == 0
    for d in (1, 2):
        elsewhere = dataclasses.replace(placed.gpus[0], id=f"GPU-n0-{d}")
        hand = checked(inst, Plan(placements=(Placement(placed.pod, "n0", (elsewhere,)),)))
        assert evaluate(model.data, hand).fragmentation == -300 * SCALE


def test_share_load_bound_is_the_free_cores_or_memory_at_the_heaviest_ratio() -> None:
    """A T4 (100 cores, 15,109 MiB) with 70 cores and 10,577 MiB free (device_free: 700). 40 %
    shares (400 milli, 40 cores, 6,043 MiB) can take at most 10 milli per free core = 700 by
    cores, 400/6,043 per MiB × 10,577 = 700.1 → 700 by memory: never more than the 700 free,
    so no step below zero is needed. A share heavy in memory (500 milli from 7,554 MiB, 10
    cores) may, by cores, reach 50 × 70 = 3,500, but by memory 500/7,554 × 10,577 = 700.1 →
    700. With a memory-only share (0 cores) cores bound nothing; with every share at 0 in
    both, there is no bound."""
    device = GpuDevice(id="g", index=0, type="NVIDIA-T4", memory=15109, cores=100)
    dc = types.SimpleNamespace(device=device, free_cores=70, free_memory=10577)
    assert share_load_bound(dc, [(400, 40, 6043)]) == 700
    assert share_load_bound(dc, [(400, 40, 6043), (500, 10, 7554)]) == 700
    assert share_load_bound(dc, [(500, 0, 7554)]) == 700
    assert share_load_bound(dc, [(0, 0, 0)]) is None


def test_cpu_a_pod_takes_can_stop_a_typical_task_fitting() -> None:
    """Nodes a (4 cores) and b (8 cores), one idle T4 each; mix: a 50 % share needing 4 cores
    (p 1); pending: a CPU-only pod of 1 core. On a the share no longer fits (3 cores left):
    all 1,000 free milli become fragment, stage −1,000; on b nothing changes. CP-SAT puts it
    on b; the model's expression agrees with ``evaluate`` on both plans."""
    inst = instance(
        BASE,
        """
        nodes:
          - name: a
            allocatable: {cpu: 4, memory: 64Gi, pods: 110}
            gpus: {count: 1, type: NVIDIA-T4, memory: 15109}
          - name: b
            allocatable: {cpu: 8, memory: 64Gi, pods: 110}
            gpus: {count: 1, type: NVIDIA-T4, memory: 15109}
        jobs:
          - name: c
            tasks:
              - {name: t, resources: {cpu: 1, memory: 1Gi}}
        """,
    )
    mix = (TypicalTask(4000, 500, 1),)
    opts = options(weights=ON, typical_mix=mix, objective="weighted")
    plan = checked(inst, solve(inst, "cpsat", opts))
    assert [p.node for p in plan.placements] == ["b"]
    model = CpsatModel(inst, opts)
    (pod,) = [p.key for p in inst.pods]
    for node, expected in (("a", -1000 * SCALE), ("b", 0)):
        hand = Plan(placements=(Placement(pod, node, ()),))
        assert evaluate(model.data, hand).fragmentation == expected
        assert value_of(model.stages["fragmentation"], model.hint_plan(hand)) == expected


def test_a_share_can_leave_a_multi_gpu_typical_task_too_few_whole_devices() -> None:
    """Mix: a 2-GPU task of whole devices needing 4 cores (p 1). Idle T4s: a has two and 16
    cores, b three and 4 cores, c three and 16 cores; pending: a 30 % share with 1 core.
    Before, the task fits every node and no device is below 1,000: F = 0. On a the share
    leaves 700 + 1,000, one whole device: the task no longer fits, all 1,700 count, stage
    −1,700. On b 3 cores are left: it no longer fits, 700 + 2,000 count, −2,700. On c it
    still fits (two whole devices): only the 700 count, −700. Per device alone every node
    would cost −700; CP-SAT must put it on c."""
    nodes = "nodes:" + "".join(
        f"""
          - name: {name}
            allocatable: {{cpu: {cpu}, memory: 64Gi, pods: 110}}
            gpus: {{count: {count}, type: NVIDIA-T4, memory: 15109}}"""
        for name, cpu, count in (("a", 16, 2), ("b", 4, 3), ("c", 16, 3))
    )
    inst = instance(BASE, nodes, _shares(1, 30))
    mix = (TypicalTask(4000, 1000, 2),)
    opts = options(weights=ON, typical_mix=mix, objective="weighted")
    plan = checked(inst, solve(inst, "cpsat", opts))
    assert [p.node for p in plan.placements] == ["c"]
    model = CpsatModel(inst, opts)
    ((placed,),) = [p.gpus for p in plan.placements]
    (pod,) = [p.key for p in inst.pods]
    for node, expected in (("a", -1700), ("b", -2700), ("c", -700)):
        share = dataclasses.replace(placed, id=f"GPU-{node}-0")
        hand = checked(inst, Plan(placements=(Placement(pod, node, (share,)),)))
        assert evaluate(model.data, hand).fragmentation == expected * SCALE
        assert value_of(model.stages["fragmentation"], model.hint_plan(hand)) == expected * SCALE


# -- starting from a given plan --------------------------------------------------------------


def test_a_better_start_plan_is_the_hint_and_the_floor() -> None:
    """With the stage on, the stacked plan of the two 30 % shares (stage −400) beats greedy's
    whenever greedy spreads them and equals it otherwise; a start plan that books 90 % of one
    device twice breaks the device rule and is ignored. Either way the
    result is at least as good as the start plan, and says when it started from it."""
    inst = instance(BASE, TWO_T4, _shares(2, 30))
    mix = (TypicalTask(1000, 1000, 1),)
    opts = options(weights=ON, typical_mix=mix, objective="weighted")
    pods = sorted(p.key for p in inst.pods)
    memory = 15109 * 30 // 100
    stacked = Plan(placements=tuple(
        Placement(k, "n0", (DeviceShare("GPU-n0-0", memory, 30),)) for k in pods
    ))  # fmt: skip
    checked(inst, stacked)
    model = CpsatModel(inst, opts)
    floor = greedy(inst)
    plan = checked(inst, solve(inst, "cpsat", opts.replaced(start=stacked)))
    assert evaluate(model.data, plan).fragmentation == -400 * SCALE
    if evaluate(model.data, floor).fragmentation < -400 * SCALE:
        assert "hinted with the start plan" in plan.solver.message
    overfull = Plan(placements=tuple(
        Placement(k, "n0", (DeviceShare("GPU-n0-0", memory * 3, 90),)) for k in pods
    ))  # fmt: skip
    assert verify(inst, overfull)
    plan = solve(inst, "cpsat", opts.replaced(start=overfull))
    assert "start plan" not in plan.solver.message


def test_cli_start_plan_that_does_not_read_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--start`` names a plan file: one that names an unknown node is bad input, exit 2
    with the file and no traceback; a good one (the greedy plan written by vcopt) solves."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Plan\nplacements:\n  - {pod: nobody, node: nowhere}\n")
    assert main(["solve", str(SLICE), "--start", str(bad), "-q"]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "Traceback" not in err
    good = tmp_path / "greedy.json"
    assert main(["solve", str(SLICE), "--engine", "greedy", "-q", "-o", str(good),
                 "--format", "json"]) == 0  # fmt: skip
    assert main(["solve", str(SLICE), "--start", str(good), "--time-limit", "4", "-q"]) == 0


# -- one F: the stage, the metric and the simulator ------------------------------------------


def test_the_stage_the_metric_and_the_simulator_agree_on_one_state() -> None:
    """One node of 8 idle T4s and 64 cores; a pending 70 % share with 1 core, placed on the
    last device: after it, 7 × 1,000 + 300 free and 63 cores. Mix (T4 only for the share):
    a 500-milli share with 8 cores (p ½), a CPU-only task (p ¼), an 8-GPU task (p ¼).
    Before: the share and the 8-GPU task fit with nothing below their share, the CPU-only
    task counts all 8,000: F = 2,000. After: the share counts the 300, the others 7,300 each:
    F = 150 + 3,650 = 3,800. So the stage is SCALE·(2,000 − 3,800), the metric reports
    3.8 GPUs and the simulator's node class holds 3,800."""
    from benchmarks.alibaba import state as simulator
    from optimizer.metrics import measure
    from optimizer.trace_import import TraceNode, TraceTask

    node = """
        nodes:
          - name: n0
            allocatable: {cpu: 64, memory: 256Gi, pods: 110}
            gpus: {count: 8, type: NVIDIA-T4, memory: 10000}
    """
    inst = instance(BASE, node, _shares(1, 70))
    mix = (
        TypicalTask(8000, 500, 1, ("T4",), 0.5),
        TypicalTask(1000, 0, 0, (), 0.25),
        TypicalTask(1000, 1000, 8, (), 0.25),
    )
    (pod,) = [p.key for p in inst.pods]
    plan = checked(inst, Plan(placements=(
        Placement(pod, "n0", (DeviceShare("GPU-n0-7", 7000, 70),)),
    )))  # fmt: skip
    model = CpsatModel(inst, options(weights=ON, typical_mix=mix))
    stage = value_of(model.stages["fragmentation"], model.hint_plan(plan))
    assert stage == evaluate(model.data, plan).fragmentation == (2000 - 3800) * SCALE
    assert measure(inst, plan, mix).fragmentation == pytest.approx(3.8)
    cluster = simulator.Cluster.of([TraceNode("n0", 64_000, 262_144, 8, "T4")])
    cluster.place(0, TraceTask("s", 1000, 1024, 1, 700), [7])
    assert simulator.NodeClasses(cluster, mix, 4).total_frag() == pytest.approx(3800)


_SHARES = (10, 20, 25, 30, 50, 60, 100)


@settings(max_examples=40, deadline=None)
@given(
    cpus=st.lists(st.sampled_from((4, 8, 16)), min_size=1, max_size=3),
    devices=st.lists(st.integers(1, 4), min_size=3, max_size=3),
    types=st.lists(st.sampled_from(("NVIDIA-A10", "NVIDIA-T4")), min_size=3, max_size=3),
    pods=st.lists(st.tuples(st.sampled_from((1, 2, 4)), st.sampled_from(_SHARES)), max_size=6),
    shapes=st.lists(
        st.tuples(
            st.sampled_from((0, 1000, 4000, 8000)),
            st.sampled_from((250, 500, 1000)),
            st.integers(0, 3),
            st.sampled_from(((), ("A10",), ("T4",))),
            st.integers(1, 5),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_the_stage_is_the_plain_f_of_the_plan_on_random_instances(
    cpus: list[int],
    devices: list[int],
    types: list[str],
    pods: list[tuple[int, int]],
    shapes: list[tuple[int, int, int, tuple[str, ...], int]],
) -> None:
    """Idle nodes of 10,000 MiB, 100-core devices (a p % share is exactly 10·p milli, a whole
    device 1,000) and pending one-pod jobs of p % shares; the mix's weights are k/20 so the
    stage's ⌊SCALE·p⌉ coefficients are exact. For greedy's plan and a CP-SAT plan, the stage
    at the plan's hint is SCALE · Σ_nodes (F before − F after), F being
    ``models.fragmentation.fragmentation`` of the node states read off the plan by hand."""
    nodes = "nodes:" + "".join(
        f"""
          - name: n{i}
            allocatable: {{cpu: {cpu}, memory: 256Gi, pods: 110}}
            gpus: {{count: {devices[i]}, type: {types[i]}, memory: 10000}}"""
        for i, cpu in enumerate(cpus)
    )
    jobs = "jobs: []" if not pods else "jobs:" + "".join(
        f"""
      - name: s{i}
        tasks:
          - name: t
            resources: {{cpu: {cpu}, memory: 1Gi, nvidia.com/gpu: 1,
                        nvidia.com/gpumem-percentage: {p}, nvidia.com/gpucores: {p}}}"""
        for i, (cpu, p) in enumerate(pods)
    )  # fmt: skip
    inst = instance(BASE, nodes, jobs)
    total = sum(k for *_, k in shapes)
    mix = tuple(TypicalTask(c, q if g else 0, g, t, k / total) for c, q, g, t, k in shapes)
    assume(all(round(SCALE * m.weight) == SCALE * m.weight for m in mix))
    opts = options(weights=ON, typical_mix=mix, objective="weighted")
    cpu_of = {p.key: c * 1000 for p, (c, _) in zip(inst.pods, pods, strict=True)}
    for plan in (greedy(inst), solve(inst, "cpsat", opts)):
        model = CpsatModel(inst, opts)
        stage = value_of(model.stages["fragmentation"], model.hint_plan(plan))
        expected = 0.0
        for i, node in enumerate(inst.nodes):
            free = {d.id: 1000 for d in node.gpus}
            cpu = cpus[i] * 1000
            for p in plan.placements:
                if p.node == node.name:
                    cpu -= cpu_of[p.pod]
                    for share in p.gpus or ():
                        free[share.id] -= share.cores * 10
            kinds = [d.type for d in node.gpus]
            before = fragmentation(cpus[i] * 1000, [1000] * len(kinds), kinds, mix)
            expected += before - fragmentation(cpu, list(free.values()), kinds, mix)
        assert stage == pytest.approx(SCALE * expected, abs=1e-6)
