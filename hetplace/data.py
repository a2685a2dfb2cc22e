"""Instances: the embedded default instance and the Gavel throughput-table reader.

The Gavel table (``throughputs.json`` of the Gavel project, MIT licence) is NOT
shipped with hetplace; pass the path of your copy to :func:`load_gavel`.
"""

import json
import math
import re
from pathlib import Path

import numpy as np

from .errors import InvalidProblemError
from .problem import Problem

__all__ = ["GavelTable", "load_gavel", "problem_from_gavel", "default_problem", "DEFAULT_GRAD_BYTES"]

#: Plausible gradient sizes (bytes) per model family, from published parameter
#: counts (fp32): used when a job list gives none.
DEFAULT_GRAD_BYTES = {
    "ResNet-18": 45e6,
    "ResNet-50": 100e6,
    "Transformer": 250e6,
    "LM": 80e6,
    "Recommendation": 50e6,
    "A3C": 4e6,
    "CycleGAN": 45e6,
}

_KEY = re.compile(r"^\('(?P<model>.+)', (?P<n>\d+)\)$")
_BATCH = re.compile(r"\(batch size (\d+)\)")


class GavelTable:
    """Single-GPU throughputs read from a Gavel-format ``throughputs.json``.

    Attributes
    ----------
    path : pathlib.Path
    types : list of str
        GPU types with consolidated measurements (e.g. ``k80``, ``p100``, ``v100``).
    models : list of str
        Model strings, e.g. ``"ResNet-50 (batch size 64)"``.
    """

    def __init__(self, path, steps):
        self.path = Path(path)
        self._steps = steps  # {type: {model: steps/s on one GPU}}
        self.types = sorted(steps)
        self.models = sorted(set().union(*(set(v) for v in steps.values())))

    @staticmethod
    def per_gpu_batch(model):
        """Samples per step named in the model string (1 when it names none, e.g. A3C)."""
        m = _BATCH.search(model)
        return int(m.group(1)) if m else 1

    @staticmethod
    def family(model):
        """Model family: the model string without its batch size."""
        return _BATCH.sub("", model).strip()

    def samples_per_second(self, model, gpu_type):
        """Samples/s of ``model`` on ONE GPU of ``gpu_type`` (0 when not measured)."""
        self._check_model(model)
        if gpu_type not in self._steps:
            raise InvalidProblemError(
                f"unknown GPU type {gpu_type!r} for {self.path}; it has {', '.join(self.types)}."
            )
        return self._steps[gpu_type].get(model, 0.0) * self.per_gpu_batch(model)

    def _check_model(self, model):
        if model not in self.models:
            close = [m for m in self.models if self.family(m).lower() == self.family(model).lower()]
            hint = f" Did you mean one of {close}?" if close else f" Known models: {', '.join(self.models)}."
            raise InvalidProblemError(f"unknown model {model!r} in {self.path}.{hint}")


def load_gavel(path):
    """Read a Gavel-format throughput table.

    Parameters
    ----------
    path : str or path-like
        ``throughputs.json`` in Gavel's format:
        ``{gpu_type: {"('<model>', <n_gpus>)": {"null": steps/s, ...}}}``.

    Returns
    -------
    GavelTable
        Single-GPU (``n_gpus == 1``) isolated throughputs of the consolidated
        GPU types (``*_unconsolidated`` entries are skipped).
    """
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise InvalidProblemError(
            f"Gavel throughput file {str(path)!r} does not exist; pass the path of a Gavel-format throughputs.json."
        ) from None
    except json.JSONDecodeError as exc:
        raise InvalidProblemError(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}).") from None
    if not isinstance(raw, dict) or not raw:
        raise InvalidProblemError(f"{path} must hold a JSON object keyed by GPU type.")
    steps = {}
    for gpu, entries in raw.items():
        if gpu.endswith("_unconsolidated"):
            continue
        if not isinstance(entries, dict):
            raise InvalidProblemError(f"{path}: entry {gpu!r} must be an object keyed by \"('<model>', <n_gpus>)\".")
        table = {}
        for key, val in entries.items():
            m = _KEY.match(key)
            if not m:
                raise InvalidProblemError(
                    f"{path}: key {key!r} under {gpu!r} is not of the form \"('<model>', <n_gpus>)\"."
                )
            if int(m.group("n")) != 1:
                continue
            value = val.get("null") if isinstance(val, dict) else None
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise InvalidProblemError(
                    f"{path}: {gpu!r} / {key!r} needs a non-negative number under \"null\"; got {value!r}."
                )
            table[m.group("model")] = float(value)
        steps[gpu] = table
    if not steps:
        raise InvalidProblemError(f"{path} has no consolidated GPU types.")
    return GavelTable(path, steps)


def problem_from_gavel(table, jobs, type_counts, *, bandwidth=1.25e9, worker_speed=None):
    """Build a :class:`Problem` from a Gavel table and a job list.

    Parameters
    ----------
    table : GavelTable or path-like
    jobs : list of dict
        Each with ``model`` (a model string of the table), ``iterations``, and
        optionally ``batch`` (global batch; default the model's per-GPU batch),
        ``grad_bytes`` (default from :data:`DEFAULT_GRAD_BYTES`), ``name``, and
        ``exclude`` (GPU types the job cannot use, e.g. out of memory).
    type_counts : dict
        ``{gpu_type: count}``; its order fixes the type order.
    bandwidth : float
        Bytes/s per worker link (default 10 Gbit/s).
    worker_speed : array_like, optional
    """
    if not isinstance(table, GavelTable):
        table = load_gavel(table)
    types = list(type_counts)
    rho = np.zeros((len(jobs), len(types)))
    batch, iters, grad, names = [], [], [], []
    for i, job in enumerate(jobs):
        model = job["model"]
        for g, t in enumerate(types):
            if t not in job.get("exclude", ()):
                rho[i, g] = table.samples_per_second(model, t)
        batch.append(job.get("batch", table.per_gpu_batch(model)))
        iters.append(job["iterations"])
        grad.append(job.get("grad_bytes", DEFAULT_GRAD_BYTES.get(table.family(model).split(" ")[0], 50e6)))
        names.append(job.get("name", f"{i}:{table.family(model)}"))
    return Problem(
        rho, [type_counts[t] for t in types], batch, iters, grad_bytes=grad, bandwidth=bandwidth,
        worker_speed=worker_speed, job_names=names, type_names=types,
    )


def default_problem():
    """The embedded default instance: a 16-GPU mixed cluster and five jobs.

    Throughputs are the project's own round figures (samples/s per GPU),
    typical of the generation gap between K80, P100 and V100 GPUs; the
    recommendation model is *slower* on the V100 than on the P100 (embedding
    lookups), and CycleGAN does not fit a K80's memory (throughput 0).
    Communication: 10 Gbit/s links, ring all-reduce.
    """
    #                    K80      P100     V100
    throughput = [
        [40.0, 130.0, 250.0],  # ResNet-50
        [70.0, 250.0, 430.0],  # Transformer
        [120.0, 380.0, 470.0],  # LM
        [20000.0, 30000.0, 14000.0],  # Recommendation
        [0.0, 2.4, 4.4],  # CycleGAN
    ]
    return Problem(
        throughput,
        type_counts=[4, 6, 6],
        batch=[256, 128, 80, 4096, 4],
        iterations=[20000, 30000, 50000, 5000, 10000],
        grad_bytes=[100e6, 250e6, 80e6, 50e6, 45e6],
        bandwidth=1.25e9,
        job_names=["resnet50", "transformer", "lm", "recsys", "cyclegan"],
        type_names=["k80", "p100", "v100"],
    )
