"""The greedy engine's caches (``fit_cache``, ``scan``, ``nodes.node_orders``) change nothing.

Node checks are reused per (fit shape, node version), whole-cluster and HyperNode scans read
per-shape verdict arrays, scores are reused per (task key, node version), and an undone
operation gives its node its old version back. The reference for all of it is the
straightforward engine: every cache defeated (no task cacheable, a node version that is new at
every read, so no stored entry ever matches), each node checked and scored afresh, one by one.
Both must decide the same plan, pending reasons included, on random instances — with
``numNodesToFind`` made small so that tiny clusters exercise the scan's early stop, and the
array scan switched on for any node set.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest.mock import patch

from hypothesis import HealthCheck, given, note, settings
from strategies import instances, to_yaml

from models.load import from_dict, loads
from optimizer.greedy import engine as greedy
from optimizer.greedy import scan
from optimizer.greedy.api import NodeInfo
from optimizer.greedy.fit_cache import UNCACHEABLE
from optimizer.greedy.session import Plugin, Session
from optimizer.plan import Plan


class _FreshVersion:
    """A ``NodeInfo.version`` that is new at every read: no cached entry ever matches."""

    def __init__(self) -> None:
        self._numbers = itertools.count(10**9)

    def __get__(self, node: object, owner: type | None = None) -> int:
        return next(self._numbers)

    def __set__(self, node: object, value: int) -> None:
        return None


@contextmanager
def _straightforward() -> Iterator[None]:
    with ExitStack() as stack:
        stack.enter_context(patch.object(Session, "predicate_key", lambda self, task: None))
        stack.enter_context(patch.object(Session, "node_order_key", lambda self, task: None))
        stack.enter_context(patch.object(NodeInfo, "version", _FreshVersion()))
        yield


@contextmanager
def _early_stop() -> Iterator[None]:
    """K = half the nodes on any cluster, and array scans on node sets of any size."""
    with ExitStack() as stack:
        stack.enter_context(patch.object(scan, "MIN_FEASIBLE_NODES", 1))
        stack.enter_context(patch.object(scan, "ARRAY_SCAN_MIN", 1))
        yield


def _decisions(plan: Plan) -> tuple[object, ...]:
    return (plan.placements, plan.evictions, plan.pipelined, plan.jobs)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_cached_scans_and_scores_decide_what_the_straightforward_engine_decides(
    doc: dict[str, Any],
) -> None:
    note(to_yaml(doc))
    instance = from_dict(doc, "<generated>")
    for seed in (0, 3):
        with _early_stop():
            cached = greedy.solve(instance, seed)
            with _straightforward():
                reference = greedy.solve(instance, seed)
        assert _decisions(cached) == _decisions(reference)


CLUSTER = """
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: versions}
now: "2026-11-30T14:00:00Z"
queues: [{name: root}, {name: q, parent: root}]
nodes:
- {name: n1, allocatable: {cpu: "4", memory: 8Gi, pods: 10}}
jobs:
- name: a
  queue: q
  tasks: [{name: w, replicas: 2, resources: {cpu: "1", memory: 1Gi}}]
"""


def test_an_undone_placement_gives_the_node_its_version_back() -> None:
    """The state after the undo is the state before the placement, so it has that version;
    a fresh placement after it gets a version no earlier state had."""
    ssn = greedy.open_session(loads(CLUSTER, "versions.yaml"))
    node = ssn.nodes["n1"]
    first, second = sorted(ssn.jobs["default/a"].tasks.values(), key=lambda t: t.uid)
    before = node.version
    stmt = ssn.statement()
    stmt.allocate(first, node)
    placed = node.version
    stmt.discard()
    assert placed != before
    assert node.version == before
    stmt.allocate(second, node)
    assert node.version not in (before, placed)


def test_an_undo_after_a_later_change_takes_a_new_version() -> None:
    """Undoing an operation on a node changed since by another one (still held) does not
    return to any earlier state, so it must not reuse an earlier version."""
    ssn = greedy.open_session(loads(CLUSTER, "versions.yaml"))
    node = ssn.nodes["n1"]
    first, second = sorted(ssn.jobs["default/a"].tasks.values(), key=lambda t: t.uid)
    seen = {node.version}
    early, late = ssn.statement(), ssn.statement()
    early.allocate(first, node)
    seen.add(node.version)
    late.allocate(second, node)
    seen.add(node.version)
    early.discard()
    assert node.version not in seen


class _UnkeyedPlugin(Plugin):
    """A predicate plugin that does not say what its predicate reads."""

    name = "unkeyed"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add("predicate", self.name, lambda task, node: None)


def _session(plugins: str, registry: dict[str, type[Plugin]]) -> Session:
    text = CLUSTER + f"scheduler: {{actions: allocate, tiers: [{{plugins: [{plugins}]}}]}}\n"
    ssn = Session(loads(text, "versions.yaml"))
    ssn.open(registry)
    return ssn


def test_a_predicate_without_a_key_makes_every_task_uncacheable() -> None:
    """A plugin that registers a predicate and no ``predicate_key`` could read anything, so
    its verdicts are never reused: the task is checked afresh on every scan."""
    keyed = {"predicates": greedy.REGISTRY["predicates"]}
    ssn = _session("{name: predicates}", keyed)
    task = next(iter(ssn.jobs["default/a"].tasks.values()))
    assert ssn.predicate_key(task) is not None

    ssn = _session("{name: predicates}, {name: unkeyed}", {**keyed, "unkeyed": _UnkeyedPlugin})
    task = next(iter(ssn.jobs["default/a"].tasks.values()))
    assert ssn.predicate_key(task) is None
    scan.predicate_nodes(ssn, task, ssn.node_list, scan.FitReport(ssn.fit_cache))
    assert task.fit_shape == UNCACHEABLE
