"""The examples in examples/python/ run as users run them: under rgrun, and as torchrun
starts them (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT set by hand here: PyTorch
is never a dependency), and each prints a weight difference from one process within 1e-12."""
import os
import re
import socket
import subprocess
import sys

import pytest

RGRUN = os.environ.get("RGRUN")
EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                        "python")
CASES = [("ddp_from_scratch.py", []), ("ddp_torchrun.py", []), ("ddp_accumulation.py", ["2"])]
WORLD = 2


def difference(output):
    found = re.search(r"max \|weight difference\| from one process on the whole batch = (\S+)",
                      output)
    assert found, output
    return float(found.group(1))


@pytest.mark.skipif(not RGRUN, reason="RGRUN (the rgrun program) is not set")
@pytest.mark.parametrize("script,args", CASES)
def test_example_under_rgrun(script, args):
    run = subprocess.run([RGRUN, "--nproc-per-node", str(WORLD), "--", sys.executable,
                          os.path.join(EXAMPLES, script), *args],
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    assert difference(run.stdout) <= 1e-12


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("script,args", CASES)
def test_example_with_torchrun_variables(script, args):
    port = str(free_port())
    ranks = []
    for rank in range(WORLD):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD),
                   LOCAL_WORLD_SIZE=str(WORLD), MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                   RG_DIST_TIMEOUT="60")
        ranks.append(subprocess.Popen([sys.executable, os.path.join(EXAMPLES, script), *args],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, env=env))
    outputs = [r.communicate(timeout=180)[0] for r in ranks]
    for rank, r in enumerate(ranks):
        assert r.returncode == 0, f"rank {rank}: {outputs[rank]}"
    assert difference(outputs[0]) <= 1e-12


@pytest.mark.skipif(not os.environ.get("RG_BUILD_ROOT"), reason="RG_BUILD_ROOT is not set")
def test_python_step_bench_prints_its_ratio():
    bench = os.path.join(EXAMPLES, "..", "..", "bench", "python_step.py")
    run = subprocess.run([sys.executable, bench, os.environ["RG_BUILD_ROOT"], "--layers", "1",
                          "--width", "16", "--batch", "2", "--seq", "8", "--steps", "1",
                          "--rounds", "1"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"python step [\d.]+ ms, C\+\+ step [\d.]+ ms, ratio [\d.]+", run.stdout)


def test_the_tutorial_learns_to_add(tmp_path):
    run = subprocess.run([sys.executable, os.path.join(EXAMPLES, "tutorial.py"), "300"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    found = re.search(r"loss ([\d.]+) -> ([\d.]+); (\d+) of 100 additions right", run.stdout)
    assert found, run.stdout
    first, last, right = float(found.group(1)), float(found.group(2)), int(found.group(3))
    assert last < 0.3 * first and right >= 50
