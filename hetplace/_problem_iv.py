"""Input validation of :class:`hetplace.problem.Problem` (private): one function, :func:`_problem_iv`.

Every check of a Problem's parameters lives here, in the order the
constructor has always applied them, so each bad input raises one error with
one message from one place.  :class:`~hetplace.problem.Problem` stores what
:func:`_problem_iv` returns and derives its tables from it; the shared small
checkers come from :mod:`hetplace._validation`.
"""

import math
from typing import NamedTuple

import numpy as np

from ._validation import (
    COUNT_MAX, as_bool_array, as_real_array, check_count_total, check_real_range, exact_int_sum, float64_copy,
)
from .errors import InvalidProblemError, InvalidProblemTypeError

__all__ = ["MAX_WORKERS", "MAX_TABLE_CELLS", "min_worker_flow", "augmenting_assignment"]

#: Most workers (the exact sum of ``type_counts``) a problem may have.
MAX_WORKERS = 1_000_000
#: Most cells ``S * (K + 1)`` of a dense per-job table a Problem builds when a
#: caller asks for one (``worker_throughput``, ``comm_time``, ``size_cost``: 4 GiB
#: each at the limit), checked before it is allocated.
MAX_TABLE_CELLS = 2**29


_RANGE_FIX = "Rescale the units (e.g. samples per hour instead of per second, or MB instead of bytes)."


def _real(value, name, shape_text, what="numbers"):
    """``value`` as an array of real numbers (see :func:`~hetplace._validation.as_real_array`)."""
    return as_real_array(value, name, what=what, shape_text=shape_text, error=InvalidProblemTypeError)


def _to_float(raw, name, fix=_RANGE_FIX):
    """Float64 copy of the real array ``raw`` (:func:`hetplace._validation.float64_copy`, the range fix by default)."""
    return float64_copy(raw, name, fix)


def _as_float_array(value, name, shape_text, ndim):
    """Convert ``value`` to a float64 array of ``ndim`` dimensions or raise."""
    arr = _to_float(_real(value, name, shape_text), name)
    if arr.ndim != ndim:
        raise InvalidProblemError(
            f"{name} must be {shape_text}; got an array of shape {arr.shape}."
        )
    return arr


def _exceeds(raw, arr, limit):
    """Mask of entries above ``limit``, compared exactly (a large int64 is not exact as a float)."""
    if raw.dtype.kind in "iu":
        return raw > limit
    if raw.dtype.kind == "O":
        return np.array([v > limit for v in raw.ravel().tolist()], dtype=bool).reshape(raw.shape)
    return arr > limit


def _check_finite(arr, name, fix):
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        where = idx[0] if len(idx) == 1 else idx
        raise InvalidProblemError(
            f"{name} must be finite; got {float(arr[idx])!r} at index {where}. {fix}"
        )


def _axis_labels(axis, n):
    """The labels of a pandas-like axis as strings, or None for the default ``0..n-1`` range."""
    labels = list(axis)
    if len(labels) == n and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and v == j
        for j, v in enumerate(labels)
    ):
        return None
    return [str(v) for v in labels]


def _series_labels(value):
    """Index labels of a 1-D pandas-like input (a Series), or None when it has none worth using."""
    if isinstance(value, (list, tuple, np.ndarray, str, bytes)):
        return None
    index = getattr(value, "index", None)
    if index is None or callable(index) or np.ndim(value) != 1:
        return None
    return _axis_labels(index, len(index))


def _aligned(value, name, names, what):
    """A labelled 1-D input (pandas Series) in the order of ``names``; unlabelled input unchanged.

    ``names`` is None when the problem's labels are only the defaults: the
    input is then taken by position, as an unlabelled one.
    """
    labels = _series_labels(value)
    if labels is None or names is None or labels == list(names):
        return value
    if len(labels) == len(names) and len(set(labels)) == len(labels) and set(labels) == set(names):
        where = {label: j for j, label in enumerate(labels)}
        return _real(value, name, "")[[where[v] for v in names]]
    raise InvalidProblemError(
        f"{name} is labelled {labels[:5]}{'...' if len(labels) > 5 else ''}, which are not the {what} "
        f"{list(names)[:5]}{'...' if len(names) > 5 else ''}; index it by the {what} or pass plain values in order."
    )


def _job_vector(value, name, n_jobs, names, shape_text, fix):
    """``(raw, arr)``: a per-job input as its real array and its float64 copy, both shape ``(n_jobs,)``.

    A labelled input is aligned on ``names`` and a scalar is broadcast; any
    other shape raises.
    """
    raw = _real(_aligned(value, name, names, "job names"), name, shape_text)
    arr = _to_float(raw, name, fix=fix)
    if arr.ndim > 1:
        raise InvalidProblemError(f"{name} must be {shape_text}; got an array of shape {arr.shape}.")
    if arr.ndim == 0:
        raw, arr = np.full(n_jobs, raw.item(), dtype=raw.dtype), np.full(n_jobs, float(arr))
    if arr.shape != (n_jobs,):
        raise InvalidProblemError(
            f"{name} must have one value per job, shape ({n_jobs},); got shape {arr.shape}."
        )
    return raw, arr


