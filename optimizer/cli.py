"""The ``vcopt`` command line.

Exit codes are part of the interface (DESIGN §7): 0 success, 2 bad input or usage, 3 a plan
that fails verification, 130 / 143 stopped by SIGINT / SIGTERM (``interrupts``), 1 anything
else. Bad input is reported as one line per problem with
no traceback, so scripts and people can both act on it.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version

from .interrupts import Terminated, sigterm_raises, stopped

# A second of imports (OR-Tools with pandas, pydantic, networkx) runs before main(): a signal
# then has done nothing yet, so it ends the run as main() would, without a traceback.
try:
    with sigterm_raises():
        from models.errors import InputError, Problem
        from models.instance import Instance
        from models.load import STDIN, load_inputs
        from models.yamlio import dump_yaml

        from . import __version__, compare, show
        from .arguments import (
            engine_report_arguments,
            input_arguments,
            reasons_argument,
            solve_options,
            solver_arguments,
        )
        from .atomic import unwritable, write_all, write_atomic
        from .budget import process_started
        from .disruption import breaches
        from .options import OptionError, SolveOptions
        from .plan import FORMATS, Plan, format_for, read_plan
        from .progress import reporter
        from .result import Status
        from .simulate.command import add_arguments as simulate_arguments
        from .solve import ENGINES, solve, solve_both
        from .verify import format_violations, verify
except (KeyboardInterrupt, Terminated) as stop:
    raise SystemExit(stopped(stop)) from None

EXIT_OK, EXIT_ERROR, EXIT_INPUT, EXIT_VIOLATIONS = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    """argparse exits with 2 on usage errors already; keep its message on one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


class _CommandParser(_Parser):
    """A command's parser: options may sit anywhere among the files, as they do in a
    command typed after a dump (``verify snap.yaml cm.yaml --now T plan.yaml``).

    argparse reads a command's arguments through ``parse_known_args``; this reads them as
    ``parse_known_intermixed_args`` does, which itself calls ``parse_known_args`` twice
    (options first, then the positionals) and gets the plain reading then."""

    _intermixing = False

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def _print_warnings(warnings: Sequence[object], quiet: bool) -> None:
    if quiet:
        return
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def _load(args: argparse.Namespace) -> Instance:
    """The instance of the command's input files, with ``--scheduler-conf`` (a raw conf or
    its ConfigMap, checked on its own so that a problem in it names its file) and ``--now``."""
    if args.scheduler_conf is None:
        return load_inputs(args.files, now=args.now)
    if args.scheduler_conf == STDIN and STDIN in args.files:
        raise InputError(
            [
                Problem(
                    "standard input is read once: give - as a FILE or here",
                    field="--scheduler-conf",
                )
            ]
        )
    return load_inputs(args.files, scheduler_conf=args.scheduler_conf, now=args.now)


OUTPUTS = (
    ("output", "-o/--output"),
    ("plot", "--plot"),
    ("csv", "--csv"),
    ("json", "--json"),
    ("jobs_out", "--jobs"),
    ("series", "--series"),
)
"""The options that name a file a command writes: (argparse dest, as the user spells it)."""


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse an output no file can be written to before any work, rather than after it."""
    problems = []
    for dest, option in OUTPUTS:
        path = getattr(args, dest, None)
        why = unwritable(path) if path is not None else None
        if why is not None:
            problems.append(Problem(f"cannot be written: {why}", field=option, file=path))
    if problems:
        raise InputError(problems)


def cmd_validate(args: argparse.Namespace) -> int:
    instance = _load(args)
    _print_warnings(instance.warnings, args.quiet)
    pods = len(instance.pods)
    gpus = sum(len(n.gpus) for n in instance.nodes)
    print(
        f"{', '.join(args.files)}: valid: {len(instance.nodes)} nodes ({gpus} GPUs), "
        f"{len(instance.hypernodes)} hypernodes, {len(instance.queues)} queues, "
        f"{len(instance.jobs)} jobs ({pods} pods), {len(instance.warnings)} warnings"
    )
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from rich.console import Console

    instance = _load(args)
    _print_warnings(instance.warnings, args.quiet)
    sys.stdout.write(show.render(instance, Console().width))
    return EXIT_OK


def _say_if_interrupted(plan: Plan) -> None:
    """A stopped search still gives a plan; the user must not mistake it for a full solve."""
    if plan.solver is not None and plan.solver.status == Status.INTERRUPTED:
        print(
            "interrupted: search stopped; this is the best verified plan found so far "
            "(status INTERRUPTED)",
            file=sys.stderr,
        )


def _report_breaches(instance: Instance, greedy: Plan, options: SolveOptions, quiet: bool) -> None:
    """The greedy engine follows Volcano, which knows no disruption cap: say where it passes
    the user's."""
    if quiet:
        return
    for breach in breaches(instance, greedy, options):
        print(f"note: greedy plan (Volcano has no eviction cap): {breach}", file=sys.stderr)


