"""hetplace.torch on hostile arguments, in one single-rank gloo group (found by fuzz/campaign.py)."""

import math

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from hetplace import HetplaceError  # noqa: E402


@pytest.fixture(scope="module")
def group(tmp_path_factory):
    if not dist.is_initialized():
        store = tmp_path_factory.mktemp("store") / "pg"
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@pytest.mark.parametrize("epoch", [math.nan, math.inf, None, 1 + 0j, -1, 1.5, True, 2**64])
def test_sampler_set_epoch_rejects_what_is_not_an_epoch_number(epoch):
    # int(nan) raised ValueError, int(inf) OverflowError, int(None) TypeError; -1 and 1.5 were taken
    from hetplace.torch import LBBSPBatchSampler

    s = LBBSPBatchSampler(20, 8, rank=0, world_size=2)
    with pytest.raises(HetplaceError, match="epoch"):
        s.set_epoch(epoch)


@pytest.mark.parametrize("parameters", [None, 3, "x", [1.0], [None]])
def test_allreduce_rejects_what_is_not_parameters(group, parameters):
    # TypeError / AttributeError ('str' object has no attribute 'requires_grad') before
    from hetplace.torch import allreduce_gradients_

    with pytest.raises(HetplaceError, match="parameters"):
        allreduce_gradients_(parameters, 4, 4)


@pytest.mark.parametrize("src", [-1, 1, 1.5, None, "0", True])
def test_coordinator_src_must_be_a_global_rank(group, src):
    # RuntimeError "invalid root rank" from gloo (or TypeError) inside the collective before
    from hetplace.torch import Coordinator

    with pytest.raises(HetplaceError, match="src"):
        Coordinator(8, src=src)


@pytest.mark.parametrize("value", [1 + 0j, "1.0", None, [1.0], True])
def test_coordinator_step_rejects_non_real_times_and_signals(group, value):
    # float(1+0j) raised TypeError; a bool became 1.0
    from hetplace.torch import Coordinator

    c = Coordinator(8)
    if value is not None:
        with pytest.raises(HetplaceError, match="compute_time"):
            c.step(value)
    with pytest.raises(HetplaceError, match="signal"):
        c.step(1.0, load=value)
    assert int(c.step(1.0).sum()) == 8
