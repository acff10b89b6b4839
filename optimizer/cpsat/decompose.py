"""A snapshot too large for one model, solved part by part and improved by rounds.

The cluster is cut into *parts* along its topology (the HyperNodes of the highest tier whose
domains stay small enough; chunks of node classes when there is no topology). Each round opens
the nodes of some parts and frees the jobs the current plan places entirely inside them, plus
a rotating window of the pending jobs that could go there; every other decision is frozen
(``view.py``). The round's model is the model of the whole snapshot with those decisions
fixed, solved on one weighted objective that orders the stages as the user's objective does.
Its answer is merged into the plan and kept only if the whole plan scores better, so every
plan on the way is complete and feasible (anytime).

Where the rounds look, and how far:

- **Aimed by the linear relaxation** (``relaxation.py``) when the solve has one: the first
  pass takes the parts in order of what they can gain — the pending work the linear optimum
  puts there less what the plan already places —, and a round's pending window takes first
  the jobs of groups the optimum places, then the most valuable. Without it, the first pass
  is in topology order. Every later pass takes the parts in a seeded random order, so that a
  round meets parts it did not meet before.
- **Adaptive size**: a round opens one part at first; a round whose search proves its
  neighbourhood holds nothing better doubles the parts of the next ones, a round that runs
  out of time without a gain halves them (adaptive large-neighbourhood search).

Measured on the realistic 1,213-node instance at 60 s (docs/BENCHMARKS.md): one part a round
in topology order found its part already optimal in 59 of 64 rounds (+0.003 % work over
greedy), fixed rounds of about a hundred classes in random order reached +0.5 %, the same
ranked by free room for the average pending pod +0.13 %, adaptive rounds aimed by the
relaxation +0.63 %; on the generated L cluster, the fixed large rounds lost half the gain of
one-part rounds (+8.7 % against +15.1 %), which the adaptive size keeps (+15.3 %).

Rounds run one after another in this process by default: CP-SAT already uses the workers the
user gives it, and on the small machines vcopt targets, parallel sub-solves would only share
those cores. With a Dask scheduler (``round_runner.py``) a batch of rounds — one per worker
thread, on disjoint parts, no job freed twice — is solved side by side, each from the plan
before the batch; the answers are merged in the batch's order, and an answer merged after
another of its batch is kept only when the whole plan still verifies.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from models.instance import Instance

from ..budget import Budget, TimeUp
from ..options import SolveOptions
from ..plan import Plan
from ..progress import Progress
from ..verify import verify
from .compile.data import Compiled
from .compile.view import View, merge, view_of
from .model.objective import StageValues, evaluate
from .relaxation import Relaxation
from .round_runner import RoundTask, Runner, runner_for

PART_PAIRS = 6_000
"""(group, class) pairs of a part when every pending group could go there: parts are cut at
the highest topology tier whose domains stay below this."""
ROUND_PAIRS = 15_000
"""(group, class) pairs a round's model may have; pending jobs are added up to this."""
MIN_ROUND = 1.0
"""A round needs this many seconds of search to be worth compiling."""


@dataclass
class Outcome:
    plan: Plan
    values: StageValues
    rounds: int
    improved: int
    parts: int
    interrupted: bool = False


