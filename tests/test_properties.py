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

import dataclasses
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from strategies import CLOSED_WINDOW, OPEN_WINDOW, ZONE, instances, to_yaml

from models.fragmentation import TypicalTask, instance_mix
from models.instance import Instance
from models.load import from_dict, loads
from optimizer.cpsat import engine as cpsat
from optimizer.cpsat.compile.data import compile_instance
from optimizer.cpsat.model.objective import evaluate
from optimizer.cpsat.model.variables import value_of
from optimizer.cpsat.search import CpsatModel
from optimizer.greedy import engine as greedy
from optimizer.options import SolveOptions
from optimizer.plan import Plan
from optimizer.verify import format_violations, verify

GREEDY_SEEDS = (0, 1, 7)
CPSAT_OPTIONS = SolveOptions.of(time_limit=2, workers=1, deterministic=True)
SLOW = [HealthCheck.too_slow]


def _load(doc: dict[str, Any]) -> Instance:
    note(to_yaml(doc))
    return from_dict(doc, "<generated>")


def _decisions(plan: Plan) -> tuple[object, ...]:
    """What a plan decides; solver statistics such as wall time are left out."""
    return (plan.placements, plan.evictions, plan.pipelined, plan.jobs)


UNACTED = ("network-topology-aware plugin is not configured", "can never be placed")
"""Warnings about input Volcano accepts but cannot act on, which the generator makes on
purpose: a hard topology limit without the plugin that enforces it, a pod no node can hold."""


def _meant(message: str) -> bool:
    return any(text in message for text in UNACTED)


def _assert_valid(instance: Instance, plan: Plan) -> None:
    violations = verify(instance, plan)
    assert not violations, format_violations(violations) + plan.to_yaml()


# -- the generator -----------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(instances())
def test_generated_instances_load_without_problems(doc: dict[str, Any]) -> None:
    """The generator only makes valid, realistic input: the loader accepts every instance
    without a warning beyond the :data:`UNACTED` ones, and keeps every node, job and running
    pod it was given."""
    instance = _load(doc)
    assert [w for w in instance.warnings if not _meant(w.message)] == []
    assert [n.name for n in instance.nodes] == [n["name"] for n in doc["nodes"]]
    assert len(instance.jobs) == len(doc["jobs"])
    running = sum(len(j.get("running", [])) for j in doc["jobs"])
    assert sum(1 for p in instance.pods if p.running) == running


def _running_shares(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for j in doc["jobs"] for r in j.get("running", []) for s in r.get("gpus", [])]


def _plugins(doc: dict[str, Any]) -> list[dict[str, Any]]:
    tiers = (doc.get("scheduler") or {}).get("tiers", [])
    return [p for tier in tiers for p in tier["plugins"]]


Doc = dict[str, Any]
Feature = Callable[[Doc], bool]


def _zone_node_with_revocable_task(window: str) -> Feature:
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


def _plugin_with(name: str, arguments: Doc) -> Feature:
    def found(doc: Doc) -> bool:
        return any(
            p["name"] == name
            and all(p.get("arguments", {}).get(k) == v for k, v in arguments.items())
            for p in _plugins(doc)
        )

    return found