def cmd_solve(args: argparse.Namespace) -> int:
    options = solve_options(args)
    instance = _load(args)
    _print_warnings(instance.warnings, args.quiet)
    if args.start:
        options = options.replaced(start=read_plan(args.start, instance))
    progress = reporter(args.quiet, options.search.time_limit)
    try:
        plan = solve(
            instance,
            args.engine,
            options,
            progress,
            started=args.started,
            reasons=not args.no_reasons,
        )
    finally:
        progress.close()
    if args.engine == "greedy":
        _report_breaches(instance, plan, options, args.quiet)
    _say_if_interrupted(plan)
    outputs: list[tuple[str, str | bytes]] = []
    if args.plot:
        from . import figures

        outputs.append((args.plot, figures.png_bytes(figures.plan_figure(instance, plan))))
    fmt = format_for(args.output, args.format)
    if args.output:
        outputs.append((args.output, plan.render(fmt, instance)))
    write_all(outputs)
    if not args.output:
        sys.stdout.write(plan.render(fmt, instance))
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    files, plan_file = args.files, args.plan
    instance = _load(args)
    _print_warnings(instance.warnings, args.quiet)
    plan = read_plan(plan_file, instance)
    violations = verify(instance, plan)
    if violations:
        sys.stdout.write(format_violations(violations) + "\n")
        print(f"{plan_file}: {len(violations)} violation(s)", file=sys.stderr)
        return EXIT_VIOLATIONS
    print(f"{plan_file}: valid plan for {', '.join(files)}")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    options = solve_options(args)
    instance = _load(args)
    _print_warnings(instance.warnings, args.quiet)
    progress = reporter(args.quiet, options.search.time_limit)
    try:
        greedy, cpsat = solve_both(
            instance, options, progress, started=args.started, reasons=not args.no_reasons
        )
    finally:
        progress.close()
    _report_breaches(instance, greedy, options, args.quiet)
    _say_if_interrupted(cpsat)
    outputs: list[tuple[str, str | bytes]] = []
    if args.csv:
        outputs.append((args.csv, compare.to_csv(instance, greedy, cpsat)))
    if args.json:
        outputs.append((args.json, compare.to_json(instance, greedy, cpsat)))
    if args.plot:
        from . import figures

        outputs.append(
            (args.plot, figures.png_bytes(figures.compare_figure(instance, greedy, cpsat)))
        )
    write_all(outputs)
    sys.stdout.write(compare.table(instance, greedy, cpsat))
    return EXIT_OK


def _report(doc: dict[str, object], text: str, fmt: str) -> str:
    if fmt == "json":
        import json

        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        return dump_yaml(doc, sort_keys=False, allow_unicode=True)
    return text


def cmd_explain(args: argparse.Namespace) -> int:
    from .explain import explain

    options = solve_options(args)
    instance = _load(args)
    _print_warnings(instance.warnings, args.quiet)
    found = explain(instance, args.job, args.engine, options=options, check=not args.no_check)
    sys.stdout.write(_report(found.to_dict(), found.to_text(), args.format))
    return EXIT_OK


def cmd_capacity(args: argparse.Namespace) -> int:
    from .explain import capacity

    options = solve_options(args)
    instance = _load(args)
    _print_warnings(instance.warnings, args.quiet)
    found = capacity(
        instance, args.queue, args.node_like, args.engine, options=options, check=not args.no_check
    )
    sys.stdout.write(_report(found.to_dict(), found.to_text(), args.format))
    return EXIT_OK


