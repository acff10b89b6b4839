"""``vcopt generate --timeline``: the arrivals, durations and starts it adds (docs/SIMULATE.md,
"Generated timelines"), checked against expectations worked out by hand from its parameters.

Shape S is the same cluster for every seed: 4 racks of 8 nodes, 2 of A100 and 1 of H100 (8 GPUs
each) and 1 of L40S (4 GPUs), so G = 3·8·8 + 8·4 = 224 GPUs. One rack is revocable, so 16 or 24
non-revocable 8-GPU nodes; half of that is 8 or 12, and the largest gang is 2^K = 8 (K = 3).

Expected values, from the documented parameters:

- E[g] per job = 0.40 · 2.9 (single: .4·1 + .25·2 + .2·4 + .15·8)
  + 0.20 · 0.3375 (fractional: (20 + 25 + 40 + 50) / 4 %)
  + 0.25 · 8 · 24/7 (gang: workers 2, 4, 8 with P ∝ 1/w = 4/7, 2/7, 1/7, mean 24/7)
  + 0.15 · 49/9 (spot: mean 7/3 workers × 7/3 GPUs) = 8.9013 GPUs.
- E[d] = e^(μ+σ²/2) Φ((ln cap − μ − σ²)/σ) + cap · P(d > cap), μ = ln 3600 s, σ = 1.67,
  cap = 48 h: 4.0284 h · Φ(0.6482) + 48 h · (1 − Φ(2.3182)) = 2.9901 + 0.4907 = 3.4811 h;
  P(d > cap) = 1.022 %.
- λ = L · G / (E[g] · E[d]) = 1.3 · 224 / (8.9013 · 3.4811) = 9.398 jobs/h at L = 1.3.

The big sample is 180 days of S at L = 1.3: E[N] = 9.398 · 4,320 h = 40,600 arrivals (Poisson,
σ = 201, 0.5 %). Tolerances below are at least 4.5 standard deviations of the quantity tested.
"""

from __future__ import annotations

import hashlib
import math
import statistics
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from models.golang import parse_go_duration
from models.io import from_dict
from models.load import load
from optimizer.cli import main
from optimizer.generate import generate, parse_span
from optimizer.options import SolveOptions
from optimizer.simulate import simulate

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 11, 30, 14, tzinfo=UTC)
S_GPUS = 224
E_G = 0.40 * 2.9 + 0.20 * 0.3375 + 0.25 * 8 * 24 / 7 + 0.15 * 49 / 9
E_D_S = 3.4811 * 3600
RATE_PER_S = 1.3 * S_GPUS / (E_G * E_D_S)
"""9.398 jobs an hour, in jobs a second."""
LONG = timedelta(days=180)
EXPECTED_LONG = RATE_PER_S * LONG.total_seconds()
"""40,600 arrivals."""

_cache: dict[tuple[str, int, float, timedelta], dict[str, Any]] = {}


def _doc(shape: str, seed: int, span: timedelta, load: float = 1.3) -> dict[str, Any]:
    key = (shape, seed, load, span)
    if key not in _cache:
        _cache[key] = generate(shape, seed, load, timeline=span)
    return _cache[key]


