"""One rank of the DDP tests (test_distributed.py launches it under rgrun).

    python ddp_ranks.py equivalence ACCUMULATION   DDP + AdamW for 3 steps in float64, each rank
                                                   on its shard of a global batch of 16 rows,
                                                   ACCUMULATION micro-batches per step under
                                                   no_sync; rank 0 prints the largest
                                                   difference from one model trained on the whole
                                                   batch in this process
    python ddp_ranks.py killed                     rank 1 kills itself; the others' all_reduce
                                                   raises, and they print what it said
    python ddp_ranks.py broadcast_roots            each rank broadcasts with src = its own rank;
                                                   each prints what broadcast raised (or what it
                                                   returned)
"""
import os
import signal
import sys

import numpy as np

import ringgrad as rg
import ringgrad.distributed as dist
from ringgrad import nn
from ringgrad.nn.parallel import DistributedDataParallel

# The examples' model and data (examples/python/common.py): 3 steps of a batch of 16 rows.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "python"))
from common import GLOBAL_BATCH, batch, make_model  # noqa: E402

STEPS = 3


def train_step(model, optimizer, step, row_groups, no_sync=None):
    """One optimizer step over micro-batches (each a list of global rows): the loss of each is
    its mean, weighted by its share of the rows, so the gradients add up to the batch mean."""
    total = sum(len(rows) for rows in row_groups)
    for k, rows in enumerate(row_groups):
        x, y = batch(step, rows)
        last = k + 1 == len(row_groups)
        with no_sync() if no_sync and not last else _nothing():
            loss = nn.functional.cross_entropy(model(x), y) * (len(rows) / total)
            loss.backward()
    optimizer.step()
    optimizer.zero_grad()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def equivalence(accumulation):
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = DistributedDataParallel(make_model())
    reference = make_model()
    ddp_optimizer = rg.optim.AdamW(ddp.parameters(), lr=1e-2)
    reference_optimizer = rg.optim.AdamW(reference.parameters(), lr=1e-2)
    share = GLOBAL_BATCH // world
    mine = list(range(rank * share, (rank + 1) * share))
    micro = [mine[k::accumulation] for k in range(accumulation)]
    for step in range(STEPS):
        train_step(ddp, ddp_optimizer, step, micro, ddp.no_sync)
        train_step(reference, reference_optimizer, step, [list(range(GLOBAL_BATCH))])
    worst = max(float(np.abs(a.detach().numpy() - b.detach().numpy()).max())
                for a, b in zip(ddp.parameters(), reference.parameters()))
    if rank == 0:
        print(f"ddp: world {world}, accumulation {accumulation}, "
              f"{ddp.reducer.synchronized_backwards} synchronized backwards, "
              f"max |param difference| = {worst:.3e}")


def killed():
    if dist.get_rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    t = rg.ones(1000)
    try:
        dist.all_reduce(t)
    except RuntimeError as e:
        print(f"rank {dist.get_rank()} caught RuntimeError: {e}", flush=True)
        sys.exit(3)
    print("all_reduce returned", flush=True)


def broadcast_roots():
    rank = dist.get_rank()
    t = rg.full([10], float(rank))
    try:
        dist.broadcast(t, src=rank)
    except RuntimeError as e:
        print(f"rank {rank} caught RuntimeError: {e}", flush=True)
        sys.exit(3)
    print(f"rank {rank}: broadcast returned {t.numpy().tolist()[0]}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("tcp")
    if sys.argv[1] == "equivalence":
        equivalence(int(sys.argv[2]))
    elif sys.argv[1] == "broadcast_roots":
        broadcast_roots()
    else:
        killed()
    dist.destroy_process_group()
