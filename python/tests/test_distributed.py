"""rg.distributed and DistributedDataParallel across processes: ranks launched by rgrun
(RGRUN, set by meson's `python` suite), each running ddp_ranks.py."""
import os
import re
import socket
import subprocess
import sys

import pytest

import ringgrad as rg
import ringgrad.distributed as dist

RGRUN = os.environ.get("RGRUN")
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ddp_ranks.py")
needs_rgrun = pytest.mark.skipif(not RGRUN, reason="RGRUN (the rgrun program) is not set")


def launch(world, *args):
    env = dict(os.environ, RG_DIST_TIMEOUT="20")
    return subprocess.run([RGRUN, "--nproc-per-node", str(world), "--", sys.executable, SCRIPT,
                           *args], capture_output=True, text=True, timeout=180, env=env)


@needs_rgrun
@pytest.mark.parametrize("world,accumulation", [(2, 1), (2, 2), (4, 1), (4, 2)])
def test_ddp_equals_one_process_on_the_whole_batch(world, accumulation):
    run = launch(world, "equivalence", str(accumulation))
    assert run.returncode == 0, run.stdout + run.stderr
    found = re.search(r"(\d+) synchronized backwards, max \|param difference\| = (\S+)",
                      run.stdout)
    assert found, run.stdout
    assert int(found.group(1)) == 3  # one per step: no_sync's backwards did not communicate
    assert float(found.group(2)) <= 1e-12


@needs_rgrun
def test_a_killed_rank_raises_in_the_others():
    run = launch(2, "killed")
    assert run.returncode != 0
    assert "rgrun: rank 1 was killed by signal 9" in run.stdout + run.stderr
    caught = re.search(r"rank 0 caught RuntimeError: (.*)", run.stdout)
    assert caught, run.stdout + run.stderr
    assert "rank 1" in caught.group(1)


@needs_rgrun
def test_ranks_that_broadcast_from_different_roots_fail_naming_the_mismatch():
    run = launch(2, "broadcast_roots")
    assert run.returncode != 0, run.stdout + run.stderr
    assert "broadcast returned" not in run.stdout
    caught = re.findall(r"rank (\d) caught RuntimeError: (.*)", run.stdout)
    assert caught, run.stdout + run.stderr
    assert any("mismatched collectives" in message and "from root" in message
               for _, message in caught), run.stdout


def test_distributed_needs_init_first():
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.all_reduce(rg.ones(3))
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.get_rank()


def test_init_process_group_takes_pytorchs_arguments_and_refuses_other_init_methods():
    assert dist.is_available()
    with pytest.raises(ValueError, match="init_method 'tcp://10.0.0.1:23456' is not supported"):
        dist.init_process_group("gloo", init_method="tcp://10.0.0.1:23456")
    assert not dist.is_initialized()


def test_a_single_process_group_under_the_gloo_name(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    for name, value in (("RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1"),
                        ("MASTER_PORT", port)):
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match="world_size=2 but the launcher says 1"):
        dist.init_process_group(backend="gloo", world_size=2)
    group = dist.init_process_group(backend="gloo", rank=0, world_size=1)
    try:
        assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "tcp")
        t = rg.tensor([1.0, 2.0], dtype=rg.float64)
        dist.all_reduce(t)
        assert (t[0].item(), t[1].item()) == (1.0, 2.0)
    finally:
        dist.destroy_process_group()
    assert group.size == 1
