"""Invariants on small random timelines: every cycle's plan verifies (the run raises
otherwise), the cluster never holds more GPUs than it has, gangs start whole, and a job
that was never cut short ends exactly its duration after it started."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sim_timelines import document, gpu_job, gpu_node, instance

from optimizer.options import SolveOptions
from optimizer.simulate import simulate

NODES, GPUS_PER_NODE = 2, 2

jobs = st.lists(
    st.tuples(
        st.integers(1, 2),  # replicas (the gang: minAvailable = replicas)
        st.integers(1, GPUS_PER_NODE),  # GPUs per pod: every pod fits a node
        st.integers(1, 90),  # duration, minutes
        st.integers(0, 60),  # arrival, minutes after now
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs)
def test_random_timelines_keep_the_invariants(spec: list[tuple[int, int, int, int]]) -> None:
    doc = document(
        [gpu_node(f"n{i}", GPUS_PER_NODE) for i in range(NODES)],
        [
            gpu_job(f"j{i}", replicas, gpus, duration=f"{minutes}m", arrival=f"{arrive}m")
            for i, (replicas, gpus, minutes, arrive) in enumerate(spec)
        ],
    )
    sim = instance(doc)
    run = simulate(sim, "greedy", SolveOptions(), check=True, keep_plans=True)
    capacity = NODES * GPUS_PER_NODE
    assert all(0 <= p.gpus_allocated <= capacity for p in run.series)
    assert all(p.pending_jobs + p.running_jobs <= len(spec) for p in run.series)
    by_name = {r.job.split("/")[1]: r for r in run.jobs}
    for i, (replicas, gpus, minutes, arrive) in enumerate(spec):
        record = by_name[f"j{i}"]
        assert record.arrival == sim.now + timedelta(minutes=arrive)
        # Every pod fits an empty node and nothing runs for ever: every job runs and ends.
        assert record.start is not None and record.start >= record.arrival
        assert record.restarts == 0
        assert record.end == record.start + timedelta(minutes=minutes)
        # It held replicas x gpus GPUs for its whole run.
        assert abs(record.gpu_s - replicas * gpus * minutes * 60) < 1e-6
    for _, plan in run.plans:
        placed: dict[str, int] = {}
        for placement in plan.placements:
            job = placement.pod.rsplit("-", 2)[0]
            placed[job] = placed.get(job, 0) + 1
        for job, count in placed.items():
            replicas = spec[int(job.split("/j")[1])][0]
            assert count == replicas  # a gang is bound whole, in one cycle
