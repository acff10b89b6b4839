"""``vcopt simulate --what-if``: the variants of a sweep file run on the same timeline, each
with every engine, on Dask; bad variant files exit 2 naming the file, the variant and the
field.

The timeline is ``two_queues`` (sim_timelines): one 2-GPU node n1; a1 (qa, 2 GPUs, 1 h) is
placed at 14:00; b1 (qb, 1 GPU, 30 min) arrives at 14:10 and, the node being full, starts at
15:00 when a1 ends: it waits 3,000 s, and the run ends at 15:30. With one more node like n1
(variant ``more``), b1 finds 2 free GPUs on arrival: it starts at 14:10, waits 0 and ends at
14:40, and the run ends at 15:00, when a1 ends.
"""

from __future__ import annotations

import csv
import io
import json
import pickle
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from matplotlib import image
from sim_timelines import document, gpu_job, gpu_node, two_queues

from models.load import load
from optimizer.cli import main
from optimizer.options import SolveOptions
from optimizer.simulate.cycle import InvalidState
from optimizer.simulate.variants import Scenario, Setup, load_what_if, run_on_dask

MORE = "variants:\n- name: more\n  nodes: {added: [{like: n1, count: 1}]}\n"


def at(text: str) -> datetime:
    return datetime.fromisoformat(f"2026-11-30T{text}").replace(tzinfo=UTC)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    timeline = tmp_path / "timeline.yaml"
    timeline.write_text(yaml.safe_dump(two_queues()))
    spec = tmp_path / "what-if.yaml"
    spec.write_text(MORE)
    return timeline, spec


@pytest.fixture(scope="module")
def scheduler():
    """A Dask cluster in this process: the tests reach it by its address as ``--dask`` does,
    without the seconds that starting worker processes takes."""
    from dask.distributed import LocalCluster

    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as cluster:
        yield cluster.scheduler_address


def _setup() -> Setup:
    return Setup(SolveOptions(), None, timedelta(seconds=1), False, True)


def _waits(runs) -> dict[tuple[str | None, str, str], float | None]:
    return {(r.variant, r.engine, j.job): j.wait_s for r in runs for j in r.jobs}


def test_a_node_more_lets_the_second_job_start_on_arrival(files: tuple[Path, Path]) -> None:
    timeline, spec = files
    base = load(timeline)
    what_if = load_what_if(str(spec), base)
    assert [name for name, _ in what_if.variants] == ["base", "more"]
    (_, plain), (_, more) = what_if.variants
    assert plain is base
    assert [n.name for n in more.nodes] == ["n1", "n1-new-1"]
    # The timeline is the base's: the same jobs arriving at the same times.
    assert more.jobs == base.jobs and more.arrivals == base.arrivals
    runs = [Scenario(v, i, "greedy", "greedy").run(_setup()) for v, i in what_if.variants]
    assert _waits(runs) == {
        ("base", "greedy", "default/a1"): 0,
        ("base", "greedy", "default/b1"): 3000,
        ("more", "greedy", "default/a1"): 0,
        ("more", "greedy", "default/b1"): 0,
    }
    assert [r.end for r in runs] == [at("15:30:00"), at("15:00:00")]


def test_runs_on_dask_equal_the_runs_in_this_process(
    files: tuple[Path, Path], scheduler: str
) -> None:
    """Each simulation is the same computation on a worker: every number of every run is
    the same (wall seconds apart), in the order the scenarios were given."""
    timeline, spec = files
    doc = document(
        [gpu_node("n1", 4), gpu_node("n2", 2)],
        [
            gpu_job("a", 2, 2, duration="40m"),
            gpu_job("b", 1, 4, duration="20m", arrival="5m"),
            gpu_job("c", 3, 1, duration="1h", arrival="10m"),
            gpu_job("d", 1, 2, duration="15m", arrival="12m"),
        ],
    )
    busy = timeline.parent / "busy.yaml"
    busy.write_text(yaml.safe_dump(doc))
    spec.write_text(
        "variants:\n"
        "- {name: more, nodes: {added: [{like: n1, count: 1}]}}\n"
        "- {name: fewer, nodes: {removed: [n2]}}\n"
    )
    variants = load_what_if(str(spec), load(busy)).variants
    scenarios = [Scenario(v, i, "greedy", "greedy") for v, i in variants]
    here = [s.run(_setup()) for s in scenarios]
    there = run_on_dask(scenarios, _setup(), scheduler)
    assert [replace(r, wall_seconds=0) for r in there] == [replace(r, wall_seconds=0) for r in here]
    assert [r.variant for r in there] == ["base", "more", "fewer"]


