"""Rows of candidate placements (private): the choice SMP's searches share (docs/model.md §3.7, §3.14)."""

import numpy as np

__all__ = ["best_distinct_rows"]


def best_distinct_rows(out_wj, out_total, top):
    """Indices of the ``top`` best distinct finite rows of ``out_wj`` by ``out_total`` (stable order; all when None).

    Parameters
    ----------
    out_wj : ndarray of int64, shape (N, K)
        Candidate placements, one per row.
    out_total : ndarray of float64, shape (N,)
        Their totals; an infinite one (infeasible, or never computed) is never chosen.
    top : int or None
        Most rows returned.
    """
    order = np.argsort(out_total, kind="stable")
    rows, seen = [], set()
    for s in order:
        if not np.isfinite(out_total[s]):
            break
        key = out_wj[s].tobytes()
        if key in seen:
            continue
        seen.add(key)
        rows.append(s)
        if top is not None and len(rows) >= top:
            break
    return np.array(rows, dtype=np.int64)