def _check_count_max(raw, arr, name):
    """Raise when a per-job count exceeds ``COUNT_MAX`` (compared exactly on ``raw``)."""
    big = np.flatnonzero(_exceeds(raw, arr, COUNT_MAX))
    if big.size:
        raise InvalidProblemError(
            f"{name} must be at most 2**53 = {COUNT_MAX}; got {int(raw[big[0]])} for job {big[0]}."
        )


def _per_job(value, name, n_jobs, *, default=None, positive=True, integer=False, names=None):
    """Validate a per-job vector of length ``n_jobs`` (a scalar is broadcast)."""
    if value is None:
        if default is None:
            raise InvalidProblemError(f"{name} is required: pass one value per job ({n_jobs}).")
        value = default
    raw, arr = _job_vector(value, name, n_jobs, names, f"one number per job, shape ({n_jobs},)",
                           f"{name} must be at most 2**53." if integer else _RANGE_FIX)
    _check_finite(arr, name, "Give every job a finite value.")
    if positive:
        bad = np.flatnonzero(arr <= 0)
        if bad.size:
            raise InvalidProblemError(
                f"{name} must be > 0 for every job; got {float(arr[bad[0]])!r} for job {bad[0]}."
            )
    else:
        bad = np.flatnonzero(arr < 0)
        if bad.size:
            raise InvalidProblemError(
                f"{name} must be >= 0 for every job; got {float(arr[bad[0]])!r} for job {bad[0]}."
            )
    if integer:
        bad = np.flatnonzero(arr != np.round(arr))
        if bad.size:
            raise InvalidProblemError(
                f"{name} must be whole numbers of samples; got {float(arr[bad[0]])!r} for job "
                f"{bad[0]}. Round it to an integer."
            )
        _check_count_max(raw, arr, name)
    check_real_range(name, arr, error=InvalidProblemError, fix=_RANGE_FIX)
    return arr


def _per_job_count(value, name, n_jobs, default, names=None):
    """A per-job vector of worker counts (int64, >= 1; a scalar is broadcast); ``default`` when None."""
    if value is None:
        return np.full(n_jobs, default, dtype=np.int64)
    raw, arr = _job_vector(value, name, n_jobs, names, f"one whole number of workers per job, shape ({n_jobs},)",
                           f"{name} must be at most 2**53.")
    bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))
    if bad.size:
        raise InvalidProblemError(
            f"{name} must be whole numbers of workers; got {float(arr[bad[0]])!r} for job {bad[0]}."
        )
    bad = np.flatnonzero(arr < 1)
    if bad.size:
        raise InvalidProblemError(
            f"{name} must be >= 1 for every job (a job runs on at least one worker); got "
            f"{float(arr[bad[0]]):g} for job {bad[0]}."
        )
    _check_count_max(raw, arr, name)
    # above K is the same bound as K (the cluster caps every job anyway)
    return np.minimum(arr, float(MAX_WORKERS)).astype(np.int64)


