"""File inputs and outputs: cluster TOML, job CSV, placements.

A cluster file (TOML) describes the workers::

    gavel = "throughputs.json"        # optional: Gavel-format table (relative to this file)

    [cluster]
    bandwidth = "10Gbit/s"            # bytes/s as a number, a string with a unit, or "inf"

    [[types]]
    name = "k80"
    count = 4
    speeds = [1.0, 1.0, 0.6, 0.6]     # optional: available fraction of each worker, in (0, 1]

or node by node, with a network topology (``Problem(node=, node_bandwidth=,
rack=, rack_bandwidth=)``, docs/model.md §1.6)::

    [cluster]
    bandwidth = "25Gbit/s"            # required: between racks (between nodes without racks)
    rack_bandwidth = "100Gbit/s"      # between the nodes of a rack (or per rack in [[racks]])

    [[nodes]]
    count = 2                         # how many such nodes (default 1)
    type = "v100"
    gpus = 8                          # GPUs per node
    bandwidth = "300GB/s"             # inside each node
    rack = "a"                        # optional: every [[nodes]] table names one, or none does

    [[racks]]                         # optional, one per rack that differs from rack_bandwidth
    name = "a"
    bandwidth = "200Gbit/s"

``[[types]]`` is then optional (types in order of appearance); when given, a
type's ``count`` may be left out and must otherwise equal its nodes' GPUs.
Nodes are numbered type by type, in file order within a type, and so are
the workers (a node's GPUs consecutive).

Either form may cap what each tenant's jobs hold together (``Problem(tenant=,
quota=)``, docs/model.md §1.7), one ``[[quotas]]`` table per tenant::

    [[quotas]]
    tenant = "team-a"                 # the name the jobs' tenant column uses
    v100 = 4                          # at most 4 v100 workers for all of team-a's jobs
    k80 = 0                           # none of the k80s; a type not named: no limit

A quota is a whole number >= 0 (or ``"inf"``: no limit, as when the type is
not named).  A tenant of the job file without a ``[[quotas]]`` table has no
limit; a ``[[quotas]]`` tenant without jobs is allowed (it holds nothing).
Tenants are numbered (``Problem.tenant``, the rows of ``Problem.quota``) in
the order of their ``[[quotas]]`` tables, then in the order the job file
first names the others (:func:`tenant_arrays`).

A job file (CSV, one job per line after the header) describes the jobs:

=====================  ==========================================================
column                 meaning
=====================  ==========================================================
``name``               optional label (default ``job<i>``)
``model``              a Gavel model string, e.g. ``ResNet-50 (batch size 64)``;
                       needs ``gavel`` in the cluster file (or ``gavel=`` here)
``throughput_<type>``  samples/s of the job on ONE worker of ``<type>``; 0 = the
                       job cannot run there.  Overrides the Gavel value when both
                       are given; required for every type when ``model`` is blank
``batch``              global batch (samples per iteration), positive integer
``iterations``         iterations still to run, > 0
``grad_bytes``         optional gradient bytes per iteration (``100e6``,
                       ``"100MB"``); blank = the model family's default when
                       ``model`` is given, else 0 (no communication)
``tenant``             optional name of the job's tenant (any text; blank = no
                       tenant), limited by the cluster's ``[[quotas]]``
=====================  ==========================================================

Every problem with a file is reported as :class:`InputFileError` (an
:class:`~hetplace.errors.InvalidProblemError`) whose message names the file,
the line or field, and the fix.

Every reader (cluster, jobs, and :func:`hetplace.data.load_gavel`) reads its
file through one helper that accepts only a regular file (a directory, a
named pipe or a device such as ``/dev/zero`` is refused before it is
opened), of at most :data:`MAX_FILE_BYTES` bytes, in UTF-8 (a bad byte is
reported with its offset and line).  Integers of more digits than Python
converts, values nested beyond Python's recursion limit, and CSV cells
beyond the ``csv`` module's field limit are reported as input errors too.
"""

import contextlib
import csv
import io as _io
import json
import math
import os
import re
import sys
from pathlib import Path

import numpy as np

from ._files import (  # InputFileError and MAX_FILE_BYTES re-exported: hetplace.io is their documented home
    MAX_FILE_BYTES,
    InputFileError,
    _digit_run,
    _input_path,
    _line_of,
    _read_input,
    _short,
)
from ._validation import COUNT_MAX, REAL_MAX, REAL_MIN, check_count_total
from .errors import InvalidOptionError, InvalidProblemError, InvalidProblemTypeError, MissingDependencyError
from .problem import MAX_WORKERS, Problem

__all__ = [
    "InputFileError",
    "OutputFileError",
    "ClusterSpec",
    "read_cluster",
    "cluster_from_dict",
    "read_jobs",
    "load_problem",
    "tenant_arrays",
    "write_cluster",
    "write_jobs",
    "write_placement",
    "parse_bandwidth",
    "parse_bytes",
    "MAX_FILE_BYTES",
]


# ------------------------------------------------------------------ reading a file
def _toml():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise MissingDependencyError(
                "reading cluster TOML files on Python 3.10 needs tomli: pip install tomli "
                "(Python 3.11+ has tomllib built in)."
            ) from None
    return tomllib


def _max_int_digits():
    """Most decimal digits ``int()`` converts (``sys.get_int_max_str_digits``; 4300 by default)."""
    getter = getattr(sys, "get_int_max_str_digits", None)
    return (getter() if getter else 0) or 4300


def _long_integer(text):
    """(line, key) of the first integer of more digits than Python converts to int, or None."""
    m = _digit_run(text, _max_int_digits() + 1, r"[0-9][0-9_]*")
    if m is None:
        return None
    line = _line_of(text, m.start())
    start = text.rfind("\n", 0, m.start()) + 1
    key = re.match(r"\s*([A-Za-z0-9_\-.\"' ]+?)\s*=", text[start:m.start()])
    return line, None if key is None else f"key {_short(key.group(1).strip())}"


# ------------------------------------------------------------------ quantities
_RATE_UNITS = {
    "b/s": 1.0, "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "tb/s": 1e12,
    "bit/s": 1 / 8, "kbit/s": 1e3 / 8, "mbit/s": 1e6 / 8, "gbit/s": 1e9 / 8, "tbit/s": 1e12 / 8,
    "bps": 1 / 8, "kbps": 1e3 / 8, "mbps": 1e6 / 8, "gbps": 1e9 / 8, "tbps": 1e12 / 8,
}
_BYTE_UNITS = {
    "b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
    "kib": 2.0**10, "mib": 2.0**20, "gib": 2.0**30, "tib": 2.0**40,
}
# the number as "digits[.digits]" or ".digits": one way to match each text, so a long cell
# that does not match fails in linear time (``[0-9]*\.?[0-9]+`` backtracks quadratically)
_QUANTITY = re.compile(r"^\s*((?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z/]*)\s*$")


