"""The placement problem (MODEL.md section 1): inputs, validation, derived quantities."""

import math
import numbers

import numpy as np

from .errors import InvalidProblemError, InvalidProblemTypeError

__all__ = ["Problem"]


def _as_float_array(value, name, shape_text, ndim):
    """Convert ``value`` to a float64 array of ``ndim`` dimensions or raise."""
    if isinstance(value, (str, bytes)):
        raise InvalidProblemTypeError(
            f"{name} must be numbers; got the string {value!r}. Pass {shape_text}."
        )
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidProblemTypeError(
            f"{name} must be numbers; got {type(value).__name__} that numpy cannot "
            f"convert to float ({exc}). Pass {shape_text}."
        ) from None
    if arr.ndim != ndim:
        raise InvalidProblemError(
            f"{name} must be {shape_text}; got an array of shape {arr.shape}."
        )
    return arr


def _check_finite(arr, name, fix):
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        where = idx[0] if len(idx) == 1 else idx
        raise InvalidProblemError(
            f"{name} must be finite; got {float(arr[idx])!r} at index {where}. {fix}"
        )


def _per_job(value, name, n_jobs, *, default=None, positive=True, integer=False):
    """Validate a per-job vector of length ``n_jobs``."""
    if value is None:
        if default is None:
            raise InvalidProblemError(f"{name} is required: pass one value per job ({n_jobs}).")
        value = default
    arr = _as_float_array(value, name, f"one number per job, shape ({n_jobs},)", 1 if np.ndim(value) else 0)
    if arr.ndim == 0:
        arr = np.full(n_jobs, float(arr))
    if arr.shape != (n_jobs,):
        raise InvalidProblemError(
            f"{name} must have one value per job, shape ({n_jobs},); got shape {arr.shape}."
        )
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
        if np.any(arr > 2**53):
            raise InvalidProblemError(f"{name} must be at most 2**53; got {arr.max()!r}.")
    return arr


def _names(value, name, n, prefix):
    if value is None:
        return tuple(f"{prefix}{i}" for i in range(n))
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


def _frozen(arr):
    arr = np.ascontiguousarray(arr)
    arr.setflags(write=False)
    return arr


