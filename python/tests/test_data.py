"""ringgrad.utils.data: DistributedSampler's shards, DataLoader's batches with and without
prefetching, and errors raised while loading."""
import numpy as np
import pytest

import ringgrad as rg
from ringgrad.utils.data import DataLoader, Dataset, DistributedSampler, TensorDataset


class Squares(Dataset):
    def __init__(self, n, fail_at=None):
        self.n, self.fail_at = n, fail_at

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise KeyError(f"item {i} is broken")
        return np.array([i, i * i], dtype=np.float32), i % 3


def test_distributed_sampler_shards_are_disjoint_cover_and_pad():
    data = Squares(10)
    shards = [list(DistributedSampler(data, num_replicas=3, rank=r, seed=7)) for r in range(3)]
    assert all(len(s) == 4 for s in shards)  # ceil(10 / 3), padded
    flat = sum(shards, [])
    assert sorted(set(flat)) == list(range(10)) and len(flat) == 12
    again = [list(DistributedSampler(data, num_replicas=3, rank=r, seed=7)) for r in range(3)]
    assert again == shards  # the same seed and epoch: the same order on every rank
    sampler = DistributedSampler(data, num_replicas=3, rank=0, seed=7)
    sampler.set_epoch(1)
    assert list(sampler) != shards[0]
    trimmed = [list(DistributedSampler(data, 3, r, drop_last=True)) for r in range(3)]
    assert all(len(s) == 3 for s in trimmed) and len(set(sum(trimmed, []))) == 9
    with pytest.raises(ValueError, match="rank 3"):
        DistributedSampler(data, num_replicas=3, rank=3)


@pytest.mark.parametrize("prefetch", [0, 2])
def test_data_loader_batches(prefetch):
    loader = DataLoader(Squares(7), batch_size=3, prefetch_factor=prefetch)
    batches = list(loader)
    assert len(batches) == len(loader) == 3
    x, y = batches[0]
    assert x.dtype == rg.float32 and x.numpy().tolist() == [[0, 0], [1, 1], [2, 4]]
    assert y.dtype == rg.int64 and y.numpy().tolist() == [0, 1, 2]
    assert batches[2][0].shape == (1, 2)
    assert len(list(DataLoader(Squares(7), batch_size=3, drop_last=True))) == 2
    tensors = TensorDataset(rg.arange(6, dtype=rg.float32), rg.arange(6))
    (a, b), = list(DataLoader(tensors, batch_size=6, prefetch_factor=prefetch))
    assert a.numpy().tolist() == [0, 1, 2, 3, 4, 5] and b.dtype == rg.int64


def test_data_loader_with_a_sampler_and_a_loading_error():
    sampler = DistributedSampler(Squares(8), num_replicas=2, rank=1, shuffle=False)
    (x, y), = list(DataLoader(Squares(8), batch_size=4, sampler=sampler))
    assert x.numpy()[:, 0].tolist() == [1, 3, 5, 7]
    with pytest.raises(KeyError, match="item 4 is broken"):
        list(DataLoader(Squares(8, fail_at=4), batch_size=2))
