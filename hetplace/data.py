"""Instances: the embedded default instance and the Gavel throughput-table reader.

hetplace ships the isolated ("null") figures of the Gavel project's measured
throughput table (``throughputs.json``, MIT licence, Copyright (c) 2020 Stanford
Future Data Systems; licence text in ``hetplace/_data/GAVEL_LICENSE``) for every
GPU type and GPU count; :func:`load_gavel` reads it by default and
:func:`gavel_path` gives its path.  The pair (space-sharing) entries of the
original table are not shipped.  Example input files of ``hetplace place``
ship too: :func:`example_path`.
"""

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ._files import _input_path, _read_json  # the readers' file helpers: regular files only, size cap, UTF-8, depth
from ._validation import check_choice
from .errors import InvalidProblemError
from .problem import Problem

__all__ = [
    "GavelTable", "load_gavel", "gavel_path", "example_path", "problem_from_gavel", "default_problem",
    "DEFAULT_GRAD_BYTES", "default_grad_bytes", "EXAMPLES",
]

_DATA = Path(__file__).resolve().parent / "_data"
#: Example input files of ``hetplace place`` shipped with the package (:func:`example_path`).
EXAMPLES = ("cluster.toml", "jobs.csv", "cluster_nodes.toml", "quotas.toml", "jobs_tenants.csv")


def gavel_path() -> Path:
    """Path of the Gavel throughput table shipped with hetplace.

    Returns
    -------
    pathlib.Path
        ``hetplace/_data/gavel_throughputs.json``: the isolated (``"null"``)
        figures of Gavel's ``throughputs.json`` for every GPU type (consolidated
        and ``*_unconsolidated``) and every GPU count (1, 2, 4, 8), in Gavel's
        format; the pair entries are dropped.  Licence: MIT, see
        ``hetplace/_data/GAVEL_LICENSE``.
    """
    return _DATA / "gavel_throughputs.json"


def example_path(name: str) -> Path:
    """Path of an example input file of ``hetplace place`` shipped with hetplace.

    Parameters
    ----------
    name : {"cluster.toml", "jobs.csv", "cluster_nodes.toml"}
        The example cluster description (TOML), job list (CSV), or cluster
        given node by node with racks and link bandwidths (TOML, ``[[nodes]]``).

    Returns
    -------
    pathlib.Path
        Copy it and edit it, e.g. ``hetplace place --cluster CLUSTER --jobs JOBS``
        with ``CLUSTER = example_path("cluster.toml")``.
    """
    return _DATA / "examples" / check_choice("name", name, EXAMPLES)

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



def default_grad_bytes(model: str, default: float = 50e6) -> float:
    """Gradient bytes of a Gavel model string by its family (:data:`DEFAULT_GRAD_BYTES`; ``default`` for others)."""
    return DEFAULT_GRAD_BYTES.get(GavelTable.family(model).split(" ")[0], default)


_KEY = re.compile(r"^\('(?P<model>.+)', (?P<n>\d+)\)$")
_BATCH = re.compile(r"\(batch size (\d+)\)")


