"""The goodput world (docs/online.md §10): Pollux's and Sia's progress model, read from a checkout of Sia's artifact.

In Gavel's world (:class:`~hetplace.online.ProgressModel`) a job is a number of steps at a fixed
batch size and a GPU type's table figure says how fast they run.  In the world that Pollux (OSDI'21)
and Sia (SOSP'23) are evaluated in, a job is a number of *epochs* of a model, each job picks its
batch size for every allocation, and what counts is **goodput**: throughput times the statistical
efficiency of the batch size.  This module is that progress model, built from per-model profiles in
the formats of Sia's artifact (github.com/siasosp23/artifacts, folder ``sia-simulator/``):

- ``traces/<app>/placements-<suffix>.csv``: columns ``placement, local_bsz, step_time, sync_time``
  (any order).  ``placement`` is one digit per node, the replicas (GPUs) the job has there
  (``"4"``: 4 GPUs on one node, ``"22"``: 2 + 2 on two nodes); ``step_time`` is the seconds of one
  optimiser step at per-GPU batch ``local_bsz``, ``sync_time`` the part of it spent synchronising
  gradients.
- ``traces/<app>/scalability-<suffix>.csv``: columns ``num_nodes, num_replicas, local_bsz,
  step_time, sync_time``: the same measure for larger jobs, by node and replica count.
- ``traces/<app>/validation-<batch>.csv``: one row per epoch of a training run at total batch
  ``<batch>``: columns ``progress, iteration, metric, grad_sqr, grad_var``.  ``progress`` is the
  cumulative statistical progress at the end of the epoch, in steps at the smallest validated batch;
  ``grad_sqr`` and ``grad_var`` are the squared norm of the gradient and the trace of its covariance
  measured during that epoch (Pollux's gradient statistics).

``<suffix>`` names a GPU type as Sia's artifact does (``aws``: an AWS g4dn.12xlarge, 4 NVIDIA T4 per
node; ``rtx``: 8 RTX 2080Ti per node; ``dgx-ext``: a DGX A100, 8 A100 per node).  Sia's artifact has
no licence: hetplace ships none of its files and reads a checkout the user names.

The model, for job ``j`` of application ``a`` on GPU type ``g`` with placement ``p`` (replicas per
node, ``R = sum(p)`` GPUs on ``N = len(p)`` nodes), in epoch ``e``, at per-GPU batch ``b`` with
``s`` gradient-accumulation steps (total batch ``M = R b (s + 1)``):

- step time ``T(p, b)``, sync part ``S(p, b)``: the profile rows of ``p`` (its rotations are the same
  placement) interpolated linearly in ``b``; a placement without rows: linear interpolation over the
  Delaunay triangulation of ``(N, R, b)`` of every profiled point (row means per point), ``N``
  capped at 16, as Sia's simulator does; outside the profiled hull the placement cannot run;
- one iteration takes ``T + s (T - S)`` seconds (accumulation steps skip the synchronisation);
- statistical gain ``G = (v + q) / (v / m + q)`` with ``m = M / M0`` (``M0`` the smallest validated
  batch) and ``q, v`` = ``grad_sqr, grad_var`` of epoch ``e`` interpolated linearly in ``M`` between
  the validated batches (Pollux's efficiency ``G / m``);
- progress per second ``G / (T + s (T - S)) / c_a``, ``c_a`` the application's calibration slowdown
  (:data:`SIA_SLOWDOWN`: Sia's simulator slows every application by a factor fitted to its real
  runs);
- the job finishes when its progress reaches the end of its last epoch; the epochs are the rows of
  the validation files (their fewest), epoch ``e`` ending at the smallest ``progress`` any file
  reports for it.

The job's executor chooses ``(b, s)`` for every (placement, epoch) to maximise that progress rate:
Pollux's candidate grid (50 total batches spaced geometrically from ``max(M0, R b_min)`` to the
largest validated batch, the fewest accumulation steps that keep ``b`` within the placement's
memory limit), each candidate priced with the true model.  This is the adaptive executor Sia and
Pollux assume, with one difference stated in docs/online.md §10: Sia's simulated executor ranks the
candidates with Pollux's performance model fitted to what the job has run on so far; ours knows its
step times.
"""

import csv
import math
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._blas import single_blas_thread
from .._validation import is_real_scalar
from ..errors import InvalidOptionError, InvalidProblemError, MissingDependencyError

__all__ = ["AppProfile", "GoodputModel", "GoodputJob", "read_sia_workload", "sia_workloads", "SIA_APPS",
           "SIA_TYPES", "SIA_CLUSTER", "SIA_RESTART_S_APPS", "SIA_SLOWDOWN", "SIA_TRACE_SETS", "POLLUX_MODEL",
           "POLLUX_CLUSTER"]

#: Applications of Sia's artifact that this model covers (``gpt_pmp``, pipeline-parallel, is not).
SIA_APPS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
#: hetplace's GPU type name -> the profile suffix of Sia's artifact (docs/online.md §10).
SIA_TYPES = {"t4": "aws", "a100": "dgx-ext", "rtx2080ti": "rtx"}
#: Sia's heterogeneous cluster (its Table 3): ``{gpu_type: (nodes, GPUs per node)}``, in the order of
#: Sia's simulator (which breaks some ties by it).
SIA_CLUSTER = {"t4": (6, 4), "a100": (2, 8), "rtx2080ti": (3, 8)}
#: Checkpoint-restore seconds per application, charged at every allocation change, first start
#: included: the delays Sia's simulator charges (``applications.py`` of Sia's artifact, measured by
#: Sia's authors); any other application 30 s.
SIA_RESTART_S_APPS = {"imagenet": 250.0, "bert": 120.0, "yolov3": 80.0, "cifar10": 50.0, "deepspeech2": 25.0,
                      "ncf": 15.0, "default": 30.0}
