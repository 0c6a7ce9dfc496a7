"""The PyTorch programs of examples/pytorch_compat/ run under ringgrad (their only change from
PyTorch is the import) and print what PyTorch printed for them: the outputs recorded from
PyTorch in examples/pytorch_compat/expected/ (bench/pytorch_compat --record), compared number
by number to 1e-9 (float64 programs) or 1e-5 (float32). PyTorch itself is never imported."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PROGRAMS_DIR = os.path.join(ROOT, "examples", "pytorch_compat")
sys.path.insert(0, PROGRAMS_DIR)
from compare_output import PROGRAMS, TOLERANCE, as_pytorch, compare  # noqa: E402

RGRUN = os.environ.get("RGRUN")


def output_of(name):
    path = os.path.join(PROGRAMS_DIR, name)
    command = [sys.executable, path]
    if name == "ddp_train.py":
        if not RGRUN:
            pytest.skip("RGRUN (the rgrun program) is not set")
        command = [RGRUN, "--nproc-per-node", "2", "--"] + command
    env = dict(os.environ, RG_NUM_THREADS="1")
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_prints_what_pytorch_printed(name):
    with open(os.path.join(PROGRAMS_DIR, "expected", name[:-3] + ".txt")) as f:
        expected = f.read()
    count, worst, mismatch = compare(output_of(name), expected, TOLERANCE[PROGRAMS[name]])
    assert mismatch is None, f"{name}: {mismatch} (largest difference so far {worst:.2e})"
    assert count >= 5, f"{name}: only {count} numbers compared"


def test_the_comparison_catches_a_difference():
    assert compare("loss 0.5\n", "loss 0.5\n", 1e-9)[2] is None
    assert compare("loss 0.50000001\n", "loss 0.5\n", 1e-9)[2] is not None
    assert compare("loss 0.441911\n", "loss 0.441912\n", 1e-5)[2] is None  # last digit rounding
    assert compare("step 1\n", "step 1\nstep 2\n", 1e-9)[2] is not None
    assert compare("sample: 'ab'\n", "sample: 'ac'\n", 1e-9)[2] is not None
    assert compare("[rank 0] loss 0.5\n", "loss 0.5\n", 1e-9)[2] is None  # rgrun's prefix


def test_the_pytorch_twin_differs_only_in_its_imports():
    source = "import ringgrad as torch\nimport ringgrad.nn as nn\nfrom ringgrad.utils.data import X\n"
    assert as_pytorch(source) == "import torch\nimport torch.nn as nn\nfrom torch.utils.data import X\n"
