"""Seeded instance families for benchmarks, sweeps and tests.

Every generator is a pure function of its arguments and ``seed``: the same call
gives the same :class:`~hetplace.Problem`.

Families
--------
``gavel``
    Three GPU types (k80, p100, v100) with throughputs from a Gavel table;
    global batches of 1-8x the model's per-GPU batch; iterations log-uniform
    over two orders of magnitude; ring all-reduce at 10 Gbit/s; with
    probability ``p_exclude`` a job cannot use one type (out of memory).
``speeds``
    ``gavel`` plus per-worker available speed in [0.4, 1] (non-dedicated).
``synthetic``
    ``n_types`` (default 6) synthetic GPU generations, each job with its own
    affinity to each generation (log-normal), some zero.
``topology``
    ``gavel`` on a cluster of nodes and racks (:func:`topology_instance`):
    DGX-like 8-GPU NVLink nodes (300 GB/s inside) of the ``nvlink_types``
    beside 4-GPU PCIe nodes (32 GB/s) of the others, racks of 4-8 nodes,
    10-200 Gbit/s between the nodes of a rack, 1-4x less between racks.
    Not in :data:`FAMILIES` (the default sweeps): ``make_instance("topology", ...)``
    and ``hetplace bench --families topology`` ask for it.
"""

import numpy as np

from ._validation import check_positive_int, check_seed, is_real_scalar
from .data import DEFAULT_GRAD_BYTES, GavelTable, load_gavel
from .errors import InvalidOptionError
from .problem import MAX_WORKERS, Problem

__all__ = ["FAMILIES", "ALL_FAMILIES", "MAX_TYPES", "make_instance", "gavel_instance", "speeds_instance",
           "synthetic_instance", "topology_instance", "replacement_instance"]

#: The families of the default sweeps (``hetplace bench``).
FAMILIES = ("gavel", "speeds", "synthetic")
#: Every family :func:`make_instance` builds: :data:`FAMILIES` and ``"topology"``.
ALL_FAMILIES = FAMILIES + ("topology",)


#: Most synthetic GPU types (``n_types``).
MAX_TYPES = 1024


def _size_iv(seed, n_workers, n_jobs):
    """Seed and sizes of every generator: an int seed in [0, 2**64), 1 <= n_jobs <= n_workers <= MAX_WORKERS."""
    if seed is None:
        raise InvalidOptionError("seed must be a non-negative integer (generators are reproducible); got None.")
    seed = check_seed(seed)
    K = check_positive_int("n_workers", n_workers, allow_none=False, maximum=MAX_WORKERS)
    S = check_positive_int("n_jobs", n_jobs, allow_none=False, maximum=K)  # every job needs a worker
    return seed, K, S


def _fraction(name, value, lo=0.0, hi=1.0, open_lo=False):
    """A real number in [lo, hi] (or (lo, hi] with ``open_lo``) as a float."""
    ok = is_real_scalar(value) and (lo < float(value) if open_lo else lo <= float(value)) and float(value) <= hi
    if not ok:
        raise InvalidOptionError(
            f"{name} must be a number in {'(' if open_lo else '['}{lo:g}, {hi:g}]; got {value!r}."
        )
    return float(value)


