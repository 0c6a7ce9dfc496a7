"""ringgrad.distributed: torch.distributed's names over ringgrad's process groups (rg::dist).

    import ringgrad.distributed as dist
    dist.init_process_group("tcp")        # RANK, WORLD_SIZE, MASTER_ADDR... from rgrun/torchrun
    dist.all_reduce(t, op=dist.ReduceOp.SUM)

Collectives block until done (the GIL is released while they wait) and work in place. A
failure on another rank arrives as RuntimeError naming that rank.
"""
from ringgrad import _C

ReduceOp = _C.ReduceOp
ProcessGroup = _C.ProcessGroup
_default_group = None


def init_process_group(backend=None, init_method=None, world_size=-1, rank=-1, **_ignored):
    """Joins the job the launcher's variables describe (rgrun, torchrun, srun): backend "tcp"
    or PyTorch's "gloo" (the same), "mpi" under mpirun, "nccl" on GPUs, None: nccl where a GPU
    is, else tcp. init_method may only be "env://" (the launcher's variables); world_size and
    rank, when given, must agree with them. Other keywords (timeout...) are accepted as
    PyTorch's and not used."""
    global _default_group
    if _default_group is not None:
        raise RuntimeError("init_process_group: already initialized "
                           "(call destroy_process_group first)")
    if init_method not in (None, "env://"):
        raise ValueError(f"init_process_group: init_method {init_method!r} is not supported "
                         "(only 'env://': RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)")
    group = _C.init_process_group(backend or "auto")
    for name, given, actual in (("world_size", world_size, group.size), ("rank", rank, group.rank)):
        if given not in (-1, None) and given != actual:
            raise ValueError(f"init_process_group: {name}={given} but the launcher says {actual}")
    _default_group = group
    return _default_group


def is_available():
    return True


def is_initialized():
    return _default_group is not None


def _group(group):
    if group is not None:
        return group
    if _default_group is None:
        raise RuntimeError("ringgrad.distributed: call init_process_group() first")
    return _default_group


def get_rank(group=None):
    return _group(group).rank


def get_world_size(group=None):
    return _group(group).size


def get_backend(group=None):
    return _group(group).backend


def all_reduce(tensor, op=ReduceOp.SUM, group=None):
    _group(group).all_reduce(tensor, op)


def broadcast(tensor, src, group=None):
    _group(group).broadcast(tensor, src)


def barrier(group=None):
    _group(group).barrier()


def destroy_process_group():
    """Leaves the job: the group's links close once nothing else holds it."""
    global _default_group
    _default_group = None


__all__ = ["ReduceOp", "ProcessGroup", "init_process_group", "is_available", "is_initialized", "get_rank",
           "get_world_size", "get_backend", "all_reduce", "broadcast", "barrier",
           "destroy_process_group"]
