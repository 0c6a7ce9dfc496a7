"""Samplers with torch.utils.data's names and numbers: the same seed gives the same order as
PyTorch. RandomSampler draws a seed from the default generator (an int64 random_()) and then
permutes with a fresh Generator seeded with it, as torch's does, unless given a generator.
"""
from ringgrad import _random


class Sampler:
    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the data (replacement=False), or num_samples indices drawn with
    replacement (randint in chunks of 32, torch's)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num_samples = num_samples
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement should be a boolean, got {replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"RandomSampler: num_samples should be a positive integer, got "
                             f"{self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = _random.Generator().manual_seed(_random.int64_seed())
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from _list(_random.randint(n, (32,), generator=generator))
            yield from _list(_random.randint(n, (self.num_samples % 32,), generator=generator))
            return
        for _ in range(self.num_samples // n):
            yield from _list(_random.randperm(n, generator=generator))
        yield from _list(_random.randperm(n, generator=generator))[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """indices in a random order (randperm of their count)."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        for i in _list(_random.randperm(len(self.indices), generator=self.generator)):
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


def _list(tensor):
    return tensor.numpy().tolist()


__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler"]
