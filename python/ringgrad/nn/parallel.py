"""DistributedDataParallel, as torch.nn.parallel has it, over ringgrad's C++ Reducer.

    model = DistributedDataParallel(model)       # rank 0's weights broadcast to every rank
    for k, (x, y) in enumerate(micro_batches):
        with model.no_sync() if k + 1 < len(micro_batches) else contextlib.nullcontext():
            loss_fn(model(x), y).backward()      # the last backward averages the gradients
    optimizer.step()

The Python side only registers the parameters and calls the reducer before each forward;
the averaging itself happens in C++ during backward (nn/reducer.h: autograd hooks fill
buckets, each all-reduced on the group's communication thread while backward goes on).
"""
import contextlib

from ringgrad import _C
from ringgrad import distributed
from ringgrad.nn.module import Module


class DistributedDataParallel(Module):
    """Averages gradients across the ranks of `process_group` (default: the one
    init_process_group made) during backward; `module` is reachable as .module."""

    def __init__(self, module, process_group=None, bucket_cap_mb=25,
                 gradient_as_bucket_view=False, find_unused_parameters=False):
        super().__init__()
        group = distributed._group(process_group)
        self.module = module
        named = list(module.named_parameters())
        if not named:
            raise ValueError("DistributedDataParallel: the module has no parameters")
        for _, p in named:  # every rank starts from rank 0's weights
            group.broadcast(p.detach(), 0)
        object.__setattr__(self, "process_group", group)
        object.__setattr__(self, "reducer", _C.Reducer(
            [p for _, p in named], [name for name, _ in named], group, float(bucket_cap_mb),
            gradient_as_bucket_view, find_unused_parameters))

    def forward(self, *args, **kwargs):
        self.reducer.prepare_for_forward()
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Backwards inside accumulate gradients locally, with no communication; the first
        backward after it averages the accumulated sums."""
        previous = self.reducer.require_sync
        self.reducer.require_sync = False
        try:
            yield
        finally:
            self.reducer.require_sync = previous


__all__ = ["DistributedDataParallel"]
