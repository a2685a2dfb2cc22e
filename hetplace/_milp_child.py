"""Solve one OR-Tools ``pywraplp`` model in a child process that Ctrl-C can kill (private).

HiGHS through ``pywraplp`` cannot be interrupted (``InterruptSolve`` returns
False) and SCIP's interrupt can wait seconds, so :mod:`hetplace.exact` runs a
long HiGHS or SCIP solve here instead of in its own process (docs/model.md
§4.7): killing this process is what stops it.  Run
as a script (``python -c`` + :func:`runpy.run_path`, so nothing of hetplace is
imported and its folder is not put on ``sys.path``), it reads one pickled
request from stdin -- ``{"solver": "HIGHS" or "SCIP", "model": bytes (MPModelProto),
"parameters": str, "time_limit_ms": int or None, "rel_gap": float, "verbose":
bool}`` -- solves
it and writes ``{"code": int, "response": bytes (MPSolutionResponse), "nodes":
int or None}`` pickled to its stdout, which the parent loads with
``Solver.LoadSolutionFromProto``.  The solver's log goes to stderr.  SIGINT is
ignored (the parent decides); when the parent dies, stdin closes and the
child exits at once.
"""

import os
import pickle
import signal
import sys
import threading

__all__ = ["main"]


def _exit_when_orphaned():
    """End this process when stdin reaches EOF: the parent died (or gave up) without killing it."""
    sys.stdin.buffer.read()
    os._exit(3)


def main():
    """Serve the one request on stdin (see the module docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the solver's own printing goes to stderr, never into the reply
    request = pickle.load(sys.stdin.buffer)
    threading.Thread(target=_exit_when_orphaned, daemon=True).start()

    from ortools.linear_solver import linear_solver_pb2, pywraplp

    model = linear_solver_pb2.MPModelProto()
    model.ParseFromString(request["model"])
    solver = pywraplp.Solver.CreateSolver(request["solver"])
    error = solver.LoadModelFromProto(model)
    if error:
        raise RuntimeError(f"the model did not load: {error}")
    if request["verbose"]:
        solver.EnableOutput()
    else:
        solver.SuppressOutput()
    if request["time_limit_ms"] is not None:
        solver.SetTimeLimit(request["time_limit_ms"])
    solver.SetSolverSpecificParametersAsString(request["parameters"])
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(params.RELATIVE_MIP_GAP, request["rel_gap"])
    code = solver.Solve(params)
    response = linear_solver_pb2.MPSolutionResponse()
    solver.FillSolutionResponseProto(response)
    try:
        nodes = int(solver.nodes())
    except Exception:  # pragma: no cover - not every backend reports nodes
        nodes = None
    pickle.dump({"code": int(code), "response": response.SerializeToString(), "nodes": nodes}, out)
    out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