class GavelTable:
    """Isolated throughputs read from a Gavel-format ``throughputs.json``.

    Attributes
    ----------
    path : pathlib.Path
    types : list of str
        GPU types with consolidated measurements (e.g. ``k80``, ``p100``, ``v100``).
    models : list of str
        Model strings measured on one consolidated GPU, e.g. ``"ResNet-50 (batch size 64)"``.
    gpu_counts : list of int
        GPU counts with a measurement (Gavel: 1, 2, 4, 8), for :meth:`steps_per_second`.
    """

    def __init__(self, path: "str | os.PathLike[str]", steps: dict, multi: "dict | None" = None) -> None:
        self.path = Path(path)
        self._steps = steps  # {type: {model: steps/s on one GPU}}
        # {gpu key (type or type_unconsolidated): {(model, n_gpus): steps/s of the job alone}}
        self._multi = multi if multi is not None else {t: {(m, 1): v for m, v in e.items()} for t, e in steps.items()}
        self.types = sorted(steps)
        self.models = sorted(set().union(*(set(v) for v in steps.values())))
        self.gpu_counts = sorted({n for e in self._multi.values() for _, n in e})

    @staticmethod
    def per_gpu_batch(model: str) -> int:
        """Samples per step named in the model string (1 when it names none, e.g. A3C)."""
        m = _BATCH.search(_model_text(model))
        return int(m.group(1)) if m else 1

    @staticmethod
    def family(model: str) -> str:
        """Model family: the model string without its batch size."""
        return _BATCH.sub("", _model_text(model)).strip()

    def samples_per_second(self, model: str, gpu_type: str) -> float:
        """Samples/s of ``model`` on ONE GPU of ``gpu_type`` (0 when not measured)."""
        self._check_model(model)
        if gpu_type not in self._steps:
            raise InvalidProblemError(
                f"unknown GPU type {gpu_type!r} for {self.path}; it has {', '.join(self.types)}."
            )
        return self._steps[gpu_type].get(model, 0.0) * self.per_gpu_batch(model)

    def steps_per_second(self, model: str, gpu_type: str, n_gpus: int = 1, consolidated: bool = True) -> float:
        """Steps/s of ``model`` running alone on ``n_gpus`` GPUs of ``gpu_type``.

        Parameters
        ----------
        model : str
            A model string of the table, e.g. ``"ResNet-50 (batch size 64)"``.
        gpu_type : str
            One of :attr:`types` (e.g. ``"v100"``).
        n_gpus : int
            One of :attr:`gpu_counts` (Gavel: 1, 2, 4 or 8).
        consolidated : bool
            True: the GPUs share one server (Gavel's ``gpu_type`` entries);
            False: they are spread over servers (``<gpu_type>_unconsolidated``).

        Returns
        -------
        float
            Gavel's isolated (``"null"``) figure: steps (iterations) per second
            of the whole job, as measured; 0.0 when the table has no figure for
            this (model, gpu_type, n_gpus), e.g. A3C on more than one GPU.
            :meth:`samples_per_second` is the ``n_gpus=1, consolidated=True``
            figure times :meth:`per_gpu_batch`.
        """
        self._check_model(model)
        if gpu_type not in self._steps:
            raise InvalidProblemError(
                f"unknown GPU type {gpu_type!r} for {self.path}; it has {', '.join(self.types)}."
            )
        if isinstance(n_gpus, bool) or not isinstance(n_gpus, (int, np.integer)) or int(n_gpus) not in self.gpu_counts:
            raise InvalidProblemError(
                f"n_gpus={n_gpus!r} has no measurement in {self.path}; pass one of "
                f"{', '.join(map(str, self.gpu_counts))}."
            )
        if not isinstance(consolidated, (bool, np.bool_)):
            raise InvalidProblemError(f"consolidated must be True or False; got {consolidated!r}.")
        key = gpu_type if consolidated else f"{gpu_type}_unconsolidated"
        if key not in self._multi:
            raise InvalidProblemError(
                f"{self.path} has no {key!r} entries (GPUs spread over servers); pass consolidated=True."
            )
        return self._multi[key].get((model, int(n_gpus)), 0.0)

    def _check_model(self, model):
        _model_text(model)
        if model not in self.models:
            close = [m for m in self.models if self.family(m).lower() == self.family(model).lower()]
            hint = f" Did you mean one of {close}?" if close else f" Known models: {', '.join(self.models)}."
            raise InvalidProblemError(f"unknown model {model!r} in {self.path}.{hint}")


def _model_text(model):
    """``model`` if it is a string, else InvalidProblemError (None or a number is not a model name)."""
    if not isinstance(model, str):
        raise InvalidProblemError(
            f"model must be a model string of the table, e.g. 'ResNet-50 (batch size 64)'; got {model!r}."
        )
    return model