def _split(rng, K, G, min_each=1):
    """Random type counts summing to K with at least ``min_each`` of each type (when possible)."""
    base = min(min_each, K // G)
    rest = K - base * G
    return base + rng.multinomial(rest, rng.dirichlet(np.full(G, 3.0)))


def gavel_instance(seed, n_workers, n_jobs, table, *, p_exclude=0.15, bandwidth=1.25e9, types=("k80", "p100", "v100")):
    """Gavel-based instance (see module docstring).

    Raises
    ------
    InvalidOptionError
        ``seed`` not an integer in [0, 2**64), sizes outside ``1 <= n_jobs <=
        n_workers <= MAX_WORKERS``, ``p_exclude`` outside [0, 1], ``types``
        not a non-empty list of distinct GPU types of the table.
    """
    seed, n_workers, n_jobs = _size_iv(seed, n_workers, n_jobs)
    p_exclude = _fraction("p_exclude", p_exclude)
    if not isinstance(table, GavelTable):
        table = load_gavel(table)
    if (isinstance(types, (str, bytes)) or not isinstance(types, (list, tuple)) or not types
            or not all(isinstance(t, str) and t in table.types for t in types) or len(set(types)) != len(types)):
        raise InvalidOptionError(
            f"types must be a non-empty list of distinct GPU types of the table ({', '.join(table.types)}); "
            f"got {types!r}."
        )
    types = tuple(types)
    rng = np.random.default_rng([seed, n_workers, n_jobs, 11])
    counts = _split(rng, n_workers, len(types))
    models = [m for m in table.models if all(table.samples_per_second(m, t) > 0 for t in types)]
    if not models:
        raise InvalidOptionError(f"no model of the table runs on every one of types={list(types)}; pass other types.")
    S = n_jobs
    chosen = [models[j] for j in rng.integers(len(models), size=S)]
    rho = np.array([[table.samples_per_second(m, t) for t in types] for m in chosen])
    full = rho.copy()  # every entry > 0: the models run on every type
    for i in range(S):
        if rng.random() < p_exclude:
            rho[i, rng.integers(len(types))] = 0.0
    batch = [table.per_gpu_batch(m) * int(rng.integers(1, 9)) for m in chosen]
    iters = np.round(10 ** rng.uniform(3, 5, size=S))
    grad = [DEFAULT_GRAD_BYTES.get(table.family(m).split(" ")[0], 50e6) for m in chosen]
    return _feasible(
        rho, counts, batch, iters, grad, bandwidth, None,
        [f"{i}:{table.family(m)}" for i, m in enumerate(chosen)], list(types), rng, full=full,
    )


def speeds_instance(seed, n_workers, n_jobs, table, *, low=0.4, **kw):
    """``gavel_instance`` with per-worker available speeds uniform in [low, 1], ``0 < low <= 1``."""
    low = _fraction("low", low, open_lo=True)
    base = gavel_instance(seed, n_workers, n_jobs, table, **kw)
    rng = np.random.default_rng([seed, n_workers, n_jobs, 13])
    speed = np.round(rng.uniform(low, 1.0, size=n_workers), 3)
    return base.with_worker_speed(speed)


def synthetic_instance(seed, n_workers, n_jobs, *, n_types=6, p_zero=0.1, bandwidth=1.25e9):
    """Synthetic many-type instance (see module docstring).

    Raises
    ------
    InvalidOptionError
        ``seed`` not an integer in [0, 2**64), sizes outside ``1 <= n_jobs <=
        n_workers <= MAX_WORKERS``, ``n_types`` outside [1, MAX_TYPES],
        ``p_zero`` outside [0, 1].
    """
    seed, n_workers, n_jobs = _size_iv(seed, n_workers, n_jobs)
    n_types = check_positive_int("n_types", n_types, allow_none=False, maximum=MAX_TYPES)
    p_zero = _fraction("p_zero", p_zero)
    rng = np.random.default_rng([seed, n_workers, n_jobs, n_types, 17])
    counts = _split(rng, n_workers, n_types)
    gen_speed = 1.6 ** np.arange(n_types)  # each generation ~1.6x the previous
    base = rng.uniform(20, 400, size=n_jobs)
    affinity = rng.lognormal(0.0, 0.35, size=(n_jobs, n_types))
    rho = base[:, None] * gen_speed[None, :] * affinity
    full = rho.copy()  # every entry > 0
    rho[rng.random(rho.shape) < p_zero] = 0.0
    batch = rng.choice([32, 64, 128, 256, 512], size=n_jobs) * rng.integers(1, 9, size=n_jobs)
    iters = np.round(10 ** rng.uniform(3, 5, size=n_jobs))
    grad = rng.uniform(5e6, 300e6, size=n_jobs)
    return _feasible(
        rho, counts, batch, iters, grad, bandwidth, None,
        [f"job{i}" for i in range(n_jobs)], [f"gen{g}" for g in range(n_types)], rng, full=full,
    )


def topology_instance(seed, n_workers, n_jobs, table, *, nvlink_types=("v100",), nvlink=300e9, pcie=32e9,
                      inter_node=(10e9 / 8, 200e9 / 8), oversubscription=(1.0, 4.0), rack_nodes=(4, 8),
                      racks=True, **kw):
    """``gavel_instance`` on a cluster of nodes and racks (docs/model.md §1.6).

    The jobs, the type counts and their throughputs are ``gavel_instance(seed,
    n_workers, n_jobs, table, **kw)``'s.  Each type's GPUs fill nodes of 8
    (the ``nvlink_types``: DGX-like servers, ``nvlink`` bytes/s inside) or of
    4 (the other types: PCIe servers, ``pcie`` bytes/s inside); a type's last
    node holds what is left.  Nodes are numbered type by type, so are the
    workers.  The nodes, in that order, form racks of ``rack_nodes`` nodes
    (each size drawn uniformly from that range; the last rack holds what is
    left).  The links between the nodes of a rack run at one bandwidth drawn
    log-uniformly from ``inter_node`` (default 10-200 Gbit/s); those between
    racks at that bandwidth divided by an oversubscription drawn uniformly from
    ``oversubscription``.  ``racks=False``: no rack level, every link between
    nodes at the drawn ``inter_node`` bandwidth.

    Parameters
    ----------
    seed, n_workers, n_jobs, table
        As :func:`gavel_instance`.
    nvlink_types : sequence of str
        GPU types in 8-GPU NVLink nodes (types not in the instance are ignored).
    nvlink, pcie : float
        Bytes/s inside an 8-GPU NVLink node and inside a 4-GPU PCIe node.
    inter_node, oversubscription : (float, float)
        Ranges ``(low, high)`` of the bandwidth between the nodes of a rack
        (bytes/s) and of its ratio to the bandwidth between racks.
    rack_nodes : (int, int)
        Range of the nodes per rack.
    racks : bool
        Give the rack level.
    **kw
        Options of :func:`gavel_instance` (``p_exclude``, ``types``).

    Returns
    -------
    Problem
        With ``node``, ``node_bandwidth`` (and ``rack``, ``rack_bandwidth``);
        ``bandwidth`` is the top level's.

    Raises
    ------
    InvalidOptionError
        As :func:`gavel_instance`, and ranges that are not ``0 < low <= high``
        (``1 <= low`` for ``oversubscription`` and ``rack_nodes``, whole numbers
        for ``rack_nodes``), bandwidths that are not positive and finite,
        ``nvlink_types`` not a list of strings.
    """
    base = gavel_instance(seed, n_workers, n_jobs, table, **kw)
    nvlink, pcie = _bandwidth("nvlink", nvlink), _bandwidth("pcie", pcie)
    bw_lo, bw_hi = _range("inter_node", inter_node, 0.0)
    over_lo, over_hi = _range("oversubscription", oversubscription, 1.0)
    rn_lo, rn_hi = _range("rack_nodes", rack_nodes, 1.0, whole=True)
    if isinstance(nvlink_types, (str, bytes)) or not isinstance(nvlink_types, (list, tuple)) or not all(
            isinstance(t, str) for t in nvlink_types):
        raise InvalidOptionError(f"nvlink_types must be a list of GPU type names; got {nvlink_types!r}.")
    if not isinstance(racks, bool):
        raise InvalidOptionError(f"racks must be True or False; got {racks!r}.")
    rng = np.random.default_rng([seed, n_workers, n_jobs, 19])
    sizes, inside = [], []
    for name, count in zip(base.type_names, base.type_counts.tolist()):
        per = 8 if name in nvlink_types else 4
        full, rest = divmod(count, per)
        sizes += [per] * full + ([rest] if rest else [])
        inside += [nvlink if per == 8 else pcie] * (full + bool(rest))
    N = len(sizes)
    link = bw_lo * (bw_hi / bw_lo) ** float(rng.uniform())  # log-uniform (exactly bw_lo when bw_lo == bw_hi)
    topo = {"node": np.repeat(np.arange(N), sizes), "node_bandwidth": np.array(inside)}
    bandwidth = link
    if racks:
        rack = np.empty(N, dtype=np.int64)
        v = r = 0
        while v < N:
            m = int(rng.integers(int(rn_lo), int(rn_hi) + 1))
            rack[v:v + m] = r
            v, r = v + m, r + 1
        topo.update(rack=rack, rack_bandwidth=link)
        bandwidth = link / float(rng.uniform(over_lo, over_hi))
    d = base.to_dict()
    d.update(bandwidth=bandwidth, **topo)
    return Problem(**d)


def _bandwidth(name, value):
    if not (is_real_scalar(value) and 0 < float(value) < float("inf")):
        raise InvalidOptionError(f"{name} must be a positive finite number of bytes/s; got {value!r}.")
    return float(value)


def _range(name, value, low, whole=False):
    """``(lo, hi)`` with ``low <= lo <= hi`` finite (``low < lo`` when ``low`` is 0), as floats."""
    ok = isinstance(value, (list, tuple)) and len(value) == 2 and all(is_real_scalar(v) for v in value)
    if ok:
        lo, hi = float(value[0]), float(value[1])
        ok = (lo > low if low == 0 else lo >= low) and lo <= hi < float("inf")
        ok = ok and (not whole or (lo == round(lo) and hi == round(hi)))
    if not ok:
        kind = "whole numbers" if whole else "numbers"
        bound = "0 < low" if low == 0 else f"{low:g} <= low"
        raise InvalidOptionError(f"{name} must be a pair (low, high) of {kind} with {bound} <= high; got {value!r}.")
    return lo, hi


def _feasible(rho, counts, batch, iters, grad, bandwidth, speed, names, types, rng, full):
    """Build the problem, restoring zeroed throughputs until every job can be placed.

    Each retry sets one zero to a positive value (the row's best, or its value
    in ``full``, all > 0, when the row has none), so after at most ``rho.size``
    retries nothing is zero and the Problem's own verdict stands.
    """
    from .errors import InvalidProblemError

    rho = np.array(rho, dtype=float)
    for _ in range(rho.size + 1):
        try:
            return Problem(rho, counts, batch, iters, grad_bytes=grad, bandwidth=bandwidth,
                           worker_speed=speed, job_names=names, type_names=types)
        except InvalidProblemError:
            zero = np.argwhere(rho == 0)
            if zero.size == 0:
                raise
            i, g = zero[rng.integers(len(zero))]
            # the row's best type; a row with none left (every type excluded) gets its drawn value back
            rho[i, g] = rho[i].max() if rho[i].max() > 0 else full[i, g]
    raise AssertionError("unreachable")  # pragma: no cover


def make_instance(family, seed, n_workers, n_jobs, table=None, **kw):
    """Dispatch to a family's generator by name (``"gavel"``, ``"speeds"``, ``"synthetic"``, ``"topology"``)."""
    if not isinstance(family, str):
        raise InvalidOptionError(f"family must be one of {', '.join(map(repr, ALL_FAMILIES))}; got {family!r}.")
    if family == "gavel":
        return gavel_instance(seed, n_workers, n_jobs, table, **kw)
    if family == "speeds":
        return speeds_instance(seed, n_workers, n_jobs, table, **kw)
    if family == "synthetic":
        return synthetic_instance(seed, n_workers, n_jobs, **kw)
    if family == "topology":
        return topology_instance(seed, n_workers, n_jobs, table, **kw)
    raise InvalidOptionError(f"family={family!r} is not valid; choose one of {', '.join(map(repr, ALL_FAMILIES))}.")


#: Events of :func:`replacement_instance`.
EVENTS = ("arrival", "departure")


def replacement_instance(seed, n_workers, n_running, table=None, *, family="gavel", event="arrival",
                         restart=(0.01, 0.30), current="auto", **kw):
    """A seeded re-placement (docs/model.md §1.4): jobs run, then one arrives or one leaves.

    ``n_running + 1`` jobs of ``family`` are drawn (:func:`make_instance`);
    the first ``n_running`` run on the placement ``hetplace.place(method=current,
    seed=seed)`` of them alone (``"auto"``: the exact DP when it is fast,
    else SMP; ``"random"``: a random feasible one).  ``event="arrival"``: the
    last job arrives (new).  ``event="departure"``: job 0 leaves, its workers
    go idle, the last job is dropped.  Each running job's restart time is
    drawn uniformly from ``restart`` (fractions) times its JCT in the running
    placement.

    Returns
    -------
    Problem
        With ``current`` and ``restart_time`` set.
    """
    from .api import place

    if event not in EVENTS:
        raise InvalidOptionError(f"event must be one of {', '.join(map(repr, EVENTS))}; got {event!r}.")
    if current not in ("auto", "random", "smp", "exact"):
        raise InvalidOptionError(f"current must be 'auto', 'smp', 'exact' or 'random'; got {current!r}.")
    lo, hi = restart
    if not (is_real_scalar(lo) and is_real_scalar(hi) and 0 <= lo <= hi < 1e6):
        raise InvalidOptionError(f"restart must be (low, high) fractions with 0 <= low <= high; got {restart!r}.")
    n_running = check_positive_int("n_running", n_running, allow_none=False, maximum=MAX_WORKERS)
    if event == "departure" and n_running < 2:
        raise InvalidOptionError(f"a departure needs n_running >= 2 (one leaves, one stays); got {n_running}.")
    base = make_instance(family, seed, n_workers, n_running + 1, table, **kw)
    rng = np.random.default_rng([check_seed(seed), 0x5E])

    def subset(jobs, **extra):
        d = base.to_dict()
        for k in ("throughput", "batch", "iterations", "grad_bytes", "job_names"):
            d[k] = [d[k][j] for j in jobs]
        d.update(extra)
        return Problem(**d)

    running = subset(range(n_running))
    run = place(running, method=current, seed=seed)
    rt = rng.uniform(lo, hi, n_running) * run.jct
    cur = run.worker_job
    if event == "arrival":
        return subset(range(n_running + 1), current=cur.tolist(), restart_time=np.append(rt, 0.0).tolist())
    return subset(range(1, n_running), current=np.where(cur > 0, cur - 1, -1).tolist(), restart_time=rt[1:].tolist())