def min_worker_flow(allowed, capacity, demand):
    """Give every job ``demand[i]`` workers of the types it may use, within ``capacity``.

    A max-flow from the jobs (supply ``demand``) to the types (capacity
    ``capacity``) over the edges ``allowed[i, g]``: a greedy first fill, then
    breadth-first augmenting paths (Edmonds-Karp) from the jobs still short.

    Parameters
    ----------
    allowed : ndarray of bool, shape (S, G)
    capacity : ndarray of int64, shape (G,)
    demand : ndarray of int64, shape (S,)

    Returns
    -------
    flow : ndarray of int64, shape (S, G)
        Workers of type g given to job i (``flow.sum(axis=1) == demand`` when
        ``short`` is None).
    short : ndarray of int64 or None
        When no flow meets every demand: the jobs reached from a short job in
        the residual graph, a set whose allowed types hold fewer workers than
        its summed demand (Hall's condition for demands, violated); else None.
    """
    S, G = allowed.shape
    flow = np.zeros((S, G), dtype=np.int64)
    free = np.array(capacity, dtype=np.int64)
    need = np.array(demand, dtype=np.int64)
    for i in range(S):  # greedy: types in index order
        for g in np.flatnonzero(allowed[i] & (free > 0)):
            take = min(int(need[i]), int(free[g]))
            flow[i, g] += take
            free[g] -= take
            need[i] -= take
            if need[i] == 0:
                break
    while need.any():
        starts = np.flatnonzero(need > 0)
        job_seen = np.zeros(S, dtype=bool)
        job_seen[starts] = True
        type_from = np.full(G, -1, dtype=np.int64)  # job that reached type g
        job_from = np.full(S, -1, dtype=np.int64)  # type that reached job i (-1: a start)
        frontier, end = list(starts), -1
        while frontier and end < 0:
            nxt = []
            for i in frontier:
                for g in np.flatnonzero(allowed[i] & (type_from < 0)):
                    type_from[g] = i
                    if free[g] > 0:
                        end = g
                        break
                    for j in np.flatnonzero((flow[:, g] > 0) & ~job_seen):
                        job_seen[j] = True
                        job_from[j] = g
                        nxt.append(j)
                if end >= 0:
                    break
            frontier = nxt
        if end < 0:
            return flow, np.flatnonzero(job_seen)
        path, g = [], end  # (job, type) forward edges; between them, (job, type) edges taken back
        while True:
            i = int(type_from[g])
            path.append((i, g))
            if job_from[i] < 0:
                break
            g = int(job_from[i])
        amount = min(int(free[end]), int(need[path[-1][0]]))
        # the backward edges: job i gives up the type it was reached through, job_from[i]
        for i, _ in path:
            if job_from[i] >= 0:
                amount = min(amount, int(flow[i, job_from[i]]))
        for i, g in path:
            flow[i, g] += amount
            if job_from[i] >= 0:
                flow[i, job_from[i]] -= amount
        free[end] -= amount
        need[path[-1][0]] -= amount
    return flow, None


def augmenting_assignment(choices, room, free_first=False):
    """Give jobs ``0, 1, ...`` one slot each by augmenting paths (Kuhn's algorithm with capacities).

    Jobs are served in index order; job ``i`` tries its slots in the order of
    ``choices[i]``: a slot with room is taken at once, a full one is freed by
    moving one of its holders (oldest first) to another slot, depth first,
    each slot visited at most once per job.  The depth-first search runs on
    an explicit stack, so a path through any number of jobs never meets
    Python's recursion limit (a chain of 1,000 types did, in the recursive
    form this replaces).

    Parameters
    ----------
    choices : sequence of sequence of int
        Slots (classes, or types) job ``i`` may take, in the order it tries them.
    room : sequence of int
        Jobs each slot holds at most.
    free_first : bool, default False
        Let every job on a path take any of its unvisited slots with room
        before it frees a full one (the same jobs are placed, and the same
        ``failed`` found, in fewer steps when slots are crowded; the slots
        the jobs hold may differ).

    Returns
    -------
    holders : list of list of int
        The jobs holding each slot, in the order they came to hold it.
    failed : int
        The first job no augmenting path places (then ``holders`` places jobs
        ``0 .. failed - 1``, and jobs ``0 .. failed`` need more slots than
        they may use: Hall's condition fails), or -1 when every job is placed.

    Notes
    -----
    H. W. Kuhn, *The Hungarian method for the assignment problem*, Naval
    Research Logistics Quarterly 2, 1955 (augmenting paths); here with slot
    capacities.  A slot's holders do not change while a path searches below
    it (the slot is marked visited), so a frame keeps an index into them.
    O(S E) in the worst case, O(S) when no path is needed.
    """
    holders = [[] for _ in range(len(room))]
    seen = [-1] * len(room)  # the last job whose search visited the slot
    for i in range(len(choices)):
        # a frame: [job, next position in its choices, slot being freed (-1: none), holder tried there]
        stack, placed = [[i, 0, -1, -1]], False
        while stack:
            frame = stack[-1]
            if placed:  # the holder tried in this frame's slot moved on: this frame's job takes its place
                h = holders[frame[2]]
                del h[frame[3]]
                h.append(frame[0])
                stack.pop()
                continue
            if frame[2] >= 0:  # free the slot through its next holder
                frame[3] += 1
                h = holders[frame[2]]
                if frame[3] < len(h):
                    stack.append([h[frame[3]], 0, -1, -1])
                    continue
                frame[2] = -1
            opts = choices[frame[0]]
            if free_first and frame[1] == 0:
                c = next((c for c in opts if seen[c] != i and len(holders[c]) < room[c]), -1)
                if c >= 0:
                    seen[c] = i
                    holders[c].append(frame[0])
                    placed = True
                    stack.pop()
                    continue
            while frame[1] < len(opts):
                c = opts[frame[1]]
                frame[1] += 1
                if seen[c] == i:
                    continue
                seen[c] = i
                if len(holders[c]) < room[c]:
                    holders[c].append(frame[0])
                    placed = True
                else:
                    frame[2], frame[3] = c, -1
                break
            else:
                stack.pop()  # no slot for this job: its parent tries its next holder
                continue
            if placed:
                stack.pop()
        if not placed:
            return holders, i
    return holders, -1


