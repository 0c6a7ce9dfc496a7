"""DDP with gradient accumulation: micro-batches under no_sync(), one all-reduce per step.

Each rank splits its shard into ACCUMULATION micro-batches. Their backwards accumulate into
.grad locally inside no_sync(); the last one, outside it, averages the accumulated sums
across the ranks. Each micro-batch's loss is weighted by its share of the rows, so the sum
is the gradient of the whole batch's mean loss: the model equals one process on it.

    rgrun --nproc-per-node 2 -- python examples/python/ddp_accumulation.py [ACCUMULATION=2]
"""
import contextlib
import sys

import ringgrad as rg
import ringgrad.distributed as dist
from ringgrad.nn.parallel import DistributedDataParallel as DDP

import common


def main():
    accumulation = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    dist.init_process_group("tcp")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(common.make_model())
    optimizer = rg.optim.AdamW(model.parameters(), lr=1e-2)
    rows = common.shard(rank, world)
    micro_batches = [rows[k::accumulation] for k in range(accumulation)]
    for step in range(common.STEPS):
        for k, micro in enumerate(micro_batches):
            last = k + 1 == accumulation
            with contextlib.nullcontext() if last else model.no_sync():
                common.loss_of(model, step, micro, len(micro) / len(rows)).backward()
        optimizer.step()
        optimizer.zero_grad()
    syncs = model.reducer.synchronized_backwards
    if rank == 0:
        print(f"ddp_accumulation: {accumulation} micro-batches per step, {syncs} all-reducing "
              f"backwards in {common.STEPS} steps")
    ok = common.report("ddp_accumulation", model.module, rank) and syncs == common.STEPS
    dist.destroy_process_group()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