def test_every_output_carries_the_variant(
    files: tuple[Path, Path], scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    timeline, spec = files
    out = timeline.parent
    code = main(
        [
            "simulate",
            str(timeline),
            "--what-if",
            str(spec),
            "--dask",
            scheduler,
            "--jobs",
            str(out / "jobs.csv"),
            "--series",
            str(out / "series.csv"),
            "--json",
            str(out / "run.json"),
            "-q",
        ]
    )
    assert code == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:3] == ["variant", "engine", "queue"]
    assert [line.split()[:3] for line in table[2:6]] == [
        ["base", "greedy", "qa"],
        ["base", "greedy", "qb"],
        ["more", "greedy", "qa"],
        ["more", "greedy", "qb"],
    ]
    jobs = list(csv.DictReader(io.StringIO((out / "jobs.csv").read_text())))
    assert [(r["variant"], r["job"], r["wait_s"]) for r in jobs] == [
        ("base", "default/a1", "0.0"),
        ("base", "default/b1", "3000.0"),
        ("more", "default/a1", "0.0"),
        ("more", "default/b1", "0.0"),
    ]
    series = (out / "series.csv").read_text().splitlines()
    assert series[0].startswith("variant,engine,time,gpus_allocated,")
    assert {line.split(",")[0] for line in series[1:]} == {"base", "more"}
    doc = json.loads((out / "run.json").read_text())
    assert [(e["variant"], e["engine"], e["end"]) for e in doc["engines"]] == [
        ("base", "greedy", "2026-11-30T15:30:00Z"),
        ("more", "greedy", "2026-11-30T15:00:00Z"),
    ]
    assert {job["variant"] for job in doc["engines"][1]["jobs"]} == {"more"}