def parts_of(data: Compiled) -> list[list[int]]:
    """The parts, as lists of node classes. Every class lies inside one domain of every
    topology level, so cutting at a level never splits a class."""
    pending = sum(1 for g in data.groups if g.classes)
    per_class = max(1, pending)
    for level in range(len(data.levels) - 1, 0, -1):
        domains: dict[str, list[int]] = {}
        for cls in data.classes:
            domains.setdefault(cls.path[level - 1], []).append(cls.index)
        if len(domains) > 1 and max(len(cs) for cs in domains.values()) * per_class <= PART_PAIRS:
            return list(domains.values())
    size = max(1, PART_PAIRS // per_class)
    ordered = [c.index for c in data.classes]
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


class _Rounds:
    """The state of the improvement loop: the plan so far, which parts come next, and the
    pending-job cursor."""

    def __init__(
        self,
        full: Compiled,
        plan: Plan,
        parts: Sequence[list[int]],
        seed: int,
        relaxation: Relaxation | None = None,
    ) -> None:
        self.full = full
        self.instance = full.instance
        self.plan = plan
        self.parts = parts
        self.rng = random.Random(seed)
        self.order = list(range(len(parts)))
        self.wanted: frozenset[int] = frozenset()
        """Groups the linear optimum places pods of: a round's pending window takes them
        first."""
        if relaxation is not None:
            self.order = _by_gain(full, parts, plan, relaxation)
            self.wanted = frozenset(np.flatnonzero(relaxation.group_pods >= 0.5).tolist())
        self.next_part = 0
        self.size = 1
        """Parts a round opens."""
        self.cursor = 0
        self.jobs_of_group = {
            g.index: [j.key for j in full.units[g.unit].jobs] for g in full.groups
        }

    def classes(self) -> list[int]:
        """The next round's open classes: the next :attr:`size` parts — in topology order on
        the first pass, in a seeded random order on every pass after it."""
        k = len(self.parts)
        chosen: list[int] = []
        for _ in range(min(self.size, k)):
            if self.next_part == k:
                self.order, self.next_part = self.rng.sample(range(k), k), 0
            chosen += self.parts[self.order[self.next_part]]
            self.next_part += 1
        return chosen

    def adapt(self, improved: bool, exhausted: bool) -> None:
        """Adaptive neighbourhood size: a round that proved its neighbourhood has nothing
        better (its search ended optimal, no gain) doubles the parts of the next rounds; one
        whose search ran out of time without a gain halves them; a gain keeps the size."""
        if improved:
            return
        if exhausted:
            self.size = min(2 * self.size, len(self.parts))
        else:
            self.size = max(1, self.size // 2)

    def batch(self, width: int) -> list[View]:
        """The views of the next ``width`` rounds, solved side by side: on disjoint parts
        (a batch ends early rather than open a part twice), and no job freed twice."""
        views: list[View] = []
        used: set[int] = set()
        taken: set[str] = set()
        for _ in range(width):
            classes = self.classes()
            if used.intersection(classes):
                break
            used.update(classes)
            views.append(self.view(classes, frozenset(taken)))
            taken |= views[-1].free_jobs
        return views

    def view(self, classes: Sequence[int], taken: frozenset[str] = frozenset()) -> View:
        """The round that opens ``classes``, freeing no job of ``taken``."""
        full, instance = self.full, self.instance
        open_classes = set(classes)
        nodes = frozenset(n for c in classes for n in full.classes[c].nodes)
        job_nodes: dict[str, set[int]] = {}
        for p in self.plan.placements:
            job = instance.pod_by_key[p.pod].job
            job_nodes.setdefault(job, set()).add(full.node_index(p.node))
        for r in full.running:
            job_nodes.setdefault(r.job.key, set()).add(r.node)
        free: set[str] = set()
        pairs = 0
        pending: list[tuple[int, str, int]] = []
        for g in full.groups:
            inside = sum(1 for c in g.classes if c in open_classes)
            if not inside:
                continue
            for job in self.jobs_of_group[g.index]:
                if job in taken:
                    continue
                placed = job_nodes.get(job)
                if placed is None:
                    worth = full.weights[job] * g.value
                    pending.append((g.index not in self.wanted, -worth, job, inside))
                elif placed <= nodes and job not in free:
                    free.add(job)
                    pairs += inside
        if pending:
            # The pods the linear optimum places first, then the most valuable: they are
            # what a round can gain most by.
            pending.sort()
            start = self.cursor % len(pending)
            window = pending[start:] + pending[:start]
            taken = 0
            for _, _, job, inside in window:
                if pairs + inside > ROUND_PAIRS:
                    break
                free.add(job)
                pairs += inside
                taken += 1
            self.cursor += max(1, taken)
        return view_of(self.plan, free, nodes, instance)


def _by_gain(
    full: Compiled, parts: Sequence[list[int]], plan: Plan, relaxation: Relaxation
) -> list[int]:
    """Part indices, the most to gain first: the pending work the linear optimum puts on a
    part less what the plan already places there (ties in topology order)."""
    placed = np.zeros(len(full.classes))
    group_of = {p.key: g for g in full.groups for p in g.pods}
    for p in plan.placements:
        g = group_of.get(p.pod)
        if g is not None:
            placed[full.node_class[full.node_index(p.node)]] += full.weights[g.job.key] * g.value
    gain = relaxation.class_worth - placed
    per_part = [float(gain[classes].sum()) for classes in parts]
    return sorted(range(len(parts)), key=lambda i: (-per_part[i], i))


def improve(
    instance: Instance,
    options: SolveOptions,
    start: Plan,
    full: Compiled,
    score: Callable[[StageValues], tuple[int, ...]],
    budget: Budget,
    tail: float,
    progress: Progress,
    baseline: StageValues,
    relaxation: Relaxation | None = None,
    runner: Runner | None = None,
    max_batches: int | None = None,
) -> Outcome:
    """Rounds over the parts until the budget (less ``tail``) is spent, or ``max_batches``
    batches have run (a reproducible run: the same rounds from the same seed); a linear
    ``relaxation`` of the snapshot aims the first pass. ``runner`` solves the rounds (by
    default the options' Dask scheduler, or this process one round at a time)."""
    if runner is None:
        with runner_for(instance, options) as runner:
            return improve(
                instance,
                options,
                start,
                full,
                score,
                budget,
                tail,
                progress,
                baseline,
                relaxation,
                runner,
                max_batches,
            )
    tail += runner.reserve
    parts = parts_of(full)
    state = _Rounds(full, start, parts, options.search.seed, relaxation)
    values = evaluate(full, start)
    round_options = options.replaced(objective="weighted", strategy="monolithic")
    rounds = improved = idle = batches = 0
    interrupted = False
    while budget.search_seconds(tail) >= MIN_ROUND and idle < len(parts):
        if max_batches is not None and batches == max_batches:
            break
        batches += 1
        views = state.batch(runner.width)
        rounds += len(views)
        delta = (values.work - baseline.work) / max(1, abs(baseline.work))
        progress.phase(f"LNS round {rounds}", f"({len(parts)} parts, work {delta:+.1%} vs greedy)")
        live = [v for v in views if v.free_jobs]
        if not live:
            # Every part in turn without a job to decide: nothing is left to improve.
            idle += len(views)
            continue
        idle = 0
        seconds = min(budget.search_seconds(tail), max(MIN_ROUND, budget.limit / (2 * len(parts))))
        tasks = [RoundTask(view, state.plan, seconds) for view in live]
        try:
            answers = runner.run(
                round_options,
                tasks,
                progress,
                partial(budget.check, tail),
                budget.remaining() - tail,
            )
        except TimeUp:
            break
        if not answers:
            break  # the batch did not come back within the budget
        batch_base = state.plan
        for view, answer in zip(live, answers, strict=False):
            interrupted = interrupted or answer.interrupted
            if answer.plan is None:
                state.adapt(False, answer.exhausted)
                continue
            merged = merge(state.plan, view, answer.plan, instance)
            merged_values = evaluate(full, merged)
            better = score(merged_values) > score(values)
            if better and state.plan is not batch_base and verify(instance, merged):
                # Solved beside a round already merged: together they may break a rule
                # neither broke alone (a quota, an eviction cap, anti-affinity across parts).
                better = False
            if better:
                state.plan, values = merged, merged_values
                improved += 1
            state.adapt(better, answer.exhausted)
        if interrupted:
            break
    return Outcome(state.plan, values, rounds, improved, len(parts), interrupted)