def _names(value, name, n, prefix):
    if value is None:
        return tuple([prefix + i for i in map(str, range(n))])
    if isinstance(value, str):
        raise InvalidProblemTypeError(
            f"{name} must be a sequence of {n} names; got the single string {value!r}."
        )
    names = tuple(str(v) for v in value)
    if len(names) != n:
        raise InvalidProblemError(f"{name} must hold {n} names; got {len(names)}.")
    if len(set(names)) != n:
        raise InvalidProblemError(f"{name} must be distinct; got {list(names)}.")
    return names


def _compact(values, head=8):
    """``[a, b, ...]`` text of an integer vector: all of it when short, else its first ``head`` entries."""
    values = np.asarray(values).tolist()
    if len(values) <= head:
        return str(values)
    return "[" + ", ".join(str(v) for v in values[:head]) + f", ...] ({len(values)} entries)"


def _available_iv(available, K, S):
    """``available`` as a (K,) bool array (all True when None), or raise."""
    if available is None:
        return np.ones(K, dtype=bool)
    shape_text = f"one bool per worker, shape ({K},)"
    arr = as_bool_array(available, "available", shape_text=shape_text, error=InvalidProblemTypeError)
    if arr.shape != (K,):
        raise InvalidProblemError(
            f"available must have one bool per worker (sum of type_counts = {K}); got shape {arr.shape}."
        )
    up = int(arr.sum())
    if up == 0:
        raise InvalidProblemError(
            f"available must mark at least one worker True; got all {K} workers down. "
            "Mark the workers that can run jobs True."
        )
    if S > up:
        raise InvalidProblemError(
            f"a placement gives every job at least one worker, so n_jobs <= the available workers; "
            f"got {S} jobs for {up} available workers ({K - up} of {K} are False in available). "
            "Mark more workers available or place the jobs in several rounds."
        )
    return arr


def _bounds_iv(min_workers, max_workers, batch, S, K, names):
    """``(min_workers, max_workers in force)`` as int64 (S,) arrays, or raise."""
    lo = _per_job_count(min_workers, "min_workers", S, 1, names)
    hi_user = _per_job_count(max_workers, "max_workers", S, K, names)
    bad = np.flatnonzero(lo > hi_user) if max_workers is not None else ()
    if len(bad):
        i = int(bad[0])
        raise InvalidProblemError(
            f"min_workers must be <= max_workers for every job; got min_workers = {int(lo[i])} > "
            f"max_workers = {int(hi_user[i])} for job {i}. Lower min_workers or raise max_workers "
            "(equal values make a rigid job)."
        )
    hi = np.minimum(np.minimum(hi_user, batch), K).astype(np.int64)
    bad = np.flatnonzero(lo > hi)
    if bad.size:
        i = int(bad[0])
        why = (f"its batch of {int(batch[i])} samples gives at most {int(batch[i])} workers a sample"
               if batch[i] < min(hi_user[i], K) else f"the cluster has {K} workers")
        raise InvalidProblemError(
            f"min_workers = {int(lo[i])} for job {i} exceeds the most workers it can use, "
            f"{int(hi[i])} = min(max_workers, batch, n_workers): {why}. Lower its min_workers "
            f"to at most {int(hi[i])}."
        )
    total = exact_int_sum(lo)
    if total > K:
        raise InvalidProblemError(
            f"min_workers sums to {total}, more than the {K} workers of the cluster "
            f"(sum of type_counts); min_workers = {_compact(lo)}. Lower the minima or add workers."
        )
    return lo, hi


def _check_minima(rho, counts, lo, type_names, all_up):
    """Raise unless some placement gives every job its min_workers (Hall's condition for demands).

    ``counts`` are the available workers per type; ``all_up`` is True when no worker is down.
    """
    allowed = (rho > 0) & (counts > 0)[None, :]
    room = allowed.astype(np.int64) @ counts
    kind = "" if all_up else "available "
    bad = np.flatnonzero(lo > room)
    if bad.size:
        i = int(bad[0])
        types = [type_names[g] for g in np.flatnonzero(allowed[i])]
        raise InvalidProblemError(
            f"min_workers = {int(lo[i])} for job {i}, but the types it can run on ({', '.join(types)}) "
            f"have only {int(room[i])} {kind}worker{'s' if room[i] != 1 else ''}. Lower its min_workers to at most {int(room[i])}, or "
            "give it a positive throughput on more types."
        )
    _, short = min_worker_flow(allowed, counts, lo)
    if short is not None:
        types = np.flatnonzero(allowed[short].any(axis=0))
        have = int(counts[types].sum())
        raise InvalidProblemError(
            f"no placement gives every job its min_workers: jobs {_compact(short)} need "
            f"{exact_int_sum(lo[short])} workers together (their min_workers), but the types they can "
            f"run on ({', '.join(type_names[g] for g in types)}) have only {have}"
            f"{'' if not kind else ' available'}. Lower their min_workers or add "
            f"{kind}workers of those types."
        )


