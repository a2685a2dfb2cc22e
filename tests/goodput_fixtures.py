"""Synthetic profiles in the formats of Sia's artifact, for the goodput-world tests.

Sia's artifact has no licence: none of its files enter the project; these are made up. The step
time is affine in (nodes, replicas, local batch), so that any linear interpolation of it is exact.
"""

# a made-up application whose step time is affine in (nodes, replicas, local batch), so that any linear
# interpolation of it is exact inside the profiled hull
A, C, D, F = 0.02, 0.001, 0.015, 0.002


def step(n, r, b):
    return A + C * b + D * (n - 1) + F * r


def sync(n, r, b):
    return 0.25 * step(n, r, b) if r > 1 else 0.0


PLACEMENTS = ((1,), (2,), (4,), (1, 1), (1, 2), (2, 2), (4, 4), (2, 2, 2))
LOCAL = (8, 16, 32, 64)
SCALE = ((3, 3), (3, 6), (3, 12), (4, 4), (4, 8), (4, 16))
BATCHES = (32, 64, 128, 256)
EPOCHS = 4


def write_app(folder, suffix="gpu", placements=PLACEMENTS, local=LOCAL, epochs=EPOCHS, batches=BATCHES,
              column_order=None, slower=1.0, work=100.0):
    """Write the profiles of one application on one GPU type (step times ``slower`` times the toy's,
    ``work`` statistical progress per epoch)."""
    folder.mkdir(parents=True, exist_ok=True)
    cols = column_order or ("placement", "local_bsz", "step_time", "sync_time")
    lines = [",".join(cols)]
    for p in placements:
        n, r = len(p), sum(p)
        for b in local:
            row = {"placement": "".join(map(str, p)), "local_bsz": b, "step_time": slower * step(n, r, b),
                   "sync_time": slower * sync(n, r, b)}
            lines.append(",".join(str(row[c]) for c in cols))
    tail = f"-{suffix}" if suffix else ""  # Pollux's artifact: placements.csv
    (folder / f"placements{tail}.csv").write_text("\n".join(lines) + "\n")
    lines = ["local_bsz,step_time,sync_time,num_nodes,num_replicas"]
    for n, r in SCALE:
        for b in local:
            lines.append(f"{b},{slower * step(n, r, b)},{slower * sync(n, r, b)},{n},{r}")
    (folder / f"scalability{tail}.csv").write_text("\n".join(lines) + "\n")
    for k, m in enumerate(batches):
        lines = ["progress,iteration,metric,grad_sqr,grad_var"]
        for e in range(epochs):
            # larger batches: the same statistical progress per epoch, fewer iterations; the noise grows
            # from epoch to epoch (late training prefers larger batches, as Pollux observes)
            lines.append(f"{work * (e + 1) + k},{(e + 1) * 4096 // m},{0.1 * e},{1.0 / (e + 1)},{2.0 + e}")
        (folder / f"validation-{m}.csv").write_text("\n".join(lines) + "\n")
    return folder


def write_artifact(root, apps=("toy", "other"), suffixes=("aws", "rtx"), slower=None, work=100.0, epochs=EPOCHS):
    """A checkout of a made-up artifact: ``slower`` is ``{suffix: factor}`` (default 1 for each)."""
    sim = root / "sia-simulator"
    for a in apps:
        for sfx in suffixes:
            write_app(sim / "traces" / a, sfx, slower=(slower or {}).get(sfx, 1.0), work=work, epochs=epochs)
    return root
