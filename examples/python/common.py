"""What the three DDP examples share: the model, the data, and the check against one process.

Every rank builds the same model (same seed), takes its shard of a global batch, and, after
training, compares its weights with a model that one process trains on the whole batch; the
examples print the largest difference, which float64 keeps at rounding level (<= 1e-12).
"""
import numpy as np

import ringgrad as rg
from ringgrad import nn

GLOBAL_BATCH, FEATURES, CLASSES, STEPS = 16, 8, 4, 5


def make_model():
    rg.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 32, dtype=rg.float64), nn.GELU(),
                         nn.Linear(32, CLASSES, dtype=rg.float64))


def batch(step, rows):
    """Rows `rows` of step `step`'s global batch: inputs and class labels."""
    data = np.random.default_rng(step)
    x = data.standard_normal((GLOBAL_BATCH, FEATURES))
    y = data.integers(0, CLASSES, GLOBAL_BATCH)
    return rg.from_numpy(np.ascontiguousarray(x[rows])), rg.tensor(y[rows].tolist())


def shard(rank, world):
    share = GLOBAL_BATCH // world
    return list(range(rank * share, (rank + 1) * share))


def loss_of(model, step, rows, weight=1.0):
    x, y = batch(step, rows)
    return nn.functional.cross_entropy(model(x), y) * weight


def train_one_process():
    """The reference: one model, the whole batch, the same optimizer."""
    model = make_model()
    optimizer = rg.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(STEPS):
        loss_of(model, step, list(range(GLOBAL_BATCH))).backward()
        optimizer.step()
        optimizer.zero_grad()
    return model


def report(name, model, rank):
    """Prints (rank 0) the largest weight difference from one process; True when <= 1e-12."""
    reference = train_one_process()
    worst = max(float(np.abs(a.detach().numpy() - b.detach().numpy()).max())
                for a, b in zip(model.parameters(), reference.parameters()))
    if rank == 0:
        print(f"{name}: max |weight difference| from one process on the whole batch = {worst:.3e}")
    return worst <= 1e-12
