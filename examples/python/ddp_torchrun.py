"""The torchrun DDP script, on ringgrad: the same lines a PyTorch user writes.

    rgrun --nproc-per-node 2 -- python examples/python/ddp_torchrun.py
    torchrun --nproc-per-node 2 examples/python/ddp_torchrun.py   # the same variables

DistributedDataParallel averages the gradients in buckets while backward runs (in C++).
"""
import os
import sys

import ringgrad as rg
import ringgrad.distributed as dist
from ringgrad.nn.parallel import DistributedDataParallel as DDP

import common


def main():
    dist.init_process_group("tcp")  # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    model = DDP(common.make_model())
    optimizer = rg.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(common.STEPS):
        loss = common.loss_of(model, step, common.shard(rank, world))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.6f} (local rank {local_rank})")
    ok = common.report("ddp_torchrun", model.module, rank)
    dist.destroy_process_group()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