MAX_LOAD = 10.0
"""Generated demand at most ten times the GPUs: beyond it the instance only grows pending
jobs, past what the engines handle, and says nothing more about contention."""


def cmd_generate(args: argparse.Namespace) -> int:
    from .generate import generate, parse_span, write_instance

    problems = []
    if not (math.isfinite(args.load) and 0 < args.load <= MAX_LOAD):
        problems.append(
            Problem(
                f"must be a number above 0 and at most {MAX_LOAD:g}, got {args.load}",
                field="--load",
            )
        )
    span = None
    if args.timeline is not None:
        try:
            span = parse_span(args.timeline)
        except ValueError as err:
            problems.append(Problem(str(err), field="--timeline"))
    if problems:
        raise InputError(problems)
    try:
        doc = generate(args.shape, args.seed, args.load, timeline=span)
    except ValueError as err:  # shape and load are checked: only a too large timeline is left
        raise InputError([Problem(str(err), field="--timeline")]) from None
    if args.output:
        write_instance(doc, args.output)
    else:
        sys.stdout.write(dump_yaml(doc, sort_keys=False))
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from models.io import from_dict

    from .import_kinds import imported

    doc, source = imported(args)
    try:
        from_dict(doc, source)
    except InputError as err:
        raise InputError(
            [Problem(f"the imported instance is not valid: {err.problems[0]}", file=source)]
        ) from None
    text = dump_yaml(doc, sort_keys=False)
    if args.output:
        write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_sweep(args: argparse.Namespace) -> int:
    from .sweepspec import load_sweep
    from .whatif import sweep

    spec = load_sweep(args.spec, _load(args) if args.files else None)
    frame = sweep(
        spec.instance,
        spec.variants,
        spec.engines,
        spec.time_limit,
        workers=spec.workers,
        seed=spec.seed,
        scheduler_address=args.scheduler,
        progress=not args.quiet,
    )
    if args.output and args.output.endswith(".parquet"):
        write_atomic(args.output, frame.to_parquet(index=False))
    elif args.output:
        write_atomic(args.output, frame.to_csv(index=False))
    else:
        sys.stdout.write(frame.to_csv(index=False))
    return EXIT_OK


def cmd_simulate(args: argparse.Namespace) -> int:
    from .simulate.command import InvalidState, run

    instance = _load(args)
    _print_warnings(instance.warnings, args.quiet)
    try:
        sys.stdout.write(run(args, instance))
    except InvalidState as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_VIOLATIONS
    return EXIT_OK


