"""Hand-computable timelines: each expected time follows from the rules of docs/SIMULATE.md.

Greedy is Volcano's cycle, so a gang starts at the first cycle after room for the whole gang
exists; cycles run at every change, at most one per schedule period (1 s).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sim_timelines import document, gpu_job, gpu_node, instance, tdm_scheduler

from optimizer.options import SolveOptions
from optimizer.simulate import simulate


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def records(run):
    return {r.job.split("/")[1]: r for r in run.jobs}


def test_gang_waits_for_the_completion_that_frees_its_room() -> None:
    # One 4-GPU node. "big" (4 GPUs, 30 min) is there at now and starts at 14:00. The gang
    # "pair" (2 pods of 2 GPUs, 1 h) arrives at 14:05 and fits only once "big" ends at 14:30:
    # the completion is an event at 14:30, the last cycle was at 14:05, so a cycle runs at
    # 14:30:00 and binds both pods. It waited 25 min and ends at 15:30.
    doc = document(
        [gpu_node("n1", 4)],
        [
            gpu_job("big", 1, 4, duration="30m"),
            gpu_job("pair", 2, 2, duration="1h", arrival="5m"),
        ],
    )
    run = simulate(instance(doc), "greedy", SolveOptions())
    jobs = records(run)
    assert jobs["big"].start == at("2026-11-30T14:00:00")
    assert jobs["big"].end == at("2026-11-30T14:30:00")
    assert jobs["pair"].arrival == at("2026-11-30T14:05:00")
    assert jobs["pair"].start == at("2026-11-30T14:30:00")
    assert jobs["pair"].wait_s == 25 * 60
    assert jobs["pair"].end == at("2026-11-30T15:30:00")
    # 4 GPUs for 30 min, then 2 x 2 GPUs for an hour: 2 + 4 GPU-hours.
    assert jobs["big"].gpu_s == 4 * 1800
    assert jobs["pair"].gpu_s == 4 * 3600
    assert run.end == at("2026-11-30T15:30:00")


def _window_close(**job_fields: object) -> dict[str, object]:
    """A revocable job of two 1-GPU pods (gang of 1, no disruption budget: 1 pod per round)
    running on the only two nodes, both in zone rz1 whose window is 08:00-21:00; it is 20:59."""
    zone = {"volcano.sh/revocable-zone": "rz1"}
    job = gpu_job(
        "spot",
        2,
        1,
        minAvailable=1,
        duration="2h",
        annotations={"volcano.sh/preemptable": "true"},
        running=[{"index": 0, "node": "z1"}, {"index": 1, "node": "z2"}],
        **job_fields,
    )
    return document(
        [gpu_node("z1", 1, zone), gpu_node("z2", 1, zone)],
        [job],
        now="2026-11-30T20:59:00Z",
        scheduler=tdm_scheduler("1m"),
    )


def _evictions(run) -> list[tuple[datetime, int]]:
    return [(when, len(plan.evictions)) for when, plan in run.plans if plan.evictions]


def test_window_close_evicts_one_pod_per_period() -> None:
    # The window is active up to 21:00:00 (whole seconds, inclusive) and closed from 21:00:01.
    # The first round evicts one pod (budget 1); the job keeps its gang of 1 and runs on. The
    # next round is due one evict period later, 21:01:01, and takes the second pod: the job
    # falls below its gang and restarts. It had held 1 GPU on z1 for 61 s and 1 GPU on z2 for
    # 121 s since 20:59:00, which the restart from scratch throws away: 182 GPU-seconds (with
    # no grace period: evicted pods leave at once).
    run = simulate(
        instance(_window_close()),
        "greedy",
        SolveOptions(),
        until=at("2026-11-30T22:00:00"),
        keep_plans=True,
        grace=timedelta(0),
    )
    assert _evictions(run) == [
        (at("2026-11-30T21:00:01"), 1),
        (at("2026-11-30T21:01:01"), 1),
    ]
    spot = records(run)["spot"]
    assert spot.evictions == 2
    assert spot.restarts == 1
    assert spot.lost_gpu_s == 182
    assert spot.end is None


def test_evicted_job_restarts_from_scratch_when_the_window_opens() -> None:
    # After the restart at 21:01:01 the zone stays closed until 08:00:00 the next day, when a
    # cycle places both pods again; from scratch, the job then runs its full 2 h: 10:00.
    run = simulate(instance(_window_close()), "greedy", SolveOptions())
    spot = records(run)["spot"]
    assert spot.end == at("2026-12-01T10:00:00")
    assert spot.restarts == 1
    # The record keeps the first start; the run ended where it restarted.
    assert spot.start == at("2026-11-30T20:59:00")


def test_resume_keeps_the_work_done() -> None:
    # With --resume the first run's 2 min 1 s (20:59:00 to 21:01:01) count: 2 h - 121 s after
    # 08:00 is 09:57:59, and nothing is lost.
    run = simulate(instance(_window_close()), "greedy", SolveOptions(), resume=True)
    spot = records(run)["spot"]
    assert spot.end == at("2026-12-01T08:00:00") + timedelta(hours=2, seconds=-121)
    assert spot.lost_gpu_s == 0


def test_started_at_sets_the_remaining_time() -> None:
    # Started at 13:20 with a duration of 1 h: 20 min are left at 14:00, so it ends at 14:20.
    doc = document(
        [gpu_node("n1", 1)],
        [
            gpu_job(
                "run",
                1,
                1,
                duration="1h",
                startedAt="2026-11-30T13:20:00Z",
                running=[{"index": 0, "node": "n1"}],
            ),
            gpu_job("next", 1, 1, duration=600),
        ],
    )
    run = simulate(instance(doc), "greedy", SolveOptions())
    jobs = records(run)
    assert jobs["run"].end == at("2026-11-30T14:20:00")
    # "next" (600 s) waits for the GPU: it starts at 14:20 and ends at 14:30.
    assert jobs["next"].start == at("2026-11-30T14:20:00")
    assert jobs["next"].end == at("2026-11-30T14:30:00")


def test_cycles_follow_changes_not_the_clock() -> None:
    # One job, there at now, runs 3 h on a free node: one cycle places it, then nothing can
    # change until it ends. A cycle per simulated second would be 10,800 cycles.
    doc = document([gpu_node("n1", 1)], [gpu_job("long", 1, 1, duration="3h")])
    run = simulate(instance(doc), "greedy", SolveOptions())
    assert run.cycles == 1
    assert records(run)["long"].end == at("2026-11-30T17:00:00")