#: Calibration slowdown per application: Sia's simulator divides every job's goodput by it, a factor
#: its authors fitted to their real runs (``simulator_config.py`` of Sia's artifact).
SIA_SLOWDOWN = {"cifar10": 1.8, "imagenet": 1.2, "yolov3": 1.2, "bert": 1.2, "deepspeech2": 1.2, "ncf": 1.5}
#: Trace sets of Sia's Table 3 -> the workload folder in the artifact (``"helios"`` is ``saturn``);
#: ``"pollux"``: the eight workloads of Pollux's own artifact (``simulator/workloads``).
SIA_TRACE_SETS = {"philly": "philly", "helios": "saturn", "newtrace": "newtrace", "pollux": ""}
#: :meth:`GoodputModel.from_sia` options for Pollux's own artifact: its simulator's settings (one GPU
#: type, T4, profiled in ``placements.csv``; 30 s restarts; no calibration; yolov3's per-GPU batch
#: capped at 8).  Its cluster is :data:`POLLUX_CLUSTER`.
POLLUX_MODEL = {"types": {"t4": ""}, "slowdown": {}, "restart": {"default": 30.0}, "max_local": {"yolov3": 8}}
#: Pollux's simulated cluster: 16 nodes of 4 T4.
POLLUX_CLUSTER = {"t4": (16, 4)}
#: Total batches the executor tries per (placement, epoch): Pollux's grid.
BATCH_CANDIDATES = 50
#: Node counts above this are interpolated as this many (Sia's simulator does the same).
MAX_INTERP_NODES = 16
_EPS = 1e-8


def _canon(placement):
    """A placement as the tuple Sia's profiles key it by: zeros dropped, the smallest rotation."""
    p = tuple(int(x) for x in placement if int(x) > 0)
    if not p:
        return p
    return min(p[i:] + p[:i] for i in range(len(p)))


def _placement_iv(placement, name="placement"):
    if isinstance(placement, (str, bytes)) or not hasattr(placement, "__iter__"):
        raise InvalidOptionError(f"{name} must be a sequence of GPUs per node, e.g. (4, 4); got {placement!r}.")
    out = []
    for x in placement:
        if isinstance(x, (bool, np.bool_)) or not is_real_scalar(x) or float(x) != int(x) or not 0 <= int(x) <= 1024:
            raise InvalidOptionError(
                f"{name} must hold whole numbers of GPUs per node in [0, 1024]; got {placement!r}.")
        out.append(int(x))
    if not any(out):
        raise InvalidOptionError(f"{name} must hold at least one GPU; got {placement!r}.")
    return _canon(out)


def _read_csv(path, columns, what):
    """Rows of ``path`` as float columns ``{name: array}``; every error names the file and what is expected."""
    path = Path(path)
    if not path.is_file():
        raise InvalidProblemError(f"{path}: no such file; expected {what} with columns {', '.join(columns)}.")
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise InvalidProblemError(f"{path}: empty file; expected {what} with columns {', '.join(columns)}.")
        header = [h.strip() for h in header]
        missing = [c for c in columns if c not in header]
        if missing:
            raise InvalidProblemError(
                f"{path}: missing column(s) {', '.join(missing)}; expected {what} with columns "
                f"{', '.join(columns)} (found {', '.join(header)}).")
        idx = [header.index(c) for c in columns]
        rows = []
        for lineno, row in enumerate(reader, 2):
            if not row or not any(x.strip() for x in row):
                continue
            try:
                vals = [float(row[i]) for i in idx]
            except (ValueError, IndexError):
                raise InvalidProblemError(
                    f"{path}, line {lineno}: expected numbers in columns {', '.join(columns)}; got {row!r}."
                ) from None
            if not all(math.isfinite(v) for v in vals):
                raise InvalidProblemError(f"{path}, line {lineno}: a value is not finite: {row!r}.")
            rows.append(vals)
    if not rows:
        raise InvalidProblemError(f"{path}: no data rows; expected {what}.")
    arr = np.asarray(rows, dtype=np.float64)
    return {c: arr[:, k] for k, c in enumerate(columns)}


def _check(cond, path, message):
    bad = np.flatnonzero(~cond)
    if bad.size:
        raise InvalidProblemError(f"{path}: data row {int(bad[0]) + 1}: {message}.")


def _profile_rows(cols, path):
    b, t, s = cols["local_bsz"], cols["step_time"], cols["sync_time"]
    _check((b >= 1) & (b == np.round(b)), path, "local_bsz must be a whole number >= 1")
    _check(t > 0, path, "step_time must be > 0 seconds")
    _check((s >= 0) & (s <= t), path, "sync_time must be in [0, step_time]")


@dataclass(frozen=True)
class GoodputJob:
    """A job of a Sia-format workload.

    Attributes
    ----------
    job_id : int
        Its row in the workload (0, 1, ...).
    name : str
    arrival : float
        Submission time in seconds.
    app : str
        Application (``cifar10``, ``imagenet``, ...).
    num_replicas : int
        GPUs the trace's user asked for (what Gavel and rigid policies use).
    batch_size : int
        Total batch the trace's user asked for (likewise).
    """

    job_id: int
    name: str
    arrival: float
    app: str
    num_replicas: int
    batch_size: int


