"""A tiny PyTorch data-parallel job on Ray CPU workers (gloo), placed by hetplace.ray.

hetplace.ray's RayScheduler reads the cluster from Ray (each node's GPU type from its
``gpu_type`` label), the session decides how many workers of which types the job
gets, and every worker is one Ray task in the job's placement group.  Inside,
``train(ctx)`` is plain torch.distributed on gloo: ``ctx.rendezvous()`` gives the
address, ``ctx.local_batches`` the job's batch split in proportion to its workers'
throughputs (the model's split), which hetplace.torch's LBBSPBatchSampler slices one
shared permutation by, and ``allreduce_gradients_`` averages the gradients with the
weights ``b_i / B`` (the full-batch gradient).  The "GPUs" are fake: each worker runs
on the CPU, one thread.

Run:  python examples/ray_torch.py [--iterations 60]
(starts a local cluster on 127.0.0.1: a head and two 2-GPU nodes of two types).
"""

import argparse
import functools
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

#: Losses of the last run (rank 0, one per iteration).
LOSSES = []


def make_data(n, d, seed):
    import torch

    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g)
    w = torch.randn(d, 1, generator=g)
    return X, torch.tanh(X @ w) + 0.1 * torch.randn(n, 1, generator=g)


def train(ctx, loss_path):
    """The job's fn: one data-parallel rank."""
    import torch
    import torch.distributed as dist

    from hetplace.torch import LBBSPBatchSampler, allreduce_gradients_

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=ctx.rendezvous(), rank=ctx.rank, world_size=ctx.world_size)
    try:
        X, y = make_data(4096, 32, seed=0)
        torch.manual_seed(0)  # every rank starts from the same weights (a real job restores its checkpoint
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))  # here)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        sampler = LBBSPBatchSampler(len(X), ctx.batch, rank=ctx.rank, world_size=ctx.world_size, seed=1)
        sampler.set_sizes(list(ctx.local_batches))  # the model's proportional split of the batch
        losses = []
        it = ctx.start_iteration
        epoch = 0
        while it < ctx.iterations and not ctx.should_stop():
            sampler.set_epoch(epoch)
            for idx in sampler:
                opt.zero_grad()
                if idx:
                    loss = torch.nn.functional.mse_loss(model(X[idx]), y[idx])
                    loss.backward()
                    losses.append(float(loss.detach()))
                allreduce_gradients_(model, len(idx), sampler.last_total)
                opt.step()
                it += 1
                ctx.report(it)
                if it >= ctx.iterations or ctx.should_stop():
                    break
            epoch += 1
        if ctx.rank == 0:
            with open(loss_path, "w") as f:
                json.dump(losses, f)
    finally:
        dist.destroy_process_group()


def run(iterations=60, time_scale=1.0):
    """Run the job on the connected Ray cluster; returns the RunResult (losses in :data:`LOSSES`)."""
    import ray

    from hetplace.ray import RayScheduler

    if __name__ != "__main__":  # imported (a test): the workers cannot import this file, so train travels by value
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    types = sorted({n.get("Labels", {}).get("gpu_type") for n in ray.nodes()
                    if n.get("Alive") and n.get("Labels", {}).get("gpu_type")})
    # throughputs of one worker of each type (samples/s): the faster type gets the larger share
    throughput = {t: 100.0 * (g + 1) for g, t in enumerate(types)}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "losses.json")
        sched = RayScheduler(round_s=3600.0, time_scale=time_scale, warmup=False)
        sched.submit("mlp", functools.partial(train, loss_path=path), throughput=throughput, batch=128,
                     iterations=iterations, min_workers=2, max_workers=3)
        result = sched.run(timeout_s=240)
        LOSSES[:] = json.load(open(path)) if os.path.exists(path) else []
    return result


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iterations", type=int, default=60)
    args = p.parse_args(argv)
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # before Ray is imported: bind 127.0.0.1 only
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args=dict(num_cpus=1, node_ip_address="127.0.0.1",
                                                                include_dashboard=False))
    try:
        for t in ("slow", "fast"):
            cluster.add_node(num_cpus=4, num_gpus=2, node_ip_address="127.0.0.1", labels={"gpu_type": t})
        ray.init(address=cluster.address, logging_level="WARNING")
        result = run(args.iterations)
        print(result.summary())
        job = result.jobs["mlp"]
        print(f"job {job.status} on {job.segments[-1].types}")
        if LOSSES:
            print(f"loss {LOSSES[0]:.4f} -> {LOSSES[-1]:.4f} over {len(LOSSES)} iterations (rank 0)")
        return result
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main()
