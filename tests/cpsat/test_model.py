"""How the CP-SAT engine behaves around the model: the greedy hint, the greedy fallback,
reproducibility, the objective modes and weights, the solver report, and model size and
build time on a 200-node cluster."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from cpsat_kit import (
    QUEUES,
    checked,
    cpsat_over_greedy,
    greedy,
    instance,
    nodes_of,
    options,
    stages,
)
from ortools.sat.python import cp_model

from models.instance import Instance
from models.load import load
from optimizer.cpsat.engine import solve
from optimizer.cpsat.search import CpsatModel
from optimizer.plan import Plan
from optimizer.progress import PlainProgress, Progress

DEMO = Path(__file__).resolve().parents[2] / "instances" / "demo.yaml"

RECLAIM = """
    scheduler:
      actions: "enqueue, allocate, reclaim"
      tiers:
      - plugins: [{name: priority}, {name: gang}, {name: conformance}]
      - plugins: [{name: predicates}, {name: capacity}]
    nodes:
    - {name: n1, allocatable: {cpu: "8", memory: 16Gi}}
    queues: [{name: qa, deserved: {cpu: "4"}}, {name: qb, deserved: {cpu: "4"}}]
    jobs:
    - name: b
      queue: qb
      minAvailable: 1
      tasks: [{name: w, replicas: 2, resources: {cpu: "4", memory: 1Gi}}]
      running: [{index: 0, node: n1}, {index: 1, node: n1}]
    - {name: a, queue: qa, tasks: [{name: w, replicas: 1, resources: {cpu: "4", memory: 1Gi}}]}
    """
"""qb holds 8 CPUs for a deserved 4: greedy reclaims one pod and pipelines qa's job on n1."""

PREEMPT = """
    scheduler:
      actions: "enqueue, allocate, preempt"
      tiers:
      - plugins: [{name: priority}, {name: gang, enablePreemptable: false}, {name: conformance}]
      - plugins: [{name: predicates}]
    priorityClasses: [{name: high, value: 100}]
    nodes:
    - {name: n1, allocatable: {cpu: "8", memory: 16Gi}}
    jobs:
    - name: low
      tasks: [{name: w, replicas: 1, resources: {cpu: "8", memory: 1Gi}}]
      running: [{index: 0, node: n1}]
    - name: hi
      priorityClassName: high
      tasks: [{name: w, replicas: 1, resources: {cpu: "8", memory: 1Gi}}]
    """
"""A priority-100 job waits for the node a priority-0 pod fills: greedy preempts."""

TOPOLOGY = """
    scheduler:
      actions: "enqueue, allocate"
      tiers:
      - plugins: [{name: priority}, {name: gang}]
      - plugins: [{name: predicates}, {name: binpack}]
    nodes:
    - {name: n1, labels: {rack: r1}, allocatable: {cpu: "16", memory: 64Gi}}
    - {name: n2, labels: {rack: r1}, allocatable: {cpu: "12", memory: 64Gi}}
    - {name: n3, labels: {rack: r2}, allocatable: {cpu: "16", memory: 64Gi}}
    - {name: n4, labels: {rack: r2}, allocatable: {cpu: "12", memory: 64Gi}}
    hypernodes:
    - name: rack-1
      tier: 1
      members: [{type: Node, selector: {regexMatch: {pattern: "^n[12]$"}}}]
    - name: rack-2
      tier: 1
      members: [{type: Node, selector: {regexMatch: {pattern: "^n[34]$"}}}]
    - name: spine
      tier: 2
      members:
      - {type: HyperNode, selector: {exactMatch: {name: rack-1}}}
      - {type: HyperNode, selector: {exactMatch: {name: rack-2}}}
    jobs:
    - name: old
      tasks: [{name: w, replicas: 1, resources: {cpu: "8", memory: 1Gi}}]
      running: [{index: 0, node: n1}]
    - name: old2
      tasks: [{name: w, replicas: 1, resources: {cpu: "6", memory: 1Gi}}]
      running: [{index: 0, node: n3}]
    - name: pair
      minAvailable: 2
      tasks: [{name: w, replicas: 2, resources: {cpu: "8", memory: 1Gi}}]
    """
