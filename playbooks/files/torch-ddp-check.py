#!/usr/bin/env python3
# torch-ddp-check.py: one worker of a small PyTorch DistributedDataParallel
# training run, started by torchrun on every node (torch-ddp-check runs it
# through Slurm). Each rank trains the same linear model on its own random
# data for a few steps; DDP averages the gradients over all ranks, so every
# rank must end with the same weights and a lower loss than it started with.
# Prints one line per rank; exits non-zero when either does not hold.
# Backend: TORCH_DDP_BACKEND (gloo, the default, runs on CPUs; nccl on GPUs).
import os
import socket
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    backend = os.environ.get("TORCH_DDP_BACKEND", "gloo")
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cpu")
    if backend == "nccl":
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    model = torch.nn.Linear(16, 1).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    data = torch.Generator().manual_seed(1000 + rank)
    target = torch.arange(16, dtype=torch.float32) / 16
    losses = []
    for _ in range(30):
        x = torch.randn(64, 16, generator=data)
        y = x @ target + 0.5
        loss = torch.nn.functional.mse_loss(ddp(x.to(device)).squeeze(1), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    everyone = [torch.zeros_like(weights) for _ in range(world)]
    dist.all_gather(everyone, weights)
    same = all(torch.equal(everyone[0], w) for w in everyone)
    learned = losses[-1] < losses[0]
    print(f"torch-ddp-check: rank {rank}/{world} on {socket.gethostname()} backend {backend}: "
          f"loss {losses[0]:.4f} -> {losses[-1]:.4f}, weights "
          f"{'identical on all ranks' if same else 'DIFFER between ranks'}", flush=True)
    dist.destroy_process_group()
    return 0 if same and learned else 1


if __name__ == "__main__":
    sys.exit(main())
