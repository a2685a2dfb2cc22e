"""The seeded instance generators of hetplace.instances on hostile arguments."""

import math

import numpy as np
import pytest

from hetplace import HetplaceError, InvalidOptionError
from hetplace.data import load_gavel
from hetplace.instances import make_instance, synthetic_instance


@pytest.mark.parametrize("family", ["gavel", "speeds", "synthetic"])
@pytest.mark.parametrize("field, value", [
    ("seed", -1), ("seed", None), ("seed", 1.5), ("seed", True), ("seed", 1 + 0j), ("seed", 2**64),
    ("n_workers", 0), ("n_workers", -1), ("n_workers", "3"), ("n_workers", None), ("n_workers", 2**64),
    ("n_workers", 10**6 + 1), ("n_jobs", 0), ("n_jobs", True), ("n_jobs", 2**63), ("n_jobs", 9),
])
def test_generators_reject_bad_seeds_and_sizes(family, field, value):
    # ValueError / TypeError / OverflowError from numpy before, or "Maximum allowed dimension exceeded"
    args = {"seed": 0, "n_workers": 8, "n_jobs": 3}
    args[field] = value
    with pytest.raises(InvalidOptionError, match=field):
        make_instance(family, args["seed"], args["n_workers"], args["n_jobs"], load_gavel())


@pytest.mark.parametrize("family, options, name", [
    ("gavel", {"p_exclude": None}, "p_exclude"), ("gavel", {"p_exclude": 1.5}, "p_exclude"),
    ("gavel", {"p_exclude": math.nan}, "p_exclude"), ("gavel", {"types": ()}, "types"),
    ("gavel", {"types": None}, "types"), ("gavel", {"types": "v100"}, "types"), ("gavel", {"types": ("tpu",)}, "types"),
    ("speeds", {"low": 1.5}, "low"), ("speeds", {"low": math.nan}, "low"), ("speeds", {"low": None}, "low"),
    ("speeds", {"low": 0.0}, "low"), ("synthetic", {"n_types": 0}, "n_types"), ("synthetic", {"n_types": True}, "n_types"),
    ("synthetic", {"n_types": 10**6}, "n_types"), ("synthetic", {"p_zero": None}, "p_zero"),
    ("synthetic", {"p_zero": -1}, "p_zero"),
])
def test_generator_options_are_checked(family, options, name):
    # TypeError, ZeroDivisionError, "high - low < 0", a 10 s hang at n_types=10**6 before
    with pytest.raises(InvalidOptionError, match=name):
        make_instance(family, 0, 8, 3, load_gavel(), **options)


@pytest.mark.parametrize("options", [{"p_zero": 1.0}, {"p_zero": 0.9}, {"n_types": 2}, {"n_types": 1, "p_zero": 0.5}])
def test_synthetic_instances_are_built_even_when_a_job_loses_every_type(options):
    # a job with all its throughputs zeroed was "restored" to its row's maximum, 0: AssertionError('unreachable')
    for seed in range(4):
        p = synthetic_instance(seed, 16, 8, **options)
        assert np.all((p.throughput > 0).any(axis=1))


def test_gavel_instances_with_one_type_and_exclusions_are_built():
    # p_exclude zeroed a job's only type, and nothing brought it back
    for seed in range(6):
        p = make_instance("gavel", seed, 8, 3, load_gavel(), types=("v100",), p_exclude=1.0)
        assert np.all(p.throughput > 0)


@pytest.mark.parametrize("family", ["x", None, 3, "Gavel"])
def test_unknown_family_is_an_option_error(family):
    with pytest.raises(HetplaceError, match="family"):
        make_instance(family, 0, 8, 3)
