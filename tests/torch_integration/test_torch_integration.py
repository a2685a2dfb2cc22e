"""hetplace.torch in real torch.distributed (gloo) processes.

One process group (2 ranks forked from a forkserver that imported PyTorch
once) runs every check, so the whole module costs a few seconds:

* weighted aggregation of unequal shards equals the single-process
  full-batch gradient (atol 1e-6), with the explicit all-reduce helper and
  with the DDP communication hook; plain averaging fails the same check;
* the sampler + coordinator cover every index exactly once per epoch
  while the sizes change, with the same number of iterations on every rank;
* LB-BSP beats BSP per epoch with one rank slowed to half speed.
"""

import importlib
import json
import re
import socket
import sys
import time

import pytest

from hetplace.errors import MissingDependencyError


def test_missing_torch_names_the_install_command(monkeypatch):
    for name in [m for m in sys.modules if m == "hetplace.torch" or m.startswith("hetplace.torch.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependencyError, match=re.escape("pip install torch==2.13.0")):
        importlib.import_module("hetplace.torch")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _full_batch_grad(torch, model, X, y):
    model.zero_grad()
    torch.nn.functional.mse_loss(model(X), y).backward()
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()]).clone()


def _flat_grad(torch, model):
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()]).clone()


def _worker(rank, world, port, out_dir):
    import torch
    import torch.distributed as dist

    from hetplace.torch import (
        Coordinator,
        LBBSPBatchSampler,
        WeightedHookState,
        allreduce_gradients_,
        weighted_allreduce_hook,
    )

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    report = {}
    # ---------------- 1. unbiased aggregation of unequal shards
    g = torch.Generator().manual_seed(0)
    X = torch.randn(32, 5, generator=g, dtype=torch.float64)
    y = torch.randn(32, 1, generator=g, dtype=torch.float64)
    sizes = [5, 27]
    lo = sum(sizes[:rank])
    Xi, yi = X[lo:lo + sizes[rank]], y[lo:lo + sizes[rank]]

    def fresh():
        torch.manual_seed(1)
        return torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()

    model = fresh()
    full = _full_batch_grad(torch, model, X, y)

    model.zero_grad()
    torch.nn.functional.mse_loss(model(Xi), yi).backward()
    allreduce_gradients_(model, sizes[rank], 32)
    weighted = _flat_grad(torch, model)
    report["weighted_err"] = float((weighted - full).abs().max())

    model.zero_grad()
    torch.nn.functional.mse_loss(model(Xi), yi).backward()
    plain = _flat_grad(torch, model)
    dist.all_reduce(plain)
    plain /= world
    report["plain_err"] = float((plain - full).abs().max())

    ddp = torch.nn.parallel.DistributedDataParallel(fresh())
    state = WeightedHookState()
    ddp.register_comm_hook(state, weighted_allreduce_hook)
    state.set_counts(sizes[rank], 32)
    ddp.zero_grad()
    torch.nn.functional.mse_loss(ddp(Xi), yi).backward()
    report["ddp_err"] = float((_flat_grad(torch, ddp.module) - full).abs().max())

    # ---------------- 2. sampler + coordinator: coverage with changing sizes
    sampler = LBBSPBatchSampler(103, 16, rank=rank, world_size=world, seed=5)
    coord = Coordinator(16, policy="naive", sampler=sampler)
    per_epoch = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        mine, iters = [], 0
        for idx in sampler:
            mine.extend(idx)
            iters += 1
            # rank 1 pretends to be 3x slower: the sizes move every iteration
            coord.step(len(idx) * (3.0 if rank == 1 else 1.0) * 1e-3 + 1e-4 * iters)
        per_epoch.append({"indices": mine, "iterations": iters})
    report["epochs"] = per_epoch
    report["final_sizes"] = coord.sizes.tolist()

    # ---------------- 3. BSP vs LB-BSP with rank 1 at half speed
    delay = 2e-3  # seconds of injected work per sample on the fast rank
    times = {}
    for policy in ("bsp", "cpu"):
        smp = LBBSPBatchSampler(32 * 12, 32, rank=rank, world_size=world, seed=0)
        crd = Coordinator(32, policy=policy, sampler=smp)
        net = fresh()
        dist.barrier()
        t0 = time.perf_counter()
        for idx in smp:
            with crd.timer():
                net.zero_grad()
                rows = [i % 32 for i in idx]
                torch.nn.functional.mse_loss(net(X[rows]), y[rows]).backward()
                time.sleep(len(idx) * delay * (2.0 if rank == 1 else 1.0))
            allreduce_gradients_(net, len(idx), smp.last_total)
            crd.step()
        dist.barrier()
        times[policy] = time.perf_counter() - t0
    report["epoch_time"] = times
    report["lb_sizes"] = crd.sizes.tolist()
    with open(f"{out_dir}/rank{rank}.json", "w") as f:
        json.dump(report, f)
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    torch = pytest.importorskip("torch")
    import torch.multiprocessing as mp

    out = tmp_path_factory.mktemp("gloo")
    # forkserver: a clean server process imports PyTorch (and torch._dynamo, which
    # DistributedDataParallel imports lazily) once, then forks both ranks.  Plain fork
    # from this process is unsafe: thread pools started by earlier tests (BLAS, torch)
    # do not survive a fork; spawn would pay the imports twice more.
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed", "torch._dynamo", "hetplace.torch"])
    mp.start_processes(_worker, args=(2, _free_port(), str(out)), nprocs=2, join=True,
                       start_method="forkserver")
    assert torch.__version__
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def test_weighted_aggregation_equals_full_batch_gradient(reports):
    for rep in reports:
        assert rep["weighted_err"] <= 1e-6
        assert rep["ddp_err"] <= 1e-6
        # plain averaging over ranks is biased towards the small shard: it fails the check
        assert rep["plain_err"] > 1e-3


def test_sampler_covers_every_index_once_per_epoch(reports):
    for epoch in range(2):
        iters = {rep["epochs"][epoch]["iterations"] for rep in reports}
        assert iters == {7}  # ceil(103 / 16) on every rank: nothing hangs
        seen = sorted(i for rep in reports for i in rep["epochs"][epoch]["indices"])
        assert seen == list(range(103))
    # the sizes did move: rank 1 (3x slower) ends with about a quarter of the batch
    assert reports[0]["final_sizes"][1] <= 5


def test_lb_bsp_is_faster_than_bsp_with_a_half_speed_rank(reports):
    t = reports[0]["epoch_time"]
    ratio = t["bsp"] / t["cpu"]
    print(f"BSP {t['bsp']:.3f} s, LB-BSP {t['cpu']:.3f} s per epoch: {ratio:.2f}x "
          f"(sizes {reports[0]['lb_sizes']})")
    assert ratio > 1.1  # about 1.4 here; the ideal for a 2:1 split is 1.5
    assert reports[0]["lb_sizes"][0] > reports[0]["lb_sizes"][1]
