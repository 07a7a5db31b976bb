"""A small data-parallel training script in the style of the PyTorch DDP tutorial (gloo, CPU).

    torchrun --nproc_per_node=2 train_ddp.py [--steps 30] [--fault FAULT]

``--fault`` plants one bug (for the watch's tests); without it the script is correct:
``rewrap`` wraps the model in a new DDP every epoch (nested), ``move`` changes the parameters'
dtype after wrapping (DDP's hooks no longer sync them), ``skip-sync`` averages gradients by hand
and rank 1 skips the all_reduce at step 5, ``skip-step`` lets rank 1 skip one optimizer step on
a local condition, ``same-data`` gives every rank the same batches (no DistributedSampler),
``straggler`` makes rank 1's data loading slow. ``--sync manual`` averages gradients by hand.
"""

import argparse
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--fault", default="none")
parser.add_argument("--sync", default="ddp", choices=["ddp", "manual"])
args = parser.parse_args()

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
x = torch.randn(2048, 16)
y = (x[:, :4].sum(1) > 0).long() + 2 * (x[:, 4:8].sum(1) > 0).long()
data = TensorDataset(x, y)


class Slow(Dataset):
    def __len__(self):
        return len(data)

    def __getitem__(self, i):
        time.sleep(0.002)
        return data[i]


dataset = Slow() if args.fault == "straggler" and rank == 1 else data
sampler = None if args.fault == "same-data" else DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=0)
loader = DataLoader(dataset, batch_size=32, sampler=sampler, shuffle=sampler is None and False)

model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))
ddp = model if args.sync == "manual" or args.fault in ("rewrap", "skip-sync") else DDP(model)
if args.fault == "move":
    ddp.to(torch.float64)  # after wrapping: DDP's gradient hooks keep syncing the old float32 tensors
optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)

step = 0
for epoch in range(args.epochs):
    if sampler is not None:
        sampler.set_epoch(epoch)
    if args.fault == "rewrap":
        ddp = DDP(ddp)  # a new wrapper around the old one, every epoch
    for xb, yb in loader:
        if args.fault == "move":
            xb = xb.double()
        loss = F.cross_entropy(ddp(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        if args.sync == "manual" or args.fault == "skip-sync":
            if not (args.fault == "skip-sync" and rank == 1 and step == 5):
                flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
                dist.all_reduce(flat)
                flat /= world
                offset = 0
                for p in model.parameters():
                    p.grad.copy_(flat[offset:offset + p.numel()].view_as(p))
                    offset += p.numel()
        step += 1
        if args.fault == "skip-step" and rank == 1 and step == 7:
            continue  # a local decision: this rank alone leaves its weights as they are
        optimizer.step()
        if step >= args.steps:
            break
    if step >= args.steps:
        break
if rank == 0:
    print(f"done: {step} steps, loss {loss.item():.4f}")
dist.destroy_process_group()