"""Greedy (binpack) splits the pair over n1 and n3 (spine, tier 2); one rack would do
(test_objective.test_lower_lca_tier_than_greedy has the reasoning)."""

"""Greedy gives both nodes to the higher-priority queue qb; fairer is one each
(test_objective.test_fill_the_under_deserved_queue_first)."""

EASY = """
    scheduler:
      actions: "enqueue, allocate"
      tiers:
      - plugins: [{name: priority}, {name: gang}, {name: predicates}]
    nodes:
    - {name: n1, allocatable: {cpu: "8", memory: 16Gi}}
    jobs:
    - {name: j, tasks: [{name: w, replicas: 1, resources: {cpu: "8", memory: 1Gi}}]}
    """
"""One pod, one node that fits exactly: greedy's plan is the only non-empty plan."""


def demo() -> Instance:
    return load(str(DEMO))


# -- hints ---------------------------------------------------------------------------------

HINTED = [
    pytest.param(demo, id="demo"),
    pytest.param(lambda: instance(RECLAIM), id="reclaim"),
    pytest.param(lambda: instance(PREEMPT), id="preempt"),
    pytest.param(lambda: instance(TOPOLOGY), id="topology"),
]


@pytest.mark.parametrize("make", HINTED)
def test_greedy_hint_is_complete_and_feasible(make, capfd: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    """Every variable of the model — core counts, admissions, evictions and every auxiliary a
    constraint family or stage created — gets a hint, and CP-SAT's own check accepts it: its
    log says, for the first stage (which the greedy plan hints), that the hint is complete
    and feasible. In the reclaim and preempt cases greedy evicts and only pipelines the
    waiting pod, as Volcano does; the model's eviction rules accept such a plan."""
    inst = make()
    model = CpsatModel(inst, options(parameters={"log_search_progress": True}))
    floor = greedy(inst)
    hint = model.hint_plan(floor)
    assert len(hint) == model.num_variables
    assert len(model.model.proto.solution_hint.vars) == model.num_variables
    model.search(hint, 10.0, Progress())
    verdicts = [line for line in capfd.readouterr().out.splitlines() if "solution hint" in line]
    assert verdicts, "no hint verdict in the CP-SAT log"
    assert verdicts[0].startswith("The solution hint is complete and is feasible."), verdicts[0]


@pytest.mark.parametrize("make", HINTED)
def test_greedy_hint_satisfies_the_model(make) -> None:  # type: ignore[no-untyped-def]
    """The same check without the log: fixing every variable to its hint leaves a feasible
    model (cpsat-practice B.6: fix_variables_to_their_hinted_value)."""
    inst = make()
    model = CpsatModel(inst, options())
    model.hint_plan(greedy(inst))
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    assert solver.solve(model.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


# -- fallback ------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [HINTED[0], pytest.param(lambda: instance(QUEUES), id="q")])
def test_tiny_time_limit_keeps_the_greedy_plan(make) -> None:  # type: ignore[no-untyped-def]
    """With 1 ms for building and solving, the budget is gone before CP-SAT can start; the
    result is the greedy plan itself, marked as such."""
    inst = make()
    floor = greedy(inst)
    plan = checked(inst, solve(inst, options(time_limit=1e-3), floor))
    assert plan.solver is not None
    assert plan.solver.status == "TIME_UP" and plan.solver.greedy_kept
    assert "before CP-SAT could start" in plan.solver.fallback
    assert plan.placements == floor.placements and plan.evictions == floor.evictions
    assert plan.engine == "cpsat"


def test_greedy_already_optimal_keeps_the_greedy_plan() -> None:
    """One 8-CPU pod, one 8-CPU node: greedy places it, nothing better exists; CP-SAT proves
    it (OPTIMAL) and hands back greedy's plan."""
    inst = instance(EASY)
    floor = greedy(inst)
    assert nodes_of(floor, "j") == ["n1"]
    plan = solve(inst, options(), floor)
    assert plan.solver is not None
    assert plan.solver.status == "OPTIMAL"
    assert plan.solver.fallback == "CP-SAT plan not better than greedy"
    assert plan.placements == floor.placements
    # The search's bound stays with the kept plan: proved optimal, it is greedy's own value.
    assert plan.solver.objective is not None
    assert plan.solver.bound == plan.solver.objective and plan.solver.gap == 0


# -- options -------------------------------------------------------------------------------


def test_deterministic_mode_repeats_itself() -> None:
    """``deterministic`` (interleaved workers, fixed seed, deterministic time): two solves of
    the demo give the same plan, pod for pod and device for device."""
    inst = demo()
    floor = greedy(inst)
    first = solve(inst, options(deterministic=True, time_limit=5), floor)
    second = solve(inst, options(deterministic=True, time_limit=5), floor)
    assert first.placements == second.placements
    assert first.evictions == second.evictions
    assert first.solver is not None and second.solver is not None
    assert first.solver.stages == second.solver.stages


class _CtrlCAt(Progress):
    """A display on which the user presses Ctrl-C just as stage ``at`` is announced: the
    signal lands after the progress line, before CP-SAT has started on that stage."""

    def __init__(self, at: str) -> None:
        super().__init__()
        self.at = at

    def phase(self, name: str, detail: str = "", baseline: float | None = None) -> None:
        super().phase(name, detail, baseline)
        if name == f"stage {self.at}":
            raise KeyboardInterrupt


def test_ctrl_c_between_stages_keeps_the_earlier_stages_solution() -> None:
    """The user sees "stage ..." and presses Ctrl-C: that is a Ctrl-C during the search, so
    the search stops and keeps what the stages before found, rather than ending the run."""
    inst = instance(QUEUES)
    model = CpsatModel(inst, options())
    hint = model.hint_plan(greedy(inst))
    first, second = [name for name, expr in model.objectives() if not isinstance(expr, int)][:2]
    result = model.search(hint, 10.0, _CtrlCAt(second))
    assert result.interrupted
    assert result.statuses[first] == "OPTIMAL"
    assert second not in result.statuses
    assert result.values is not None


def test_ctrl_c_before_the_first_stage_runs_leaves_no_solution() -> None:
    """Stopped before CP-SAT ran at all: no solution of the search's own, which the engine
    answers with its floor, status INTERRUPTED."""
    inst = instance(QUEUES)
    model = CpsatModel(inst, options())
    hint = model.hint_plan(greedy(inst))
    first = next(name for name, expr in model.objectives() if not isinstance(expr, int))
    result = model.search(hint, 10.0, _CtrlCAt(first))
    assert result.interrupted
    assert result.values is None
    assert first not in result.statuses


@pytest.mark.parametrize("text", [QUEUES, TOPOLOGY])
def test_weighted_objective_matches_lexicographic(text: str) -> None:
    """Default weights make each stage dominate the ones after it, so one weighted solve ends
    at the same stage values as the sequential solves (both are optimal here)."""
    inst = instance(text)
    floor, lexicographic = cpsat_over_greedy(inst)
    _, weighted = cpsat_over_greedy(inst, objective="weighted")
    assert weighted.solver is not None and weighted.solver.status == "OPTIMAL"
    assert weighted.solver.message.startswith("weighted OPTIMAL")
    assert stages(inst, weighted) == stages(inst, lexicographic)
    assert stages(inst, weighted).as_tuple() > stages(inst, floor).as_tuple()


def test_weight_zero_switches_a_stage_off() -> None:
    """With topology on, CP-SAT keeps the pair in one rack (test_objective). With its weight
    at 0 the stage and its variables are gone: the remaining stages (work, fairness,
    packing) see nothing better than greedy's split — keeping the pair in a rack opens an
    empty node — so greedy's plan is kept."""
    inst = instance(TOPOLOGY)
    floor = greedy(inst)
    on = CpsatModel(inst, options())
    off = CpsatModel(inst, options(weights={"topology": 0}))
    assert on.vars.within and not off.vars.within
    assert off.num_variables < on.num_variables
    plan_on = solve(inst, options(), floor)
    plan_off = solve(inst, options(weights={"topology": 0}), floor)
    assert nodes_of(plan_on, "pair") in (["n1", "n2"], ["n3", "n4"])
    assert plan_off.placements == floor.placements
    assert plan_off.solver is not None and "topology" not in plan_off.solver.message


def test_all_stages_off_solves_nothing() -> None:
    """No stage left: there is nothing to optimise, the greedy plan is kept."""
    inst = instance(QUEUES)
    weights = dict.fromkeys(("work", "fairness", "topology", "packing"), 0)
    floor = greedy(inst)
    plan = solve(inst, options(weights=weights), floor)
    assert plan.solver is not None and plan.solver.fallback == "every objective stage is off"
    assert plan.placements == floor.placements


def test_solver_report() -> None:
    """The solver block of a CP-SAT plan (DESIGN §4): status, the first stage's objective and
    best bound (work: 2 × 8000 CPU-equivalents in the queue instance), the gap between them,
    wall time, workers, model size, each stage's value and each stage's status."""
    inst = instance(QUEUES)
    floor = greedy(inst)
    plan = solve(inst, options(), floor)
    info = plan.solver
    assert info is not None
    assert info.status == "OPTIMAL"
    assert (info.objective, info.bound, info.gap) == (16000, 16000, 0.0)
    assert info.wall_seconds > 0 and info.workers == 2
    assert info.variables and info.variables > 0
    assert info.constraints and info.constraints > 0
    assert set(info.stages) == {"work", "fairness", "topology", "packing"}
    assert info.message.startswith(
        "work OPTIMAL, fairness OPTIMAL, topology OPTIMAL, packing OPTIMAL"
    )
    assert info.classes == 1, "the two 8-CPU nodes are alike and idle: one class"
    block = plan.to_dict()["solver"]
    assert {"status", "objective", "bound", "gap", "variables", "constraints"} <= set(block)


def test_no_bound_reports_no_bound_and_no_gap() -> None:
    """Without the full-model worker there is no proof to report: the solver block has the
    objective (both nodes used, 16000, as greedy already has) but neither bound nor gap, where
    a trivial bound would read as a large gap."""
    inst = instance(QUEUES)
    plan = checked(inst, solve(inst, options(bound=False), greedy(inst)))
    info = plan.solver
    assert info is not None
    assert (info.objective, info.bound, info.gap) == (16000, None, None)


def test_progress_lines_name_the_phase_and_the_best_objective() -> None:
    """A plain progress display (as on a non-terminal stderr, here printing at every report)
    shows each phase with elapsed time against the limit, and for a stage the best
    objective against greedy's, the bound and the gap: two 8-CPU nodes hold two of the three
    8-CPU jobs, 2 × 8000 of work, which greedy reaches too."""
    inst = instance(QUEUES)
    stream = io.StringIO()
    solve(inst, options(), greedy(inst), progress=PlainProgress(20.0, stream, interval=0))
    lines = stream.getvalue().splitlines()
    assert any(line.startswith("vcopt ") and "/20s  compile" in line for line in lines)
    work = [line for line in lines if "stage work (1/4)" in line and "best" in line]
    assert work, lines
    assert "best 16,000 (+0.0% vs greedy)" in work[-1]
    assert "bound 16,000" in work[-1] and "gap 0.00%" in work[-1]


def test_empty_floor_is_a_valid_starting_point() -> None:
    """Any plan can serve as the floor: from the empty plan CP-SAT still finds the optimum of
    the queue instance (2 pods placed)."""
    inst = instance(QUEUES)
    plan = checked(inst, solve(inst, options(), Plan(instance=inst.name)))
    assert len(plan.placements) == 2


# -- scale ---------------------------------------------------------------------------------


def cluster(nodes: int) -> str:
    """``nodes`` nodes of 8 A100s in racks of 8 under spines of 5 racks; 4 queues; 150 jobs of
    1–8 pods × 1/2/4/8 GPUs (some fractional, some hard-topology), half of them with running
    pods. Deterministic (a fixed linear congruential sequence)."""
    state = [12345]

    def pick(options: list[int]) -> int:
        state[0] = (1103515245 * state[0] + 12345) % 2**31
        return options[state[0] % len(options)]

    lines = [
        "scheduler:",
        '  actions: "enqueue, allocate, backfill, preempt, reclaim"',
        "  tiers:",
        "  - plugins: [{name: priority}, {name: gang}, {name: conformance}]",
        "  - plugins: [{name: drf}, {name: predicates}, {name: capacity}, {name: binpack},",
        "              {name: deviceshare}, {name: network-topology-aware}]",
        "nodes:",
    ]
    for i in range(nodes):
        lines.append(
            f"- {{name: n{i:03d}, labels: {{rack: r{i // 8}}}, allocatable: {{cpu: '96', "
            f"memory: 768Gi}}, gpus: {{count: 8, type: NVIDIA-A100, memory: 81920}}}}"
        )
    lines.append("hypernodes:")
    racks = nodes // 8
    for r in range(racks):
        lines.append(
            f"- {{name: rack-{r}, tier: 1, members: [{{type: Node, selector: "
            f"{{labelMatch: {{matchLabels: {{rack: r{r}}}}}}}}}]}}"
        )
    for s in range(0, racks, 5):
        members = ", ".join(
            f"{{type: HyperNode, selector: {{exactMatch: {{name: rack-{r}}}}}}}"
            for r in range(s, min(racks, s + 5))
        )
        lines.append(f"- {{name: spine-{s // 5}, tier: 2, members: [{members}]}}")
    lines.append("queues:")
    lines += [f"- {{name: q{q}, deserved: {{nvidia.com/gpu: {nodes * 2}}}}}" for q in range(4)]
    lines.append("jobs:")
    free = {n: list(range(8)) for n in range(nodes)}
    for j in range(150):
        gpus, replicas = pick([1, 2, 4, 8]), pick([1, 1, 2, 4, 8])
        extra = ", nvidia.com/gpumem: 20000, nvidia.com/gpucores: 25" if gpus == 1 else ""
        topology = ", networkTopology: {mode: hard, highestTierAllowed: 1}" if replicas >= 4 else ""
        job = (
            f"- {{name: j{j}, queue: q{j % 4}, priority: {pick([0, 10, 100])}, "
            f"minAvailable: {replicas}{topology}, tasks: [{{name: w, replicas: {replicas}, "
            f"resources: {{cpu: '4', memory: 32Gi, nvidia.com/gpu: {gpus}{extra}}}}}]"
        )
        running = []
        for k in range(replicas if j % 2 == 0 else 0):
            candidates = [n for n in free if len(free[n]) >= gpus]
            if not candidates:
                break
            n = pick(candidates)
            shares = ", ".join(
                f"{{id: GPU-n{n:03d}-{free[n].pop(0)}, memory: 81920, cores: 0}}"
                for _ in range(gpus)
            )
            running.append(f"{{index: {k}, node: n{n:03d}, gpus: [{shares}]}}")
        lines.append(job + (f", running: [{', '.join(running)}]}}" if running else "}"))
    return "\n".join(lines) + "\n"


def test_two_hundred_nodes_collapse_into_classes() -> None:
    """200 nodes × 8 GPUs in 25 racks, 150 jobs, half with running pods. Idle nodes of one
    rack are interchangeable, so the model counts pods per class, far fewer than nodes; the
    complete greedy hint still covers every variable, and device uses are chosen only where a
    container has a choice of device classes (whole-GPU requests on idle nodes are counted)."""
    inst = instance(cluster(200))
    floor = greedy(inst)
    model = CpsatModel(inst, options())
    hint = model.hint_plan(floor)
    assert len(hint) == model.num_variables
    idle_racks = {
        n.labels["rack"]
        for n in inst.nodes
        if not any(p.node == n.name for p in inst.pods if p.running)
    }
    busy = {p.node for p in inst.pods if p.running}
    assert len(model.data.classes) <= len(idle_racks) + len(busy) < len(inst.nodes)
    whole = {g.index for g in model.data.groups if g.gpus and g.gpus[0].memory != 20000}
    idle = {c.index for c in model.data.classes if not c.busy}
    assert not {(g, c) for g, _, c, _ in model.vars.use if g in whole and c in idle}
    per_node = CpsatModel(inst, options(aggregate=False))
    assert len(per_node.data.classes) == len(inst.nodes)
    assert model.num_variables < per_node.num_variables
