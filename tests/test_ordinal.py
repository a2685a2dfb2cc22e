"""The ordinal kernel of deferred_acceptance (hetplace/_core/_ordinal.py), one source on three backends.

* against a textbook job-proposing Gale-Shapley written here (a queue of
  jobs, full preference lists), on seeded instances with integer values and
  integer worker ranks, so that exact ties are everywhere: the same matching,
  the same number of proposals, the same status;
* the kernel's paths: one bucket of equal values, values crowded into one
  bucket by an outlier (the heap sort), ranges too narrow or too wide to
  spread, negative values, rows with nothing acceptable;
* the three backends bit for bit, on dirty output arrays;
* the default worker ranks are the ones deferred_acceptance always computed
  (NumPy's row sums): an instance where the summation order decides a tie;
* the no-copy path for clean float64 input changes nothing;
* against the ``matching`` library's hospital-resident solver when it is
  installed (not a test extra: skipped otherwise).
"""

import math

import numpy as np
import pytest

from hetplace.matching import deferred_acceptance, is_stable
from hetplace._core._registry import BACKENDS, kernels, unavailable

AVAILABLE = [b for b in BACKENDS if unavailable(b) is None]
COMPILED = [b for b in AVAILABLE if b != "python"]


# ----------------------------------------------------------------------------
# The textbook algorithm, and the default worker rank as it always was
# ----------------------------------------------------------------------------


def textbook_gale_shapley(values, capacities, worker_rank, acceptable):
    """Job-proposing deferred acceptance: returns (job of every worker, proposals, every job filled).

    Jobs with a free slot wait in a first-in first-out queue (the kernel uses
    a stack: the result and the proposals do not depend on the order).  Job i
    ranks its acceptable workers by value, ties to the lower worker index;
    worker k ranks jobs by ``worker_rank[i][k]``, ties to the lower job index.
    """
    v = np.asarray(values, dtype=float).tolist()
    rank = np.asarray(worker_rank, dtype=float).tolist()
    S, K = len(v), len(v[0])
    prefs = [sorted((k for k in range(K) if acceptable[i][k]), key=lambda k: (-v[i][k], k)) for i in range(S)]
    nxt = [0] * S
    held = [0] * S
    holder = [-1] * K
    queue = [i for i in range(S) if capacities[i] > 0]
    proposals = 0
    while queue:
        i = queue.pop(0)
        while held[i] < capacities[i] and nxt[i] < len(prefs[i]):
            k = prefs[i][nxt[i]]
            nxt[i] += 1
            proposals += 1
            cur = holder[k]
            if cur < 0 or (rank[i][k], -i) > (rank[cur][k], -cur):
                if cur >= 0:
                    held[cur] -= 1
                    if cur not in queue:
                        queue.append(cur)
                holder[k] = i
                held[i] += 1
    return holder, proposals, all(held[i] == capacities[i] for i in range(S))


def default_rank_as_before(values, allowed=None):
    """deferred_acceptance's default worker ranks, computed as the package always did.

    ``values[i, k] / mean_i`` with ``mean_i`` NumPy's sum of job i's allowed
    values (``where(mask, v, 0).sum(axis=1)``, pairwise summation along a
    C-ordered row) over their count, 1 when that mean is <= 0.
    """
    v = np.array(values, dtype=np.float64)
    mask = np.isfinite(v) if allowed is None else np.array(allowed, dtype=bool)
    vz = np.where(mask, v, 0.0)
    n = mask.sum(axis=1)
    mean = np.divide(vz.sum(axis=1), n, out=np.zeros(v.shape[0]), where=n > 0)
    return vz / np.where(mean > 0, mean, 1.0)[:, None]