def load_gavel(path: "str | os.PathLike[str] | None" = None) -> GavelTable:
    """Read a Gavel-format throughput table.

    Parameters
    ----------
    path : str or path-like, optional
        ``throughputs.json`` in Gavel's format:
        ``{gpu_type: {"('<model>', <n_gpus>)": {"null": steps/s, ...}}}``.
        Default: the table shipped with hetplace (:func:`gavel_path`).

    Returns
    -------
    GavelTable
        Isolated throughputs: single-GPU (``n_gpus == 1``) figures of the
        consolidated GPU types for :meth:`GavelTable.samples_per_second`, and
        every GPU type (``*_unconsolidated`` too) and GPU count for
        :meth:`GavelTable.steps_per_second`.
    """
    path = gavel_path() if path is None else _input_path(path, "Gavel throughput file")
    raw = _read_json(path, "Gavel throughput file", "a Gavel-format throughputs.json")
    if not isinstance(raw, dict) or not raw:
        raise InvalidProblemError(f"{path} must hold a JSON object keyed by GPU type.")
    steps, multi = {}, {}
    for gpu, entries in raw.items():
        if not isinstance(entries, dict):
            raise InvalidProblemError(f"{path}: entry {gpu!r} must be an object keyed by \"('<model>', <n_gpus>)\".")
        table = {}
        for key, val in entries.items():
            m = _KEY.match(key)
            if not m or len(m.group("n")) > 9:  # (a GPU count of more digits is no measurement)
                raise InvalidProblemError(
                    f"{path}: key {key[:80]!r} under {gpu[:80]!r} is not of the form \"('<model>', <n_gpus>)\"."
                )
            value = val.get("null") if isinstance(val, dict) else None
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise InvalidProblemError(
                    f"{path}: {gpu!r} / {key!r} needs a non-negative number under \"null\"; got {value!r}."
                )
            multi.setdefault(gpu, {})[(m.group("model"), int(m.group("n")))] = float(value)
            if int(m.group("n")) == 1:
                table[m.group("model")] = float(value)
        multi.setdefault(gpu, {})
        if not gpu.endswith("_unconsolidated"):
            steps[gpu] = table
    if not steps:
        raise InvalidProblemError(f"{path} has no consolidated GPU types.")
    if not any(steps.values()):  # every use (samples_per_second, instances, model cells) needs one
        raise InvalidProblemError(
            f"{path} has no single-GPU measurement (a key \"('<model>', 1)\") of any consolidated GPU type; "
            "pass a Gavel-format throughputs.json that has them."
        )
    return GavelTable(path, steps, multi)


def problem_from_gavel(
    table: "GavelTable | str | os.PathLike[str]", jobs: "list[dict]", type_counts: "dict[str, int]", *,
    bandwidth: float = 1.25e9, worker_speed: "np.typing.ArrayLike | None" = None,
) -> Problem:
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
    if not isinstance(type_counts, Mapping):
        raise InvalidProblemError(
            f"type_counts must be a dict {{gpu_type: count}}, e.g. {{'v100': 4}}; got {type(type_counts).__name__}."
        )
    if isinstance(jobs, (str, bytes, Mapping)) or not isinstance(jobs, Sequence):
        raise InvalidProblemError(
            f"jobs must be a list of dicts with 'model' and 'iterations'; got {type(jobs).__name__}."
        )
    for i, job in enumerate(jobs):
        if not isinstance(job, Mapping) or "model" not in job or "iterations" not in job:
            raise InvalidProblemError(
                f"jobs[{i}] must be a dict with 'model' and 'iterations' (and optional 'batch', 'grad_bytes', "
                f"'name', 'exclude'); got {job!r}."
            )
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
        grad.append(job.get("grad_bytes", default_grad_bytes(model)))
        names.append(job.get("name", f"{i}:{table.family(model)}"))
    return Problem(
        rho, [type_counts[t] for t in types], batch, iters, grad_bytes=grad, bandwidth=bandwidth,
        worker_speed=worker_speed, job_names=names, type_names=types,
    )


def default_problem() -> Problem:
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
