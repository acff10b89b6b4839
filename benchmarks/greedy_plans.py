"""Recorded greedy plans: a digest of what the greedy engine decides on fixed inputs.

The greedy engine is Volcano's answer and the hint and baseline of CP-SAT, so a change meant
to make it faster must not change a single decision. This script records, per input, a SHA-256
of the plan's decisions in a canonical order (placements with their devices, evictions,
pipelined pods, each job's status) and, separately, of the jobs' pending reasons; ``--check``
re-runs the engine and compares. Inputs are every file in ``instances/`` and generated shapes
(``vcopt generate --shape S|M|L|XL``) for a few seeds, ``greedy_speed.py``'s 1,000-node
cluster and the realistic instances of ``realistic.py`` (``alibaba-1213:seed``,
``spot-4278:seed``).

    PYTHONPATH=. python benchmarks/greedy_plans.py --check     # compare with the record
    python benchmarks/greedy_plans.py --record                 # write the record
    python benchmarks/greedy_plans.py --check --cases S:1,demo # only some cases
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import realistic

from models.instance import Instance
from models.load import from_dict, load
from optimizer.generate import CUSTOM, generate
from optimizer.greedy.engine import solve
from optimizer.plan import Plan

ROOT = Path(__file__).resolve().parent.parent
INSTANCES = ROOT / "instances"
RECORD = Path(__file__).resolve().parent / "greedy_plans.json"
GENERATED = (
    "S:1",
    "S:2",
    "S:3",
    "M:1",
    "M:2",
    "L:1",
    "custom:1000:5000:1",
    "alibaba-1213:1",
    "spot-4278:1",
)
"""Generated cases, ``shape:seed``, ``custom:nodes:pods:seed`` (``greedy_speed.py``'s
instance) or ``realistic-name:seed``; the engine seed is the generator seed, as in
``scale.py``. ``XL:1`` and ``XL:7`` are recorded too but only run when named, as they take
longer."""
DEFAULT_LOAD = 1.3
INSTANCE_KIND = "kind: Instance"
"""Marks the files of ``instances/`` that are instances (a sweep file is not)."""


def plan_content(plan: Plan) -> dict[str, Any]:
    """The decisions of a plan in a canonical order (its wall time and metrics left out)."""

    def gpus(shares: Any) -> Any:
        return None if shares is None else [[g.id, g.memory, g.cores] for g in shares]

    return {
        "placements": sorted([p.pod, p.node, gpus(p.gpus)] for p in plan.placements),
        "evictions": sorted([e.pod, e.node, e.reason] for e in plan.evictions),
        "pipelined": sorted([p.pod, p.node] for p in plan.pipelined),
        "jobs": sorted([j.job, j.status, j.hypernode, j.lca_tier] for j in plan.jobs),
    }


def reasons_content(plan: Plan) -> list[list[str]]:
    return sorted([j.job, j.reason or ""] for j in plan.jobs)


def digest(content: Any) -> str:
    text = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def cases(selected: Sequence[str] | None) -> Iterator[tuple[str, Instance, int]]:
    """(name, instance, engine seed) of each case, loaded lazily."""
    files = [p for p in sorted(INSTANCES.glob("*.yaml")) if INSTANCE_KIND in p.read_text()]
    names = [f"instances/{p.name}" for p in files] + list(GENERATED)
    if selected:
        names = [n for n in names if n in selected or n.removeprefix("instances/") in selected]
        names += [s for s in selected if ":" in s and s not in names]
    for name in names:
        kind = name.split(":")[0]
        if kind in realistic.names() and realistic.missing(kind):
            print(f"{name}: skipped, {realistic.missing(kind)[0]} is not there", file=sys.stderr)
            continue
        if name.startswith("instances/"):
            yield name, load(ROOT / name), 0
        else:
            yield name, from_dict(generated(name), f"<generated {name}>"), int(name.split(":")[-1])


def generated(name: str) -> dict[str, Any]:
    parts = name.split(":")
    if parts[0] in realistic.names():
        return realistic.build(parts[0], int(parts[1]))
    if parts[0] == CUSTOM:
        nodes, pods, seed = (int(p) for p in parts[1:])
        return generate(CUSTOM, seed, DEFAULT_LOAD, nodes=nodes, pods=pods)
    return generate(parts[0], int(parts[1]), DEFAULT_LOAD)


def run(name: str, instance: Instance, seed: int) -> dict[str, Any]:
    started, started_cpu = time.perf_counter(), time.process_time()
    plan = solve(instance, seed)
    cpu, wall = time.process_time() - started_cpu, time.perf_counter() - started
    content = plan_content(plan)
    return {
        "plan": digest(content),
        "reasons": digest(reasons_content(plan)),
        "placements": len(content["placements"]),
        "cpu": round(cpu, 2),
        "wall": round(wall, 2),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="compare with the record")
    mode.add_argument("--record", action="store_true", help="write (merge into) the record")
    parser.add_argument("--cases", default="", help="comma list: instance file names, shape:seed")
    args = parser.parse_args(argv)
    selected = [c for c in args.cases.split(",") if c] or None
    record = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    failed = 0
    for name, instance, seed in cases(selected):
        print(f"{name} …", end=" ", file=sys.stderr, flush=True)
        got = run(name, instance, seed)
        print(f"{got['cpu']} CPU s", file=sys.stderr, flush=True)
        if args.record:
            record[name] = {k: got[k] for k in ("plan", "reasons", "placements")}
            continue
        want = record.get(name)
        if want is None:
            print(f"{name}: not recorded")
            failed += 1
            continue
        same_plan, same_reasons = want["plan"] == got["plan"], want["reasons"] == got["reasons"]
        verdict = "same plan" if same_plan else "PLAN DIFFERS"
        verdict += ", same reasons" if same_reasons else ", REASONS DIFFER"
        print(f"{name}: {verdict} ({got['placements']} placements, {got['cpu']} CPU s)")
        failed += not (same_plan and same_reasons)
    if args.record:
        RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"recorded {len(record)} cases in {RECORD.relative_to(ROOT)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
