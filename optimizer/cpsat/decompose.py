"""A snapshot too large for one model, solved part by part and improved by rounds.

The cluster is cut into *parts* along its topology (the HyperNodes of the highest tier whose
domains stay small enough; chunks of node classes when there is no topology). Each round opens
the nodes of one part — later, of two neighbouring parts, then of random pairs — and frees the
jobs the current plan places entirely inside them, plus a rotating window of pending jobs that
could go there; every other decision is frozen (``view.py``). The round's model is the model of
the whole snapshot with those decisions fixed, solved on one weighted objective that orders
the stages as the user's objective does. Its answer is merged into the plan and kept only if
the whole plan scores better, so every plan on the way is complete and feasible (anytime), and
the first pass over the parts is a POP-style solve of each part in turn.

Rounds run one after another in this process: CP-SAT already uses the workers the user gives
it, and on the small machines vcopt targets, parallel sub-solves would only share those cores.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from models.instance import Instance

from ..budget import Budget, TimeUp
from ..options import SolveOptions
from ..plan import Plan
from ..progress import Progress
from .data import Compiled
from .expand import expand
from .extract import plan_from
from .model import CpsatModel
from .objective import StageValues, evaluate
from .view import View, merge, view_of

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


def neighbourhoods(parts: Sequence[list[int]], seed: int) -> Callable[[int], list[int]]:
    """Round ``r``'s open classes: each part, then each part with the next, then random
    pairs (seeded, so a deterministic run repeats itself)."""
    rng = random.Random(seed)
    k = len(parts)

    def pick(r: int) -> list[int]:
        if r < k or k == 1:
            return list(parts[r % k])
        if r < 2 * k:
            i = r - k
            return [*parts[i], *parts[(i + 1) % k]]
        i, j = rng.sample(range(k), 2)
        return [*parts[i], *parts[j]]

    return pick


class _Rounds:
    """The state of the improvement loop: the plan so far and the pending-job cursor."""

    def __init__(self, full: Compiled, plan: Plan) -> None:
        self.full = full
        self.instance = full.instance
        self.plan = plan
        self.cursor = 0
        self.jobs_of_group = {
            g.index: [j.key for j in full.units[g.unit].jobs] for g in full.groups
        }

    def view(self, classes: Sequence[int]) -> View:
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
        pending: list[tuple[str, int]] = []
        for g in full.groups:
            inside = sum(1 for c in g.classes if c in open_classes)
            if not inside:
                continue
            for job in self.jobs_of_group[g.index]:
                placed = job_nodes.get(job)
                if placed is None:
                    pending.append((job, inside))
                elif placed <= nodes and job not in free:
                    free.add(job)
                    pairs += inside
        if pending:
            start = self.cursor % len(pending)
            window = pending[start:] + pending[:start]
            taken = 0
            for job, inside in window:
                if pairs + inside > ROUND_PAIRS:
                    break
                free.add(job)
                pairs += inside
                taken += 1
            self.cursor += max(1, taken)
        return view_of(self.plan, free, nodes, instance)


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
) -> Outcome:
    """Rounds over the parts until the budget (less ``tail``) is spent."""
    state = _Rounds(full, start)
    values = evaluate(full, start)
    parts = parts_of(full)
    pick = neighbourhoods(parts, options.seed)
    round_options = replace(options, objective="weighted", strategy="monolithic")
    rounds = improved = 0
    interrupted = False
    while budget.search_seconds(tail) >= MIN_ROUND:
        classes = pick(rounds)
        view = state.view(classes)
        rounds += 1
        delta = (values.work - baseline.work) / max(1, abs(baseline.work))
        progress.phase(f"LNS round {rounds}", f"({len(parts)} parts, work {delta:+.1%} vs greedy)")
        if not view.free_jobs:
            continue
        try:
            model = CpsatModel(
                instance, round_options, check=partial(budget.check, tail), view=view
            )
        except TimeUp:
            break
        hint = model.hint_plan(state.plan)
        seconds = min(budget.search_seconds(tail), max(MIN_ROUND, budget.limit / (2 * len(parts))))
        result = model.search(hint, seconds, progress)
        if result.values is None:
            continue
        expansion = expand(model.vars, result.values)
        answer = plan_from(model.vars, result.values, expansion, instance, options.seed)
        merged = merge(state.plan, view, answer, instance)
        merged_values = evaluate(full, merged)
        if score(merged_values) > score(values):
            state.plan, values = merged, merged_values
            improved += 1
        if result.interrupted:
            interrupted = True
            break
    return Outcome(state.plan, values, rounds, improved, len(parts), interrupted)