def _quantity(text, units, default_unit):
    """``text`` (number or ``"<number> <unit>"``) in base units, or None when malformed."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        try:
            return float(text)
        except OverflowError:  # an integer beyond float64
            return None
    m = _QUANTITY.match(str(text))
    if not m:
        return None
    unit = (m.group(2) or default_unit).lower()
    if unit not in units:
        return None
    value = float(m.group(1)) * units[unit]
    return value if math.isfinite(value) else None  # "1e400" or "1e300GB" overflow: not a quantity


def parse_bandwidth(value):
    """Bandwidth in bytes/s from a number or a string such as ``"10Gbit/s"``, ``"1.25 GB/s"`` or ``"inf"``.

    Raises
    ------
    InvalidProblemError
        Malformed value, unknown unit, or not positive.
    """
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity", "none", "off"):
        return math.inf
    bw = _quantity(value, _RATE_UNITS, "b/s")
    if bw is None or not bw > 0 or math.isnan(bw):
        raise InvalidProblemError(
            f"bandwidth must be a positive number of bytes/s, a string such as \"10Gbit/s\" or "
            f"\"1.25GB/s\" (units: B/s, KB/s, MB/s, GB/s, bit/s, Kbit/s, Mbit/s, Gbit/s, Gbps), "
            f"or \"inf\" (no communication); got {_short(value)}."
        )
    return bw


def parse_bytes(value):
    """Bytes from a number or a string such as ``"100MB"``, ``"250 MiB"``.

    None when malformed or not a finite number (NaN, inf, a string beyond float64).
    """
    b = _quantity(value, _BYTE_UNITS, "b")
    return b if b is not None and math.isfinite(b) else None


# ------------------------------------------------------------------ cluster
class ClusterSpec:
    """A cluster read from TOML.

    Attributes
    ----------
    path : pathlib.Path or None
    type_names : list of str, length G
    type_counts : list of int, length G
    worker_speed : ndarray of float64, shape (K,), or None
        Per-worker available speed (None: all 1).
    bandwidth : float
        Bytes/s per worker link (``inf``: no communication).
    gavel : pathlib.Path or None
        Gavel table named by the file, resolved against the file's folder.
    topology : dict or None
        The ``Problem`` arguments ``node``, ``node_bandwidth`` (and ``rack``,
        ``rack_bandwidth``) of a cluster given as ``[[nodes]]``; None otherwise.
        ``bandwidth`` is then the top level's (between nodes, or racks).
    quotas : dict of str to dict of str to int
        ``{tenant name: {type name: most workers of that type}}`` of the
        ``[[quotas]]`` tables, in file order (docs/model.md §1.7); a type not
        named has no limit.  Empty without ``[[quotas]]``.
    """

    def __init__(self, type_names, type_counts, worker_speed=None, bandwidth=math.inf, gavel=None, path=None,
                 topology=None, quotas=None):
        self.type_names = list(type_names)
        self.type_counts = [int(c) for c in type_counts]
        self.worker_speed = None if worker_speed is None else np.asarray(worker_speed, dtype=np.float64)
        self.bandwidth = float(bandwidth)
        self.gavel = None if gavel is None else Path(gavel)
        self.path = None if path is None else Path(path)
        self.topology = None if topology is None else dict(topology)
        self.quotas = {} if quotas is None else {t: dict(q) for t, q in dict(quotas).items()}

    @property
    def n_workers(self):
        return sum(self.type_counts)

    def __repr__(self):
        return (
            f"ClusterSpec(types={dict(zip(self.type_names, self.type_counts))}, "
            f"bandwidth={self.bandwidth:.4g}, per_worker_speeds={self.worker_speed is not None}"
            + ("" if self.topology is None else f", nodes={self.topology['node_bandwidth'].size}"
               + ("" if "rack" not in self.topology else f", racks={self.topology['rack_bandwidth'].size}"))
            + ("" if not self.quotas else f", quotas={self.quotas}")
            + ")"
        )


_TYPE_KEYS = ("name", "count", "speeds")
_CLUSTER_KEYS = ("bandwidth", "gavel", "rack_bandwidth")
_TOP_KEYS = ("cluster", "types", "gavel", "nodes", "racks", "quotas")
_NODE_KEYS = ("count", "type", "gpus", "bandwidth", "rack")
_RACK_KEYS = ("name", "bandwidth")
_BANDWIDTH_EXAMPLE = "e.g. bandwidth = \"10Gbit/s\" or bandwidth = 1.25e9."


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def read_cluster(path):
    """Read a cluster TOML file (format in the module docstring).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    ClusterSpec

    Raises
    ------
    InputFileError
        Missing file, malformed TOML (with its line), unknown keys, missing or
        ill-typed fields -- the message names the field and the fix.
    MissingDependencyError
        Python 3.10 without ``tomli``.
    """
    path = _input_path(path, "cluster file")
    tomllib = _toml()
    text = _read_input(path, "cluster file", "a cluster TOML file (see examples/cluster.toml)")
    toml_fix = ("write key = value pairs, strings in double quotes, a [cluster] table and one [[types]] "
                "table per GPU type (see examples/cluster.toml).")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise InputFileError(path, f"malformed TOML ({exc}).", toml_fix, line=int(m.group(1)) if m else None) from None
    except RecursionError:
        raise InputFileError(path, "the TOML nests arrays or inline tables deeper than Python's recursion limit "
                             f"({sys.getrecursionlimit()}).", toml_fix) from None
    except ValueError as exc:  # tomllib's int(): more digits than Python converts
        where = _long_integer(text)
        if where is None:
            raise InputFileError(path, f"the TOML cannot be read ({exc}).", toml_fix) from None
        raise InputFileError(
            path, f"an integer has more than {_max_int_digits()} digits (more than Python reads).",
            "write counts as plain integers (at most 1,000,000 workers in all) and other numbers "
            "in their supported range (1e-30..1e30).", line=where[0], field=where[1]) from None
    return _cluster_doc(path, doc)


def cluster_from_dict(doc, *, source="cluster"):
    """A cluster from the data of a cluster TOML document (e.g. its JSON form).

    The same tables and keys as a cluster file (``cluster``, ``types`` or
    ``nodes``, ``racks``, ``quotas``), checked the same way; a path to a Gavel
    table (``gavel``) is refused, as the data may come from another machine.

    Parameters
    ----------
    doc : dict
        E.g. ``{"cluster": {"bandwidth": "25Gbit/s"}, "nodes": [{"type": "v100",
        "gpus": 8, "bandwidth": "300GB/s", "rack": "a"}]}``.
    source : str
        How messages name the document (default ``"cluster"``).

    Returns
    -------
    ClusterSpec

    Raises
    ------
    InputFileError
        Naming the field, the value and the fix (its ``field`` attribute the key path).
    """
    if not isinstance(doc, dict):
        raise InputFileError(source, f"a cluster must be a table (a JSON object); got {_short(doc)}.",
                             'give {"types": [{"name": "v100", "count": 8}]} or {"cluster": {"bandwidth": ...}, '
                             '"nodes": [...]}.')
    if "gavel" in doc or (isinstance(doc.get("cluster"), dict) and "gavel" in doc["cluster"]):
        raise InputFileError(source, "gavel names a file, which a cluster given as data may not.",
                             "give each job's throughputs instead.", field="gavel")
    spec = _cluster_doc(source, doc)
    spec.path = None
    return spec


def _cluster_doc(path, doc):
    """The :class:`ClusterSpec` of a parsed cluster document (``path`` names it in messages)."""
    for key in doc:
        if key not in _TOP_KEYS:
            raise InputFileError(path, f"unknown top-level key {_short(key)}.",
                                 f"use only {', '.join(_TOP_KEYS)} (types go in [[types]] tables).", field=key)
    cluster = doc.get("cluster", {})
    if not isinstance(cluster, dict):
        raise InputFileError(path, "'cluster' must be a table.", "write it as a [cluster] section.", field="cluster")
    for key in cluster:
        if key not in _CLUSTER_KEYS:
            raise InputFileError(path, f"unknown key {_short(key)} in [cluster].",
                                 f"use only {', '.join(_CLUSTER_KEYS)}.", field=f"cluster.{key}")

    bandwidth = math.inf
    if "bandwidth" in cluster:
        bandwidth = _bandwidth_field(path, cluster["bandwidth"], "cluster.bandwidth", _BANDWIDTH_EXAMPLE)

    gavel = None
    if "gavel" in doc and "gavel" in cluster:
        raise InputFileError(path, "gavel is given twice (top level and [cluster]).", "keep one of them.", field="gavel")
    raw_gavel = doc.get("gavel", cluster.get("gavel"))
    if raw_gavel is not None:
        field = "gavel" if "gavel" in doc else "cluster.gavel"
        if not isinstance(raw_gavel, str) or not raw_gavel.strip():
            raise InputFileError(path, f"gavel must be a path string; got {_short(raw_gavel)}.",
                                 "write gavel = \"path/to/throughputs.json\".", field=field)
        try:
            gavel = Path(raw_gavel).expanduser()
        except RuntimeError:  # "~name/..." with no user "name" (or no home directory)
            raise InputFileError(path, f"gavel {_short(raw_gavel)} starts with '~' but names no home directory "
                                 "that exists.", "write the path without '~', or as ~/path for your own home.",
                                 field=field) from None
        if not gavel.is_absolute():
            gavel = Path(os.path.normpath(path.parent / gavel))

    nodes = _read_nodes(path, doc)  # None without [[nodes]]
    if nodes is None:
        if "racks" in doc:
            raise InputFileError(path, "[[racks]] is given without [[nodes]].",
                                 "describe the nodes in [[nodes]] tables (each with its rack), or drop [[racks]].",
                                 field="racks")
        if "rack_bandwidth" in cluster:
            raise InputFileError(path, "rack_bandwidth is given without [[nodes]].",
                                 "describe the nodes in [[nodes]] tables (each with its rack), or drop rack_bandwidth.",
                                 field="cluster.rack_bandwidth")
    types = doc.get("types")
    if types is None and nodes is not None:  # the types of the nodes, in order of appearance
        types = [{"name": name} for name in dict.fromkeys(e["type"] for e in nodes)]
    if types is None:
        raise InputFileError(path, "no GPU types are defined.",
                             "add one [[types]] table per GPU type with name = \"...\" and count = N "
                             "(or [[nodes]] tables).", field="types")
    _check_tables(path, types, "types", "write one [[types]] section per GPU type (double brackets).")
    node_gpus = {}
    if nodes is not None:
        for e in nodes:
            node_gpus[e["type"]] = node_gpus.get(e["type"], 0) + e["count"] * e["gpus"]
    # first the names and counts, then (once their exact total is known to be supported) the speeds:
    # count = 10**12 must be an error, not a list of 10**12 speeds
    names, counts, labels, seen = [], [], [], set()
    for j, t in enumerate(types):
        label = f"[[types]] #{j + 1}" + (f" ({t['name'][:40]})" if isinstance(t.get("name"), str) else "")
        _check_keys(path, t, _TYPE_KEYS, label)
        name = t.get("name")
        if not isinstance(name, str) or not name.strip() or not re.fullmatch(r"[A-Za-z0-9_.\-]+", name.strip()):
            raise InputFileError(path, f"name must be a non-empty string of letters, digits, '_', '-' or '.'; got {_short(name)}.",
                                 "write e.g. name = \"v100\".", field=f"{label}, key 'name'")
        name = name.strip()
        if name in seen:
            raise InputFileError(path, f"GPU type {_short(name)} is defined twice.",
                                 "merge the two [[types]] tables (add their counts).", field=f"{label}, key 'name'")
        count = t.get("count")
        if count is None and nodes is not None:
            count = node_gpus.get(name, 0)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InputFileError(path, f"count must be a non-negative integer; got {_short(count)}.",
                                 "write e.g. count = 4 (no quotes).", field=f"{label}, key 'count'")
        if nodes is not None and count != node_gpus.get(name, 0):
            raise InputFileError(
                path, f"count = {count} but the [[nodes]] of type {_short(name)} hold {node_gpus.get(name, 0)} GPUs.",
                "make count the sum of count * gpus over the [[nodes]] of this type, or drop count "
                "(it is then that sum).", field=f"{label}, key 'count'")
        names.append(name)
        seen.add(name)
        counts.append(count)
        labels.append(label)
    unknown = [e for e in nodes or () if e["type"] not in seen]
    if unknown:
        e = unknown[0]
        raise InputFileError(path, f"type {_short(e['type'])} is not a GPU type of the [[types]] tables "
                             f"({', '.join(names)}).", "name one of those types, or add a [[types]] table "
                             "for it.", field=f"{e['label']}, key 'type'")
    total = check_count_total(
        "the key count of the [[types]] tables", counts, limit=MAX_WORKERS,
        error=lambda msg: InputFileError(path, msg, f"give at most {MAX_WORKERS:,} workers in all (split the "
                                         "cluster into several files).", field="types"),
    )
    if total == 0:
        raise InputFileError(path, "the cluster has no workers (every count is 0).",
                             "give at least one type a positive count.", field="types")
    speeds = []
    any_speed = False
    for t, count, label in zip(types, counts, labels):
        sp = t.get("speeds")
        if sp is None:
            sp = [1.0] * count
        else:
            any_speed = True
            if not isinstance(sp, list) or not all(_is_number(v) for v in sp):
                raise InputFileError(path, f"speeds must be a list of numbers; got {_short(sp)}.",
                                     f"write e.g. speeds = [{', '.join(['1.0'] * min(count, 3))}{', ...' if count > 3 else ''}]"
                                     " (one per worker).", field=f"{label}, key 'speeds'")
            if len(sp) != count:
                raise InputFileError(path, f"speeds has {len(sp)} entries but count = {count}.",
                                     "give one speed per worker of this type, or drop speeds (all 1).",
                                     field=f"{label}, key 'speeds'")
            bad = [v for v in sp if not (0 < v <= 1) or math.isnan(v)]
            if bad:
                raise InputFileError(path, f"speeds must lie in (0, 1]; got {_short(bad[0])}.",
                                     "give each worker's available fraction of its nominal speed "
                                     "(divide by the fastest worker's speed).", field=f"{label}, key 'speeds'")
            tiny = [v for v in sp if v < REAL_MIN]
            if tiny:
                raise InputFileError(path, f"speeds must be at least {REAL_MIN:g} (the supported range); "
                                     f"got {_short(tiny[0])}.", "give each worker's available fraction of its "
                                     "nominal speed; drop a worker that is this slow.", field=f"{label}, key 'speeds'")
        speeds.extend(float(v) for v in sp)
    topology = None
    if nodes is not None:
        if "bandwidth" not in cluster:
            raise InputFileError(path, "a cluster of [[nodes]] needs the bandwidth between its nodes (between its "
                                 "racks when [[nodes]] name racks).", "add bandwidth = \"100Gbit/s\" (say) to "
                                 "[cluster]; \"inf\" makes those links free.", field="cluster.bandwidth")
        topology = _topology(path, nodes, names, doc, cluster)
    quotas = _read_quotas(path, doc.get("quotas"), names)
    return ClusterSpec(names, counts, speeds if any_speed else None, bandwidth, gavel, path, topology=topology,
                       quotas=quotas)


def _bandwidth_field(path, value, field, example):
    """Bytes/s of the cluster file's ``field`` (:func:`parse_bandwidth`, in the supported range), or raise."""
    try:
        bw = parse_bandwidth(value)
    except InvalidProblemError as exc:
        raise InputFileError(path, str(exc), example, field=field) from None
    if math.isfinite(bw) and not REAL_MIN <= bw <= REAL_MAX:
        raise InputFileError(path, f"bandwidth must lie in [{REAL_MIN:g}, {REAL_MAX:g}] bytes/s (the supported "
                             f"range) or be \"inf\"; got {_short(value)}.", example, field=field)
    return bw


