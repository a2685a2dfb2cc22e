"""Writing a results folder: one way to write its CSV tables, JSON documents and optional plots.

Used by :meth:`hetplace.bench.BenchResult.write`, :func:`hetplace.online.sweep.write_simulations`
and :meth:`hetplace.online.OnlineResult.write`, so that the offline benchmark and the online
simulations write the same kinds of files the same way (UTF-8, CSV rows with ``newline=""``,
JSON indented by one with a final newline, plots skipped with a reason when matplotlib is missing).
"""

import csv
import json
import math

from .errors import MissingDependencyError

__all__ = ["csv_cell", "write_csv", "write_json", "add_plots"]


def csv_cell(v):
    """A CSV cell: empty for NaN, ``repr`` of other floats (every digit), the value otherwise."""
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    return v


def write_csv(path, columns, rows, cell=csv_cell):
    """Write ``rows`` (mappings) to ``path`` under the header ``columns``, each value through ``cell``.

    Returns ``path``.
    """
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for row in rows:
            w.writerow([cell(row[c]) for c in columns])
    return path


def write_json(path, doc):
    """Write ``doc`` to ``path`` as JSON (indent 1, final newline); returns ``path``."""
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


def add_plots(paths, plot):
    """``paths.update(plot())``; when matplotlib is missing, ``paths["plots_skipped"]`` holds the reason."""
    try:
        paths.update(plot())
    except MissingDependencyError as exc:
        paths["plots_skipped"] = str(exc)
    return paths
