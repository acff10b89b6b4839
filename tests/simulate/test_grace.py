"""The grace period: an evicted pod goes on holding its node, resources and GPUs for the grace
period after its eviction, as Kubernetes deletes pods gracefully; its room is free, and a job
that lost its gang is pending again, once it is gone. Every expected time follows from
docs/SIMULATE.md; t is the eviction, g the grace period."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from sim_timelines import document, gpu_job, gpu_node, instance, tdm_scheduler

from optimizer.cli import main
from optimizer.options import SolveOptions
from optimizer.plan import Eviction, Placement, Plan
from optimizer.simulate import Simulation, simulate
from optimizer.simulate.cycle import carried_out

G = timedelta(seconds=30)

PREEMPT = {
    "actions": "enqueue, allocate, preempt, backfill",
    "tiers": [
        {
            "plugins": [
                {"name": "priority"},
                {"name": "gang", "enablePreemptable": False},
                {"name": "conformance"},
            ]
        },
        {
            "plugins": [
                {"name": "drf", "enablePreemptable": False},
                {"name": "predicates"},
                {"name": "proportion"},
            ]
        },
    ],
}


def at(clock: str) -> datetime:
    """``HH:MM:SS`` on the day of every timeline here, in UTC."""
    return datetime.fromisoformat(f"2026-11-30T{clock}").replace(tzinfo=UTC)


def records(run):
    return {r.job.split("/")[1]: r for r in run.jobs}


def point_at(run, when: datetime):
    """The series point in force at ``when``: the last one at or before it."""
    return [p for p in run.series if p.time <= when][-1]


def _preemption() -> dict[str, Any]:
    """One 4-GPU node. "batch" (class low, 4 GPUs, 1,000 s) runs on it from 14:00; "urgent"
    (class high, 4 GPUs, 100 s) arrives at 14:00:10, when the cycle evicts batch (t) and
    pipelines urgent onto its room."""
    doc = document(
        [gpu_node("n1", 4)],
        [
            gpu_job(
                "batch",
                1,
                4,
                duration="1000s",
                priorityClassName="low",
                running=[{"index": 0, "node": "n1"}],
            ),
            gpu_job("urgent", 1, 4, duration="100s", priorityClassName="high", arrival="10s"),
        ],
        scheduler=PREEMPT,
    )
    doc["priorityClasses"] = [{"name": "high", "value": 1000}, {"name": "low", "value": 10}]
    return doc


def _until(doc: dict[str, Any], until: datetime) -> Simulation:
    simulation = Simulation(instance(doc), "greedy", SolveOptions(), until=until, grace=G)
    simulation.run()
    return simulation


def test_the_victims_node_is_held_until_the_grace_period_is_over() -> None:
    # t = 14:00:10, g = 30 s. At 14:00:39 batch's pod is still on n1, as a pod no plan may
    # name, batch shows no job to schedule, and urgent is pending. At 14:00:40 it is gone:
    # the release frees n1 and the cycle of that instant binds urgent there.
    held = _until(_preemption(), at("14:00:39")).state.instance()
    assert [(pod.key, pod.node) for _, pod in held.foreign_pods] == [("default/batch-w-0", "n1")]
    assert [job.name for job in held.jobs] == ["urgent"]
    assert not held.jobs[0].running
    free = _until(_preemption(), at("14:00:40")).state.instance()
    assert free.foreign_pods == ()
    jobs = {job.name: job for job in free.jobs}
    assert [(pod.key, pod.node) for pod in jobs["urgent"].pods] == [("default/urgent-w-0", "n1")]
    assert [pod.node for pod in jobs["batch"].pods] == [None]


def test_the_evictor_starts_and_the_victim_is_pending_at_t_plus_g() -> None:
    run = simulate(instance(_preemption()), "greedy", SolveOptions(), grace=G, keep_plans=True)
    plans = dict(run.plans)
    evicting = plans[at("14:00:10")]
    assert [e.pod for e in evicting.evictions] == ["default/batch-w-0"]
    assert [(p.pod, p.node) for p in evicting.pipelined] == [("default/urgent-w-0", "n1")]
    # The next cycle, 14:00:11, evicts nothing: the pod being released is no victim, and
    # nothing else runs. Nothing changes until the release at 14:00:40.
    assert plans[at("14:00:11")].evictions == ()
    assert not [when for when in plans if at("14:00:11") < when < at("14:00:40")]
    # During the grace period n1's 4 GPUs are held, urgent pends, batch neither pends nor runs.
    during = point_at(run, at("14:00:39"))
    assert (during.gpus_allocated, during.pending_jobs, during.running_jobs) == (4, 1, 0)
    # At 14:00:40 batch is pending again and urgent runs.
    after = point_at(run, at("14:00:40"))
    assert (after.pending_jobs, after.running_jobs) == (1, 1)
    jobs = records(run)
    assert jobs["urgent"].start == at("14:00:40")
    assert jobs["urgent"].end == at("14:02:20")
    # batch restarts from scratch once urgent ends, 14:02:20 + 1,000 s = 14:19:00. Its pod
    # held 4 GPUs from 14:00:00 to its release at 14:00:40 for nothing: 160 GPU-seconds.
    assert (jobs["batch"].evictions, jobs["batch"].restarts) == (1, 1)
    assert jobs["batch"].lost_gpu_s == 160
    assert jobs["batch"].end == at("14:19:00")


def test_a_grace_period_of_zero_frees_the_room_at_once() -> None:
    # The next cycle after the eviction, 14:00:11, binds urgent; batch lost 4 GPUs x 10 s and
    # starts again when urgent ends, 14:01:51, to end at 14:18:31.
    run = simulate(instance(_preemption()), "greedy", SolveOptions(), grace=timedelta(0))
    jobs = records(run)
    assert jobs["urgent"].start == at("14:00:11")
    assert jobs["batch"].lost_gpu_s == 40
    assert jobs["batch"].end == at("14:18:31")


def test_cpsat_placing_onto_the_evicted_room_waits_for_the_release() -> None:
    # CP-SAT evicts batch and places urgent on its room in the same plan; the pod cannot bind
    # while batch's pod holds n1, so urgent starts at the release, t + g = 14:00:40, as with
    # greedy.
    run = simulate(
        instance(_preemption()), "cpsat", SolveOptions.of(time_limit=5), grace=G, keep_plans=True
    )
    evicting = dict(run.plans)[at("14:00:10")]
    assert [e.pod for e in evicting.evictions] == ["default/batch-w-0"]
    assert [p.pod for p in evicting.placements] == ["default/urgent-w-0"]
    assert records(run)["urgent"].start == at("14:00:40")


def test_a_placement_needing_released_room_waits_with_its_gang() -> None:
    # n1 (4 GPUs) runs batch; n2 (4 GPUs) is free. The plan evicts batch and places the gang
    # "pair" (2 pods of 2 GPUs) on n1 and n2, and "solo" (1 GPU) on n2. With batch's pod still
    # on n1, n1 would hold 6 GPUs: pair's pod there waits, and so does its other one, since one
    # pod is below the gang of 2. solo's placement does without the released room.
    doc = document(
        [gpu_node("n1", 4), gpu_node("n2", 4)],
        [
            gpu_job("batch", 1, 4, running=[{"index": 0, "node": "n1"}]),
            gpu_job("pair", 2, 2, minAvailable=2),
            gpu_job("solo", 1, 1),
        ],
    )
    plan = Plan(
        placements=(
            Placement("default/pair-w-0", "n2"),
            Placement("default/pair-w-1", "n1"),
            Placement("default/solo-w-0", "n2"),
        ),
        evictions=(Eviction("default/batch-w-0", "n1"),),
    )
    done = carried_out(instance(doc), plan)
    assert done.placements == (Placement("default/solo-w-0", "n2"),)
    assert done.evictions == plan.evictions
    # Without evictions, nothing is being released: the plan is carried out as it is.
    placing = Plan(placements=plan.placements[2:])
    assert carried_out(instance(doc), placing) is placing


TDM_ZONE = {"volcano.sh/revocable-zone": "rz1"}


def _window_close(period: str, *plain: str) -> dict[str, Any]:
    """A revocable job of two 1-GPU pods (gang of 1, no disruption budget: one pod a TDM
    round) on z1 and z2, the two nodes of zone rz1 whose window is 08:00-21:00, from 20:59;
    ``plain`` names 1-GPU nodes outside any zone. The window is closed from 21:00:01."""
    job = gpu_job(
        "spot",
        2,
        1,
        minAvailable=1,
        duration="2h",
        annotations={"volcano.sh/preemptable": "true"},
        running=[{"index": 0, "node": "z1"}, {"index": 1, "node": "z2"}],
    )
    nodes = [gpu_node("z1", 1, TDM_ZONE), gpu_node("z2", 1, TDM_ZONE)]
    nodes += [gpu_node(name, 1) for name in plain]
    return document(nodes, [job], now="2026-11-30T20:59:00Z", scheduler=tdm_scheduler(period))


def _evictions(run) -> list[tuple[datetime, tuple[str, ...]]]:
    return [(when, tuple(e.pod for e in p.evictions)) for when, p in run.plans if p.evictions]


def test_pods_evicted_at_the_window_close_leave_g_later() -> None:
    # Rounds one evict period (1 min) apart, as without a grace period: 21:00:01 takes one pod
    # (the job keeps its gang of 1), 21:01:01 the other (the job loses it). The first is gone at
    # 21:00:31, the second at 21:01:31, when the job is pending again. The restart throws away
    # 91 + 151 GPU-seconds: each pod's time from 20:59:00 to its release.
    run = simulate(
        instance(_window_close("1m")),
        "greedy",
        SolveOptions(),
        until=at("22:00:00"),
        grace=G,
        keep_plans=True,
    )
    assert [when for when, _ in _evictions(run)] == [at("21:00:01"), at("21:01:01")]
    assert point_at(run, at("21:00:30")).gpus_allocated == 2
    assert point_at(run, at("21:00:31")).gpus_allocated == 1
    stopped = point_at(run, at("21:01:30"))
    assert (stopped.gpus_allocated, stopped.pending_jobs, stopped.running_jobs) == (1, 0, 0)
    pending = point_at(run, at("21:01:31"))
    assert (pending.gpus_allocated, pending.pending_jobs, pending.running_jobs) == (0, 1, 0)
    spot = records(run)["spot"]
    assert (spot.evictions, spot.restarts, spot.lost_gpu_s) == (2, 1, 242)


def test_a_pod_being_released_is_not_evicted_again() -> None:
    # Rounds 10 s apart, shorter than g: at 21:00:11 the first victim is still on its node, so
    # the round takes the other pod, and the job loses its gang. The job is pending again when
    # its last pod is gone, 21:00:41.
    run = simulate(
        instance(_window_close("10s")),
        "greedy",
        SolveOptions(),
        until=at("21:10:00"),
        grace=G,
        keep_plans=True,
    )
    rounds = _evictions(run)
    assert [when for when, _ in rounds] == [at("21:00:01"), at("21:00:11")]
    first, second = (pods for _, pods in rounds)
    assert len(first) == len(second) == 1 and first != second
    assert point_at(run, at("21:00:40")).pending_jobs == 0
    assert point_at(run, at("21:00:41")).pending_jobs == 1
    assert records(run)["spot"].restarts == 1


def test_the_evicted_pod_is_placed_again_once_it_is_gone() -> None:
    # A node n3 outside the zone is free. The round at 21:00:01 evicts one pod; the job keeps
    # its gang and its job controller recreates the pod once the old one is gone, 21:00:31,
    # when a cycle places it on n3 (with no grace period, at the next cycle, 21:00:02).
    for grace, placed in ((G, at("21:00:31")), (timedelta(0), at("21:00:02"))):
        run = simulate(
            instance(_window_close("1m", "n3")),
            "greedy",
            SolveOptions(),
            until=at("21:00:50"),
            grace=grace,
            keep_plans=True,
        )
        [(_, (evicted,))] = _evictions(run)
        placing = [(w, p.pod, p.node) for w, plan in run.plans for p in plan.placements]
        assert placing == [(placed, evicted, "n3")]
        assert records(run)["spot"].restarts == 0


def _written(tmp_path: Path) -> Path:
    path = tmp_path / "preemption.yaml"
    path.write_text(yaml.safe_dump(_preemption()))
    return path


@pytest.mark.parametrize(
    ("option", "start"), [([], "14:00:40"), (["--grace-period", "0"], "14:00:11")]
)
def test_the_option_sets_the_grace_period(tmp_path: Path, option: list[str], start: str) -> None:
    # By default 30 s (Kubernetes' default terminationGracePeriodSeconds).
    jobs = tmp_path / "jobs.csv"
    assert main(["simulate", str(_written(tmp_path)), *option, "--jobs", str(jobs), "-q"]) == 0
    urgent = next(row for row in jobs.read_text().splitlines() if ",default/urgent," in row)
    assert f",2026-11-30T{start}Z," in urgent


@pytest.mark.parametrize("value", ["-5s", "soon", "30"])
def test_a_bad_grace_period_exits_2_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    # A negative value is written --grace-period=-5s, or argparse takes it for an option.
    assert main(["simulate", str(_written(tmp_path)), f"--grace-period={value}", "-q"]) == 2
    err = capsys.readouterr().err
    assert "--grace-period" in err and repr(value) in err
    assert "Traceback" not in err
