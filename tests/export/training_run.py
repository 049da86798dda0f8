"""The short checkpointed training run both export tests start from: ppu-launch on
configs/tiny.yaml with 30 steps at H = 10, so the last step ends round 3, whose checkpoint holds
the final global parameters; no evaluation until the end; the dataset's shards; three checkpoints
kept and every rank's summary written.
"""


def launch_command(launch, tiny, nproc, dataset, ckpt, summaries, eval_batches, batch, sets=()):
    fixed = [
        f"ranks={nproc}",
        "train.steps=30",
        "outer.sync_every=10",
        "train.eval_every=0",
        f"train.eval_batches={eval_batches}",
        f"inner.batch_size={batch}",
        "data.source=shards",
        "data.path=" + dataset,
        "checkpoint.dir=" + ckpt,
        "checkpoint.keep=3",
        *sets,
    ]
    return [launch, "--nproc", str(nproc), "--config", tiny, *(a for s in fixed for a in ("--set", s))] + [
        "--summary-dir",
        summaries,
    ]