def tied_market(seed, max_jobs=8, max_workers=60):
    """Integer values (exact ties everywhere), forbidden pairs, capacities with zeros, maybe a worker rank."""
    rng = np.random.default_rng([seed, 1962])
    S = int(rng.integers(1, max_jobs + 1))
    K = int(rng.integers(1, max_workers + 1))
    top = int(rng.choice([1, 3, 10, 1000]))
    values = rng.integers(-top if seed % 5 == 0 else 0, top + 1, (S, K)).astype(float)
    if seed % 3:
        values[rng.random((S, K)) < rng.uniform(0.0, 0.5)] = -np.inf
    caps = rng.multinomial(int(rng.integers(0, K + 1)), np.ones(S) / S).astype(np.int64)
    rank = rng.integers(0, int(rng.choice([2, 4, 100])), (S, K)).astype(float) if seed % 2 else None
    return values, caps, rank


def _kernel_run(backend, vals, rank, div, caps, dirty=True):
    """The registry kernel on fresh (or dirty) output arrays: (worker_job, stats, status)."""
    K = vals.shape[1]
    wj = np.full(K, 99, dtype=np.int64) if dirty else np.empty(K, dtype=np.int64)
    stats = np.full(2, -5, dtype=np.int64)
    status = kernels(backend).ordinal_match(vals, -math.inf, rank, div, caps, wj, stats)
    return wj.tolist(), stats.tolist(), int(status)


# ----------------------------------------------------------------------------
# (1) the textbook algorithm, with ties
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", AVAILABLE)
def test_ordinal_matches_textbook_with_ties(backend):
    n_seeds = 150 if backend == "python" else 400
    unfilled = 0
    for seed in range(n_seeds):
        values, caps, rank = tied_market(seed)
        acceptable = np.isfinite(values)
        res = deferred_acceptance(values, caps, form="ordinal", worker_rank=rank, backend=backend)
        used = default_rank_as_before(values) if rank is None else np.where(acceptable, rank, 0.0)
        wj, proposals, filled = textbook_gale_shapley(values, caps, used, acceptable)
        assert res.worker_job.tolist() == wj, seed
        assert res.bids == proposals and res.rounds == 1, seed
        assert res.success == filled and res.status == ("optimal" if filled else "infeasible"), seed
        assert res.welfare == sum(values[wj[k], k] for k in range(len(wj)) if wj[k] >= 0), seed
        assert is_stable(values, caps, res.worker_job, worker_rank=rank), seed
        unfilled += not filled
    assert unfilled > 10  # the instances do leave jobs short


@pytest.mark.parametrize("backend", AVAILABLE)
def test_ordinal_matches_textbook_with_an_allowed_mask(backend):
    for seed in range(60):
        rng = np.random.default_rng([seed, 7])
        S, K = int(rng.integers(1, 6)), int(rng.integers(1, 40))
        values = rng.integers(0, 4, (S, K)).astype(float)
        allowed = rng.random((S, K)) < 0.7
        values[~allowed & (rng.random((S, K)) < 0.5)] = np.nan  # ignored where not allowed
        caps = rng.multinomial(int(rng.integers(0, K + 1)), np.ones(S) / S)
        res = deferred_acceptance(values, caps, form="ordinal", allowed=allowed, backend=backend)
        wj, proposals, filled = textbook_gale_shapley(values, caps, default_rank_as_before(values, allowed), allowed)
        assert (res.worker_job.tolist(), res.bids, res.success) == (wj, proposals, filled), seed


@pytest.mark.parametrize("backend", COMPILED)
def test_ordinal_matches_textbook_on_larger_markets(backend):
    """K up to 3,000: long lists, many buckets, buckets of many workers."""
    for seed in range(12):
        rng = np.random.default_rng([seed, 11])
        S, K = int(rng.integers(2, 40)), int(rng.integers(200, 3000))
        if seed % 3 == 0:
            values = rng.integers(0, 50, (S, K)).astype(float)
        elif seed % 3 == 1:
            values = rng.uniform(50, 500, (S, 3))[:, np.sort(rng.integers(0, 3, K))] * rng.uniform(0.5, 1, K)
        else:
            values = rng.exponential(1.0, (S, K)) ** 3  # skewed: a few buckets hold most workers
        values[rng.random((S, K)) < 0.1] = -np.inf
        caps = rng.multinomial(int(rng.integers(S, K + 1)), np.ones(S) / S)
        res = deferred_acceptance(values, caps, form="ordinal", backend=backend)
        acceptable = np.isfinite(values)
        wj, proposals, filled = textbook_gale_shapley(values, caps, default_rank_as_before(values), acceptable)
        assert (res.worker_job.tolist(), res.bids, res.success) == (wj, proposals, filled), seed