def _package_version() -> str:
    """The installed distribution's version; the source tree's when run uninstalled."""
    try:
        return version("vcopt")
    except PackageNotFoundError:
        return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="vcopt",
        description=(
            "Place a Volcano cluster's waiting work: Volcano's own decisions beside a CP-SAT "
            "optimum."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_CommandParser)

    p = sub.add_parser("validate", help="check an instance file and report every problem")
    input_arguments(p)
    p.add_argument("-q", "--quiet", action="store_true", help="do not print warnings")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("show", help="print HyperNodes, the queue tree, nodes and jobs")
    input_arguments(p)
    p.add_argument("-q", "--quiet", action="store_true", help="do not print warnings")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("solve", help="place the waiting work; print or write the plan")
    input_arguments(p)
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="cpsat",
        help="cpsat (the optimum, hinted by greedy) or greedy (Volcano's own cycle); default cpsat",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="how to print the plan (default: the one -o's suffix names, .yaml .yml .json "
        ".csv; else table)",
    )
    p.add_argument("-o", "--output", help="write the plan here (atomically) instead of stdout")
    p.add_argument(
        "--plot",
        metavar="PNG",
        help="also draw the plan: which job holds each GPU, rack by rack, and its scores",
    )
    p.add_argument(
        "--start",
        metavar="PLAN",
        help="start CP-SAT from this plan (the one in force, an earlier solve's) when it "
        "verifies and beats greedy's",
    )
    solver_arguments(p)
    reasons_argument(p)
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("verify", help="check a plan against every rule (exit 3 on violations)")
    input_arguments(
        p,
        last="PLAN",
        last_help="the plan, always the last file (YAML or JSON, or the bindings solve writes)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="do not print warnings")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("compare", help="greedy (Volcano) and cpsat side by side")
    input_arguments(p)
    p.add_argument(
        "--csv", help="also write the metrics and the per-job differences as CSV (numbers)"
    )
    p.add_argument(
        "--json", help="also write the metrics, the per-job differences and both plans as JSON"
    )
    p.add_argument(
        "--plot",
        metavar="PNG",
        help="also draw both plans: which job holds each GPU, rack by rack, greedy beside "
        "cpsat, and one small chart per metric",
    )
    solver_arguments(p)
    reasons_argument(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "explain", help="why a job is pending, and the smallest change that lets it start"
    )
    input_arguments(
        p,
        last="JOB",
        last_help="the job, always the last word: namespace/name, or a name only one job has",
    )
    engine_report_arguments(p)
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser(
        "capacity", help="the fewest nodes of one shape to add so that pending jobs start"
    )
    input_arguments(p)
    p.add_argument("--queue", help="only the pending jobs of this queue (default: all)")
    p.add_argument(
        "--node-like",
        metavar="NODE",
        help="add copies of this node (default: per HyperNode leaf, its most capable node)",
    )
    engine_report_arguments(p)
    p.set_defaults(func=cmd_capacity)

    p = sub.add_parser("generate", help="a synthetic instance of a named shape")
    p.add_argument(
        "--shape",
        choices=("S", "M", "L", "XL"),
        default="S",
        help="cluster size: S ≤ 64 nodes, M ≈ 600, L 1,280, XL 5,000 (default S)",
    )
    p.add_argument("--seed", type=int, default=0, help="random seed of the generator (default 0)")
    p.add_argument("--load", type=float, default=1.3, help="GPU demand / capacity (default 1.3)")
    p.add_argument(
        "--timeline",
        metavar="DURATION",
        help="add the jobs arriving over this span after now, at an offered load of --load, "
        "and every job's run time, for vcopt simulate: a Go duration or days (36h, 7d)",
    )
    p.add_argument("-o", "--output", help="write the instance here instead of stdout")
    p.set_defaults(func=cmd_generate)

    from .import_kinds import add_arguments as import_arguments

    p = sub.add_parser("import", help="an instance from a public trace or a history of jobs")
    import_arguments(p)
    p.add_argument("-o", "--output", help="write the instance here instead of stdout")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser(
        "simulate", help="the cluster over time: every scheduling cycle decided by an engine"
    )
    input_arguments(p)
    simulate_arguments(p)
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("sweep", help="solve the variants of a what-if file with both engines")
    p.add_argument("spec", help="what-if file: a base instance and its variants")
    p.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="the base instance, when the what-if file names none: "
        "vcopt YAML or a kubectl dump in several files, - for standard input",
    )
    p.add_argument(
        "--scheduler-conf",
        metavar="FILE",
        help="with FILEs: a volcano-scheduler.conf, or its ConfigMap, replacing the input's",
    )
    p.add_argument("--now", metavar="TIME", help="with FILEs: the snapshot's time, RFC 3339")
    p.add_argument(
        "--dask",
        "--scheduler",
        dest="scheduler",
        metavar="ADDRESS",
        help="address of an existing Dask scheduler (default: a local cluster)",
    )
    p.add_argument("-o", "--output", help="CSV, or Parquet when the name ends in .parquet")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_sweep)
    return parser


def entry() -> int:
    """The ``vcopt`` command: its clock starts with the process."""
    return main(started=process_started())


def main(argv: Sequence[str] | None = None, started: float | None = None) -> int:
    """``started``: when the user's clock started (``time.perf_counter``; default now). The
    time limit is the user's wall clock: reading the input counts, and for the ``vcopt``
    command so do the interpreter's start-up and imports."""
    started = time.perf_counter() if started is None else started
    args = build_parser().parse_args(argv)
    args.started = started
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        with sigterm_raises():
            _check_outputs(args)
            return func(args)
    except InputError as err:
        for problem in err.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_INPUT
    except OptionError as err:  # found only once the solve uses it: an unreachable --dask
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INPUT
    except (KeyboardInterrupt, Terminated) as stop:
        return stopped(stop)
    except BrokenPipeError:
        return EXIT_OK
    except OSError as err:
        print(f"error: {err.filename or ''}: {err.strerror}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
