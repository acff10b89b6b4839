"""The typed result of a solve: the plan, its search's facts and its metrics as fields, and a
summary a person reads first."""

from __future__ import annotations

from cpsat.cpsat_kit import BASE, instance

from optimizer.options import SolveOptions
from optimizer.plan import Plan
from optimizer.result import Result, Status
from optimizer.solve import measured, solve, solve_result

TWO_GPUS = """\
nodeGroups:
- {namePrefix: n, count: 1, allocatable: {cpu: "16", memory: 64Gi},
   gpus: {count: 2, type: NVIDIA-A100, memory: 10000}}
jobs:
- {name: one, tasks: [{name: w, replicas: 1, resources: {cpu: "1", nvidia.com/gpu: 1}}]}
- {name: big, tasks: [{name: w, replicas: 1, resources: {cpu: "1", nvidia.com/gpu: 4}}]}
"""


def test_the_result_holds_the_plan_and_its_metrics_typed() -> None:
    """One node of two GPUs: the one-GPU job is admitted, the four-GPU job cannot be; one of
    two GPUs is allocated (50 %), and the plan carries the same metrics as a mapping."""
    inst = instance(BASE, TWO_GPUS)
    result = solve_result(inst, "greedy", SolveOptions.of(time_limit=5))
    assert isinstance(result, Result)
    assert result.status == Status.HEURISTIC
    m = result.metrics
    assert (m.jobs_admitted, m.jobs_pending, m.pods_placed) == (1, 1, 1)
    assert (m.gpu_allocated, m.gpu_total) == (1.0, 2)
    assert result.plan.metrics["gpu_allocation_ratio"] == m.gpu_allocation_ratio == 0.5
    assert solve(inst, "greedy").placements == result.plan.placements


def test_the_summary_says_status_jobs_pods_and_gpus() -> None:
    inst = instance(BASE, TWO_GPUS)
    lines = str(solve_result(inst, "cpsat", SolveOptions.of(time_limit=5))).splitlines()
    assert lines[0].startswith("cpsat plan for t: OPTIMAL")
    assert lines[1] == "  jobs: 1 admitted, 0 running, 1 pending"
    assert lines[2] == "  pods: 1 placed, 0 pipelined, 0 evicted"
    assert lines[3].startswith("  GPUs: 1.0 of 2 allocated (50.0%)")


def test_a_plan_without_solver_facts_reads_as_a_heuristic() -> None:
    inst = instance(BASE, TWO_GPUS)
    result = measured(inst, Plan(instance="t", engine="manual"))
    assert result.status == Status.HEURISTIC
    assert result.metrics.pods_placed == 0
    assert str(result).splitlines()[0] == "manual plan for t: HEURISTIC"
