"""Every row of the method table on problems with a network topology (docs/model.md §1.6).

Each method returns a feasible placement whose objective is the topology model's
(``evaluate`` against the slow reference), and every exact row returns the brute-force
optimum, with and without speeds, bounds, restarts and weights.
"""
import numpy as np
import pytest

from instances import tiny_topology
from methods import EXACT, METHODS, rows_for, run
from reference import brute_force_reference, weighted_objective_reference

FEATURES = [
    dict(),
    dict(speeds=True),
    dict(bounds=True),
    dict(restarts=True),
    dict(weights=True),
    dict(speeds=True, bounds=True, restarts=True, weights=True),
]


def _instance(seed, features):
    n_workers = int(np.random.default_rng([seed, 5]).integers(3, 6))
    return tiny_topology(seed, n_workers=n_workers, **features)


@pytest.mark.parametrize("features", FEATURES, ids=lambda f: "-".join(f) or "plain")
@pytest.mark.parametrize("seed", range(3))
def test_every_method_prices_the_network(seed, features):
    P = _instance(seed, features)
    opt, _ = brute_force_reference(P, objective=weighted_objective_reference)
    for row in rows_for(P, METHODS):
        pl = run(row, P, seed=seed)
        assert pl.mean_jct == pytest.approx(weighted_objective_reference(P, pl.worker_job), rel=1e-12), row.name
        assert pl.mean_jct >= opt * (1 - 1e-9), row.name
        if row in EXACT:
            assert pl.mean_jct == pytest.approx(opt, rel=row.rel), row.name
