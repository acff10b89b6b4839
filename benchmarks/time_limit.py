"""Does ``vcopt solve --time-limit T`` end within T, as the user's wall clock sees it?

Each case generates a cluster, writes it to a file and runs the ``vcopt`` command on it in a
fresh process, with a plan written to a file: the clock runs from spawning the process to its
exit, so the interpreter's start-up, reading the input, greedy, CP-SAT, the pending reasons,
metrics and writing the plan are all in it. CPU seconds are the child's (user + system).

    python benchmarks/time_limit.py --cases M:5,M:10,M:30,L:10,L:30 --seed 1 [--json]

A case is ``SHAPE:LIMIT``. On the 5,000-node XL shape the greedy baseline alone can take longer
than a short limit (docs/BENCHMARKS.md, greedy speed): the command then returns greedy's plan
when greedy ends, and the table shows by how much.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from optimizer.generate import generate, write_instance

VCOPT = Path(sys.executable).with_name("vcopt")


def case(shape: str, limit: float, seed: int, folder: Path) -> dict[str, Any]:
    instance = folder / f"{shape}-{seed}.yaml"
    if not instance.exists():
        write_instance(generate(shape, seed, 1.3), instance)
    plan = folder / "plan.yaml"
    command = [str(VCOPT), "solve", str(instance), "--time-limit", f"{limit:g}", "-o", str(plan)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "shape": shape,
        "limit": limit,
        "exit": done.returncode,
        "wall": round(wall, 2),
        "cpu": round(cpu, 2),
        "over": round(wall - limit, 2),
        "peak_rss_mib": after.ru_maxrss // 1024,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="M:5,M:10,M:30,L:10,L:30")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not VCOPT.exists():
        print(f"error: {VCOPT} not found: install vcopt into this interpreter", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="vcopt-time-limit-"))
    rows = []
    if not args.json:
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        print("| shape | limit s | wall s | over s | CPU s | exit | peak RSS MiB |")
        print("|------:|--------:|-------:|-------:|------:|-----:|-------------:|", flush=True)
    try:
        for item in args.cases.split(","):
            shape, _, limit = item.partition(":")
            rows.append(case(shape.strip(), float(limit), args.seed, folder))
            if not args.json:
                r = rows[-1]
                print(
                    f"| {r['shape']} | {r['limit']:g} | {r['wall']:.2f} | {r['over']:+.2f} | "
                    f"{r['cpu']:.2f} | {r['exit']} | {r['peak_rss_mib']} |",
                    flush=True,
                )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        print(json.dumps({"load": os.getloadavg(), "rows": rows}, indent=2))
    else:
        print(f"load average after: {os.getloadavg()[0]:.2f}; peak RSS is the largest child's")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
