"""LB-BSP with torch.distributed (gloo, CPU): BSP vs LB-BSP time per epoch.

Trains a small MLP on synthetic data in ``--workers`` processes.  The last
rank is slowed down ``--slowdown`` times: it sleeps for a per-sample delay
``--delay * slowdown`` plus ``slowdown - 1`` times its own real compute
time, so its speed is exactly ``1 / slowdown`` of the others'.  Every rank
also sleeps ``--delay`` seconds per sample (a stand-in for a heavier model);
with the defaults that work dominates the fixed per-iteration cost of the
three small gloo collectives (about 2 ms each on a 2-core machine).

Each run uses hetplace.torch's pieces: LBBSPBatchSampler (one shared seeded
permutation per epoch sliced by the current sizes), allreduce_gradients_
(weights b_i / B) and Coordinator (gathers timings, runs the balancer on
rank 0, broadcasts the next sizes).  BSP is the same loop with policy="bsp".

Run:  python examples/lbbsp_torch.py [--workers 2] [--slowdown 2] [--epochs 2]
"""

import argparse
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from hetplace.torch import Coordinator, LBBSPBatchSampler, allreduce_gradients_  # noqa: E402


def make_data(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g)
    w = torch.randn(d, 1, generator=g)
    y = torch.tanh(X @ w) + 0.1 * torch.randn(n, 1, generator=g)
    return X, y


def train(policy, rank, world, args, X, y):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(X.shape[1], 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    sampler = LBBSPBatchSampler(len(X), args.batch, rank=rank, world_size=world, seed=1)
    coord = Coordinator(args.batch, policy=policy, sampler=sampler)
    slow = args.slowdown if rank == world - 1 else 1.0
    epoch_times, losses = [], []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        dist.barrier()
        t_epoch = time.perf_counter()
        for idx in sampler:
            with coord.timer():
                t0 = time.perf_counter()
                opt.zero_grad()
                if idx:
                    loss = torch.nn.functional.mse_loss(model(X[idx]), y[idx])
                    loss.backward()
                    losses.append(float(loss.detach()))
                real = time.perf_counter() - t0
                time.sleep(len(idx) * args.delay * slow + (slow - 1.0) * real)
            allreduce_gradients_(model, len(idx), sampler.last_total)
            opt.step()
            coord.step()
        dist.barrier()
        epoch_times.append(time.perf_counter() - t_epoch)
    return epoch_times, coord.sizes, sum(losses[-10:]) / max(1, len(losses[-10:]))


def worker(rank, world, port, args, queue):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    X, y = make_data(args.samples, 32, seed=0)
    out = {}
    for policy in ("bsp", "cpu"):
        out[policy] = train(policy, rank, world, args, X, y)
    if rank == 0:
        queue.put(out)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", type=int, default=2, help="processes (2-4)")
    p.add_argument("--slowdown", type=float, default=2.0, help="the last rank runs this many times slower")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--samples", type=int, default=2048)
    p.add_argument("--batch", type=int, default=128, help="global batch")
    p.add_argument("--delay", type=float, default=1e-3, help="seconds of injected work per sample")
    args = p.parse_args(argv)
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(worker, args=(args.workers, free_port(), args, queue), nprocs=args.workers, join=True)
    out = queue.get()
    bsp_times, bsp_sizes, bsp_loss = out["bsp"]
    lb_times, lb_sizes, lb_loss = out["cpu"]
    # mean over all epochs: LB-BSP's first epoch includes its equal-size start
    bsp, lb = sum(bsp_times) / len(bsp_times), sum(lb_times) / len(lb_times)
    print(f"workers={args.workers}, last rank {args.slowdown:g}x slower, global batch {args.batch}, "
          f"{args.samples} samples, {args.epochs} epochs")
    print(f"BSP     time per epoch: {', '.join(f'{t:.3f}' for t in bsp_times)} s  sizes {bsp_sizes.tolist()}  loss {bsp_loss:.4f}")
    print(f"LB-BSP  time per epoch: {', '.join(f'{t:.3f}' for t in lb_times)} s  sizes {lb_sizes.tolist()}  loss {lb_loss:.4f}")
    print(f"LB-BSP speed-up per epoch (mean BSP / mean LB-BSP): {bsp / lb:.2f}x")
    return bsp / lb


if __name__ == "__main__":
    main()
