"""Properties every plan must have, on tiny random instances (``tests/strategies.py``).

The verifier is the oracle (DESIGN §6): whatever an engine decides, a plan that breaks a rule
Volcano, HAMi or Kubernetes enforces is wrong. The greedy engine must also be a function of
(instance, seed), since Volcano's random ties are drawn from a seeded generator (DESIGN §5). The
CP-SAT engine is hinted with and floored by the greedy plan, so on the staged objective it can
never be worse than greedy, and ``deterministic`` makes it reproducible.

A failing property prints the instance as YAML (hypothesis ``note``); shrunk counterexamples are
kept below as regression tests.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, note, settings

from models.instance import Instance
from models.load import from_dict, loads
from optimizer.cpsat import model as cpsat
from optimizer.cpsat.data import compile_instance
from optimizer.cpsat.objective import evaluate
from optimizer.cpsat.params import SolveOptions
from optimizer.greedy import engine as greedy
from optimizer.plan import Plan
from optimizer.verify import format_violations, verify
from strategies import CLOSED_WINDOW, OPEN_WINDOW, ZONE, instances, to_yaml

GREEDY_SEEDS = (0, 1, 7)
CPSAT_OPTIONS = SolveOptions(time_limit=2, workers=1, deterministic=True, quiet=True)
SLOW = [HealthCheck.too_slow]


def _load(doc: dict[str, Any]) -> Instance:
    note(to_yaml(doc))
    return from_dict(doc, "<generated>")


def _decisions(plan: Plan) -> tuple[object, ...]:
    """What a plan decides; solver statistics such as wall time are left out."""
    return (plan.placements, plan.evictions, plan.pipelined, plan.jobs)


def _assert_valid(instance: Instance, plan: Plan) -> None:
    violations = verify(instance, plan)
    if violations:
        note(plan.to_yaml())
    assert not violations, format_violations(violations)


# -- the generator -----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None, suppress_health_check=SLOW)
@given(instances())
def test_generated_instances_load_without_problems(doc: dict[str, Any]) -> None:
    """The generator only makes valid, realistic input: the loader accepts every instance
    without even a warning, and keeps every node, job and running pod it was given."""
    instance = _load(doc)
    assert instance.warnings == ()
    assert [n.name for n in instance.nodes] == [n["name"] for n in doc["nodes"]]
    assert len(instance.jobs) == len(doc["jobs"])
    running = sum(len(j.get("running", [])) for j in doc["jobs"])
    assert sum(1 for p in instance.pods if p.running) == running


def _running_shares(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for j in doc["jobs"] for r in j.get("running", []) for s in r.get("gpus", [])]


def _plugins(doc: dict[str, Any]) -> list[dict[str, Any]]:
    tiers = (doc.get("scheduler") or {}).get("tiers", [])
    return [p for tier in tiers for p in tier["plugins"]]


def _zone_node_with_revocable_task(window: str):
    def found(doc: dict[str, Any]) -> bool:
        tdm = [p for p in _plugins(doc) if p["name"] == "tdm"]
        zoned = any(n.get("labels", {}).get("volcano.sh/revocable-zone") for n in doc["nodes"])
        revocable = any(
            t.get("annotations", {}).get("volcano.sh/revocable-zone") == "*"
            for j in doc["jobs"]
            for t in j["tasks"]
        )
        return bool(
            tdm
            and tdm[0]["arguments"][f"tdm.revocable-zone.{ZONE}"] == window
            and zoned
            and revocable
        )

    return found


FEATURES = {
    "shared GPU held by a running pod": lambda d: any(
        s["cores"] < 100 for s in _running_shares(d)
    ),
    "whole GPU held by a running pod": lambda d: any(
        s["cores"] == 100 for s in _running_shares(d)
    ),
    "explicit device list": lambda d: any(isinstance(n.get("gpus"), list) for n in d["nodes"]),
    "spine over racks": lambda d: any(h["tier"] == 2 for h in d.get("hypernodes", [])),
    "hard topology with the plugin": lambda d: any(
        j.get("networkTopology", {}).get("mode") == "hard" for j in d["jobs"]
    )
    and any(p["name"] == "network-topology-aware" for p in _plugins(d)),
    "two-level queues on hierarchical capacity": lambda d: any(
        q.get("parent", "root") != "root" for q in d["queues"]
    )
    and any(p.get("enableHierarchy") for p in _plugins(d)),
    "guarantee on a queue": lambda d: any("guarantee" in q for q in d["queues"]),
    "Helm default": lambda d: "scheduler" not in d,
    "open TDM window": _zone_node_with_revocable_task(OPEN_WINDOW),
    "closed TDM window": _zone_node_with_revocable_task(CLOSED_WINDOW),
    "preempt and reclaim": lambda d: "reclaim, preempt" in d.get("scheduler", {}).get(
        "actions", ""
    ),
}


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_generator_reaches_feature(feature: str) -> None:
    """Each feature the engines model shows up in the generated instances (else the properties
    would hold vacuously for it); ``find`` fails if 2000 examples never show it."""
    doc = find(
        instances(),
        FEATURES[feature],
        settings=settings(max_examples=2000, database=None, suppress_health_check=SLOW),
    )
    assert FEATURES[feature](doc)


# -- greedy ------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(instances())
def test_greedy_plans_pass_the_verifier(doc: dict[str, Any]) -> None:
    """Volcano never binds a pod against a predicate, a device, a gang, a quota or a TDM
    window, nor evicts what it may not; so no greedy plan, for any seed, has a violation."""
    instance = _load(doc)
    for seed in GREEDY_SEEDS:
        _assert_valid(instance, greedy.solve(instance, seed))


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW)
@given(instances())
def test_greedy_same_seed_same_plan(doc: dict[str, Any]) -> None:
    """Random ties come from the seeded generator only (DESIGN §5): solving twice with the same
    seed decides exactly the same placements, evictions, pipelined pods and job statuses."""
    instance = _load(doc)
    for seed in GREEDY_SEEDS:
        first = greedy.solve(instance, seed)
        assert _decisions(greedy.solve(instance, seed)) == _decisions(first)


# -- cpsat -------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=SLOW)
@given(instances())
def test_cpsat_plans_pass_the_verifier_and_never_lose_to_greedy(doc: dict[str, Any]) -> None:
    """A CP-SAT plan keeps every rule, and its stage tuple (work, fairness, topology, packing)
    is lexicographically ≥ the greedy plan's it was hinted with (DESIGN §5: "a cpsat plan is
    never worse than greedy on the objective")."""
    instance = _load(doc)
    floor = greedy.solve(instance, 0)
    plan = cpsat.solve(instance, CPSAT_OPTIONS, floor)
    _assert_valid(instance, plan)
    data = compile_instance(instance)
    assert evaluate(data, plan).as_tuple() >= evaluate(data, floor).as_tuple()


@settings(max_examples=10, deadline=None, suppress_health_check=SLOW)
@given(instances())
def test_cpsat_deterministic_runs_agree(doc: dict[str, Any]) -> None:
    """With ``deterministic`` (one interleaved worker, fixed seed, deterministic time budget)
    two solves of the same instance from the same hint decide the same plan."""
    instance = _load(doc)
    floor = greedy.solve(instance, 0)
    first = cpsat.solve(instance, CPSAT_OPTIONS, floor)
    second = cpsat.solve(instance, CPSAT_OPTIONS, floor)
    assert _decisions(second) == _decisions(first)


# -- regressions -------------------------------------------------------------------------------

REGRESSIONS: dict[str, str] = {}
"""Shrunk counterexamples of the properties above, as instance YAML, by name."""


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression_plans_pass_the_verifier(name: str) -> None:
    instance = loads(REGRESSIONS[name], f"<{name}>")
    floor = greedy.solve(instance, 0)
    _assert_valid(instance, floor)
    plan = cpsat.solve(instance, CPSAT_OPTIONS, floor)
    _assert_valid(instance, plan)
