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


def init_process_group(backend="tcp"):
    """Joins the job the launcher's variables describe: "tcp" (rgrun, torchrun, srun),
    "threads" is for one process only, "mpi" under mpirun, "nccl" on GPUs."""
    global _default_group
    if _default_group is not None:
        raise RuntimeError("init_process_group: already initialized "
                           "(call destroy_process_group first)")
    _default_group = _C.init_process_group(backend)
    return _default_group


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


__all__ = ["ReduceOp", "ProcessGroup", "init_process_group", "is_initialized", "get_rank",
           "get_world_size", "get_backend", "all_reduce", "broadcast", "barrier",
           "destroy_process_group"]