FEATURES: dict[str, Feature] = {
    "shared GPU held by a running pod": lambda d: any(s["cores"] < 100 for s in _running_shares(d)),
    "whole GPU held by a running pod": lambda d: any(s["cores"] == 100 for s in _running_shares(d)),
    "explicit device list": lambda d: any(isinstance(n.get("gpus"), list) for n in d["nodes"]),
    "spine over racks": lambda d: any(h["tier"] == 2 for h in d.get("hypernodes", [])),
    "hard topology with the plugin": lambda d: (
        any(j.get("networkTopology", {}).get("mode") == "hard" for j in d["jobs"])
        and any(p["name"] == "network-topology-aware" for p in _plugins(d))
    ),
    "two-level queues on hierarchical capacity": lambda d: (
        any(q.get("parent", "root") != "root" for q in d["queues"])
        and any(p.get("enableHierarchy") for p in _plugins(d))
    ),
    "guarantee on a queue": lambda d: any("guarantee" in q for q in d["queues"]),
    "Helm default": lambda d: "scheduler" not in d,
    "open TDM window": _zone_node_with_revocable_task(OPEN_WINDOW),
    "closed TDM window": _zone_node_with_revocable_task(CLOSED_WINDOW),
    "preempt and reclaim": lambda d: (
        "reclaim, preempt" in d.get("scheduler", {}).get("actions", "")
    ),
    "proportion configured": _plugin_with("proportion", {}),
    "flat capacity": lambda d: any(
        p["name"] == "capacity" and not p.get("enableHierarchy") for p in _plugins(d)
    ),
    "deviceshare binpack": _plugin_with("deviceshare", {"deviceshare.SchedulePolicy": "binpack"}),
    "deviceshare spread": _plugin_with("deviceshare", {"deviceshare.SchedulePolicy": "spread"}),
    "soft topology": lambda d: any(
        j.get("networkTopology", {}).get("mode") == "soft" for j in d["jobs"]
    ),
    "required pod anti-affinity": lambda d: _task_has(
        d, "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"
    ),
    "required pod affinity": lambda d: _task_has(
        d, "affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution"
    ),
    "preferred pod affinity": lambda d: _task_has(
        d, "affinity", "podAffinity", "preferredDuringSchedulingIgnoredDuringExecution"
    ),
    "topology spread": lambda d: _task_has(d, "topologySpreadConstraints"),
    "preferred node affinity": lambda d: _task_has(d, "affinity", "nodeAffinity"),
}


def _task_has(doc: Doc, *path: str) -> bool:
    for job in doc["jobs"]:
        for task in job["tasks"]:
            node: Any = task
            for part in path:
                node = node.get(part) if isinstance(node, dict) else None
            if node:
                return True
    return False


def test_generator_reaches_every_feature() -> None:
    """Each feature the engines model shows up within 300 generated instances; otherwise the
    properties below would hold vacuously for it."""
    seen: set[str] = set()

    @settings(max_examples=300, database=None, deadline=None, suppress_health_check=SLOW)
    @given(instances())
    def collect(doc: dict[str, Any]) -> None:
        seen.update(name for name, present in FEATURES.items() if present(doc))

    collect()
    assert sorted(set(FEATURES) - seen) == []


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


@settings(max_examples=80, deadline=None, suppress_health_check=SLOW)
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


@settings(max_examples=30, deadline=None, suppress_health_check=SLOW)
@given(instances())
def test_cpsat_deterministic_runs_agree(doc: dict[str, Any]) -> None:
    """With ``deterministic`` (one interleaved worker, fixed seed, deterministic time budget)
    two solves of the same instance from the same hint decide the same plan."""
    instance = _load(doc)
    floor = greedy.solve(instance, 0)
    first = cpsat.solve(instance, CPSAT_OPTIONS, floor)
    second = cpsat.solve(instance, CPSAT_OPTIONS, floor)
    assert _decisions(second) == _decisions(first)


_TYPICAL = st.builds(
    TypicalTask,
    cpu=st.sampled_from((0, 500, 2000, 8000)),
    milli=st.sampled_from((250, 500, 1000)),
    gpus=st.integers(1, 4),
    types=st.sampled_from(((), ("A10",), ("T4",))),
    weight=st.floats(0.05, 1.0),
)


@settings(max_examples=100, deadline=None, suppress_health_check=SLOW)
@given(instances(), st.lists(_TYPICAL, min_size=1, max_size=4))
def test_fragmentation_stage_in_the_model_is_its_value_of_the_plan(
    doc: dict[str, Any], extra: list[TypicalTask]
) -> None:
    """The stage's expression at a plan's complete hint (every auxiliary derived: step
    literals and parts, CPU thresholds, devices keeping a share free) equals the value the
    plan side computes from the plan's node states, for greedy's plan and CP-SAT's. The mix is
    the instance's own plus drawn shapes — multi-GPU ones among them, with CPU needs and
    device types — so every kind of term is written."""
    instance = _load(doc)
    tasks = [*instance_mix(instance), *extra]
    total = sum(t.weight for t in tasks)
    mix = tuple(dataclasses.replace(t, weight=t.weight / total) for t in tasks)
    options = CPSAT_OPTIONS.replaced(
        weights={"fragmentation": 1}, typical_mix=mix, objective="weighted"
    )
    floor = greedy.solve(instance, 0)
    for plan in (floor, cpsat.solve(instance, options, floor)):
        model = CpsatModel(instance, options)
        hinted = model.hint_plan(plan)
        expected = evaluate(model.data, plan).fragmentation
        assert value_of(model.stages["fragmentation"], hinted) == expected


