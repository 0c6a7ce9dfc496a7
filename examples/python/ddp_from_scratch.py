"""Data parallelism from scratch: a DDPModelWrapper that averages each gradient itself.

Each rank computes gradients on its shard of the batch; a post-accumulate-grad hook on every
parameter all-reduces that parameter's gradient as soon as backward has finished it (no
buckets, no overlap: ringgrad's DistributedDataParallel does both, see ddp_torchrun.py).

    rgrun --nproc-per-node 2 -- python examples/python/ddp_from_scratch.py
"""
import sys

import ringgrad as rg
import ringgrad.distributed as dist
from ringgrad import nn

import common


class DDPModelWrapper(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module
        for p in module.parameters():
            dist.broadcast(p.detach(), src=0)  # every rank starts from rank 0's weights
            p.register_post_accumulate_grad_hook(self._average_gradient)

    @staticmethod
    def _average_gradient(param):
        dist.all_reduce(param.grad, op=dist.ReduceOp.AVG)

    def forward(self, x):
        return self.module(x)


def main():
    dist.init_process_group("tcp")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDPModelWrapper(common.make_model())
    optimizer = rg.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(common.STEPS):
        common.loss_of(model, step, common.shard(rank, world)).backward()
        optimizer.step()
        optimizer.zero_grad()
    ok = common.report("ddp_from_scratch", model, rank)
    dist.destroy_process_group()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
