"""The ``vcopt`` command line.

Exit codes are part of the interface (DESIGN §7): 0 success, 2 bad input or usage, 3 a plan
that fails verification, 1 anything else. Bad input is reported as one line per problem with
no traceback, so scripts and people can both act on it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from models.errors import InputError
from models.load import load

from . import show

EXIT_OK, EXIT_ERROR, EXIT_INPUT, EXIT_VIOLATIONS = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    """argparse exits with 2 on usage errors already; keep its message on one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def _print_warnings(warnings: Sequence[object], quiet: bool) -> None:
    if quiet:
        return
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def cmd_validate(args: argparse.Namespace) -> int:
    instance = load(args.file)
    _print_warnings(instance.warnings, args.quiet)
    pods = len(instance.pods)
    gpus = sum(len(n.gpus) for n in instance.nodes)
    print(
        f"{args.file}: valid: {len(instance.nodes)} nodes ({gpus} GPUs), "
        f"{len(instance.hypernodes)} hypernodes, {len(instance.queues)} queues, "
        f"{len(instance.jobs)} jobs ({pods} pods), {len(instance.warnings)} warnings"
    )
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    instance = load(args.file)
    _print_warnings(instance.warnings, args.quiet)
    sys.stdout.write(show.render(instance))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="vcopt",
        description="Place a Volcano cluster's waiting work: Volcano's own decisions beside a CP-SAT optimum.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("validate", help="check an instance file and report every problem")
    p.add_argument("file")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print warnings")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("show", help="print HyperNodes, the queue tree, nodes and jobs")
    p.add_argument("file")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print warnings")
    p.set_defaults(func=cmd_show)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except InputError as err:
        for problem in err.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