def _check_coverable(rho, type_counts, up_counts, all_up):
    """Raise when no placement can give every job one worker (Hall's condition).

    ``up_counts`` are the available workers per type; ``all_up`` is True when
    no worker is down.  Jobs are matched to types in index order by
    :func:`augmenting_assignment` (no recursion); the first job it cannot
    place is named.
    """
    S = rho.shape[0]
    cap = up_counts.copy()
    jobs, types = np.nonzero((rho > 0) & (cap > 0)[None, :])  # row-major: each job's types ascending
    ends = np.cumsum(np.bincount(jobs, minlength=S)).tolist()
    types = types.tolist()
    choices = [types[a:b] for a, b in zip([0] + ends[:-1], ends)]
    _, i = augmenting_assignment(choices, cap.tolist(), free_first=True)
    if i >= 0:
        where = (f"type_counts = {type_counts.tolist()}" if all_up
                 else f"the available workers per type, {cap.tolist()} (available marks some down),")
        raise InvalidProblemError(
            f"no placement gives every job a worker: job {i} (and the jobs before it) "
            f"need more workers of the types they can run on than {where} "
            "provides. Add workers of those types or remove jobs."
        )


def _current_iv(current, restart_time, rho, worker_type, type_names, names):
    """``(current, restart_time)`` as int64 (K,) and float64 (S,) arrays, or raise."""
    S, K = rho.shape[0], worker_type.shape[0]
    if current is None:
        cur = np.full(K, -1, dtype=np.int64)
    else:
        if isinstance(current, (str, bytes)):
            raise InvalidProblemTypeError(
                f"current must be {K} integers (job index per worker, -1 for none); got a string."
            )
        raw = as_real_array(current, "current", what="integer job indices (-1 for none)",
                            shape_text=f"{K} integers, one job index per worker", error=InvalidProblemTypeError)
        if raw.shape != (K,):
            raise InvalidProblemError(
                f"current must have one job index per worker (sum of type_counts = {K}); got shape {raw.shape}."
            )
        f = raw.astype(np.float64) if raw.dtype.kind != "O" else np.array([float(v) for v in raw.tolist()])
        bad = np.flatnonzero(~np.isfinite(f) | (f != np.round(f)) | (f < -1) | (f >= S))
        if bad.size:
            k = int(bad[0])
            raise InvalidProblemError(
                f"current[{k}] = {raw.tolist()[k]!r} is not a job index: use 0..{S - 1} for the job "
                "worker k runs now, or -1 for none."
            )
        cur = f.astype(np.int64)
        busy = np.flatnonzero(cur >= 0)
        dead = busy[rho[cur[busy], worker_type[busy]] <= 0]
        if dead.size:
            k = int(dead[0])
            raise InvalidProblemError(
                f"current[{k}] = {int(cur[k])}, but job {int(cur[k])} cannot run on worker {k}'s type "
                f"{type_names[worker_type[k]]} (throughput 0), so it cannot be running there. "
                "Fix current, or the throughput table."
            )
    rt = _per_job(restart_time, "restart_time", S, default=0.0, positive=False, names=names)
    if current is None and restart_time is not None and (rt > 0).any():
        raise InvalidProblemError(
            "restart_time is given but current is not: without a running placement no job can restart. "
            "Pass current (the job index of every worker now, -1 for none) as well."
        )
    return cur, rt


class _ProblemInputs(NamedTuple):
    """The parameters of a Problem, validated and normalised (not yet read-only).

    ``throughput`` (S, G), ``iterations``, ``batch``, ``grad_bytes`` and
    ``restart_time`` (S,) and ``worker_speed`` (K,) are float64;
    ``type_counts`` and ``available_counts`` (G,), ``worker_type`` and
    ``current`` (K,), ``min_workers`` and ``max_workers`` (S,) are int64
    (``max_workers`` the bound in force); ``available`` (K,) is bool; the
    names are tuples of str and ``bandwidth`` a float.
    """

    throughput: np.ndarray
    type_counts: np.ndarray
    batch: np.ndarray
    iterations: np.ndarray
    grad_bytes: np.ndarray
    bandwidth: float
    worker_speed: np.ndarray
    job_names: tuple
    type_names: tuple
    worker_type: np.ndarray
    available: np.ndarray
    available_counts: np.ndarray
    min_workers: np.ndarray
    max_workers: np.ndarray
    current: np.ndarray
    restart_time: np.ndarray