def _arrivals(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [j for j in doc["jobs"] if "arrival" in j]


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _seconds(job: dict[str, Any]) -> float:
    return parse_go_duration(job["duration"]).total_seconds()


def _gpus(job: dict[str, Any]) -> float:
    """GPU-equivalents of a job: whole GPUs, a shared one counted at its gpucores share."""
    (task,) = job["tasks"]
    res = task["resources"]
    return task["replicas"] * res["nvidia.com/gpu"] * res.get("nvidia.com/gpucores", 100) / 100


def _kind(job: dict[str, Any]) -> str:
    return job["name"].rsplit("-", 1)[0]


@pytest.fixture(scope="module")
def long_s() -> list[dict[str, Any]]:
    return _arrivals(_doc("S", 7, LONG))


def test_arrival_count_is_rate_times_span(long_s: list[dict[str, Any]]) -> None:
    """40,600 expected, Poisson σ 201: within 3 % (6 σ)."""
    assert len(long_s) == pytest.approx(EXPECTED_LONG, rel=0.03)


def test_offered_load_is_the_load(long_s: list[dict[str, Any]]) -> None:
    """Σ g·d / (G·T) has expectation L = 1.3. Its relative σ is √(E[g²]E[d²] / (N E[g]² E[d]²)):
    E[g²] = .4·14.2 + .2·.1296 + .25·64·16 + .15·7·7 = 269.1 (gang E[w²] = Σ w·(1/w)/(7/8) = 16),
    E[g]² = 79.2; E[d²]/E[d]² = 64.13 h² / 12.12 h² = 5.29 (the capped log-normal's second
    moment); so √(3.40 · 5.29 / 40,600) = 2.1 %, and 10 % is 4.7 σ."""
    offered = sum(_gpus(j) * _seconds(j) for j in long_s) / (S_GPUS * LONG.total_seconds())
    assert offered == pytest.approx(1.3, rel=0.10)


def test_durations_are_capped_log_normal(long_s: list[dict[str, Any]]) -> None:
    """Whole seconds in [1 s, 48 h]; the mean is E[d] = 3.481 h (σ of the mean: 7.21 h / √N =
    1 %, tolerance 5 %); the median is 1 h (σ of a sample median: m·σ·√(2π) / (2√N) = 1 %,
    tolerance 5 %); 1.022 % sit at the cap (σ 0.05 %, tolerance ±0.3 %)."""
    seconds = [_seconds(j) for j in long_s]
    assert all(s == int(s) and 1 <= s <= 48 * 3600 for s in seconds)
    assert statistics.fmean(seconds) == pytest.approx(E_D_S, rel=0.05)
    assert statistics.median(seconds) == pytest.approx(3600, rel=0.05)
    at_cap = sum(1 for s in seconds if s == 48 * 3600) / len(seconds)
    assert at_cap == pytest.approx(0.01022, abs=0.003)


def test_arrivals_follow_the_daily_cycle(long_s: list[dict[str, Any]]) -> None:
    """Rate ∝ 1 + 0.45·cos(2π(h − 14)/24): the 12 hours from 08:00 to 20:00 get
    ∫ / 24 h = 1/2 + 0.45/π = 64.3 % of the arrivals (binomial σ 0.24 %, tolerance ±1.5 %);
    without the cycle it would be 50 %."""
    day = sum(1 for j in long_s if 8 <= _at(j["arrival"]).hour < 20) / len(long_s)
    assert day == pytest.approx(0.5 + 0.45 / math.pi, abs=0.015)


def test_kind_shares_and_gang_sizes(long_s: list[dict[str, Any]]) -> None:
    """Kinds 40 / 20 / 25 / 15 % (σ ≤ 0.25 %, tolerance ±1.5 %). Worker counts come from the
    stated sets: single and fractional 1, gang 2, 4, 8 (S's K = 3) at 4/7, 2/7, 1/7 (σ ≤ 0.5 %
    over ~10,000 gangs, tolerance ±2.5 %), spot 1, 2, 4; gangs and spots are gangs
    (minAvailable = workers). Per worker: single 1/2/4/8 whole GPUs, gang 8, spot 1/2/4, a
    fractional pod one of the four HAMi shares."""
    kinds = Counter(_kind(j) for j in long_s)
    shares = {"single": 0.40, "fractional": 0.20, "gang": 0.25, "spot": 0.15}
    assert set(kinds) == set(shares)
    for kind, share in shares.items():
        assert kinds[kind] / len(long_s) == pytest.approx(share, abs=0.015)
    workers = {"single": {1}, "fractional": {1}, "gang": {2, 4, 8}, "spot": {1, 2, 4}}
    per_worker = {"single": {1, 2, 4, 8}, "fractional": {1}, "gang": {8}, "spot": {1, 2, 4}}
    shares_of = {(8000, 20), (10000, 25), (16000, 40), (20000, 50)}
    for job in long_s:
        kind = _kind(job)
        (task,) = job["tasks"]
        res = task["resources"]
        assert task["replicas"] in workers[kind]
        assert job["minAvailable"] == (task["replicas"] if kind in ("gang", "spot") else 1)
        assert res["nvidia.com/gpu"] in per_worker[kind]
        if kind == "fractional":
            assert (res["nvidia.com/gpumem"], res["nvidia.com/gpucores"]) in shares_of
    gangs = Counter(j["tasks"][0]["replicas"] for j in long_s if _kind(j) == "gang")
    total = sum(gangs.values())
    for size, p in ((2, 4 / 7), (4, 2 / 7), (8, 1 / 7)):
        assert gangs[size] / total == pytest.approx(p, abs=0.025)


def test_priority_spot_and_gpu_model_shares(long_s: list[dict[str, Any]]) -> None:
    """Spot jobs are low priority, preemptable and revocable on any zone; 20 % of the others
    are high priority (σ 0.2 %, tolerance ±1.5 %), the rest normal. 20 % of all jobs pin a GPU
    model (every job has an eligible model on S), always one of the cluster's."""
    doc = _doc("S", 7, LONG)
    products = {g["labels"]["nvidia.com/gpu.product"] for g in doc["nodeGroups"]}
    others = [j for j in long_s if _kind(j) != "spot"]
    for job in long_s:
        task = job["tasks"][0]
        if _kind(job) == "spot":
            assert job["priorityClassName"] == "low"
            assert job["annotations"] == {"volcano.sh/preemptable": "true"}
            assert task["annotations"]["volcano.sh/revocable-zone"] == "*"
        else:
            assert job["priorityClassName"] in ("high", "normal")
            assert "annotations" not in job and "annotations" not in task
    high = sum(1 for j in others if j["priorityClassName"] == "high") / len(others)
    assert high == pytest.approx(0.20, abs=0.015)
    pinned = [j["tasks"][0].get("nodeSelector") for j in long_s]
    chosen = [s["nvidia.com/gpu.product"] for s in pinned if s]
    assert len(chosen) / len(long_s) == pytest.approx(0.20, abs=0.015)
    assert set(chosen) <= products


def test_queues_submit_in_proportion_to_their_deserved_gpus(
    long_s: list[dict[str, Any]],
) -> None:
    """Each team's share of the arrivals is its deserved GPUs over all teams' (binomial σ
    ≤ 0.25 %, tolerance ±1.5 %); departments (parents) submit nothing."""
    doc = _doc("S", 7, LONG)
    parents = {q.get("parent") for q in doc["queues"]}
    teams = {
        q["name"]: max(1, q["deserved"]["nvidia.com/gpu"])
        for q in doc["queues"]
        if q["name"] not in parents
    }
    counts = Counter(j["queue"] for j in long_s)
    assert set(counts) <= set(teams)
    for team, weight in teams.items():
        assert counts[team] / len(long_s) == pytest.approx(weight / sum(teams.values()), abs=0.015)


def test_a_cluster_too_small_for_gangs_gets_none() -> None:
    """Custom 4 nodes: 2 racks of 2, one of H100 (8 GPUs), one of L40S (4), one of them
    revocable, so at most 2 non-revocable 8-GPU nodes: half is 1, no gang of two. The other
    kinds keep their proportions: single .40/.75 = 53.3 %, fractional 26.7 %, spot 20 %, and
    E[g] = (.4·2.9 + .2·.3375 + .15·49/9) / .75 = 2.7256 on G = 24 GPUs, so
    λ = 1.3·24 / (2.7256·3.4811) = 3.288 jobs/h: 3,157 over 4 seeds × 10 days (σ 56,
    tolerance 8 %); shares within ±4.5 % (σ ≤ 0.9 %)."""
    arrivals = [
        j
        for seed in range(4)
        for j in _arrivals(generate("custom", seed, nodes=4, timeline=timedelta(days=10)))
    ]
    kinds = Counter(_kind(j) for j in arrivals)
    assert "gang" not in kinds
    assert len(arrivals) == pytest.approx(1.3 * 24 / (2.7256 * 3.4811) * 24 * 40, rel=0.08)
    for kind, share in (("single", 0.40), ("fractional", 0.20), ("spot", 0.15)):
        assert kinds[kind] / len(arrivals) == pytest.approx(share / 0.75, abs=0.045)


@pytest.mark.parametrize(("seed", "span"), [(0, "1d"), (3, "6h"), (5, "1d12h"), (9, "90m")])
def test_arrivals_lie_inside_the_span_in_time_order(seed: int, span: str) -> None:
    """Every arrival is after now and at most now + span, in whole seconds, in file order; job
    names are unique across the file."""
    length = parse_span(span)
    doc = _doc("S", seed, length)
    times = [_at(j["arrival"]) for j in _arrivals(doc)]
    assert times
    assert all(NOW < t <= NOW + length and t.microsecond == 0 for t in times)
    assert times == sorted(times)
    names = [j["name"] for j in doc["jobs"]]
    assert len(names) == len(set(names))


def test_a_partial_day_is_sized_to_the_load() -> None:
    """A 6 h span from 14:00 sits on the cycle's peak (its mean there is 1 + 0.45·2/π = 1.29);
    rates are divided by that mean, so the expected count stays λ·6 h = 56.4 per seed: 5,639
    over 100 seeds (σ 75, tolerance 6 % = 4.5 σ). Without the division it would be 29 % more."""
    span = timedelta(hours=6)
    count = sum(len(_arrivals(generate("S", seed, timeline=span))) for seed in range(100))
    assert count == pytest.approx(RATE_PER_S * span.total_seconds() * 100, rel=0.06)


def test_the_snapshot_is_the_generators_own_with_run_times() -> None:
    """Without the arrivals and the timeline fields the document is ``generate``'s without a
    timeline (the generator's label apart); every job has a duration; running jobs started at
    or before now and end after it (startedAt + duration > now), pending ones have no start."""
    plain = generate("S", 4)
    timed = generate("S", 4, timeline=timedelta(days=1))
    at_now = [j for j in timed["jobs"] if "arrival" not in j]
    for job in at_now:
        assert "duration" in job
        if job.get("running"):
            started = _at(job["startedAt"])
            assert started <= NOW < started + parse_go_duration(job["duration"])
        else:
            assert "startedAt" not in job

    def bare(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in j.items() if k not in ("duration", "startedAt")} for j in jobs]

    assert bare(at_now) == bare(plain["jobs"])
    rest = {k: v for k, v in timed.items() if k not in ("jobs", "metadata")}
    assert rest == {k: v for k, v in plain.items() if k not in ("jobs", "metadata")}
    label = timed["metadata"]["annotations"]["vcopt/generator"]
    assert label == plain["metadata"]["annotations"]["vcopt/generator"] + " timeline=1d"


