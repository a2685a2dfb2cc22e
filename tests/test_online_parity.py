"""Information parity of the online policies: a non-oracle policy cannot see job lengths.

Two traces that differ only in the jobs' total steps (each scaled by its own random factor)
must give every non-oracle policy identical decisions in every round before the first job
finishes in either run; an oracle policy is declared (``oracle = True``) and labelled so.
"""

import math

import numpy as np
import pytest

from hetplace.errors import HiddenInformationError
from hetplace.online import POLICIES, Job, gavel_trace, make_policy, simulate
from hetplace.online.policies import oracle_policy_names, policy_label
from hetplace.online.simulator import _reset

CLUSTER = {"v100": 8, "p100": 8, "k80": 8}
NON_ORACLE = [n for n in POLICIES if n not in oracle_policy_names()]


class _Stop(Exception):
    pass


class _Recorder:
    """Wraps a policy: same name and oracle flag, records each decision; stops the run at the first finish."""

    def __init__(self, policy):
        self.inner = policy
        self.name = policy.name
        self.oracle = getattr(policy, "oracle", False)
        self.log = []

    def reset(self, seed=None):
        _reset(self.inner, seed)
        self.log = []

    def decide(self, state):
        if state.finished:
            raise _Stop
        out = self.inner.decide(state)
        self.log.append((state.round_index, {k: dict(v) for k, v in out.items()}))
        return out


def _traces(seed):
    base = gavel_trace(40, 40.0, seed=seed, multi_gpu=True)  # busy: jobs wait, so the order matters
    rng = np.random.default_rng(100 + seed)
    scaled = [Job(j.job_id, j.model, j.arrival, j.total_steps * float(rng.uniform(0.5, 3.0)), j.scale_factor,
                  j.duration) for j in base]
    return base, scaled


def _decisions_before_first_finish(name, trace):
    """The decisions of every round that starts before the first job finishes (the run stops there)."""
    rec = _Recorder(make_policy(name))
    with pytest.raises(_Stop):
        simulate(trace, CLUSTER, rec, progress=False)
    return rec.log


@pytest.mark.parametrize("name", NON_ORACLE)
def test_a_non_oracle_policy_decides_alike_whatever_the_job_lengths(name):
    for seed in (0, 1):
        a, b = _traces(seed)
        da = _decisions_before_first_finish(name, a)
        db = _decisions_before_first_finish(name, b)
        n = min(len(da), len(db))
        assert n >= 3 and sum(map(bool, (d for _, d in da[:n]))) >= 2, (name, seed)  # some rounds, some GPUs given
        assert da[:n] == db[:n], name


def test_every_policy_says_whether_it_is_an_oracle_and_oracles_say_so_in_their_label():
    oracles = set(oracle_policy_names())
    assert {"smp-oracle", "allox", "ftf", "ftf-aware"} <= oracles
    assert "smp" not in oracles and "sia" not in oracles and "las-aware" not in oracles
    for name, cls in POLICIES.items():
        assert isinstance(getattr(cls, "oracle", None), bool), name
        assert ("oracle" in policy_label(name)) == (name in oracles), name


def test_a_non_oracle_policy_reading_a_length_gets_a_clear_error():
    class Peek:
        name = "peek"

        def decide(self, state):
            return {state.jobs[0].job.job_id: {"v100": 1}} if state.jobs[0].remaining_steps > 0 else {}

    trace = gavel_trace(3, 4.0, seed=0)
    with pytest.raises(HiddenInformationError, match=r"total_steps .* hidden from a non-oracle policy.*oracle = True"):
        simulate(trace, CLUSTER, Peek(), progress=False)
    with pytest.raises(AttributeError):  # hasattr() is False on a job view
        simulate(trace, CLUSTER, type("P", (), {"name": "p", "decide": lambda self, s: s.jobs[0].job.duration})(),
                 progress=False)
    Peek.oracle = True
    assert simulate(trace, CLUSTER, Peek(), progress=False).status == "complete"


def test_finished_jobs_reach_the_policy_with_their_lengths():
    seen = {}

    class Watch:
        name = "watch"

        def decide(self, state):
            for j in state.finished:
                seen[j.job_id] = j.total_steps
            assert not state.oracle and all(not hasattr(s.job, "total_steps") for s in state.jobs)
            return {s.job.job_id: {"v100": 1} for s in state.jobs[:4]}

    trace = gavel_trace(6, 4.0, seed=0)
    res = simulate(trace, CLUSTER, Watch(), progress=False)
    last = max(res.jobs["finish"])
    told = {j.job_id for j in trace if j.job_id in seen}
    # every job but those finishing in the run's last round (no decision follows) is reported once
    assert told == {int(i) for i, f in zip(res.jobs["job_id"], res.jobs["finish"]) if f < last - res.round_s}
    assert all(seen[i] == next(j.total_steps for j in trace if j.job_id == i) for i in told)
    assert math.isfinite(last)


@pytest.mark.parametrize("name", ["smp-oracle"])
def test_the_parity_check_catches_a_policy_that_reads_lengths(name):
    # the same check on oracle policies: some seed's decisions differ (the test has the power to fail)
    differ = False
    for seed in (0, 1):
        a, b = _traces(seed)
        da, db = _decisions_before_first_finish(name, a), _decisions_before_first_finish(name, b)
        n = min(len(da), len(db))
        differ = differ or da[:n] != db[:n]
    assert differ