def _problem_iv(throughput, type_counts, batch, iterations, grad_bytes=None, bandwidth=math.inf,
                worker_speed=None, job_names=None, type_names=None, min_workers=None, max_workers=None,
                available=None, current=None, restart_time=None):
    """Validate and normalise the parameters of :class:`~hetplace.problem.Problem`.

    Parameters
    ----------
    throughput, type_counts, batch, iterations, grad_bytes, bandwidth, worker_speed, job_names, \
type_names, min_workers, max_workers, available, current, restart_time
        The constructor's arguments, as the caller passed them (see
        :class:`~hetplace.problem.Problem`): array-likes, pandas objects,
        scalars to broadcast, or None for a default.

    Returns
    -------
    _ProblemInputs
        Fresh arrays (the caller's own are never kept, so freezing them
        leaves the caller's writable), in canonical dtypes and shapes.

    Raises
    ------
    InvalidProblemError, InvalidProblemTypeError
        The first failed check, in a fixed order: throughput, names,
        type_counts and the worker total, the table size, available, a job
        with no usable type, batch, iterations, grad_bytes, bandwidth,
        worker_speed, the size bounds, whether every job can get its minimum
        (or one worker), then current and restart_time.

    Notes
    -----
    Every entry point that builds a Problem (``Problem(...)``,
    :meth:`~hetplace.problem.Problem.from_dict`, ``with_worker_speed``,
    ``_restrict``) goes through the constructor and so through here.
    """
    # a pandas DataFrame brings its own labels (duck-typed: pandas stays optional)
    frame = not isinstance(throughput, np.ndarray) and hasattr(throughput, "columns") and hasattr(throughput, "index")
    rho = _as_float_array(
        throughput, "throughput", "a 2-D array of shape (n_jobs, n_types)", 2
    )
    S, G = rho.shape
    if S == 0 or G == 0:
        raise InvalidProblemError(
            f"throughput must have at least one job and one type; got shape {rho.shape}."
        )
    if frame:
        if job_names is None:
            job_names = _axis_labels(throughput.index, S)
        if type_names is None:
            type_names = _axis_labels(throughput.columns, G)
    given_jobs, given_types = job_names is not None, type_names is not None
    job_names = _names(job_names, "job_names", S, "job")
    type_names = _names(type_names, "type_names", G, "type")
    # labels to align pandas Series inputs on (None: only the default names, align by position);
    # the defaults are built once (10**7 columns took seconds per extra build)
    job_labels = job_names if given_jobs and job_names != _names(None, "", S, "job") else None
    type_labels = type_names if given_types and type_names != _names(None, "", G, "type") else None
    _check_finite(rho, "throughput", "Use 0 for a type a job cannot run on.")
    if (rho < 0).any():
        i, g = (int(v) for v in np.argwhere(rho < 0)[0])
        raise InvalidProblemError(
            f"throughput must be >= 0; got {float(rho[i, g])!r} for job {i} on type {g}. "
            "Use 0 for a type a job cannot run on."
        )
    check_real_range("throughput", rho, error=InvalidProblemError, fix="Use 0 for a type a job cannot run on. " + _RANGE_FIX)

    counts_text = f"one count per type, shape ({G},)"
    counts_raw = _real(_aligned(type_counts, "type_counts", type_labels, "type names"), "type_counts", counts_text)
    counts = _to_float(counts_raw, "type_counts", fix=f"At most {MAX_WORKERS:,} workers are supported.")
    if counts.ndim != 1:
        raise InvalidProblemError(f"type_counts must be {counts_text}; got an array of shape {counts.shape}.")
    if counts.shape != (G,):
        raise InvalidProblemError(
            f"type_counts must have one entry per type (throughput has {G} columns); "
            f"got shape {counts.shape}."
        )
    _check_finite(counts, "type_counts", "Give a whole number of workers per type.")
    if (counts < 0).any() or (counts != np.round(counts)).any():
        g = int(np.flatnonzero((counts < 0) | (counts != np.round(counts)))[0])
        raise InvalidProblemError(
            f"type_counts must be non-negative integers; got {float(counts[g])!r} for type {g}."
        )
    # the exact (Python int) total, before any int64 arithmetic: an int64 sum of huge counts wraps
    K = check_count_total(
        "type_counts", counts_raw, limit=MAX_WORKERS, error=InvalidProblemError,
        fix="That total is the number of workers K; split the cluster into several problems.",
    )
    counts = counts.astype(np.int64)
    if K == 0:
        raise InvalidProblemError(
            f"type_counts must give at least one worker; got {counts.tolist()} (zero workers)."
        )
    if S > K:
        raise InvalidProblemError(
            f"a placement gives every job at least one worker, so n_jobs <= n_workers; "
            f"got {S} jobs (rows of throughput) for {K} workers (sum of type_counts). "
            "Add workers or place the jobs in several rounds."
        )

    worker_type = np.repeat(np.arange(G, dtype=np.int64), counts)
    avail = _available_iv(available, K, S)
    all_up = bool(avail.all())
    up_counts = counts if all_up else np.bincount(worker_type[avail], minlength=G).astype(np.int64)
    usable = rho[:, up_counts > 0] > 0
    stranded = np.flatnonzero(~usable.any(axis=1))
    if stranded.size:
        i = int(stranded[0])
        if all_up:
            raise InvalidProblemError(
                f"job {i} can run on no type present in the cluster: throughput[{i}] = "
                f"{rho[i].tolist()} with type_counts = {counts.tolist()}. Give it a positive "
                "throughput on a type that has workers, or remove the job."
            )
        raise InvalidProblemError(
            f"job {i} can run on no type with an available worker: throughput[{i}] = "
            f"{rho[i].tolist()} with available workers per type = {up_counts.tolist()} "
            f"(type_counts = {counts.tolist()}, some marked False in available). Mark a worker "
            "of a type it can run on available, or remove the job."
        )

    batch_arr = _per_job(batch, "batch", S, integer=True, names=job_labels)
    iters = _per_job(iterations, "iterations", S, names=job_labels)
    grad = _per_job(grad_bytes, "grad_bytes", S, default=0.0, positive=False, names=job_labels)

    bw = _real(bandwidth, "bandwidth", "", what="a number of bytes/s (or math.inf for no communication)")
    if bw.ndim != 0:
        raise InvalidProblemError(
            f"bandwidth must be a single number of bytes/s (one bandwidth per worker link); "
            f"got an array of shape {bw.shape}."
        )
    bandwidth = float(_to_float(bw, "bandwidth"))
    if not bandwidth > 0:
        raise InvalidProblemError(
            f"bandwidth must be > 0 bytes/s (math.inf switches communication off); got {bandwidth!r}."
        )
    if math.isfinite(bandwidth):
        check_real_range("bandwidth", bandwidth, error=InvalidProblemError,
                         fix="Use math.inf to switch communication off. " + _RANGE_FIX)

    if worker_speed is None:
        speed = np.ones(K)
    else:
        speed = _as_float_array(worker_speed, "worker_speed", f"one speed per worker, shape ({K},)", 1)
        if speed.shape != (K,):
            raise InvalidProblemError(
                f"worker_speed must have one value per worker (sum of type_counts = {K}); "
                f"got shape {speed.shape}."
            )
        _check_finite(speed, "worker_speed", "Speeds are fractions in (0, 1].")
        bad = np.flatnonzero((speed <= 0) | (speed > 1))
        if bad.size:
            raise InvalidProblemError(
                f"worker_speed must lie in (0, 1]; got {float(speed[bad[0]])!r} for worker {bad[0]}. "
                "Divide by the fastest worker's speed, or fold a constant factor into throughput."
            )
        check_real_range("worker_speed", speed, error=InvalidProblemError,
                         fix="Fold a constant factor into throughput instead.")

    # A worker whose share of the batch rounds to no sample does no work, so a
    # job can use at most ``batch`` workers: sizes above that are infeasible.
    lo, hi = _bounds_iv(min_workers, max_workers, batch_arr, S, K, job_labels)
    if (lo > 1).any():
        _check_minima(rho, up_counts, lo, type_names, all_up)
    else:
        _check_coverable(rho, counts, up_counts, all_up)
    cur, rt = _current_iv(current, restart_time, rho, worker_type, type_names, job_labels)
    return _ProblemInputs(
        throughput=rho, type_counts=counts, batch=batch_arr, iterations=iters, grad_bytes=grad,
        bandwidth=bandwidth, worker_speed=speed, job_names=job_names, type_names=type_names,
        worker_type=worker_type, available=avail, available_counts=up_counts, min_workers=lo,
        max_workers=hi, current=cur, restart_time=rt,
    )