def _edge_rows(K, rng):
    """Rows that take the kernel's special paths, one per job."""
    rows = [
        np.full(K, 2.5),                                   # one value: one bucket, already in order
        np.r_[1e6, rng.random(K - 1)],                     # an outlier: the rest share a bucket (heap sort)
        np.r_[rng.random(K - 1), -1e6],                    # the same below
        1.0 + rng.integers(0, 3, K) * 2.0 ** -52,          # a range too narrow to spread at this K
        rng.integers(-3, 4, K) * 1e-310,                   # subnormal values with ties
        np.where(rng.random(K) < 0.5, 1e150, -1e150),      # the widest accepted range
        np.full(K, -np.inf),                               # nothing acceptable
        -rng.random(K),                                    # negative values
    ]
    return np.array(rows)


@pytest.mark.parametrize("backend", AVAILABLE)
@pytest.mark.parametrize("K", [1, 2, 17, 40, 300])
def test_ordinal_kernel_edge_rows(backend, K):
    if backend == "python" and K > 40:
        pytest.skip("pure Python: seconds per call")
    rng = np.random.default_rng(K)
    values = _edge_rows(K, rng)
    S = values.shape[0]
    acceptable = np.isfinite(values)
    for trial in range(6):
        caps = rng.multinomial(int(rng.integers(0, K + 1)), np.ones(S) / S).astype(np.int64)
        rank = rng.integers(0, 3, (S, K)).astype(float) if trial % 2 else None
        res = deferred_acceptance(values, caps, form="ordinal", worker_rank=rank, backend=backend)
        used = default_rank_as_before(values) if rank is None else np.where(acceptable, rank, 0.0)
        wj, proposals, filled = textbook_gale_shapley(values, caps, used, acceptable)
        assert (res.worker_job.tolist(), res.bids, res.success) == (wj, proposals, filled), trial


@pytest.mark.parametrize("backend", AVAILABLE)
def test_ordinal_kernel_values_beyond_float_range(backend):
    """The kernel on its own: values 1e308 apart (their range overflows to inf) share one bucket."""
    K = 30
    rng = np.random.default_rng(3)
    vals = np.vstack([np.where(rng.random(K) < 0.5, 1e308, -1e308) * rng.random(K), rng.random(K)])
    caps = np.array([10, 12], dtype=np.int64)
    wj, stats, status = _kernel_run(backend, vals, vals, np.ones(2), caps)
    ref_wj, proposals, filled = textbook_gale_shapley(vals, caps, vals, np.isfinite(vals))
    assert (wj, stats, status) == (ref_wj, [1, proposals], 0 if filled else 1)


# ----------------------------------------------------------------------------
# (2) three backends, bit for bit
# ----------------------------------------------------------------------------


def test_ordinal_backends_bit_identical():
    for seed in range(120):
        rng = np.random.default_rng([seed, 3])
        S, K = int(rng.integers(1, 9)), int(rng.integers(1, 50))
        vals = rng.random((S, K)) * 10.0 ** rng.integers(-5, 5) if seed % 2 else \
            rng.integers(0, 5, (S, K)).astype(float)
        vals[rng.random((S, K)) < 0.2] = -np.inf
        caps = rng.multinomial(int(rng.integers(0, K + 1)), np.ones(S) / S).astype(np.int64)
        if seed % 3:
            rank, div = vals, rng.random(S) + 0.5  # the default form: values over a divisor per job
        else:
            rank, div = rng.integers(0, 3, (S, K)).astype(float), np.ones(S)
        runs = {b: _kernel_run(b, vals, rank, div, caps, dirty=seed % 2 == 0) for b in AVAILABLE}
        first = runs[AVAILABLE[0]]
        assert all(r == first for r in runs.values()), (seed, runs)
        res = {b: deferred_acceptance(vals, caps, form="ordinal", backend=b) for b in AVAILABLE}
        prints = {b: (r.worker_job.tobytes(), r.bids, r.status, np.float64(r.welfare).tobytes())
                  for b, r in res.items()}
        assert len(set(prints.values())) == 1, seed


