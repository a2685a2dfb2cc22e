"""Sia's configurations and their placement on nodes: what the goodput-world policies share (docs/online.md §10).

:func:`sia_configs` lists the (type, count) configurations, :func:`solve_sia_program` assigns one
to each job exactly, :func:`place_counts` puts the counts on nodes.
"""

__all__ = ["pack", "sia_configs", "place_counts", "solve_sia_program"]


def pack(free, n):
    """Nodes for ``n`` GPUs among ``free`` GPUs per node: ``{node: n_gpus}``, or None if they do not fit.

    One node when one can hold them (the one with the fewest free GPUs that can: best fit, to
    keep whole nodes free); otherwise the nodes with the most free GPUs first, so the job spans
    as few nodes as it can.  Ties by node index.
    """
    n = int(n)
    if n <= 0 or sum(free) < n:
        return None
    fits = [(f, k) for k, f in enumerate(free) if f >= n]
    if fits:
        return {min(fits)[1]: n}
    out = {}
    for k in sorted(range(len(free)), key=lambda k: (-free[k], k)):
        if n <= 0:
            break
        take = min(free[k], n)
        if take:
            out[k] = take
            n -= take
    return out


def sia_configs(cluster):
    """Sia's configurations ``[(gpu_type, n_gpus)]``: powers of two inside a node, then whole nodes, at most 64.

    For a type of ``N`` nodes of ``m`` GPUs: 1, 2, 4, ... up to ``m``, then ``k m`` for ``k = 2 .. N``;
    in cluster order.
    """
    out = []
    for g, (n_nodes, m) in cluster.items():
        c = 1
        while c <= m:
            out.append((g, c))
            c *= 2
        if out[-1] != (g, m):  # a node size that is not a power of two: the whole node too
            out.append((g, m))
        for k in range(2, n_nodes + 1):
            if k * m > 64:
                break
            out.append((g, k * m))
    return out


def _shape_for(n, m):
    """GPUs per node of ``n`` GPUs packed into nodes of ``m``: whole nodes, then the rest."""
    return (m,) * (n // m) + ((n % m,) if n % m else ())


def place_counts(counts, cluster, free):
    """Physical nodes for per-type GPU counts: ``{job_id: (gpu_type, {node: n})}``.

    ``counts`` is ``[(job_id, gpu_type, n)]``; ``free`` the free GPUs per node
    (``state.free``).  Per type, largest jobs first (ties in the given order): a job of whole
    nodes takes fully free nodes (lowest index first), a smaller one the fullest node that
    still holds it (best fit); a job that fits neither way takes the GPUs of the fewest nodes
    (:func:`pack`), and one that does not fit at all gets none.
    """
    out = {}
    left = {g: list(f) for g, f in free.items()}
    order = sorted(range(len(counts)), key=lambda i: (-counts[i][2], i))
    for i in order:
        jid, g, n = counts[i]
        m = cluster[g][1]
        fl = left[g]
        got = None
        if n % m == 0:
            whole = [k for k, f in enumerate(fl) if f == m][: n // m]
            if len(whole) == n // m:
                got = dict.fromkeys(whole, m)
        elif n < m:
            fits = [(f, k) for k, f in enumerate(fl) if f >= n]
            if fits:
                got = {min(fits)[1]: n}
        if got is None:
            got = pack(fl, n)
        if got is None:
            continue
        for k, c in got.items():
            fl[k] -= c
        out[jid] = (g, got)
    return out


def solve_sia_program(coef, configs, cap, lambda_n, p, seed=0, time_limit=None, usage=None):
    """Sia's integer programme, exactly: the configuration index of each job (-1: none).

    With ``p < 0`` minimise ``sum_{i,k} coef[i, k] x[i, k] + lambda_n (jobs - sum x)``, with
    ``p > 0`` maximise it; at most one configuration per job; per type, the GPUs of the chosen
    configurations within ``cap[type]``.  Coefficients are taken to two decimals (Sia rounds
    them so) and solved as integers with OR-Tools CP-SAT, single-threaded and seeded.

    ``usage``: the GPUs each configuration takes per type, ``[{gpu_type: n}]`` (configurations
    over several types); default ``{configs[k][0]: configs[k][1]}``.  With ``usage`` given
    (``p > 0`` only), options of coefficient <= 0 are left out of the programme.
    """
    from ortools.sat.python import cp_model

    n, kk = coef.shape
    sparse = usage is not None
    if usage is None:
        usage = [{g: c} for g, c in configs]
    elif p < 0:
        raise ValueError("usage is for maximising programmes (p > 0)")
    m = cp_model.CpModel()
    x = [[m.new_bool_var(f"x{i}_{k}") if not sparse or coef[i, k] > 0 else None for k in range(kk)]
         for i in range(n)]
    for i in range(n):
        row = [v for v in x[i] if v is not None]
        if row:
            m.add(sum(row) <= 1)
    for g, c in cap.items():
        terms = [usage[k][g] * x[i][k] for i in range(n) for k in range(kk) if g in usage[k] and x[i][k] is not None]
        if terms:
            m.add(sum(terms) <= int(c))
    lam = int(round(100 * lambda_n))
    obj = sum((int(round(100 * coef[i, k])) - lam) * x[i][k] for i in range(n) for k in range(kk)
              if x[i][k] is not None)
    if p < 0:
        m.minimize(obj)
    else:
        m.maximize(obj)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = int(seed) % 2**31
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = float(time_limit)
    status = solver.solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return [-1] * n
    return [next((k for k in range(kk) if x[i][k] is not None and solver.value(x[i][k])), -1) for i in range(n)]