def _weight_iv(weight, n_jobs, names):
    """``weight`` as a float64 (S,) array of positive, finite priorities, or raise (docs/model.md §1.5).

    :func:`_per_job`'s checks: shape, real numbers (no bools or strings),
    finite, > 0, and the supported range 1e-30..1e30, so ``weight * work``
    (work at most 1e30 * 2**53) and ``sum(weight)`` cannot overflow.
    """
    return _per_job(weight, "weight", n_jobs, positive=True, names=names)


class _TopologyInputs(NamedTuple):
    """What :func:`_topology_iv` returns: fresh arrays in canonical dtypes."""

    node: np.ndarray  # (K,) int64, the node of every worker
    node_bandwidth: np.ndarray  # (N,) float64, N = node.max() + 1
    rack: "np.ndarray | None"  # (N,) int64, the rack of every node, or None
    rack_bandwidth: "np.ndarray | None"  # (R,) float64, R = rack.max() + 1, or None


def _ids(value, name, length, owner, shape_text):
    """``value`` as a (length,) int64 array of non-negative whole ids, or raise naming ``name``."""
    raw = as_real_array(value, name, what=f"whole non-negative {owner} ids", shape_text=shape_text,
                        error=InvalidProblemTypeError)
    if raw.ndim != 1 or raw.shape[0] != length:
        raise InvalidProblemError(f"{name} must have {shape_text}; got shape {raw.shape}.")
    arr = _to_float(raw, name, fix=f"Number the {owner}s 0, 1, 2, ...")
    bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)) | (arr < 0))
    if bad.size:
        k = int(bad[0])
        raise InvalidProblemError(
            f"{name} must hold whole numbers >= 0 ({owner} ids); got {raw.tolist()[k]!r} at index {k}. "
            f"Number the {owner}s 0, 1, 2, ..."
        )
    if length and arr.max() >= length + MAX_WORKERS:
        raise InvalidProblemError(
            f"{name} holds the id {raw.tolist()[int(np.argmax(arr))]!r}; ids must be below "
            f"{length + MAX_WORKERS:,}. Number the {owner}s 0, 1, 2, ..."
        )
    return arr.astype(np.int64)


