#!/usr/bin/env python3
"""Tests of check_layers.py on small trees written to a temporary folder: a clean tree
passes, and a planted include that points up, one that points sideways, one into tests/,
and a malformed layer block each fail with the file:line and the two layers named.

usage: test_check_layers.py     (exit 0 when every case behaves)
"""
import os
import subprocess
import sys
import tempfile

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_layers.py")
DOC = """# layers
<!-- include-layers:begin -->
```
core:
kernels: core
autograd: core
ops: autograd kernels core
```
<!-- include-layers:end -->
"""


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


def run(files, doc=DOC):
    with tempfile.TemporaryDirectory() as root:
        write(root, "docs/architecture.md", doc)
        for path, text in files.items():
            write(root, path, text)
        p = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr


CLEAN = {
    "core/tensor.h": '#pragma once\n#include <vector>\n#include "core/dtype.h"\n',
    "kernels/cpu/add.cpp": '#include "core/tensor.h"\n#include "kernels/cpu/loop.h"\n',
    "ops/add.cpp": '#include "autograd/node.h"\n#include "kernels/builtin.h"\n',
    "tests/test_all.cpp": '#include "ops/ops.h"\n',  # tests sit above every layer
    "kernels/builtin.cpp": '#include "builtin_kernels.h"\n',  # generated, no folder
}

failures = []


def expect(name, condition, output):
    if not condition:
        failures.append(f"{name}:\n{output}")


code, out = run(CLEAN)
expect("clean tree passes", code == 0 and "every include points down" in out, out)

up = dict(CLEAN)
up["core/print.cpp"] = '#include "core/tensor.h"\n\n#include "autograd/meta.h"\n'
code, out = run(up)
expect("an upward include fails naming file:line and both layers",
       code == 1 and "core/print.cpp:3: core -> autograd points up" in out, out)

sideways = dict(CLEAN)
sideways["autograd/engine.cpp"] = '  #  include "kernels/builtin.h"\n'
code, out = run(sideways)
expect("a sideways include fails", code == 1 and
       "autograd/engine.cpp:1: autograd -> kernels points sideways" in out, out)

into_tests = dict(CLEAN)
into_tests["ops/helpers.h"] = '#include "tests/helpers.h"\n'
code, out = run(into_tests)
expect("a layer including tests/ points up", code == 1 and
       "ops/helpers.h:1: ops -> tests points up" in out, out)

code, out = run(CLEAN, doc="# no block here\n")
expect("a missing layer block is an error", code == 2 and "include-layers:begin" in out, out)

bad = DOC.replace("kernels: core", "kernels: core nowhere")
code, out = run(CLEAN, doc=bad)
expect("an unknown layer in the block is an error", code == 2 and "nowhere" in out, out)

for f in failures:
    print("FAIL", f)
print(f"test_check_layers: {6 - len(failures)} of 6 cases pass")
sys.exit(1 if failures else 0)