def read_sia_workload(path):
    """Jobs of a Sia-format workload CSV (columns ``name, time, application, num_replicas, batch_size``).

    Parameters
    ----------
    path : str or path-like
        E.g. ``<artifact>/sia-simulator/workloads/philly/workload-1.csv``.

    Returns
    -------
    tuple of GoodputJob
        By arrival (ties in file order); ``job_id`` is the row in the file.

    Raises
    ------
    InvalidProblemError
        A missing file or column, a time that is not a number >= 0, a count or batch that is
        not a whole number >= 1; the message names the file and the line.
    """
    path = Path(os.fspath(path))
    need = ("name", "time", "application", "num_replicas", "batch_size")
    if not path.is_file():
        raise InvalidProblemError(f"{path}: no such file; expected a workload CSV with columns {', '.join(need)}.")
    jobs = []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = [h.strip() for h in (reader.fieldnames or [])]
        missing = [c for c in need if c not in header]
        if missing:
            raise InvalidProblemError(
                f"{path}: missing column(s) {', '.join(missing)}; expected a workload CSV with columns "
                f"{', '.join(need)}.")
        reader.fieldnames = header
        for lineno, row in enumerate(reader, 2):
            try:
                t = float(row["time"])
                n, bsz = float(row["num_replicas"]), float(row["batch_size"])
            except (TypeError, ValueError):
                raise InvalidProblemError(
                    f"{path}, line {lineno}: time, num_replicas and batch_size must be numbers; got {dict(row)!r}."
                ) from None
            if not (math.isfinite(t) and t >= 0):
                raise InvalidProblemError(f"{path}, line {lineno}: time must be seconds >= 0; got {row['time']!r}.")
            for name, v in (("num_replicas", n), ("batch_size", bsz)):
                if not (math.isfinite(v) and v >= 1 and v == int(v)):
                    raise InvalidProblemError(
                        f"{path}, line {lineno}: {name} must be a whole number >= 1; got {row[name]!r}.")
            app = (row["application"] or "").strip()
            if not app:
                raise InvalidProblemError(f"{path}, line {lineno}: application is empty.")
            jobs.append(GoodputJob(len(jobs), (row["name"] or "").strip() or f"job-{len(jobs)}", t, app, int(n),
                                   int(bsz)))
    if not jobs:
        raise InvalidProblemError(f"{path}: no jobs.")
    return tuple(sorted(jobs, key=lambda j: (j.arrival, j.job_id)))


def sia_workloads(artifacts, trace_set):
    """Paths of the workloads of one of Sia's trace sets, ``workload-1.csv``, ``workload-2.csv``, ...

    Parameters
    ----------
    artifacts : str or path-like
        A checkout of Sia's artifact (the folder holding ``sia-simulator/``, or ``sia-simulator/``
        itself).
    trace_set : {"philly", "helios", "newtrace"}
    """
    if trace_set not in SIA_TRACE_SETS:
        raise InvalidOptionError(f"trace_set must be one of {', '.join(SIA_TRACE_SETS)}; got {trace_set!r}.")
    root = _sim_root(artifacts)
    folder = root / "workloads" / SIA_TRACE_SETS[trace_set]
    files = sorted(folder.glob("workload-*.csv"), key=lambda p: _workload_number(p))
    if not files:
        raise InvalidProblemError(f"{folder}: no workload-N.csv files; expected Sia's {trace_set} workloads there.")
    return tuple(files)


def _workload_number(p):
    tail = p.stem.rsplit("-", 1)[-1]
    return (0, int(tail), "") if tail.isdigit() else (1, 0, p.name)


def _sim_root(artifacts):
    root = Path(os.fspath(artifacts))
    for sub in ("sia-simulator", "simulator"):  # Sia's artifact, Pollux's (adaptdl, branch osdi21-artifact)
        if (root / sub / "traces").is_dir():
            return root / sub
    if not (root / "traces").is_dir():
        raise InvalidProblemError(
            f"{root}: no traces/ folder; expected a checkout of Sia's artifact (the folder holding sia-simulator/, "
            "or sia-simulator/ itself) or of Pollux's (simulator/).")
    return root


