"""The anchor of ``scaling_2_ranks_compute_bound``: a raw DDP loop, nothing of the platform's loop around it.

``torchrun --nproc-per-node=N -m bench.raw_ddp JOB OUT`` trains the job's model (the same module the platform
builds, on the same Parquet split) for one epoch: each rank takes its slice of every global batch, plain
``torch.distributed`` over gloo with ``DistributedDataParallel`` when there are 2 ranks or more (one rank: the bare
module, as the platform trains one rank), AdamW, one thread per rank. Rank 0 writes the step seconds to ``OUT``
(JSON), which ``bench.training`` reads as the platform's telemetry: global batch / median step.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from mlassets.core.config import parse_config
from mlassets.core.train.family import family_of
from mlassets.core.train.job import TrainJob
from mlassets.core.train.torch_run.loader import load_data


def main(job_path: str, out: str) -> int:
    job = TrainJob.from_json(Path(job_path))
    tr = parse_config(job.config).training
    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    torch.set_num_threads(1)
    torch.manual_seed(tr.seed)
    if world > 1:
        dist.init_process_group("gloo")
    data = load_data(parse_config(job.config), job.train_path, job.validation_path, None)
    model = family_of(job.config["model"]["family"]).build(data.spec, job.config["model"])
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=tr.lr, weight_decay=tr.weight_decay, fused=True)
    loss_fn = torch.nn.L1Loss()
    perm = torch.randperm(data.n_train, generator=torch.Generator().manual_seed(tr.seed + 1))
    steps, losses = [], []
    for batch in perm.split(tr.batch_size):
        idx = batch.tensor_split(world)[rank]
        started = time.perf_counter()
        loss = loss_fn(model(data.x_cat[idx], data.x_num[idx]), data.y[idx])
        loss.backward()  # DDP: the gradients' all-reduce, overlapped with the backward pass
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        steps.append(time.perf_counter() - started)
        losses.append(float(loss.detach()))
    if rank == 0:
        Path(out).write_text(json.dumps({"world_size": world, "batch_size": tr.batch_size, "rows": data.n_train,
                                         "step_seconds": steps, "losses": losses}))
    if world > 1:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
