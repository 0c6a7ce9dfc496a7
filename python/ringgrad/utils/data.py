"""ringgrad.utils.data: Dataset, TensorDataset, DistributedSampler and a DataLoader that
prefetches, with torch.utils.data's names and semantics.

DistributedSampler gives each rank every num_replicas-th index of one (seeded, per-epoch)
permutation, padded by repeating its start so every rank gets as many (or, with drop_last,
trimmed): the ranks' shards are disjoint and together cover the dataset, as DDP needs.
Shuffled orders are PyTorch's for the same seed: DistributedSampler permutes with a Generator
seeded seed + epoch, DataLoader(shuffle=True) with a RandomSampler (utils/sampler.py), and each
pass over a DataLoader first draws an int64 seed from its generator, as torch's iterator does
(so the default generator's later numbers stay torch's too).
DataLoader collates items into tensors (NumPy stacking, then one tensor per field) and, with
prefetch_factor > 0, prepares the next batches on a background thread while the caller trains
(ringgrad's ops release the GIL only in backward and collectives, so the overlap is with
those); an exception raised while loading reaches the caller at that batch.
"""
import itertools
import math
import queue
import threading

import numpy as np

from ringgrad import _C, _random
from ringgrad._creation import from_numpy
from ringgrad.utils.sampler import (RandomSampler, Sampler, SequentialSampler,
                                    SubsetRandomSampler)


class Dataset:
    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class TensorDataset(Dataset):
    """Item i is (t[i] for each tensor); all tensors have the same first dimension."""

    def __init__(self, *tensors):
        if not tensors or any(len(t) != len(tensors[0]) for t in tensors):
            raise ValueError("TensorDataset: tensors must share their first dimension")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return len(self.tensors[0])


class Subset(Dataset):
    """dataset[indices[i]] as item i."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index):
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Subsets of the given lengths (or fractions) of one randperm, torch's split."""
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [math.floor(n * fraction) for fraction in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("random_split: sum of input lengths does not equal the length of the "
                         "input dataset")
    indices = _random.randperm(n, generator=generator).numpy().tolist()
    return [Subset(dataset, indices[end - length:end])
            for end, length in zip(itertools.accumulate(lengths), lengths)]


class DistributedSampler:
    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            from ringgrad import distributed
            num_replicas = distributed.get_world_size() if num_replicas is None else num_replicas
            rank = distributed.get_rank() if rank is None else rank
        if not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: rank {rank} is not in [0, {num_replicas})")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        n = len(dataset)
        self.num_samples = n // num_replicas if drop_last else math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        if self.shuffle:
            generator = _random.Generator().manual_seed(self.seed + self.epoch)
            indices = _random.randperm(len(self.dataset), generator=generator).numpy().tolist()
        else:
            indices = list(range(len(self.dataset)))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            padding = self.total_size - len(indices)
            indices += (indices * math.ceil(padding / max(len(indices), 1)))[:padding]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples


def default_collate(items):
    """A batch from items: tensors and arrays stacked, numbers made a tensor (floats
    float32, ints int64, as torch's), tuples and dicts collated field by field."""
    first = items[0]
    if isinstance(first, (tuple, list)):
        return type(first)(default_collate([item[k] for item in items]) for k in range(len(first)))
    if isinstance(first, dict):
        return {key: default_collate([item[key] for item in items]) for key in first}
    if isinstance(first, _C.Tensor):
        return from_numpy(np.stack([item.numpy() for item in items]))
    array = np.array(items)
    if array.dtype == np.float64 and not isinstance(first, np.ndarray):
        array = array.astype(np.float32)
    elif array.dtype.kind in "iu":
        array = array.astype(np.int64)
    return from_numpy(np.ascontiguousarray(array))


class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, drop_last=False,
                 collate_fn=None, prefetch_factor=2, generator=None):
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler and shuffle are exclusive")
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.shuffle, self.generator = shuffle, generator
        if sampler is None:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        self.sampler = sampler
        self.collate_fn = collate_fn or default_collate
        self.prefetch_factor = prefetch_factor

    def _batches(self, indices):
        for start in range(0, len(indices), self.batch_size):
            chunk = indices[start:start + self.batch_size]
            if len(chunk) < self.batch_size and self.drop_last:
                return
            yield self.collate_fn([self.dataset[i] for i in chunk])

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def __iter__(self):
        # torch's iterator draws its workers' base seed first, then the sampler draws; both
        # happen here, on the caller's thread, in that order.
        self._base_seed = _random.int64_seed(self.generator)
        batches = self._batches(list(self.sampler))
        if self.prefetch_factor <= 0:
            return batches
        return _Prefetcher(batches, self.prefetch_factor)


class _Prefetcher:
    """Runs a batch generator on a thread, at most `depth` batches ahead."""
    _DONE = object()

    def __init__(self, batches, depth):
        self._queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._fill, args=(batches,), daemon=True)
        self._thread.start()

    def _fill(self, batches):
        try:
            for batch in batches:
                while not self._stop.is_set():
                    try:
                        self._queue.put(batch, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if self._stop.is_set():
                    return
            self._queue.put(self._DONE)
        except BaseException as error:  # handed to the consumer at this batch
            self._queue.put(error)

    def __iter__(self):
        return self

    def __next__(self):
        item = self._queue.get()
        if item is self._DONE:
            raise StopIteration
        if isinstance(item, BaseException):
            raise item
        return item

    def __del__(self):
        self._stop.set()


__all__ = ["Dataset", "TensorDataset", "Subset", "random_split", "DistributedSampler",
           "DataLoader", "default_collate", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler"]
