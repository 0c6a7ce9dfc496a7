"""A DDP training script as torchrun runs it: init_process_group("gloo"), a
DistributedSampler that gives each rank its share of a shuffled dataset (set_epoch each
epoch), DistributedDataParallel, two micro-batches per step with no_sync on the first.

    rgrun --nproc-per-node 2 -- python ddp_train.py       (torchrun --nproc-per-node 2 for PyTorch)
"""
import contextlib

import ringgrad as torch
import ringgrad.distributed as dist
import ringgrad.nn as nn
from ringgrad.nn.parallel import DistributedDataParallel as DDP
from ringgrad.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()

torch.manual_seed(0)  # the same data and initial weights on every rank
x = torch.randn(128, 8, dtype=torch.float64)
y = (x[:, :4].sum(dim=1, keepdim=True) - x[:, 4:].pow(2).mean(dim=1, keepdim=True))
dataset = TensorDataset(x, y)
sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=0)
loader = DataLoader(dataset, batch_size=8, sampler=sampler)

model = DDP(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).double())
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.MSELoss()

for epoch in range(3):
    sampler.set_epoch(epoch)
    batches = list(loader)
    for i in range(0, len(batches), 2):
        pair = batches[i:i + 2]
        for k, (xb, yb) in enumerate(pair):
            sync = k + 1 == len(pair)
            with contextlib.nullcontext() if sync else model.no_sync():
                loss = loss_fn(model(xb), yb) / len(pair)
                loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    if rank == 0:
        print(f"epoch {epoch}: last loss {loss.item():.12f}")

with torch.no_grad():
    total = sum(p.double().sum().item() for p in model.module.parameters())
checksum = torch.tensor([total], dtype=torch.float64)
dist.all_reduce(checksum)
if rank == 0:
    print(f"sum of the weights, over ranks: {checksum.item():.12f}")
dist.destroy_process_group()