# -- regressions -------------------------------------------------------------------------------
# Shrunk counterexamples of the properties above, each with the rule it broke.

TASK_WITHOUT_NODES = """
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: task-without-nodes}
now: "2026-11-30T14:00:00Z"
nodes:
- {name: n0, allocatable: {cpu: "2", memory: 8Gi, pods: 3}}
- {name: n1, allocatable: {cpu: "2", memory: 8Gi, pods: 3}}
jobs:
- name: j0
  tasks:
  - {name: w, replicas: 1, resources: {cpu: 250m, memory: 512Mi}, nodeSelector: {pool: a}}
  - {name: ps, replicas: 1, resources: {cpu: 250m, memory: 512Mi}}
"""


def test_cpsat_admits_no_gang_whose_task_has_no_node() -> None:
    """j0's gang is both pods (minAvailable defaults to its 2 replicas), and no node carries
    ``pool: a``, so ``w`` can go nowhere and no plan may place anything: greedy leaves j0
    pending, and CP-SAT must too, rather than count two ``ps`` pods where there is one."""
    instance = loads(TASK_WITHOUT_NODES, "<task-without-nodes>")
    floor = greedy.solve(instance, 0)
    assert floor.placements == ()
    plan = cpsat.solve(instance, CPSAT_OPTIONS, floor)
    _assert_valid(instance, plan)
    assert plan.placements == ()


GUARANTEE_AND_GANG_TIER = """
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: guarantee-and-gang-tier}
now: "2026-11-30T14:00:00Z"
scheduler:
  actions: enqueue, allocate, backfill, reclaim
  tiers:
  - plugins: [{name: priority}, {name: gang, enablePreemptable: false}, {name: conformance}]
  - plugins:
    - {name: drf, enablePreemptable: false}
    - {name: predicates}
    - {name: capacity}
    - {name: nodeorder}
nodes:
- {name: n0, allocatable: {cpu: "4", memory: 16Gi, pods: 3}}
- name: n1
  allocatable: {cpu: "4", memory: 16Gi, pods: 3}
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
queues:
- {name: q0, deserved: {memory: 12Gi}, guarantee: {memory: 12Gi}}
- {name: q1, deserved: {memory: 16Gi}}
jobs:
- name: big
  queue: q1
  tasks:
  - {name: w, replicas: 1, resources: {cpu: "1", memory: 8Gi}}
- name: small
  queue: q0
  minAvailable: 1
  tasks:
  - {name: w, replicas: 3, resources: {cpu: "1", memory: 4Gi}}
  running:
  - {index: 0, node: n0}
  - {index: 1, node: n0}
  - {index: 2, node: n0}
"""


def test_greedy_reclaim_through_gang_tier_passes_the_verifier() -> None:
    """``big`` fits only on n0 (n1 is tainted), which has 4Gi free: reclaim must free 4Gi from
    q0. Volcano's ``Session.Reclaimable`` returns the first tier with a non-empty intersection
    (volcano-scheduler.md §8.2): tier 1's gang keeps small's pods above its minAvailable 1 and
    conformance keeps all, so capacity's guarantee check (tier 2) is never consulted and
    Volcano evicts one pod, leaving q0 8Gi < its 12Gi guarantee. A faithful greedy plan does
    the same, and the verifier must accept what Volcano itself does."""
    instance = loads(GUARANTEE_AND_GANG_TIER, "<guarantee-and-gang-tier>")
    plan = greedy.solve(instance, 0)
    assert [e.pod for e in plan.evictions] == ["default/small-w-2"]
    _assert_valid(instance, plan)