@pytest.mark.parametrize(("shape", "seed"), [("S", 0), ("S", 1), ("S", 2), ("S", 11), ("M", 1)])
def test_every_generated_timeline_validates(shape: str, seed: int) -> None:
    """The loader (every validation rule, the timeline's included: arrival after now for
    pending jobs, startedAt before now with the run still going) accepts the file without a
    warning, and holds every arriving job as an arrival, not in the snapshot."""
    doc = _doc(shape, seed, timedelta(days=1))
    instance = from_dict(doc, "<generated>")
    assert instance.warnings == ()
    assert len(instance.arrivals) == len(_arrivals(doc))
    assert len(instance.jobs) == len(doc["jobs"]) - len(_arrivals(doc))


def test_same_seed_same_timeline_other_seed_other_timeline() -> None:
    span = timedelta(days=1)
    assert generate("S", 2, timeline=span) == generate("S", 2, timeline=span)
    assert _arrivals(generate("S", 2, timeline=span)) != _arrivals(generate("S", 3, timeline=span))


def test_a_short_s_timeline_runs_through_simulate_to_the_end() -> None:
    """Greedy over a 2 h timeline without ``until``: the run ends only when no arrival or
    completion is left (docs/SIMULATE.md), so after the last arrival and with nothing running;
    a job running at now that is never evicted ends at startedAt + duration."""
    doc = _doc("S", 1, timedelta(hours=2))
    run = simulate(from_dict(doc, "<generated>"), "greedy", SolveOptions())
    last = max(_at(j["arrival"]) for j in _arrivals(doc))
    assert run.end >= last
    assert run.series[-1].running_jobs == 0
    records = {r.job.split("/")[1]: r for r in run.jobs}
    assert len(records) == len(doc["jobs"])
    checked = 0
    for job in doc["jobs"]:
        record = records[job["name"]]
        if "arrival" in job:
            assert record.arrival == _at(job["arrival"])
        if job.get("running") and record.evictions == 0 and record.restarts == 0:
            end = _at(job["startedAt"]) + parse_go_duration(job["duration"])
            assert record.end == end
            checked += 1
    assert checked > 0


