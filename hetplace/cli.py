"""Command line: ``hetplace`` / ``python -m hetplace``."""

import argparse
import json
import sys

__all__ = ["main"]


def _build_parser():
    from .api import METHODS

    parser = argparse.ArgumentParser(
        prog="hetplace",
        description="Place data-parallel training jobs on a heterogeneous GPU cluster. "
        "With no command, places the embedded default instance and compares with the exact optimum.",
    )
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="place the embedded default instance (the default command)")
    for p in (parser, run):
        p.add_argument("--method", default=None, choices=sorted(METHODS), help="placement method (default: the best available)")
        p.add_argument("--seed", type=int, default=0, help="seed of randomised methods (default 0)")
        p.add_argument("--json", action="store_true", help="print the placement as JSON")
        p.add_argument("--no-exact", action="store_true", help="skip the exact optimum (and the gap)")
    return parser


def _default_method():
    return "smp"


def _run(args, out):
    from .api import place
    from .data import default_problem

    problem = default_problem()
    method = args.method or _default_method()
    placement = place(problem, method=method, seed=args.seed)
    exact = None
    if not args.no_exact:
        from .exact import solve_exact

        exact = solve_exact(problem)
    if args.json:
        doc = placement.to_dict()
        if exact is not None:
            doc["exact"] = {
                "status": exact.status, "objective": exact.objective, "bound": exact.bound,
                "method": exact.method, "solver": exact.solver, "wall_time": exact.wall_time,
                "gap": placement.mean_jct / exact.objective - 1.0,
            }
        json.dump(doc, out, indent=2)
        out.write("\n")
        return 0
    out.write(f"{problem!r}\n\n{placement.format_table()}\n")
    out.write(f"decision time {placement.info['wall_time'] * 1e3:.2f} ms\n")
    if exact is not None:
        gap = placement.mean_jct / exact.objective - 1.0
        out.write(
            f"exact optimum ({exact.method}, {exact.status}) mean JCT {exact.objective:.1f} s in "
            f"{exact.wall_time * 1e3:.1f} ms -> gap of {method}: {gap * 100:.3f} %\n"
        )
    return 0


def main(argv=None, out=None):
    """Entry point; returns the process exit code."""
    from .errors import HetplaceError

    out = out or sys.stdout
    args = _build_parser().parse_args(argv)
    try:
        return _run(args, out)
    except HetplaceError as exc:
        sys.stderr.write(f"hetplace: error: {exc}\n")
        return 2