def test_without_what_if_the_outputs_have_no_variant(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    timeline, _ = files
    jobs = timeline.parent / "jobs.csv"
    assert main(["simulate", str(timeline), "--jobs", str(jobs), "-q"]) == 0
    assert capsys.readouterr().out.startswith("engine ")
    assert jobs.read_text().startswith("engine,job,")


@pytest.mark.timeout(120)
def test_one_command_on_a_local_cluster_with_both_engines(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Without ``--dask`` the variants run on a local cluster of worker processes, which
    pickles every instance, run and setting on the way. The node more lets b1 start on
    arrival whichever engine decides."""
    timeline, spec = files
    jobs = timeline.parent / "jobs.csv"
    plot = timeline.parent / "plot.png"
    command = ["simulate", str(timeline), "--what-if", str(spec), "--engines", "greedy,cpsat"]
    options = ["--optimize-every", "10m", "--cycle-limit", "5", "--jobs", str(jobs)]
    assert main([*command, *options, "--plot", str(plot)]) == 0
    captured = capsys.readouterr()
    assert "simulated more with cpsat@10m" in captured.err
    rows = list(csv.DictReader(io.StringIO(jobs.read_text())))
    waits = {(r["variant"], r["engine"], r["job"]): r["wait_s"] for r in rows}
    assert waits["base", "greedy", "default/b1"] == "3000.0"
    assert waits["more", "greedy", "default/b1"] == "0.0"
    assert waits["more", "cpsat@10m", "default/b1"] == "0.0"
    # One figure per variant, stacked: each is 15 in wide and 9.5 in high (rows of 3.0 and
    # 3.2 in, a row of wait panels of 2.4 + 0.4 in, 0.5 in of title), so two are taller
    # than wide.
    height, width, _ = image.imread(plot).shape
    assert height > width


BAD = [
    (
        "variants: [{name: base, queue: {name: qb, weight: 2}}]",
        'variant "base": variants[0].name: "base" names the instance as given',
    ),
    (
        "variants: [{name: late, at: '2026-11-30T20:00:00Z'}]",
        'variant "late": at: a simulation\'s variants share its timeline',
    ),
    (
        "variants: [{name: fewer, jobs: {removed: [default/a1]}}]",
        'variant "fewer": jobs: a simulation\'s variants share its jobs and their arrivals',
    ),
    (
        "variants: [{name: more, nodes: {added: [{like: n9, count: 1}]}}]",
        'variant "more": nodes.added[0].like: no such node: n9',
    ),
    (
        "variants: [{name: more, nodes: {added: [{like: n1, count: 1, hypernode: r9}]}}]",
        'variant "more": nodes.added[0].hypernode: no such HyperNode: r9',
    ),
    (
        "variants: [{name: more, nodes: {added: [{like: n1, count: 0}]}}]",
        'variant "more": nodes.added[0].count: input should be greater than or equal to 1',
    ),
    (
        "variants: [{name: q, queue: {name: qz, weight: 2}}]",
        'variant "q": queue: Queue "qz": name: no such queue',
    ),
    (
        "instance: timeline.yaml\nvariants: [{name: a}]",
        "instance: the base instance is given on the command line too",
    ),
]


@pytest.mark.parametrize(("body", "message"), BAD)
def test_bad_what_if_file_exits_2_before_dask_starts(
    files: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    body: str,
    message: str,
) -> None:
    import dask.distributed

    def no_cluster(*args: object, **kwargs: object) -> None:
        raise AssertionError("Dask started")

    monkeypatch.setattr(dask.distributed, "LocalCluster", no_cluster)
    timeline, spec = files
    spec.write_text(body + "\n")
    assert main(["simulate", str(timeline), "--what-if", str(spec), "-q"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: {spec}: {message}")
    assert len(err.splitlines()) == 1
    assert "Traceback" not in err


def test_a_missing_what_if_file_is_named(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    timeline, spec = files
    missing = spec.parent / "nowhere.yaml"
    assert main(["simulate", str(timeline), "--what-if", str(missing), "-q"]) == 2
    assert capsys.readouterr().err.startswith(f"error: {missing}: cannot read")


def test_settings_of_the_sweep_file_are_named_as_unused(files: tuple[Path, Path]) -> None:
    """simulate takes its engines, cycle limit and seed from its own options; a sweep file
    written for ``vcopt sweep`` still runs, and the warning says which of its lines count
    for nothing here."""
    timeline, spec = files
    spec.write_text("engines: [cpsat]\nseed: 3\n" + MORE)
    what_if = load_what_if(str(spec), load(timeline))
    assert what_if.warnings == [
        f"{spec}: engines, seed: not used by simulate, whose --engines, --cycle-limit and "
        "--seed set them"
    ]
    spec.write_text(MORE)
    assert load_what_if(str(spec), load(timeline)).warnings == []


def test_an_unreachable_scheduler_exits_2_naming_the_option(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    import dask

    timeline, spec = files
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code = main(
            ["simulate", str(timeline), "--what-if", str(spec), "--dask", "tcp://127.0.0.1:1"]
        )
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --dask: no Dask scheduler answers at tcp://127.0.0.1:1")
    assert "Traceback" not in err


def test_a_topology_limit_reaches_the_jobs_still_to_arrive(tmp_path: Path) -> None:
    """``topologyLimit`` of every job limits the timeline's later arrivals too, or a variant
    would run them under the base's rule."""
    hard = {"mode": "hard", "highestTierAllowed": 2}
    doc = document(
        [gpu_node("n1", 8)],
        [
            gpu_job("now", 1, 1, duration="1h", networkTopology=hard),
            gpu_job("later", 1, 1, arrival="1h", networkTopology=hard),
        ],
    )
    node = {"type": "Node", "selector": {"exactMatch": {"name": "n1"}}}
    doc["hypernodes"] = [
        {"name": "r1", "tier": 1, "members": [node]},
        {
            "name": "s1",
            "tier": 2,
            "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": "r1"}}}],
        },
    ]
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc))
    spec = tmp_path / "what-if.yaml"
    spec.write_text("variants: [{name: rack, topologyLimit: {job: all, tier: 1}}]\n")
    (_, base), (_, rack) = load_what_if(str(spec), load(path)).variants
    assert [j.network_topology.highest_tier for j in (*rack.jobs, *rack.arrivals)] == [1, 1]
    assert [j.network_topology.highest_tier for j in (*base.jobs, *base.arrivals)] == [2, 2]


def test_a_broken_rule_found_on_a_worker_reaches_the_command_whole() -> None:
    """A plan failing verification on a Dask worker is sent back pickled; the command then
    reports it as it does in-process (exit 3)."""
    error = InvalidState(at("14:00:00"), "greedy", [])
    again = pickle.loads(pickle.dumps(error))
    assert (again.time, again.engine, again.violations, str(again)) == (
        error.time,
        "greedy",
        [],
        str(error),
    )


def test_nodes_like_refuses_an_unknown_hypernode(files: tuple[Path, Path]) -> None:
    """The API names the HyperNode rather than failing on a missing key."""
    from models.errors import InputError
    from optimizer import whatif

    timeline, _ = files
    with pytest.raises(InputError, match='HyperNode "r9": name: no such HyperNode'):
        whatif.with_nodes_like(load(timeline), "n1", 1, "r9")