def _positive_int(path, value, field, fix):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputFileError(path, f"it must be a positive integer; got {_short(value)}.", fix, field=field)
    return value


def _rack_label(value):
    """A rack name as written (a string or an integer), or None when it is neither."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    return str(value).strip() or None


def _check_tables(path, raw, name, fix, empty=False):
    """Refuse ``raw`` unless it is an array of tables (``[[name]]`` sections), non-empty unless ``empty``."""
    if not isinstance(raw, list) or not (raw or empty) or not all(isinstance(t, dict) for t in raw):
        raise InputFileError(path, f"'{name}' must be an array of tables.", fix, field=name)


def _check_keys(path, table, keys, label):
    """Refuse a key of ``table`` (the TOML table ``label``, e.g. "[[nodes]] #2") that is not one of ``keys``."""
    for key in table:
        if key not in keys:
            raise InputFileError(path, f"unknown key {_short(key)}.", f"use only {', '.join(keys)}.",
                                 field=f"{label}, key {_short(key)}")


def _read_nodes(path, doc):
    """The ``[[nodes]]`` tables as dicts (count, type, gpus, bandwidth, rack, label), in file order; None without."""
    raw = doc.get("nodes")
    if raw is None:
        return None
    _check_tables(path, raw, "nodes", "write one [[nodes]] section per kind of node (double brackets).")
    out = []
    for j, t in enumerate(raw):
        label = f"[[nodes]] #{j + 1}"
        _check_keys(path, t, _NODE_KEYS, label)
        count = _positive_int(path, t.get("count", 1), f"{label}, key 'count'",
                              "write how many such nodes, e.g. count = 4 (no quotes; default 1).")
        name = t.get("type")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]+", name.strip()):
            raise InputFileError(path, f"type must name a GPU type (letters, digits, '_', '-' or '.'); got "
                                 f"{_short(name)}.", "write e.g. type = \"v100\".", field=f"{label}, key 'type'")
        gpus = _positive_int(path, t.get("gpus"), f"{label}, key 'gpus'",
                             "write the GPUs of each node, e.g. gpus = 8 (no quotes).")
        if "bandwidth" not in t:
            raise InputFileError(path, "the bandwidth of the links inside these nodes is missing.",
                                 "add e.g. bandwidth = \"300GB/s\" (NVLink) or bandwidth = \"32GB/s\" (PCIe).",
                                 field=f"{label}, key 'bandwidth'")
        bw = _bandwidth_field(path, t["bandwidth"], f"{label}, key 'bandwidth'",
                              "e.g. bandwidth = \"300GB/s\" (NVLink) or bandwidth = \"32GB/s\" (PCIe).")
        rack = None
        if "rack" in t:
            rack = _rack_label(t["rack"])
            if rack is None:
                raise InputFileError(path, f"rack must be a name or a number; got {_short(t['rack'])}.",
                                     "write e.g. rack = \"a\" or rack = 0.", field=f"{label}, key 'rack'")
        out.append({"count": count, "type": name.strip(), "gpus": gpus, "bandwidth": bw, "rack": rack,
                    "label": label})
    with_rack = [e["rack"] is not None for e in out]
    if any(with_rack) and not all(with_rack):
        e = out[with_rack.index(False)]
        raise InputFileError(path, "some [[nodes]] name a rack and others do not.",
                             "give every [[nodes]] table a rack (or none of them).", field=f"{e['label']}, key 'rack'")
    check_count_total(
        "the GPUs of the [[nodes]] tables (count * gpus)", [e["count"] * e["gpus"] for e in out], limit=MAX_WORKERS,
        error=lambda msg: InputFileError(path, msg, f"give at most {MAX_WORKERS:,} workers in all (split the "
                                         "cluster into several files).", field="nodes"),
    )
    return out


def _topology(path, nodes, names, doc, cluster):
    """Problem(node=, node_bandwidth=, rack=, rack_bandwidth=) of the ``[[nodes]]`` (docs/bench.md).

    Nodes are numbered type by type (the order of ``names``), in file order
    within a type; workers likewise (a node's GPUs are consecutive).  Racks are
    numbered in the order they first appear among the numbered nodes.
    """
    order = sorted(range(len(nodes)), key=lambda j: names.index(nodes[j]["type"]))  # stable: file order in a type
    node_gpus, node_bw, node_rack = [], [], []
    for j in order:
        e = nodes[j]
        node_gpus += [e["gpus"]] * e["count"]
        node_bw += [e["bandwidth"]] * e["count"]
        node_rack += [e["rack"]] * e["count"]
    node = np.repeat(np.arange(len(node_gpus), dtype=np.int64), node_gpus)
    out = {"node": node, "node_bandwidth": np.array(node_bw, dtype=np.float64)}
    if nodes[0]["rack"] is None:
        if "racks" in doc or "rack_bandwidth" in cluster:
            raise InputFileError(path, "rack bandwidths are given but no [[nodes]] table names a rack.",
                                 "add rack = \"...\" to every [[nodes]] table, or drop "
                                 + ("[[racks]]." if "racks" in doc else "rack_bandwidth."),
                                 field="racks" if "racks" in doc else "cluster.rack_bandwidth")
        return out
    rack_names = list(dict.fromkeys(node_rack))
    default = None
    if "rack_bandwidth" in cluster:
        default = _bandwidth_field(path, cluster["rack_bandwidth"], "cluster.rack_bandwidth",
                                   "e.g. rack_bandwidth = \"200Gbit/s\" (the links between the nodes of a rack).")
    per_rack = {}
    racks = doc.get("racks", [])
    _check_tables(path, racks, "racks", "write one [[racks]] section per rack (double brackets), with name and "
                  "bandwidth.", empty=True)
    for j, t in enumerate(racks):
        label = f"[[racks]] #{j + 1}"
        _check_keys(path, t, _RACK_KEYS, label)
        name = _rack_label(t.get("name"))
        if name is None:
            raise InputFileError(path, f"name must be the rack's name as [[nodes]] write it; got {_short(t.get('name'))}.",
                                 "write e.g. name = \"a\".", field=f"{label}, key 'name'")
        if name not in rack_names:
            raise InputFileError(path, f"rack {_short(name)} holds no node (the [[nodes]] name "
                                 f"{', '.join(map(repr, rack_names))}).", "name a rack of the [[nodes]] tables, or "
                                 "drop this table.", field=f"{label}, key 'name'")
        if name in per_rack:
            raise InputFileError(path, f"rack {_short(name)} is given twice.", "keep one [[racks]] table per rack.",
                                 field=f"{label}, key 'name'")
        if "bandwidth" not in t:
            raise InputFileError(path, "the bandwidth between the nodes of this rack is missing.",
                                 "add e.g. bandwidth = \"200Gbit/s\".", field=f"{label}, key 'bandwidth'")
        per_rack[name] = _bandwidth_field(path, t["bandwidth"], f"{label}, key 'bandwidth'",
                                          "e.g. bandwidth = \"200Gbit/s\".")
    missing = [r for r in rack_names if r not in per_rack and default is None]
    if missing:
        raise InputFileError(path, f"rack {_short(missing[0])} has no bandwidth (the links between its nodes).",
                             "add rack_bandwidth = \"200Gbit/s\" (say) to [cluster] for every rack, or a [[racks]] "
                             f"table with name = {json.dumps(missing[0])} and its bandwidth.", field="racks")
    ids = {r: t for t, r in enumerate(rack_names)}
    out["rack"] = np.array([ids[r] for r in node_rack], dtype=np.int64)
    out["rack_bandwidth"] = np.array([per_rack.get(r, default) for r in rack_names], dtype=np.float64)
    return out


# ------------------------------------------------------------------ tenants and quotas
def _quota_number(value):
    """``(quota, None)`` of a quota value (an int, or ``math.inf`` for no limit), or ``(None, what is wrong)``."""
    if isinstance(value, str):
        if value.strip().lower() in ("inf", "infinity"):
            return math.inf, None
        return None, "is a string, not a number"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None, "is not a number"
    if isinstance(value, (int, np.integer)):
        if value < 0:
            return None, "is negative"
        if value > COUNT_MAX:
            return None, f"is above 2**53 = {COUNT_MAX} (the largest count supported)"
        return int(value), None
    v = float(value)
    if math.isnan(v):
        return None, "is not a number (nan)"
    if v < 0:
        return None, "is negative"
    if math.isinf(v):
        return math.inf, None
    if v != round(v):
        return None, "is not a whole number"
    if v > COUNT_MAX:
        return None, f"is above 2**53 = {COUNT_MAX} (the largest count supported)"
    return int(v), None


def _type_hint(key, names):
    """The fix for a quota key ``key`` that names no GPU type of ``names``."""
    close = [n for n in names if n.lower() == str(key).strip().lower()]
    if close:
        return f"write the type as the cluster names it: {close[0]}."
    return f"name one of the cluster's types ({', '.join(names)}), or drop the key (no limit on that type)."


def _read_quotas(path, raw, names):
    """``{tenant: {type: int}}`` of the ``[[quotas]]`` tables (file order; ``"inf"`` dropped), ``{}`` without."""
    if raw is None:
        return {}
    _check_tables(path, raw, "quotas", "write one [[quotas]] section per tenant (double brackets), with "
                  "tenant = \"name\" and one key per limited GPU type, e.g. v100 = 4.", empty=True)
    if raw and "tenant" in names:
        raise InputFileError(path, "a GPU type is named 'tenant', the key [[quotas]] tables give the tenant's "
                             "name with.", "rename that GPU type (e.g. \"tenant-gpu\") in [[types]] / [[nodes]] "
                             "and in the job file's throughput_ column.", field="quotas")
    out, first = {}, {}
    for j, t in enumerate(raw):
        name = t.get("tenant")
        label = f"[[quotas]] #{j + 1}" + (f" ({name.strip()[:40]})" if isinstance(name, str) and name.strip() else "")
        if "tenant" not in t:
            raise InputFileError(path, "the tenant's name is missing.", "add tenant = \"team-a\" (the name the "
                                 "job file's tenant column gives that tenant's jobs).", field=f"{label}, key 'tenant'")
        if not isinstance(name, str) or not name.strip():
            raise InputFileError(path, f"tenant must be a non-empty string; got {_short(name)}.",
                                 "write the name in double quotes, e.g. tenant = \"team-a\" (as in the job file's "
                                 "tenant column).", field=f"{label}, key 'tenant'")
        name = name.strip()
        if name in out:
            raise InputFileError(path, f"tenant {_short(name)} has two [[quotas]] tables (#{first[name]} and "
                                 f"#{j + 1}).", "merge them into one table per tenant.",
                                 field=f"{label}, key 'tenant'")
        limits = {}
        for key, value in t.items():
            if key == "tenant":
                continue
            if key not in names:
                raise InputFileError(path, f"{_short(key)} is not a GPU type of the cluster "
                                     f"({', '.join(names)}).", _type_hint(key, names),
                                     field=f"{label}, key {_short(key)}")
            q, wrong = _quota_number(value)
            if wrong is not None:
                raise InputFileError(path, f"the quota of type {key} must be a whole number of workers >= 0, or "
                                     f"\"inf\" for no limit; got {_short(value)}, which {wrong}.",
                                     f"write a whole number of workers >= 0 with no quotes, e.g. {key} = 4 (leave the "
                                     "type out for no limit).",
                                     field=f"{label}, key {_short(key)}")
            if math.isfinite(q):
                limits[key] = q
        out[name] = limits
        first[name] = j + 1
    return out


def tenant_arrays(quotas, tenants, type_names):
    """The ``Problem(tenant=, quota=)`` arguments of named tenants (docs/model.md §1.7).

    Parameters
    ----------
    quotas : dict of str to dict of str to int, or None
        ``{tenant name: {type name: most workers of that type}}``, e.g.
        :attr:`ClusterSpec.quotas`.  A type not named, or a quota of ``inf``
        (or ``"inf"``), has no limit; a tenant may have no job.
    tenants : sequence of str or None, or None
        The tenant name of each job; None or ``""`` for a job of no tenant
        (``tenants=None``: no job names a tenant).
        A name that ``quotas`` does not give has no limit.
    type_names : sequence of str
        The problem's GPU types, in order (the columns of ``quota``).

    Returns
    -------
    names : list of str
        The tenants by index: the keys of ``quotas`` in order, then the
        other names of ``tenants`` in order of first appearance.
    tenant : ndarray of int64, shape (S,), or None
        Index of each job's tenant in ``names``, -1 for none.
    quota : ndarray of float64, shape (len(names), G), or None
        Most workers of each type per tenant, ``inf`` for no limit.
        ``tenant`` and ``quota`` are None when ``names`` is empty (a problem
        without tenants).

    Raises
    ------
    InvalidProblemError
        ``quotas`` is not such a dict, names a type not in ``type_names``, or
        holds a quota that is not a whole number >= 0 or ``inf``; a tenant
        name is not a non-empty string.

    Examples
    --------
    >>> names, tenant, quota = tenant_arrays({"a": {"v100": 4}}, ["b", None, "a"], ["k80", "v100"])
    >>> names, tenant.tolist(), quota.tolist()
    (['a', 'b'], [1, -1, 0], [[inf, 4.0], [inf, inf]])
    """
    from collections.abc import Mapping

    type_names = list(type_names)
    if quotas is None:
        quotas = {}
    if not isinstance(quotas, Mapping):
        raise InvalidProblemError(f"quotas must be a dict {{tenant name: {{type name: max GPUs}}}}; got "
                                  f"{_short(quotas)}. Pass e.g. quotas={{'team-a': {{'v100': 4}}}}.")
    names, rows = [], []
    for name, limits in quotas.items():
        if not isinstance(name, str) or not name.strip():
            raise InvalidProblemError(f"quotas has the key {_short(name)}, not a tenant name. Use non-empty "
                                      "strings as keys, e.g. quotas={'team-a': {'v100': 4}}.")
        if not isinstance(limits, Mapping):
            raise InvalidProblemError(f"quotas[{name!r}] must be a dict {{type name: max GPUs}}; got "
                                      f"{_short(limits)}. Pass e.g. {{'v100': 4}} ({{}} for no limit).")
        row = np.full(len(type_names), math.inf)
        for key, value in limits.items():
            if key not in type_names:
                hint = _type_hint(key, type_names)
                raise InvalidProblemError(f"quotas[{name!r}] names {_short(key)}, not a GPU type of the problem "
                                          f"({', '.join(map(str, type_names))}). {hint[0].upper()}{hint[1:]}")
            q, wrong = _quota_number(value)
            if wrong is not None:
                raise InvalidProblemError(f"quotas[{name!r}][{key!r}] = {_short(value)} {wrong}. Give a whole "
                                          "number of workers >= 0, or inf (or leave the type out) for no limit.")
            row[type_names.index(key)] = q
        names.append(name)
        rows.append(row)
    index = {n: t for t, n in enumerate(names)}
    if tenants is None:
        tenants = []
    if isinstance(tenants, (str, bytes, Mapping)) or not hasattr(tenants, "__iter__"):
        raise InvalidProblemError(f"tenants must be a sequence of one tenant name (or None) per job; got "
                                  f"{_short(tenants)}. Pass e.g. ['team-a', None, 'team-b'].")
    tenant = []
    for i, name in enumerate(tenants):
        if name is None or (isinstance(name, str) and not name.strip()):
            tenant.append(-1)
            continue
        if not isinstance(name, str):
            raise InvalidProblemError(f"tenants[{i}] = {_short(name)} is not a tenant name. Give a string, or "
                                      "None for a job of no tenant.")
        if name not in index:
            index[name] = len(names)
            names.append(name)
            rows.append(np.full(len(type_names), math.inf))
        tenant.append(index[name])
    if not names:
        return [], None, None
    return names, np.array(tenant, dtype=np.int64), np.array(rows, dtype=np.float64).reshape(len(names), -1)


def _default_tenant_names(problem, tenant_names, what="tenant_names"):
    """``tenant_names`` checked against ``problem`` (one distinct non-empty str per tenant), or ``tenant<t>``."""
    T = problem.n_tenants
    if tenant_names is None:
        return [f"tenant{t}" for t in range(T)]
    if isinstance(tenant_names, (str, bytes)) or not hasattr(tenant_names, "__len__"):
        raise InvalidOptionError(f"{what} must be a list of {T} tenant names (one per row of problem.quota); got "
                                 f"{_short(tenant_names)}.")
    names = list(tenant_names)
    if len(names) != T:
        raise InvalidOptionError(f"{what} has {len(names)} names but the problem has {T} tenants; give one name "
                                 "per row of problem.quota (or None for tenant0, tenant1, ...).")
    for t, n in enumerate(names):
        if not isinstance(n, str) or not n.strip() or n != n.strip():
            raise InvalidOptionError(f"{what}[{t}] = {_short(n)} is not a tenant name; give a non-empty string "
                                     "without leading or trailing spaces.")
    if len(set(names)) != T:
        dup = next(n for n in names if names.count(n) > 1)
        raise InvalidOptionError(f"{what} names tenant {dup!r} twice; give every tenant its own name.")
    return names


def _quota_usage_doc(placement, tenant_names=None):
    """Workers used and quota per tenant and type of ``placement``, as JSON-ready data.

    Parameters
    ----------
    placement : Placement
        Of a problem with tenants (``problem.tenant`` not None).
    tenant_names : list of str, optional
        One name per tenant (default ``tenant0``, ``tenant1``, ...).

    Returns
    -------
    dict
        ``{tenant name: {type name: {"used": int, "quota": int or None}}}``
        (None: no limit), tenants in index order, every type listed.
    """
    from ._quota import quota_usage

    p = placement.problem
    names = _default_tenant_names(p, tenant_names)
    used = quota_usage(p.tenant, p.n_tenants, np.asarray(placement.worker_job), p.worker_type, p.n_types)
    return {
        names[t]: {p.type_names[g]: {"used": int(used[t, g]),
                                     "quota": int(p.quota[t, g]) if math.isfinite(p.quota[t, g]) else None}
                   for g in range(p.n_types)}
        for t in range(p.n_tenants)
    }


def _format_quota_usage(placement, tenant_names=None):
    """Text table of the workers each tenant's jobs hold against its quotas (``used/quota``, ``-``: no limit).

    Parameters
    ----------
    placement : Placement
        Of a problem with tenants.
    tenant_names : list of str, optional
        As :func:`_quota_usage_doc`.

    Returns
    -------
    str
    """
    p = placement.problem
    doc = _quota_usage_doc(placement, tenant_names)
    jobs = np.bincount(p.tenant[p.tenant >= 0], minlength=p.n_tenants)
    cells = [[f"{c['used']}/{'-' if c['quota'] is None else c['quota']}" for c in row.values()] for row in doc.values()]
    nw = max(6, *(len(n) for n in doc))
    cw = [max(len(t), *(len(r[g]) for r in cells)) for g, t in enumerate(p.type_names)]
    lines = ["GPUs per tenant: used/quota (- = no limit)",
             f"{'tenant':<{nw}}  {'jobs':>4}  " + "  ".join(f"{t:>{w}}" for t, w in zip(p.type_names, cw))]
    for t, name in enumerate(doc):
        lines.append(f"{name:<{nw}}  {int(jobs[t]):>4}  " + "  ".join(f"{c:>{w}}" for c, w in zip(cells[t], cw)))
    return "\n".join(lines)


def _placement_doc(placement, tenant_names=None):
    """:meth:`Placement.to_dict`, with each job's ``tenant`` (name or None) and a ``quotas`` block
    (:func:`_quota_usage_doc`) when the problem has tenants."""
    doc = placement.to_dict()
    p = placement.problem
    if p.tenant is None:
        return doc
    names = _default_tenant_names(p, tenant_names)
    for i, job in enumerate(doc["jobs"]):
        job["tenant"] = names[p.tenant[i]] if p.tenant[i] >= 0 else None
    doc["quotas"] = _quota_usage_doc(placement, names)
    return doc


# ------------------------------------------------------------------ jobs
_BASE_COLUMNS = ("name", "model", "batch", "iterations", "grad_bytes", "tenant")


def _number(text, path, line, column, what, fix):
    try:
        v = float(text)
    except ValueError:
        raise InputFileError(path, f"{_short(text)} is not a number ({what}).", fix, line=line,
                             field=f"column {column!r}") from None
    if not math.isfinite(v):
        raise InputFileError(path, f"{_short(text)} is not a finite number ({what}).", fix, line=line,
                             field=f"column {column!r}")
    _check_range(v, text, path, line, column, what)
    return v


def _check_range(v, text, path, line, column, what):
    if v != 0 and not REAL_MIN <= abs(v) <= REAL_MAX:
        raise InputFileError(path, f"{_short(text)} is outside the supported range ({what}: 0 or a magnitude in "
                             f"[{REAL_MIN:g}, {REAL_MAX:g}]).", "rescale the units (e.g. per hour instead of "
                             "per second, MB instead of bytes).", line=line, field=f"column {column!r}")


def _csv_rows(reader, path, text, header):
    """The rows of ``reader``; a ``csv.Error`` (e.g. a cell beyond the field limit) as an :class:`InputFileError`.

    ``header`` is a list the caller fills with the column names once it has
    read them (to name the column of an over-long cell).
    """
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            line = reader.line_num
            field = None
            if "field limit" in str(exc):
                # the column, when the line has no quotes (then splitting on commas is exact)
                lines = text.splitlines()
                raw = lines[line - 1] if 0 < line <= len(lines) else ""
                cells = raw.split(",")
                if '"' not in raw and any(len(c) > csv.field_size_limit() for c in cells):
                    j = next(j for j, c in enumerate(cells) if len(c) > csv.field_size_limit())
                    field = f"column {_short(header[j])}" if j < len(header) else f"column {j + 1}"
                problem = f"a cell is longer than {csv.field_size_limit():,} characters (the csv module's limit)."
            else:
                problem = f"the line cannot be read as CSV ({exc})."
            raise InputFileError(path, problem, "keep every cell short (names, numbers, model strings); check "
                                 "for an unclosed double quote.", line=line, field=field) from None
        yield row


def read_jobs(path, cluster, gavel=None):
    """Read a job CSV file against ``cluster`` (format in the module docstring).

    Parameters
    ----------
    path : str or path-like
    cluster : ClusterSpec
        Fixes the GPU types the ``throughput_<type>`` columns may name.
    gavel : GavelTable or path-like, optional
        Table for the ``model`` column; default ``cluster.gavel``.

    Returns
    -------
    dict
        ``throughput`` (S, G) float64, ``batch`` (S,) int64, ``iterations``
        (S,) float64, ``grad_bytes`` (S,) float64, ``job_names`` list of str,
        ``tenant`` list of str or None (None: no tenant, or no ``tenant``
        column).

    Raises
    ------
    InputFileError
        Missing/unknown columns, unknown GPU types or model names, empty or
        non-numeric cells, no jobs -- naming the line and column.
    """
    from .data import DEFAULT_GRAD_BYTES, GavelTable, load_gavel

    path = _input_path(path, "job file")
    if not isinstance(cluster, ClusterSpec):
        raise InvalidProblemTypeError(
            f"cluster must be a hetplace.io.ClusterSpec (from read_cluster); got {type(cluster).__name__}."
        )
    text = _read_input(path, "job file", "a job CSV file (see examples/jobs.csv)", encoding="utf-8-sig")

    reader = csv.reader(_io.StringIO(text, newline=""))
    columns = []
    rows = _csv_rows(reader, path, text, columns)
    header = None
    for row in rows:
        if row and any(c.strip() for c in row) and not row[0].lstrip().startswith("#"):
            header = [c.strip() for c in row]
            break
    if header is None:
        raise InputFileError(path, "the job file is empty.",
                             "write a header line such as name,model,batch,iterations,grad_bytes and one line per job.")
    header_line = reader.line_num
    columns.extend(header)
    types = cluster.type_names
    col = {}
    for j, name in enumerate(header):
        key = name.lower()
        if not key:
            raise InputFileError(path, f"header column {j + 1} is empty.", "name every column or delete the empty one.",
                                 line=header_line)
        if key in col:
            raise InputFileError(path, f"column {_short(name)} appears twice.", "keep one of them.", line=header_line)
        if key.startswith("throughput_"):
            t = name[len("throughput_"):]
            if t not in types:
                hint = [x for x in types if x.lower() == t.lower()]
                raise InputFileError(
                    path, f"column {_short(name)} names the unknown GPU type {_short(t)}; "
                    f"{cluster.path or 'the cluster'} defines {', '.join(types)}.",
                    f"rename it to throughput_{hint[0]}." if hint else
                    f"rename it to one of {', '.join('throughput_' + x for x in types)} or add a "
                    f"[[types]] table named {_short(t)} to the cluster file.",
                    line=header_line, field=f"column {_short(name)}")
            col[f"throughput_{t}"] = j
        elif key in _BASE_COLUMNS:
            col[key] = j
        else:
            raise InputFileError(
                path, f"unknown column {_short(name)}.",
                f"use only {', '.join(_BASE_COLUMNS)} and throughput_<type> with a type of the cluster "
                f"({', '.join(types)}).", line=header_line, field=f"column {_short(name)}")
    missing = [c for c in ("batch", "iterations") if c not in col]
    tp_cols = [f"throughput_{t}" for t in types if f"throughput_{t}" in col]
    if not tp_cols and "model" not in col:
        missing.append("model or throughput_<type>")
    if missing:
        raise InputFileError(
            path, f"missing column(s) {', '.join(missing)} (header: {', '.join(header)}).",
            "the header needs batch, iterations, and either model (a Gavel model string) or one "
            f"throughput_<type> column per GPU type ({', '.join('throughput_' + t for t in types)}).",
            line=header_line)

    table = gavel if gavel is not None else cluster.gavel
    rho, batch, iters, grad, names, tenants, seen = [], [], [], [], [], [], set()
    for row in rows:
        line = reader.line_num
        if not row or not any(c.strip() for c in row) or row[0].lstrip().startswith("#"):
            continue
        if len(row) != len(header):
            raise InputFileError(path, f"the line has {len(row)} cells but the header has {len(header)}.",
                                 "give every line one cell per header column (leave optional ones empty; "
                                 "quote cells that contain commas).", line=line)

        def cell(name):
            return row[col[name]].strip() if name in col else ""

        i = len(names)
        name = cell("name") or f"job{i}"
        if name in seen:
            raise InputFileError(path, f"job name {_short(name)} is used twice.", "give every job its own name.",
                                 line=line, field="column 'name'")
        model = cell("model")
        r = np.full(len(types), np.nan)
        for g, t in enumerate(types):
            c = f"throughput_{t}"
            if cell(c):
                v = _number(cell(c), path, line, c, "samples/s on one worker",
                            "write samples/s of the job on ONE worker of this type (0 = cannot run there).")
                if v < 0:
                    raise InputFileError(path, f"throughput {_short(v)} is negative.",
                                         "write samples/s >= 0 (0 = the job cannot run on this type).",
                                         line=line, field=f"column {_short(c)}")
                r[g] = v
        if model:
            if table is None:
                raise InputFileError(
                    path, f"model {_short(model)} needs a Gavel throughput table, and none is given.",
                    "add gavel = \"path/to/throughputs.json\" to the cluster file (or pass --gavel PATH), "
                    "or give throughput_<type> columns instead of model.", line=line, field="column 'model'")
            if not isinstance(table, GavelTable):
                try:
                    table = load_gavel(table)
                except InvalidProblemError as exc:
                    raise InputFileError(cluster.path or path, f"the Gavel table cannot be read: {exc}",
                                         "fix the gavel path in the cluster file (relative paths are "
                                         "relative to that file).", field="gavel") from None
            if model not in table.models:
                close = [m for m in table.models if table.family(m).lower() == table.family(model).lower()]
                raise InputFileError(
                    path, f"unknown model {_short(model)} (not in {table.path}).",
                    f"use one of {', '.join(repr(m) for m in close)}." if close else
                    f"use a model string of the table, e.g. {table.models[0]!r} "
                    f"(all: {', '.join(table.models)})." if table.models else
                    "the table has no single-GPU measurements of any model: pass a Gavel table that has "
                    "them, or give throughput_<type> columns instead of model.", line=line, field="column 'model'")
            for g, t in enumerate(types):
                if np.isnan(r[g]):
                    if t not in table.types:
                        raise InputFileError(
                            path, f"GPU type {_short(t)} (from {cluster.path or 'the cluster'}) has no throughputs in "
                            f"{table.path} (it has {', '.join(table.types)}).",
                            f"add a throughput_{t} column for this job, or rename the type in the cluster file.",
                            line=line, field="column 'model'")
                    r[g] = table.samples_per_second(model, t)
        else:
            blank = [f"throughput_{t}" for g, t in enumerate(types) if np.isnan(r[g])]
            if blank:
                raise InputFileError(
                    path, f"no model and no value for {', '.join(blank)}.",
                    "give a throughput for every GPU type (0 = cannot run there), or a Gavel model string.",
                    line=line, field=f"column {_short(blank[0])}")
        b_text = cell("batch")
        if not b_text:
            raise InputFileError(path, "batch is empty.", "write the global batch (samples per iteration), e.g. 256.",
                                 line=line, field="column 'batch'")
        b = _number(b_text, path, line, "batch", "global batch", "write a positive whole number of samples, e.g. 256.")
        if b <= 0 or b != round(b):
            raise InputFileError(path, f"batch must be a positive whole number; got {_short(b_text)}.",
                                 "write a positive whole number of samples, e.g. 256.", line=line, field="column 'batch'")
        if b > COUNT_MAX:
            raise InputFileError(path, f"batch must be at most 2**53 = {COUNT_MAX}; got {_short(b_text)}.",
                                 "write the global batch in samples per iteration, e.g. 256.", line=line,
                                 field="column 'batch'")
        t_text = cell("iterations")
        if not t_text:
            raise InputFileError(path, "iterations is empty.", "write the iterations the job still has to run, e.g. 20000.",
                                 line=line, field="column 'iterations'")
        it = _number(t_text, path, line, "iterations", "iterations to run", "write a positive number, e.g. 20000.")
        if it <= 0:
            raise InputFileError(path, f"iterations must be > 0; got {_short(t_text)}.", "write a positive number, e.g. 20000.",
                                 line=line, field="column 'iterations'")
        g_text = cell("grad_bytes")
        if g_text:
            gb = parse_bytes(g_text)
            if gb is None or not math.isfinite(gb) or gb < 0:
                raise InputFileError(path, f"{_short(g_text)} is not a byte count (gradient size).",
                                     "write bytes >= 0 as a number (100e6) or with a unit (100MB, 250MiB), or leave it empty.",
                                     line=line, field="column 'grad_bytes'")
            _check_range(gb, g_text, path, line, "grad_bytes", "gradient bytes")
        elif model:
            gb = DEFAULT_GRAD_BYTES.get(table.family(model).split(" ")[0], 50e6)
        else:
            gb = 0.0
        rho.append(r)
        batch.append(int(b))
        iters.append(it)
        grad.append(gb)
        names.append(name)
        tenants.append(cell("tenant") or None)
        seen.add(name)
    if not names:
        raise InputFileError(path, "the job file has a header but no jobs.", "add one line per job below the header.")
    return {
        "throughput": np.array(rho, dtype=np.float64),
        "batch": np.array(batch, dtype=np.int64),
        "iterations": np.array(iters, dtype=np.float64),
        "grad_bytes": np.array(grad, dtype=np.float64),
        "job_names": names,
        "tenant": tenants,
    }


def load_problem(cluster, jobs, gavel=None, *, return_tenant_names=False):
    """Build a :class:`~hetplace.Problem` from a cluster TOML and a job CSV.

    Parameters
    ----------
    cluster : str, path-like or ClusterSpec
    jobs : str or path-like
    gavel : GavelTable or path-like, optional
        Overrides the cluster file's ``gavel``.
    return_tenant_names : bool, default False
        Also return the tenant names, by index (:func:`tenant_arrays`).

    Returns
    -------
    problem : Problem
        With ``tenant`` and ``quota`` when the cluster has ``[[quotas]]`` or
        a job names a tenant (:func:`tenant_arrays`); without, the same
        problem as before tenants existed.
    tenant_names : list of str
        Only with ``return_tenant_names``: ``tenant_names[t]`` is the name of
        tenant ``t`` (row ``t`` of ``problem.quota``); empty without tenants.

    Raises
    ------
    InputFileError
        Any problem with the files, or a problem the files describe that has
        no feasible placement, also within the quotas (message prefixed by
        both file names).
    """
    spec = cluster if isinstance(cluster, ClusterSpec) else read_cluster(cluster)
    data = read_jobs(jobs, spec, gavel=gavel)
    names, tenant, quota = tenant_arrays(spec.quotas, data["tenant"], spec.type_names)
    quotas = {} if tenant is None else {"tenant": tenant, "quota": quota}
    try:
        problem = Problem(
            data["throughput"], spec.type_counts, data["batch"], data["iterations"],
            grad_bytes=data["grad_bytes"], bandwidth=spec.bandwidth, worker_speed=spec.worker_speed,
            job_names=data["job_names"], type_names=spec.type_names, **(spec.topology or {}), **quotas,
        )
    except InvalidProblemError as exc:
        fix = "add workers (count in [[types]]) or remove jobs; every job needs one worker of a type it can run on."
        if names:
            fix = ("add workers (count in [[types]]), raise the tenants' [[quotas]], or remove jobs; every job needs "
                   "one worker of a type it can run on, within its tenant's quota (tenants: "
                   + ", ".join(f"{t} = {_short(n)}" for t, n in enumerate(names)) + ").")
        raise InputFileError(
            f"{spec.path or 'cluster'} + {jobs}", f"the jobs cannot be placed on this cluster: {exc}", fix,
        ) from None
    return (problem, names) if return_tenant_names else problem


# ------------------------------------------------------------------ writers
class OutputFileError(InvalidOptionError):
    """A file cannot be written; the message names the path, the reason and the fix.

    Attributes
    ----------
    path : str
    """

    def __init__(self, path, reason):
        self.path = str(path)
        super().__init__(f"{path!s} cannot be written ({reason}); pass a writable file path.")


def _output_path(path, what="path"):
    """``path`` as a Path; a str or path-like only (an int would be taken as an open file descriptor)."""
    if isinstance(path, (bool, int)) or not isinstance(path, (str, os.PathLike)):
        raise InvalidOptionError(f"{what} must be a file path (str or os.PathLike); got {_short(path)}.")
    return Path(path)


@contextlib.contextmanager
def _writing(path):
    """Turn an OSError while writing ``path`` (missing folder, a folder, disk full, ...) into OutputFileError."""
    try:
        yield
    except OSError as exc:
        raise OutputFileError(path, exc.strerror or type(exc).__name__) from None


def _problem_output(path, problem):
    """``path`` as a Path, once ``problem`` is a Problem that the cluster TOML and job CSV can hold."""
    path = _output_path(path)
    if not isinstance(problem, Problem):
        raise InvalidProblemTypeError(f"problem must be a hetplace.Problem; got {type(problem).__name__}.")
    # the file formats have no fields for these yet: refuse rather than write a different problem
    lost = [what for what, has in (("workers that are down (available)", problem.n_available < problem.n_workers),
                                   ("size bounds (min_workers / max_workers)", problem.bounded),
                                   ("a running placement (current / restart_time)", problem.replacing),
                                   ("job weights (weight)", problem.weight is not None)) if has]
    if lost:
        raise InvalidOptionError(
            f"the cluster TOML / job CSV formats cannot hold {' or '.join(lost)}, so writing this problem "
            "would lose them. Save it with json.dumps(problem.to_dict()) (read back with Problem.from_dict)."
        )
    return path


def _toml_str(s):
    return json.dumps(str(s))  # a JSON string is a valid TOML basic string


def write_cluster(path, problem, gavel=None, tenant_names=None):
    """Write the cluster of ``problem`` as TOML (readable by :func:`read_cluster`).

    Parameters
    ----------
    path : str or path-like
    problem : Problem
    gavel : str, optional
        Written as the file's ``gavel`` path.
    tenant_names : list of str, optional
        Names of the tenants, one per row of ``problem.quota`` (default
        ``tenant0``, ``tenant1``, ...; pass the same to :func:`write_jobs`).
        Every tenant gets a ``[[quotas]]`` table, in index order, so reading
        the two files back numbers the tenants as ``problem`` does.

    Raises
    ------
    InvalidOptionError
        ``path`` is not a file path, or cannot be written (:class:`OutputFileError`);
        ``tenant_names`` is not one distinct name per tenant; or ``problem``
        has what the file formats cannot hold (workers that are down, size
        bounds, a running placement, job weights).
    InvalidProblemTypeError
        ``problem`` is not a :class:`~hetplace.Problem`.
    """
    path = _problem_output(path, problem)
    tenants = _default_tenant_names(problem, tenant_names)
    if tenants and "tenant" in problem.type_names:
        raise InvalidOptionError(
            "the problem has tenants and a GPU type named 'tenant', the key the cluster TOML's [[quotas]] tables "
            "name the tenant with, so the file could not be read back. Rename that type, or save the problem with "
            "json.dumps(problem.to_dict()) (read back with Problem.from_dict)."
        )
    nodes, order = _node_runs(problem) if problem.topology is not None else (None, np.arange(problem.n_workers))
    lines = []
    if gavel is not None:
        lines.append(f"gavel = {_toml_str(gavel)}")
        lines.append("")
    lines.append("[cluster]")
    bw = problem.bandwidth
    where = "" if nodes is None else (" between racks" if problem.topology.rack is not None else " between nodes")
    lines.append(f"bandwidth = {_bandwidth_text(bw)}  # bytes/s{where}")
    start = 0
    for name, count in zip(problem.type_names, problem.type_counts.tolist()):
        lines += ["", "[[types]]", f"name = {_toml_str(name)}", f"count = {count}"]
        if not problem.uniform_speed:
            sp = problem.worker_speed[order[start:start + count]]  # in the order the [[nodes]] list the workers
            lines.append("speeds = [" + ", ".join(repr(float(v)) for v in sp) + "]")
        start += count
    for run in nodes or ():
        lines += ["", "[[nodes]]", f"count = {run['count']}", f"type = {_toml_str(run['type'])}",
                  f"gpus = {run['gpus']}", f"bandwidth = {_bandwidth_text(run['bandwidth'])}  # bytes/s inside a node"]
        if run["rack"] is not None:
            lines.append(f"rack = {run['rack']}")
    if nodes is not None and problem.topology.rack is not None:
        for r, b in enumerate(problem.topology.rack_bandwidth.tolist()):
            if r in {run["rack"] for run in nodes}:
                lines += ["", "[[racks]]", f"name = {r}", f"bandwidth = {_bandwidth_text(b)}  # bytes/s between its nodes"]
    for t, name in enumerate(tenants):
        lines += ["", "[[quotas]]", f"tenant = {_toml_str(name)}"]
        lines += [f"{_toml_key(problem.type_names[g])} = {int(q)}" for g, q in enumerate(problem.quota[t].tolist())
                  if math.isfinite(q)]
    with _writing(path):
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _toml_key(name):
    """``name`` as a TOML key: bare when it can be, else quoted (a '.' would make a dotted key)."""
    return name if re.fullmatch(r"[A-Za-z0-9_\-]+", name) else _toml_str(name)


def _bandwidth_text(b):
    return _toml_str("inf") if not math.isfinite(b) else repr(float(b))


def _node_runs(problem):
    """The ``[[nodes]]`` tables of ``problem``'s topology, and the order :func:`read_cluster` lists its workers in.

    Runs of consecutive nodes (by type, then first worker) with the same type,
    GPU count, bandwidth and rack become one table.  A node without worker is
    dropped (a file cannot hold it); a node of several GPU types is refused.
    Reading the file back gives the same problem up to the numbering of the
    nodes and of the workers inside a type (the same numbers when every node's
    workers are consecutive and nodes are numbered in worker order).
    """
    topo = problem.topology
    node, wt = topo.node, problem.worker_type
    N = topo.n_nodes
    gpus = np.bincount(node, minlength=N)
    lo = np.full(N, problem.n_types)
    hi = np.full(N, -1)
    np.minimum.at(lo, node, wt)
    np.maximum.at(hi, node, wt)
    mixed = np.flatnonzero((gpus > 0) & (lo != hi))
    if mixed.size:
        raise InvalidOptionError(
            f"node {int(mixed[0])} holds GPUs of several types, which the cluster TOML's [[nodes]] tables cannot "
            "hold (one type per table). Save the problem with json.dumps(problem.to_dict()) (read back with "
            "Problem.from_dict)."
        )
    first = np.full(N, problem.n_workers)
    np.minimum.at(first, node, np.arange(problem.n_workers))
    used = np.flatnonzero(gpus > 0)
    used = used[np.lexsort((first[used], lo[used]))]  # type by type, then by first worker
    rank = np.empty(N, dtype=np.int64)
    rank[used] = np.arange(used.size)
    order = np.lexsort((np.arange(problem.n_workers), rank[node], wt))  # the reader's worker order
    runs = []
    for v, g, b in zip(used.tolist(), gpus[used].tolist(), topo.node_bandwidth[used].tolist()):
        cell = {"type": problem.type_names[int(lo[v])], "gpus": g, "bandwidth": b,
                "rack": None if topo.rack is None else int(topo.rack[v])}
        if runs and all(runs[-1][k] == cell[k] for k in cell):
            runs[-1]["count"] += 1
        else:
            runs.append({"count": 1, **cell})
    return runs, order


def write_jobs(path, problem, tenant_names=None):
    """Write the jobs of ``problem`` as CSV with ``throughput_<type>`` columns (readable by :func:`read_jobs`).

    Parameters
    ----------
    path : str or path-like
    problem : Problem
    tenant_names : list of str, optional
        As :func:`write_cluster`: with tenants, a ``tenant`` column gives each
        job's tenant name (blank for none).

    Raises
    ------
    InvalidOptionError, InvalidProblemTypeError
        As :func:`write_cluster`.
    """
    path = _problem_output(path, problem)
    tenants = _default_tenant_names(problem, tenant_names)
    has = problem.tenant is not None
    with _writing(path), open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["name", *(f"throughput_{t}" for t in problem.type_names), "batch", "iterations", "grad_bytes",
                    *(["tenant"] if has else [])])
        for i in range(problem.n_jobs):
            w.writerow([
                problem.job_names[i], *(repr(float(v)) for v in problem.throughput[i]),
                int(problem.batch[i]), repr(float(problem.iterations[i])), repr(float(problem.grad_bytes[i])),
                *([tenants[problem.tenant[i]] if problem.tenant[i] >= 0 else ""] if has else []),
            ])


def write_placement(placement, path, fmt=None, tenant_names=None):
    """Write a placement to ``path``.

    Parameters
    ----------
    placement : Placement
    path : str or path-like
    fmt : {"json", "csv", "text"}, optional
        Default from the suffix: ``.json`` -> JSON (:meth:`Placement.to_dict`;
        with tenants, also each job's ``tenant`` and a ``quotas`` block of
        ``{tenant: {type: {"used": n, "quota": q or null}}}``),
        ``.csv`` -> one line per worker (worker, type, speed, job, share),
        anything else -> the text table (with tenants, followed by the GPUs
        each tenant holds against its quotas).
    tenant_names : list of str, optional
        Names of the problem's tenants, by index (default ``tenant0``, ...).

    Raises
    ------
    InvalidOptionError
        ``path`` is not a file path or cannot be written (:class:`OutputFileError`),
        or ``fmt`` is not one of the three.
    InvalidProblemTypeError
        ``placement`` is not a :class:`~hetplace.Placement`.
    """
    from .placement import Placement

    if not isinstance(placement, Placement):
        raise InvalidProblemTypeError(f"placement must be a hetplace.Placement; got {type(placement).__name__}.")
    path = _output_path(path)
    if fmt is None:
        fmt = {".json": "json", ".csv": "csv"}.get(path.suffix.lower(), "text")
    if fmt not in ("json", "csv", "text"):
        raise InvalidOptionError(f"fmt={fmt!r} is not valid; choose one of 'json', 'csv', 'text'.")
    tenants = _default_tenant_names(placement.problem, tenant_names)
    with _writing(path):
        _write_placement(placement, path, fmt, tenants)


def _write_placement(placement, path, fmt, tenants):
    if fmt == "json":
        path.write_text(json.dumps(_placement_doc(placement, tenants), indent=2) + "\n", encoding="utf-8")
    elif fmt == "csv":
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["worker", "type", "speed", "job", "share"])
            for d in placement.to_dict()["workers"]:
                w.writerow([d["worker"], d["type"], repr(d["speed"]), "" if d["job"] is None else d["job"], d["share"]])
    else:
        quotas = "" if placement.problem.tenant is None else "\n\n" + _format_quota_usage(placement, tenants)
        path.write_text(placement.format_table(workers=True) + quotas + "\n", encoding="utf-8")