def test_ordinal_kernel_writes_every_output():
    """Outputs are written whatever they held, and a second call on the same arrays repeats the first."""
    values, caps, rank = tied_market(4)
    vals = np.ascontiguousarray(values)
    for b in AVAILABLE:
        first = _kernel_run(b, vals, vals, np.ones(vals.shape[0]), caps, dirty=True)
        again = _kernel_run(b, vals, vals, np.ones(vals.shape[0]), caps, dirty=False)
        assert first == again, b


# ----------------------------------------------------------------------------
# (3) the default worker ranks are unchanged
# ----------------------------------------------------------------------------


def _sequential_rank(values):
    """The same ranks with each mean summed left to right (NOT what deferred_acceptance does)."""
    v = np.asarray(values, dtype=float)
    out = np.zeros(v.shape)
    for i in range(v.shape[0]):
        total = 0.0
        for x in v[i].tolist():
            total += x
        out[i] = v[i] / (total / v.shape[1])
    return out


def test_default_rank_keeps_numpy_summation_order():
    """Two jobs with the same values in another order, and a worker both rank first.

    Their means are equal as real numbers, so the worker's tie between them is
    decided by the last bit of two float sums: NumPy's row sums (the package's
    ranks so far) and left-to-right sums disagree on the instances used here.
    deferred_acceptance must keep NumPy's.
    """
    checked = layouts_differ = 0
    for seed in range(400):
        rng = np.random.default_rng(seed)
        K = int(rng.integers(9, 40))
        a = rng.random(K) * 10.0 ** rng.uniform(-3, 3, K)
        values = np.vstack([a, rng.permutation(a)])
        values = np.hstack([values, np.full((2, 1), values.max() + 1.0)])  # both jobs' favourite
        caps = [1, 1]
        acceptable = np.isfinite(values)
        ours = textbook_gale_shapley(values, caps, default_rank_as_before(values), acceptable)[0]
        other = textbook_gale_shapley(values, caps, _sequential_rank(values), acceptable)[0]
        if ours == other:
            continue
        # a Fortran-ordered input sums its rows in another order again (NumPy reduces across
        # the columns): its ranks, too, are the ones it always had
        fortran = np.asfortranarray(values)
        ours_f = textbook_gale_shapley(values, caps, default_rank_as_before(fortran), acceptable)[0]
        for b in AVAILABLE:
            assert deferred_acceptance(values, caps, form="ordinal", backend=b).worker_job.tolist() == ours, (seed, b)
            assert deferred_acceptance(fortran, caps, form="ordinal", backend=b).worker_job.tolist() == ours_f, (seed, b)
        checked += 1
        layouts_differ += ours_f != ours
    assert checked >= 5  # the instances do tell the two summation orders apart
    assert layouts_differ >= 1


@pytest.mark.parametrize("layout", ["C", "F", "list", "float32", "noncontiguous"])
def test_default_rank_on_every_input_layout(layout):
    """The result follows the ranks of the input as validated (a float64 copy keeps its layout)."""
    rng = np.random.default_rng(5)
    base = rng.random((6, 300)) * 10.0 ** rng.uniform(-2, 2, (6, 300))
    base[rng.random(base.shape) < 0.1] = -np.inf
    caps = np.array([40, 50, 30, 60, 20, 50])
    values = {"C": base, "F": np.asfortranarray(base), "list": base.tolist(),
              "float32": base.astype(np.float32), "noncontiguous": np.repeat(base, 2, axis=1)[:, ::2]}[layout]
    v = np.array(values, dtype=np.float64)
    acceptable = np.isfinite(v)
    wj, proposals, _ = textbook_gale_shapley(v, caps, default_rank_as_before(v), acceptable)
    for b in COMPILED:
        res = deferred_acceptance(values, caps, form="ordinal", backend=b)
        assert (res.worker_job.tolist(), res.bids) == (wj, proposals), b