def _link_bandwidth(value, name, count, owner):
    """A scalar or per-``owner`` bandwidth (bytes/s) as a (count,) float64 array: > 0, inf allowed, or raise."""
    if value is None:
        raise InvalidProblemError(
            f"{name} is required with {owner}s: pass the bytes/s of the links inside a {owner} "
            f"(one number, or one per {owner}: {count})."
        )
    raw = as_real_array(value, name, what="a number of bytes/s", shape_text=f"a number or one per {owner} ({count},)",
                        error=InvalidProblemTypeError)
    arr = _to_float(raw, name)
    if arr.ndim == 0:
        arr = np.full(count, float(arr))
    elif arr.shape != (count,):
        raise InvalidProblemError(
            f"{name} must be one number of bytes/s or one per {owner} (shape ({count},): {owner} ids "
            f"0..{count - 1}); got shape {arr.shape}."
        )
    bad = np.flatnonzero(~(arr > 0))
    if bad.size:
        raise InvalidProblemError(
            f"{name} must be > 0 bytes/s for every {owner} (math.inf: free links); got "
            f"{float(arr[bad[0]])!r} for {owner} {int(bad[0])}."
        )
    fin = arr[np.isfinite(arr)]
    if fin.size:
        check_real_range(name, fin, error=InvalidProblemError, fix=_RANGE_FIX)
    return arr


def _topology_iv(node, node_bandwidth, rack, rack_bandwidth, K):
    """Validate the network topology of a Problem (docs/model.md §1.6); None without one.

    ``node``: the node of every worker (workers listed type by type), whole
    ids >= 0, N = max + 1 nodes (an id no worker has is an empty node).
    ``node_bandwidth``: bytes/s inside a node, a number or (N,).  ``rack``: the
    rack of every node, (N,); ``rack_bandwidth``: bytes/s between the nodes of
    a rack, a number or (R,).  Every parameter is checked; one given without
    the one it belongs to is an error.
    """
    if node is None:
        for name, value in (("node_bandwidth", node_bandwidth), ("rack", rack), ("rack_bandwidth", rack_bandwidth)):
            if value is not None:
                raise InvalidProblemError(
                    f"{name} was given without node: give node (the node of every worker) too, "
                    f"or leave {name} out."
                )
        return None
    nd = _ids(node, "node", K, "node", f"one node id per worker, shape ({K},)")
    N = int(nd.max()) + 1 if K else 0
    nbw = _link_bandwidth(node_bandwidth, "node_bandwidth", N, "node")
    if rack is None:
        if rack_bandwidth is not None:
            raise InvalidProblemError(
                "rack_bandwidth was given without rack: give rack (the rack of every node) too, "
                "or leave rack_bandwidth out."
            )
        return _TopologyInputs(nd, nbw, None, None)
    rk = _ids(rack, "rack", N, "rack", f"one rack id per node, shape ({N},) (node ids 0..{N - 1})")
    R = int(rk.max()) + 1 if N else 0
    rbw = _link_bandwidth(rack_bandwidth, "rack_bandwidth", R, "rack")
    return _TopologyInputs(nd, nbw, rk, rbw)