class Problem:
    """A multi-job placement problem on a heterogeneous cluster (MODEL.md section 1.1).

    Parameters
    ----------
    throughput : array_like of float, shape (S, G)
        Samples/s of job ``i`` on ONE worker of type ``g``; 0 means job ``i``
        cannot run on type ``g``.
    type_counts : array_like of int, shape (G,)
        Number of workers of each type.  Workers are numbered type by type:
        workers ``0 .. type_counts[0]-1`` are of type 0, and so on.
    batch : array_like of int, shape (S,)
        Global batch of each job (samples per iteration), a positive integer.
    iterations : array_like of float, shape (S,)
        Iterations each job still has to run (> 0).
    grad_bytes : array_like of float, shape (S,), optional
        Gradient size exchanged per iteration (bytes, >= 0).  Default 0.
    bandwidth : float, optional
        Network bandwidth per worker link in bytes/s (> 0).  ``inf`` (default)
        switches communication off.
    worker_speed : array_like of float, shape (K,), optional
        Fraction of each worker's nominal speed that is available, in (0, 1].
        Default: all 1 (dedicated workers).
    job_names, type_names : sequence of str, optional
        Labels used in tables and files.

    Attributes
    ----------
    n_jobs, n_types, n_workers : int
        S, G and K = sum(type_counts).
    worker_type : ndarray of int64, shape (K,)
        Type index of every worker.
    worker_throughput : ndarray of float64, shape (S, K)
        ``rho[i, k] = throughput[i, worker_type[k]] * worker_speed[k]``.
    work : ndarray of float64, shape (S,)
        ``w_i = iterations[i] * batch[i]`` (samples still to process).
    comm_time : ndarray of float64, shape (S, K + 1)
        ``comm_time[i, n]``: total communication time of job ``i`` run on ``n``
        workers, ``T_i * 2 (n-1)/n * D_i / r`` (0 for ``n <= 1``).
    max_workers : ndarray of int64, shape (S,)
        Most workers job ``i`` can use: ``min(batch[i], K)``.  Its batch is split
        into whole samples, so a worker beyond ``batch[i]`` would get none and do
        no work; every method keeps ``n_i <= max_workers[i]``.
    size_cost : ndarray of float64, shape (S, K + 1)
        ``comm_time`` with ``+inf`` for sizes ``n > max_workers[i]``: the cost
        table the kernels use, so an unusable size is never chosen.
    uniform_speed : bool
        True when every worker speed is 1, so workers of one type are
        interchangeable (the type DP applies).

    Raises
    ------
    InvalidProblemError, InvalidProblemTypeError
        With a message naming the parameter, the value and the fix.

    Notes
    -----
    Model of K. Liu et al., *Sampling-Based Multi-Job Placement for
    Heterogeneous Deep Learning Clusters*, IEEE TPDS 35(6), 2024.
    Instances are immutable: arrays are read-only.
    """

    def __init__(
        self,
        throughput,
        type_counts,
        batch,
        iterations,
        grad_bytes=None,
        bandwidth=math.inf,
        worker_speed=None,
        job_names=None,
        type_names=None,
    ):
        rho = _as_float_array(
            throughput, "throughput", "a 2-D array of shape (n_jobs, n_types)", 2
        )
        S, G = rho.shape
        if S == 0 or G == 0:
            raise InvalidProblemError(
                f"throughput must have at least one job and one type; got shape {rho.shape}."
            )
        _check_finite(rho, "throughput", "Use 0 for a type a job cannot run on.")
        if (rho < 0).any():
            i, g = (int(v) for v in np.argwhere(rho < 0)[0])
            raise InvalidProblemError(
                f"throughput must be >= 0; got {float(rho[i, g])!r} for job {i} on type {g}. "
                "Use 0 for a type a job cannot run on."
            )

        counts = _as_float_array(type_counts, "type_counts", f"one count per type, shape ({G},)", 1)
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
        counts = counts.astype(np.int64)
        K = int(counts.sum())
        if K == 0:
            raise InvalidProblemError(
                f"type_counts must give at least one worker; got {counts.tolist()} (zero workers)."
            )
        if K > 1_000_000:
            raise InvalidProblemError(f"type_counts gives {K} workers; at most 1,000,000 are supported.")
        if S > K:
            raise InvalidProblemError(
                f"a placement gives every job at least one worker, so n_jobs <= n_workers; "
                f"got {S} jobs (rows of throughput) for {K} workers (sum of type_counts). "
                "Add workers or place the jobs in several rounds."
            )

        usable = rho[:, counts > 0] > 0
        stranded = np.flatnonzero(~usable.any(axis=1))
        if stranded.size:
            i = int(stranded[0])
            raise InvalidProblemError(
                f"job {i} can run on no type present in the cluster: throughput[{i}] = "
                f"{rho[i].tolist()} with type_counts = {counts.tolist()}. Give it a positive "
                "throughput on a type that has workers, or remove the job."
            )

        batch_arr = _per_job(batch, "batch", S, integer=True)
        iters = _per_job(iterations, "iterations", S)
        grad = _per_job(grad_bytes, "grad_bytes", S, default=0.0, positive=False)

        if isinstance(bandwidth, (str, bytes)) or not isinstance(bandwidth, numbers.Real):
            raise InvalidProblemTypeError(
                f"bandwidth must be a number of bytes/s (or math.inf for no communication); "
                f"got {bandwidth!r}."
            )
        bandwidth = float(bandwidth)
        if not bandwidth > 0:
            raise InvalidProblemError(
                f"bandwidth must be > 0 bytes/s (math.inf switches communication off); got {bandwidth!r}."
            )

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

        self.throughput = _frozen(rho)
        self.type_counts = _frozen(counts)
        self.batch = _frozen(batch_arr)
        self.iterations = _frozen(iters)
        self.grad_bytes = _frozen(grad)
        self.bandwidth = bandwidth
        self.worker_speed = _frozen(speed)
        self.job_names = _names(job_names, "job_names", S, "job")
        self.type_names = _names(type_names, "type_names", G, "type")

        self.n_jobs, self.n_types, self.n_workers = S, G, K
        self.worker_type = _frozen(np.repeat(np.arange(G, dtype=np.int64), counts))
        self.worker_throughput = _frozen(rho[:, self.worker_type] * speed[None, :])
        self.work = _frozen(iters * batch_arr)
        self.uniform_speed = bool(np.all(speed == 1.0))
        n = np.arange(K + 1, dtype=np.float64)
        frac = np.zeros(K + 1)
        frac[2:] = 2.0 * (n[2:] - 1.0) / n[2:]
        if math.isinf(bandwidth):
            comm = np.zeros((S, K + 1))
        else:
            comm = (iters * grad / bandwidth)[:, None] * frac[None, :]
        self.comm_time = _frozen(comm)
        self.has_communication = bool(np.any(comm > 0))
        # A worker whose share of the batch rounds to no sample does no work, so a
        # job can use at most ``batch`` workers: sizes above that are infeasible.
        self.max_workers = _frozen(np.minimum(batch_arr, K).astype(np.int64))
        cost = comm.copy()
        over = n[None, :] > self.max_workers[:, None]
        cost[over] = math.inf
        self.size_cost = _frozen(cost)
        self._check_coverable()
        self._jct_alone = None

    # ------------------------------------------------------------------ checks
    def _check_coverable(self):
        """Raise when no placement can give every job one worker (Hall's condition)."""
        S = self.n_jobs
        cap = self.type_counts.copy()
        can = self.throughput > 0
        owner = [[] for _ in range(self.n_types)]  # jobs currently holding a slot of type g

        def augment(i, seen):
            for g in np.flatnonzero(can[i]):
                if seen[g]:
                    continue
                seen[g] = True
                if len(owner[g]) < cap[g]:
                    owner[g].append(i)
                    return True
                for j in list(owner[g]):
                    if augment(j, seen):
                        owner[g].remove(j)
                        owner[g].append(i)
                        return True
            return False

        for i in range(S):
            if not augment(i, np.zeros(self.n_types, dtype=bool)):
                raise InvalidProblemError(
                    f"no placement gives every job a worker: job {i} (and the jobs before it) "
                    f"need more workers of the types they can run on than type_counts = "
                    f"{self.type_counts.tolist()} provides. Add workers of those types or remove jobs."
                )

    # ------------------------------------------------------------- quantities
    @property
    def jct_alone(self):
        """ndarray (S,): each job's best JCT with the whole cluster to itself (MODEL.md 1.3)."""
        if self._jct_alone is None:
            out = np.empty(self.n_jobs)
            for i in range(self.n_jobs):
                r = np.sort(self.worker_throughput[i])[::-1]
                r = r[r > 0]
                X = np.cumsum(r)
                n = np.arange(1, r.size + 1)
                jct = self.work[i] / X + self.size_cost[i, n]
                out[i] = jct.min()
            self._jct_alone = _frozen(out)
        return self._jct_alone

    def job_jct(self, job, throughput_sum, n_workers):
        """JCT of ``job`` given its aggregate throughput and number of workers."""
        return self.work[job] / throughput_sum + self.comm_time[job, n_workers]

    def with_worker_speed(self, worker_speed):
        """A copy of this problem with other per-worker speeds."""
        return Problem(
            self.throughput, self.type_counts, self.batch, self.iterations, self.grad_bytes,
            self.bandwidth, worker_speed, self.job_names, self.type_names,
        )

    def to_dict(self):
        """Plain-Python description (JSON-serialisable)."""
        return {
            "throughput": self.throughput.tolist(),
            "type_counts": self.type_counts.tolist(),
            "batch": self.batch.tolist(),
            "iterations": self.iterations.tolist(),
            "grad_bytes": self.grad_bytes.tolist(),
            "bandwidth": self.bandwidth if math.isfinite(self.bandwidth) else "inf",
            "worker_speed": None if self.uniform_speed else self.worker_speed.tolist(),
            "job_names": list(self.job_names),
            "type_names": list(self.type_names),
        }

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`."""
        data = dict(data)
        if data.get("bandwidth") == "inf":
            data["bandwidth"] = math.inf
        return cls(**data)

    def __repr__(self):
        comm = "off" if not self.has_communication else f"{self.bandwidth:.3g} B/s"
        speeds = "uniform" if self.uniform_speed else "per-worker"
        return (
            f"Problem(n_jobs={self.n_jobs}, n_types={self.n_types}, n_workers={self.n_workers}, "
            f"type_counts={self.type_counts.tolist()}, communication={comm}, speeds={speeds})"
        )