# ----------------------------------------------------------------------------
# (4) the no-copy path of clean input
# ----------------------------------------------------------------------------


def test_clean_input_is_used_without_copy_and_left_unchanged():
    rng = np.random.default_rng(9)
    values = rng.integers(0, 5, (5, 80)).astype(float)
    values[rng.random(values.shape) < 0.2] = -np.inf
    caps = np.array([10, 10, 10, 10, 10])
    before = values.copy()
    readonly = values.copy()
    readonly.setflags(write=False)
    for b in AVAILABLE:
        r1 = deferred_acceptance(values, caps, form="ordinal", backend=b)
        r2 = deferred_acceptance(readonly, caps, form="ordinal", backend=b)
        r3 = deferred_acceptance(values.tolist(), caps, form="ordinal", backend=b)  # the copying path
        assert r1.worker_job.tolist() == r2.worker_job.tolist() == r3.worker_job.tolist(), b
        assert r1.bids == r2.bids == r3.bids
    assert np.array_equal(values, before)


@pytest.mark.parametrize("bad, match", [
    (np.nan, r"values must not contain NaN; got NaN for job 1, worker 2"),
    (np.inf, r"values must be finite or -inf \(forbidden pair\); got \+inf for job 1, worker 2"),
    (1e151, r"values must be at most 1e\+150 in magnitude; got 1e\+151 for job 1, worker 2"),
    (-1e151, r"values must be at most 1e\+150 in magnitude; got -1e\+151 for job 1, worker 2"),
])
def test_clean_path_still_rejects_bad_values(bad, match):
    from hetplace.errors import InvalidProblemError

    values = np.zeros((3, 4))
    values[0, 0] = -np.inf
    values[1, 2] = bad
    with pytest.raises(InvalidProblemError, match=match):
        deferred_acceptance(values, [1, 1, 1], form="ordinal")


# ----------------------------------------------------------------------------
# (5) the same matching as the `matching` library
# ----------------------------------------------------------------------------


def test_ordinal_agrees_with_the_matching_library():
    games = pytest.importorskip("matching.games")
    compared = 0
    for seed in range(25):
        values, caps, rank = tied_market(seed, max_jobs=6, max_workers=40)
        S, K = values.shape
        acceptable = np.isfinite(values)
        used = default_rank_as_before(values) if rank is None else np.where(acceptable, rank, 0.0)
        # jobs of capacity 0 left out: the library (1.4) still fills a hospital of capacity 0
        open_ = acceptable & (caps > 0)[:, None]
        hospitals = {i: sorted(np.flatnonzero(open_[i]).tolist(), key=lambda k: (-values[i, k], k))
                     for i in range(S)}
        residents = {k: sorted(np.flatnonzero(open_[:, k]).tolist(), key=lambda i: (-used[i, k], i))
                     for k in range(K)}
        # the library wants every resident and hospital to rank someone
        residents = {k: p for k, p in residents.items() if p}
        hospitals = {i: [k for k in p if k in residents] for i, p in hospitals.items() if p}
        if not hospitals or not residents:
            continue
        game = games.HospitalResident.create_from_dictionaries(
            residents, hospitals, {i: int(caps[i]) for i in hospitals})
        lib = np.full(K, -1)
        for hospital, members in game.solve(optimal="hospital").items():
            for resident in members:
                lib[resident.name] = hospital.name
        for b in AVAILABLE:
            res = deferred_acceptance(values, caps, form="ordinal", worker_rank=rank, backend=b)
            assert res.worker_job.tolist() == lib.tolist(), (seed, b)
        compared += 1
    assert compared >= 20