class AppProfile:
    """One application on one GPU type: step times, gradient statistics, and the executor's choice.

    Build with :meth:`read` (Sia's file formats) or directly from arrays.

    Parameters
    ----------
    app, gpu_type : str
    placements : dict
        ``{placement tuple: (local_bsz, step_time, sync_time)}`` arrays, ``local_bsz``
        increasing; the tuple is canonical (see :meth:`step_time`).
    scalability : (n, 5) array
        Rows ``num_nodes, num_replicas, local_bsz, step_time, sync_time``.
    validation : dict
        ``{batch: (E_b, 5) array}`` of rows ``progress, iteration, metric, grad_sqr, grad_var``.
    slowdown : float
        Calibration: progress per second is divided by it (default 1).
    restart_s : float
        Checkpoint-restore seconds at every allocation change (default 30).
    max_local : float, optional
        A cap on the per-GPU batch on every placement (Pollux's simulator caps yolov3 at 8).
    """

    def __init__(self, app, gpu_type, placements, scalability, validation, slowdown=1.0, restart_s=30.0,
                 max_local=None):
        self.app, self.gpu_type = str(app), str(gpu_type)
        if not placements:
            raise InvalidProblemError(f"{app} on {gpu_type}: no placement profile rows.")
        if not validation:
            raise InvalidProblemError(f"{app}: no validation-<batch>.csv files.")
        if not (is_real_scalar(slowdown) and 0 < float(slowdown) < math.inf):
            raise InvalidOptionError(f"slowdown of {app} must be a number > 0; got {slowdown!r}.")
        if not (is_real_scalar(restart_s) and 0 <= float(restart_s) < math.inf):
            raise InvalidOptionError(f"restart seconds of {app} must be a number >= 0; got {restart_s!r}.")
        self.slowdown, self.restart_s = float(slowdown), float(restart_s)
        if max_local is not None and not (is_real_scalar(max_local) and float(max_local) >= 1):
            raise InvalidOptionError(f"max_local of {app} must be a batch >= 1 or None; got {max_local!r}.")
        self.max_local = None if max_local is None else float(max_local)
        self.placements = {}
        for p, (b, t, s) in placements.items():
            order = np.argsort(b, kind="stable")
            b, t, s = (np.asarray(x, dtype=np.float64)[order] for x in (b, t, s))
            keep = np.r_[True, np.diff(b) > 0]  # one row per local batch: the mean of repeats
            if not keep.all():
                grp = np.cumsum(keep) - 1
                cnt = np.bincount(grp)
                t, s, b = np.bincount(grp, t) / cnt, np.bincount(grp, s) / cnt, b[keep]
            self.placements[_canon(p)] = (b, t, s)
        self.scalability = np.asarray(scalability, dtype=np.float64).reshape(-1, 5)
        self.batches = np.array(sorted(int(k) for k in validation), dtype=np.float64)
        self.max_epochs = min(len(v) for v in validation.values())
        val = [np.asarray(validation[int(k)], dtype=np.float64)[: self.max_epochs] for k in self.batches]
        self._progress = np.stack([v[:, 0] for v in val])
        self._sqr = np.stack([v[:, 3] for v in val])
        self._var = np.stack([v[:, 4] for v in val])
        if (self._sqr < 0).any() or (self._var < 0).any():
            raise InvalidProblemError(f"{app}: grad_sqr and grad_var must be >= 0.")
        #: Progress at the end of epoch e (e = 1 .. max_epochs) at index e - 1: the smallest any run reports.
        self.epoch_end = self._progress.min(axis=0)
        if not (self.epoch_end > 0).all() or (np.diff(self.epoch_end) <= 0).any():
            raise InvalidProblemError(f"{app}: the progress column must increase from epoch to epoch and be > 0.")
        self.init_batch = float(self.batches[0])
        self.max_batch = float(self.batches[-1])
        all_b = np.concatenate([v[0] for v in self.placements.values()])
        self.min_local_bsz = float(all_b.min())
        self.max_local_bsz = float(all_b.max())
        one = self.placements.get((1,))
        #: Sia's 1-GPU "atomic throughput" (its bootstrap ratio): the largest 1-GPU local batch over the
        #: largest 1-GPU step time; 0 without a 1-GPU profile.
        self.atomic_throughput = float(one[0].max() / one[1].max()) if one is not None else 0.0
        #: GPUs per node of this type as profiled: the most any profiled placement has on one node.
        self.node_size = max(max(p) for p in self.placements)
        self._interp = None
        self._nd_cache = {}
        self._rate_cache = {}
        self._cand_cache = {}

    # -- reading ---------------------------------------------------------------------------------------
    @classmethod
    def read(cls, app_dir, suffix, gpu_type=None, slowdown=1.0, restart_s=30.0, max_local=None):
        """Read ``placements-<suffix>.csv``, ``scalability-<suffix>.csv`` and ``validation-*.csv`` of ``app_dir``.

        ``suffix=""`` reads ``placements.csv`` and ``scalability.csv`` (Pollux's artifact).
        """
        app_dir = Path(os.fspath(app_dir))
        app = app_dir.name
        tail = f"-{suffix}" if suffix else ""  # Pollux's artifact: placements.csv, one GPU type
        pf = app_dir / f"placements{tail}.csv"
        cols = _read_csv(pf, ("placement", "local_bsz", "step_time", "sync_time"),
                         "a placement profile (one row per placement and per-GPU batch)")
        _profile_rows(cols, pf)
        pl = cols["placement"]
        _check((pl >= 1) & (pl == np.round(pl)), pf, "placement must be digits, GPUs per node (e.g. 4 or 22)")
        placements = {}
        for key in np.unique(pl):
            sel = pl == key
            p = _canon(int(c) for c in str(int(key)))
            if p in placements:  # two rotations of one placement: pool their rows
                ob, ot, os_ = placements[p]
                placements[p] = (np.r_[ob, cols["local_bsz"][sel]], np.r_[ot, cols["step_time"][sel]],
                                 np.r_[os_, cols["sync_time"][sel]])
            else:
                placements[p] = (cols["local_bsz"][sel], cols["step_time"][sel], cols["sync_time"][sel])
        sf = app_dir / f"scalability{tail}.csv"
        sc = _read_csv(sf, ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"),
                       "a scalability profile (one row per node count, replica count and per-GPU batch)")
        _profile_rows(sc, sf)
        n, r = sc["num_nodes"], sc["num_replicas"]
        _check((n >= 1) & (n == np.round(n)) & (r >= n) & (r == np.round(r)), sf,
               "num_nodes and num_replicas must be whole numbers with 1 <= num_nodes <= num_replicas")
        scal = np.column_stack([sc[c] for c in ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time")])
        validation = {}
        for vf in sorted(app_dir.glob("validation-*.csv")):
            tail = vf.stem.split("-")[-1]
            if not tail.isdigit() or int(tail) < 1:
                raise InvalidProblemError(f"{vf}: expected validation-<total batch>.csv with a whole batch >= 1.")
            v = _read_csv(vf, ("progress", "iteration", "metric", "grad_sqr", "grad_var"),
                          "one row per epoch of a run at that batch")
            validation[int(tail)] = np.column_stack([v[c] for c in ("progress", "iteration", "metric", "grad_sqr",
                                                                    "grad_var")])
        if not validation:
            raise InvalidProblemError(f"{app_dir}: no validation-<batch>.csv files; expected one per validated batch.")
        return cls(app, gpu_type or suffix or "gpu", placements, scal, validation, slowdown, restart_s, max_local)

    # -- the model -------------------------------------------------------------------------------------
    @property
    def total_progress(self):
        """Progress at which the job finishes: the end of its last epoch."""
        return float(self.epoch_end[-1])

    def epoch_of(self, progress):
        """Completed epochs at ``progress`` (the epoch whose gradient statistics apply)."""
        return int(np.searchsorted(self.epoch_end, progress, side="right"))

    def _nd(self):
        if self._interp is None:
            try:
                from scipy.interpolate import LinearNDInterpolator
            except ImportError:  # pragma: no cover - scipy is in the test and bench extras
                raise MissingDependencyError(
                    "the goodput model interpolates placements it has no profile row for with scipy; "
                    "pip install scipy") from None
            pts = [(len(p), sum(p), b[k], t[k], s[k]) for p, (b, t, s) in self.placements.items()
                   for k in range(b.size)]
            pts += [tuple(row) for row in self.scalability]
            arr = np.asarray(pts, dtype=np.float64)
            keys, inv = np.unique(arr[:, :3], axis=0, return_inverse=True)
            inv = inv.ravel()
            cnt = np.bincount(inv)
            vals = np.column_stack([np.bincount(inv, arr[:, 3]) / cnt, np.bincount(inv, arr[:, 4]) / cnt])
            try:
                self._interp = LinearNDInterpolator(keys, vals)
                with single_blas_thread():  # SciPy computes the simplices' transforms lazily, one LU each
                    _ = self._interp.tri.transform
            except Exception as exc:  # qhull: too few or flat points
                self._interp = False
                self._interp_error = str(exc)
        return self._interp

    def step_time(self, placement, local_bsz):
        """``(step_time, sync_time)`` in seconds of one step at per-GPU batch ``local_bsz``; NaNs where not profiled.

        A placement is one count per node; it is the same placement in any rotation
        (``(2, 1) == (1, 2)``) and zeros are dropped.
        """
        t, s = self._step_times(_canon(placement), np.array([float(local_bsz)]))
        return float(t[0]), float(s[0])

    def _step_times(self, p, b):
        """Step and sync times of canonical placement ``p`` at the per-GPU batches ``b`` (arrays; NaN: not profiled)."""
        rows = self.placements.get(p)
        if rows is not None:
            bs, ts, ss = rows
            out = (b < bs[0]) | (b > bs[-1])
            return np.where(out, np.nan, np.interp(b, bs, ts)), np.where(out, np.nan, np.interp(b, bs, ss))
        # an unprofiled placement is interpolated in (nodes, replicas, batch) alone: placements that
        # agree on those share the result (many do under Pollux's virtual nodes)
        key = (min(len(p), MAX_INTERP_NODES), sum(p), b.tobytes())
        hit = self._nd_cache.get(key)
        if hit is None:
            interp = self._nd()
            if interp is False:
                hit = (np.full(b.shape, np.nan), np.full(b.shape, np.nan))
            else:
                ts = interp(np.column_stack([np.full(b.shape, float(key[0])), np.full(b.shape, float(key[1])), b]))
                hit = (ts[:, 0], ts[:, 1])
            self._nd_cache[key] = hit
        return hit[0].copy(), hit[1].copy()

    def memory_limit(self, placement):
        """Largest per-GPU (atomic) batch on ``placement``: the largest profiled local batch there.

        A profiled placement: its rows; otherwise the scalability rows with at least as many nodes
        and replicas (none: the largest local batch of any profile).  Sia's simulator also caps it
        at the largest local batch profiled for any placement with the same number of replicas.
        """
        p = _canon(placement)
        n, r = len(p), sum(p)
        rows = self.placements.get(p)
        if rows is not None:
            lim = float(rows[0][-1])
        else:
            sc = self.scalability
            sel = (sc[:, 0] >= n) & (sc[:, 1] >= r) if sc.size else np.zeros(0, dtype=bool)
            lim = float(sc[sel, 2].max()) if sel.any() else self.max_local_bsz
        same = [b[-1] for q, (b, _, _) in self.placements.items() if sum(q) == r]
        if same:
            lim = min(lim, float(max(same)))
        return lim if self.max_local is None else min(lim, self.max_local)

    def _grad_stats(self, m, epoch):
        e = min(max(int(epoch), 0), self.max_epochs - 1)
        mb = np.clip(m, self.init_batch, self.max_batch)
        return np.interp(mb, self.batches, self._sqr[:, e]), np.interp(mb, self.batches, self._var[:, e])

    def grad_stats(self, batch, epoch):
        """``(grad_sqr, grad_var)`` of ``epoch`` at total ``batch``, linear between the validated batches."""
        q, v = self._grad_stats(np.array([float(batch)]), epoch)
        return float(q[0]), float(v[0])

    def _gain(self, m, epoch):
        q, v = self._grad_stats(m, epoch)
        den = v / (m / self.init_batch) + q
        return np.where(den > 0, (v + q) / np.where(den > 0, den, 1.0), 1.0)

    def gain(self, batch, epoch):
        """Statistical gain ``(v + q) / (v / m + q)``, ``m = batch / init_batch``: init-batch steps one step is worth."""
        return float(self._gain(np.array([float(batch)]), epoch)[0])

    def _split(self, placement, local, lim):
        """``(atomic batch, accumulation steps)`` for a per-GPU batch ``local`` under the memory limit ``lim``."""
        r = sum(placement)
        s = max(math.ceil(local / lim - _EPS) - 1, 0)
        if r == 1 and local > self.init_batch + _EPS:
            s = max(s, 1)
        atomic = math.ceil(local / (s + 1) - _EPS)
        return min(atomic, int(lim), int(self.max_batch / (r * (s + 1)))), s

    def candidates(self, placement, max_batch=None):
        """The executor's ``(atomic batch, accumulation steps)`` choices on ``placement`` (Pollux's grid).

        ``max_batch`` (default: the largest validated batch) caps the total batch, e.g. at a
        job's requested batch as Sia's policy assumes.

        Total batches: :data:`BATCH_CANDIDATES` geometrically spaced from ``max(init_batch,
        R * min_local_bsz)`` to the largest validated batch; per GPU ``local = M / R``; the
        fewest accumulation steps ``s`` with ``ceil(local / (s + 1)) <=`` the placement's
        :meth:`memory_limit` (at least 1 on a single GPU above the initial batch, as Pollux's
        executor does); the atomic batch is then capped at the memory limit and at
        ``max_batch / (R (s + 1))``.  Candidates whose atomic batch falls below the smallest
        profiled local batch are dropped.
        """
        p = _canon(placement)
        r = sum(p)
        lim = self.memory_limit(p)
        hi = self._max_batch(max_batch)
        lo = max(self.init_batch, self.min_local_bsz * r)
        if lo > hi * (1 + _EPS):
            return []
        out = []
        for m in np.geomspace(lo, hi, BATCH_CANDIDATES):
            atomic, s = self._split(p, m / r, lim)
            if atomic >= self.min_local_bsz and (atomic, s) not in out:
                out.append((atomic, s))
        return out

    def split_batch(self, placement, batch):
        """``(atomic batch, accumulation steps)`` that run a fixed total ``batch`` on ``placement``.

        A job whose batch is not tuned (the trace's ``batch_size``, as Gavel runs it): ``batch /
        R`` per GPU, split into the fewest accumulation steps the placement's
        :meth:`memory_limit` allows, with the same rules as :meth:`candidates`.
        """
        p = _canon(placement)
        return self._split(p, math.ceil(float(batch) / sum(p) - _EPS), self.memory_limit(p))

    def goodput(self, placement, atomic, accum, epoch):
        """Progress per second of ``atomic`` per-GPU batch with ``accum`` accumulation steps (0: cannot run).

        ``G / (T + s (T - S)) / c`` with the total batch ``R * atomic * (accum + 1)``
        (module docstring); 0 when the step time is not profiled there.
        """
        g = self._goodputs(_canon(placement), np.array([float(atomic)]), np.array([float(accum)]), epoch)[0]
        return float(g) if g > 0 else 0.0

    def _max_batch(self, max_batch):
        if max_batch is None:
            return self.max_batch
        return min(max(float(max_batch), self.init_batch), self.max_batch)

    def rate(self, placement, epoch, max_batch=None, batch=None):
        """The executor's best ``(progress per second, atomic batch, accumulation steps)`` on ``placement`` in ``epoch``.

        ``(0.0, 0, 0)`` when no candidate can run there (too many GPUs for the largest batch, or
        a placement outside the profiles).  ``max_batch``: as in :meth:`candidates` (clipped to
        the validated batches).  ``batch``: a fixed total batch instead (no tuning; its split
        is :meth:`split_batch`).
        """
        p = _canon(placement)
        e = min(max(int(epoch), 0), self.max_epochs - 1)
        if batch is not None:
            key = (p, e, "fixed", int(batch))
            hit = self._rate_cache.get(key)
            if hit is None:
                atomic, s = self.split_batch(p, batch)
                g = self.goodput(p, atomic, s, e) if atomic >= 1 else 0.0
                hit = self._rate_cache[key] = (g, atomic, s) if g > 0 else (0.0, 0, 0)
            return hit
        key = (p, e, None if max_batch is None else self._max_batch(max_batch))
        hit = self._rate_cache.get(key)
        if hit is not None:
            return hit
        ck = (p, key[2])
        cand = self._cand_cache.get(ck)
        if cand is None:  # the candidates and their step times depend on the placement, not on the epoch
            c = self.candidates(p, key[2])
            atomic = np.array([a for a, _ in c], dtype=np.float64)
            cand = self._cand_cache[ck] = (atomic, np.array([s for _, s in c], dtype=np.float64),
                                           self._step_times(p, atomic))
        best = (0.0, 0, 0)
        atomic, acc, times = cand
        if atomic.size:
            g = self._goodputs(p, atomic, acc, e, times)
            k = int(np.argmax(np.where(np.isnan(g), -np.inf, g)))  # the first best, as a scan keeping ties
            if g[k] > 0:
                best = (float(g[k]), int(atomic[k]), int(acc[k]))
        self._rate_cache[key] = best
        return best

    def _goodputs(self, p, atomic, acc, e, times=None):
        """:meth:`goodput` of canonical ``p`` at arrays of atomic batches and accumulation steps (NaN: cannot run).

        ``times``: ``self._step_times(p, atomic)`` when the caller has it.
        """
        t, sync = self._step_times(p, atomic) if times is None else times
        gain = self._gain(sum(p) * atomic * (acc + 1), e)
        ok = (t > 0) & (sync >= 0)
        with np.errstate(invalid="ignore"):
            g = gain / (t + acc * np.maximum(t - sync, 0.0)) / self.slowdown
        return np.where(ok, g, np.nan)

    def iteration_rate(self, placement, batch):
        """Iterations per second of a fixed total ``batch`` on ``placement`` (calibrated; 0: cannot run there).

        What Gavel's policy maximises: raw steps, not progress.
        """
        p = _canon(placement)
        atomic, s = self.split_batch(p, batch)
        t, sync = self.step_time(p, atomic) if atomic >= 1 else (math.nan, math.nan)
        if not (t > 0):
            return 0.0
        return 1.0 / (t + s * max(t - sync, 0.0)) / self.slowdown

    def advance(self, placement, progress, seconds, batch=None):
        """Run on ``placement`` for ``seconds`` from ``progress`` (at a fixed total ``batch`` if given, else tuned).

        Returns
        -------
        (float, float)
            The progress reached and the seconds used: fewer than ``seconds`` only when the
            job finishes (the end of its last epoch) or cannot run on ``placement``.  The
            batch is chosen again at every epoch boundary.
        """
        return _advance(self, lambda e: self.rate(placement, e, batch=batch)[0], progress, seconds)

    def time_alone(self, placement, progress=0.0, batch=None):
        """Seconds to finish from ``progress`` on ``placement`` (no restart; inf when it cannot run there)."""
        done, used = self.advance(placement, progress, math.inf, batch)
        return used if done >= self.total_progress else math.inf


def _advance(prof, rate_of_epoch, progress, seconds):
    """``(progress reached, seconds used)`` running ``seconds`` from ``progress`` at ``rate_of_epoch(e)`` per second.

    The epochs and the end are ``prof``'s (an :class:`AppProfile`); the rate is asked again at
    every epoch boundary; a rate <= 0 stops the run there.
    """
    progress = float(progress)
    left = float(seconds)
    used = 0.0
    total = prof.total_progress
    while left > 0 and progress < total:
        e = prof.epoch_of(progress)
        g = rate_of_epoch(e)
        if g <= 0:
            break
        end = float(prof.epoch_end[e])
        need = (end - progress) / g
        if need > left:
            progress += g * left
            used += left
            break
        progress = end
        used += need
        left -= need
    return progress, used


class GoodputModel:
    """Profiles of several applications on several GPU types: the goodput world's truth.

    Parameters
    ----------
    profiles : dict
        ``{app: {gpu_type: AppProfile}}``.

    See :meth:`from_sia` to read a checkout of Sia's artifact.
    """

    def __init__(self, profiles):
        if not isinstance(profiles, Mapping) or not profiles:
            raise InvalidOptionError("profiles must be a non-empty {app: {gpu_type: AppProfile}} dict.")
        self.profiles = {a: dict(v) for a, v in profiles.items()}
        for a, v in self.profiles.items():
            if not v or not all(isinstance(p, AppProfile) for p in v.values()):
                raise InvalidOptionError(f"profiles[{a!r}] must be a non-empty {{gpu_type: AppProfile}} dict.")
        types = {frozenset(v) for v in self.profiles.values()}
        if len(types) != 1:
            raise InvalidOptionError("every application must be profiled on the same GPU types.")
        self.gpu_types = tuple(sorted(next(iter(types))))
        self._mixed_cache = {}

    @classmethod
    def from_sia(cls, artifacts, types=None, apps=None, slowdown=None, restart=None, max_local=None):
        """Read the profiles of Sia's artifact.

        Parameters
        ----------
        artifacts : str or path-like
            A checkout of github.com/siasosp23/artifacts (or its ``sia-simulator/`` folder).
        types : dict, optional
            ``{gpu_type: profile suffix}``; default :data:`SIA_TYPES` (T4, RTX 2080Ti, A100).
        apps : sequence of str, optional
            Default: those of :data:`SIA_APPS` that ``traces/`` holds.
        slowdown : dict, optional
            Calibration slowdown per application (default :data:`SIA_SLOWDOWN`; 1 for others).
        restart : dict, optional
            Checkpoint-restore seconds per application, ``"default"`` for the others (default
            :data:`SIA_RESTART_S_APPS`).
        max_local : dict, optional
            ``{app: per-GPU batch cap}`` (default none).  :data:`POLLUX_MODEL` holds the
            settings of Pollux's own simulator (one type, ``placements.csv``, 30 s restarts, no
            calibration, yolov3 capped at 8).
        """
        root = _sim_root(artifacts)
        types = dict(SIA_TYPES if types is None else types)
        if apps is None:  # the applications the checkout profiles (a workload naming another is refused)
            apps = tuple(a for a in SIA_APPS if (root / "traces" / a).is_dir())
            if not apps:
                raise InvalidProblemError(
                    f"{root / 'traces'}: none of the applications {', '.join(SIA_APPS)}; expected Sia's profiles "
                    "there (traces/<application>/placements-<type>.csv, ...).")
        apps = tuple(apps)
        slowdown = dict(SIA_SLOWDOWN if slowdown is None else slowdown)
        restart = dict(SIA_RESTART_S_APPS if restart is None else restart)
        if not types or not apps:
            raise InvalidOptionError("types and apps must not be empty.")
        profiles = {}
        for a in apps:
            d = root / "traces" / a
            if not d.is_dir():
                raise InvalidProblemError(f"{d}: no such folder; expected the profiles of application {a!r}.")
            rs = restart.get(a, restart.get("default", 30.0))
            ml = (max_local or {}).get(a)
            profiles[a] = {g: AppProfile.read(d, sfx, g, slowdown.get(a, 1.0), rs, ml) for g, sfx in types.items()}
        return cls(profiles)

    def profile(self, app, gpu_type):
        """The :class:`AppProfile` of ``app`` on ``gpu_type``."""
        try:
            return self.profiles[app][gpu_type]
        except KeyError:
            raise InvalidOptionError(
                f"no profile of application {app!r} on GPU type {gpu_type!r}; known applications "
                f"{', '.join(sorted(self.profiles))}, types {', '.join(self.gpu_types)}.") from None

    def rate(self, app, gpu_type, placement, epoch):
        """:meth:`AppProfile.rate` of ``app`` on ``gpu_type``."""
        return self.profile(app, gpu_type).rate(_placement_iv(placement), epoch)

    def time_alone(self, app, gpu_type, placement):
        """Seconds ``app`` takes from the start on ``placement`` of ``gpu_type`` (restart excluded)."""
        return self.profile(app, gpu_type).time_alone(_placement_iv(placement))

    # -- a job on several GPU types (an assumption, not a measurement: docs/online.md §10.5) -----------
    def mixed_rate(self, app, parts, epoch):
        """Progress per second of ``app`` on GPUs of several types at once, under the mixed-rate assumption.

        ``parts`` is ``{gpu_type: placement}`` (GPUs per node of that type's nodes).  One type:
        exactly :meth:`AppProfile.rate`.  Several: the job is one synchronous data-parallel
        group over all its GPUs.  The profiles measure one type at a time, so the rate is
        modelled, not measured (docs/online.md §10.5):

        - every profile is read for the **whole job**: all its ``R`` GPUs on as many nodes as it
          spans (or as that type needs for ``R`` GPUs, when more), so the all-reduce is priced
          for the whole job;
        - for each total batch ``M`` of the executor's grid, each type's GPUs get a per-GPU batch
          in proportion to their throughput there at the even split ``M / R`` (LB-BSP's rule:
          the parts then finish their computation together), within each type's memory limit by the fewest common accumulation steps;
        - one iteration takes the slowest part's ``T + s (T - S)``, the statistical gain is taken
          at the batch actually run, and the executor keeps the best ``M``.

        Returns 0.0 when no candidate can run (a part outside its profiled hull).
        """
        if not isinstance(parts, Mapping):
            raise InvalidOptionError(f"parts must be a dict {{gpu_type: placement}}, e.g. {{'t4': (4,)}}; got {parts!r}.")
        clean = {}
        for g, p in parts.items():
            self.profile(app, g)  # names the application or type that is not profiled
            if isinstance(p, (str, bytes)) or not hasattr(p, "__iter__"):
                raise InvalidOptionError(f"parts[{g!r}] must be a sequence of GPUs per node, e.g. (4, 4); got {p!r}.")
            p = tuple(p)
            if p and not all(isinstance(x, numbers.Number) and x == 0 for x in p):  # a type with no GPUs: left out
                clean[g] = _placement_iv(p, f"parts[{g!r}]")
        if not clean:
            return 0.0
        if len(clean) == 1:
            (g, p), = clean.items()
            return self.profile(app, g).rate(p, epoch)[0]
        key = (app, tuple(sorted(clean.items())), int(epoch))
        hit = self._mixed_cache.get(key)
        if hit is None:
            hit = self._mixed_cache[key] = self._mixed_rate(app, clean, int(epoch))
        return hit

    def _mixed_rate(self, app, parts, epoch):
        types = sorted(parts)
        profs = [self.profile(app, g) for g in types]
        ref = profs[0]  # the application's batches, gradient statistics and calibration (the same on every type)
        whole = _canon(c for g in types for c in parts[g])
        R = sum(whole)
        n = np.array([sum(parts[g]) for g in types], dtype=np.float64)
        # each profile read for all R GPUs on as many nodes as the job spans, or as that type needs for R
        # GPUs when more (a type of 4-GPU nodes never ran 8 GPUs on one node)
        shapes = []
        for pr in profs:
            nodes = max(len(whole), -(-R // pr.node_size))
            shapes.append(_canon([R // nodes + (1 if k < R % nodes else 0) for k in range(nodes)]))
        lim = np.array([pr.memory_limit(sh) for pr, sh in zip(profs, shapes)])
        lo_b = np.array([pr.min_local_bsz for pr in profs])
        lo = max(ref.init_batch, float(lo_b.max()) * R)
        hi = ref.max_batch
        if lo > hi * (1 + _EPS):
            return 0.0
        best = 0.0
        e = min(max(epoch, 0), ref.max_epochs - 1)
        for M in np.geomspace(lo, hi, BATCH_CANDIDATES):
            even = M / R
            w = np.empty(len(types))
            for k, pr in enumerate(profs):  # per-GPU throughput of each type on the whole shape, at the even split
                b = min(max(even, lo_b[k]), lim[k])
                t = pr._step_times(shapes[k], np.array([b]))[0][0]
                w[k] = b / t if t > 0 else 0.0
            if not (w > 0).all():
                continue
            local = M * w / float(n @ w)
            s = max(int(np.max(np.ceil(local / lim - _EPS))) - 1, 0)
            atomic = np.ceil(local / (s + 1) - _EPS)
            atomic = np.minimum(np.maximum(atomic, lo_b), np.floor(lim))
            it = 0.0
            for k, pr in enumerate(profs):
                t, sync = pr._step_times(shapes[k], atomic[k:k + 1])
                t, sync = float(t[0]), float(sync[0])
                if not (t > 0 and sync >= 0):
                    it = math.nan
                    break
                it = max(it, t + s * max(t - sync, 0.0))
            if not it > 0:
                continue
            total = float(n @ atomic) * (s + 1)
            g = float(ref._gain(np.array([total]), e)[0]) / it / ref.slowdown
            if g > best:
                best = g
        return best

    def advance_mixed(self, app, parts, progress, seconds):
        """:meth:`AppProfile.advance` at :meth:`mixed_rate` (the batch chosen again at every epoch)."""
        ref = self.profile(app, sorted(parts)[0])
        return _advance(ref, lambda e: self.mixed_rate(app, parts, e), progress, seconds)