def test_parse_span_reads_go_durations_and_days() -> None:
    assert parse_span("7d") == timedelta(hours=168)
    assert parse_span("1.5d") == parse_span("1d12h") == parse_span("36h")
    assert parse_span("90m") == timedelta(minutes=90)
    for bad in ("", "d", "7", "-1d", "1d-3h", "0s", "500ms", "367d", "7days"):
        with pytest.raises(ValueError):
            parse_span(bad)


GOLDEN = {
    ("S", "0", "1.3", "stdout"): "02837bb4cf0e98838e5f60826f44c08efb5906236e6aa2cd9e15ac674198a9b9",
    ("S", "0", "1.3", "file"): "7c01ecd8a0aa7413129a55988672e805df39c776ce2ec9ddb6c2b745ccfa6c09",
    ("S", "3", "0.8", "file"): "7cf42acbf32b6d78da1b9ee1f3e430c8b88887d3128e20ef486dd9a3844919a7",
    ("M", "1", "1.3", "file"): "42edd955a0ada6010fc5be2ef052b3192aab141e8daf1c7b24205fa66cb8e04c",
}
"""SHA-256 of ``vcopt generate`` outputs written before ``--timeline`` existed: the command
without it must keep writing exactly these bytes."""


@pytest.mark.parametrize(("key", "digest"), GOLDEN.items())
def test_without_timeline_the_output_is_unchanged(
    key: tuple[str, str, str, str],
    digest: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shape, seed, load_factor, where = key
    args = ["generate", "--shape", shape, "--seed", seed, "--load", load_factor]
    if where == "file":
        assert main([*args, "-o", str(tmp_path / "out.yaml")]) == 0
        data = (tmp_path / "out.yaml").read_bytes()
    else:
        assert main(args) == 0
        data = capsys.readouterr().out.encode()
    assert hashlib.sha256(data).hexdigest() == digest


def test_cli_writes_a_timeline_the_loader_reads(tmp_path: Path) -> None:
    """``--timeline 12h`` writes a file whose arrivals lie within 12 h; the same command twice
    writes the same bytes."""
    paths = [tmp_path / "a.yaml", tmp_path / "b.yaml"]
    for path in paths:
        assert main(["generate", "--seed", "2", "--timeline", "12h", "-o", str(path)]) == 0
    assert paths[0].read_bytes() == paths[1].read_bytes()
    instance = load(paths[0])
    assert instance.arrivals
    assert all(NOW < j.arrives_at(NOW) <= NOW + timedelta(hours=12) for j in instance.arrivals)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--timeline", "soon"], "--timeline: 'soon' is not a span"),
        (["--timeline", "0s"], "--timeline: must be between 1s and 366d, got 0s"),
        (["--shape", "XL", "--timeline", "7d"], "more than the 200,000 of one instance"),
    ],
)
def test_cli_refuses_a_bad_timeline(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2 and one error line naming ``--timeline``, no traceback. XL at load 1.3 brings
    about 57,000 pods a day (E[pods] per job = .4 + .2 + .25·6.1 + .15·7/3 = 2.5), far over
    200,000 in a week."""
    assert main(["generate", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert message in err and "Traceback" not in err


def test_the_simulate_benchmark_runs_a_generated_timeline() -> None:
    """A smoke run of benchmarks/simulate.py: one simulated hour of a 2 h S timeline."""
    script = str(ROOT / "benchmarks" / "simulate.py")
    options = ["--shape", "S", "--seed", "1", "--timeline", "2h", "--hours", "1", "--no-verify"]
    result = subprocess.run(
        [sys.executable, script, *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "32 nodes" in result.stdout and "1 h simulated" in result.stdout
