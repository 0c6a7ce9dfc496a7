"""bench/python_step.py: the GPT training step driven from Python against the same step in C++.

The model is rg.nn.GPT, a Python Module of ringgrad layers (Embedding, LayerNorm, Linear, the
fused packed-QKV attention, tanh GELU, cross-entropy with the output layer tied to the token
embedding), the same shapes and ops as nn::GPT in bench/train_step; the step is theirs too:
zero_grad, forward with the loss, backward, AdamW. Both sides run at the same thread count,
alternating ROUNDS times (Python here, then `bench/train_step ... step_only` as a process);
each side's figure is its median step time, and the ratio Python / C++ is the overhead of
driving the engine from Python (the goal: <= 1.10 at 1 thread).

    python bench/python_step.py BUILD_DIR [--layers 2 --width 128 --batch 8 --seq 64
                                          --steps 20 --rounds 5 --threads 1]
Needs the module built in BUILD_DIR (python/_C*.so) or `import ringgrad` working.
"""
import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np


def import_ringgrad(build):
    """ringgrad from the build folder (staged as python/staging.py does, in a temporary
    directory removed at exit), else the installed package."""
    built = glob.glob(os.path.join(build, "python", "_C*.so"))
    if built:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                        "python"))
        import staging
        sys.path.insert(0, staging.staged(built[0]))
    import ringgrad
    return ringgrad


def python_steps(rg, a):
    """The step's median time with rg.nn.GPT (nanoGPT's init, as nn::GPT's: with torch.nn's
    defaults, N(0, 1) embeddings tied to the output layer would make the softmax's
    exponentials subnormal floats, ~10x slower on the CPU, another step than train_step's)."""
    config = rg.nn.GPTConfig(vocab_size=512, block_size=a.seq, n_layer=a.layers, n_head=4,
                             n_embd=a.width, gelu_approximate="tanh")
    model = rg.nn.GPT(config)
    optimizer = rg.optim.AdamW(model.parameters(), lr=1e-4)
    data = np.random.default_rng(0)
    x = rg.tensor(data.integers(0, 512, (a.batch, a.seq)).tolist())
    y = rg.tensor(data.integers(0, 512, (a.batch, a.seq)).tolist())
    times = []
    for s in range(a.steps + 2):
        optimizer.zero_grad()
        start = time.perf_counter()
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        if s >= 2:  # 2 warm-up steps, as train_step
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def cpp_step(a):
    out = subprocess.run([os.path.join(a.build, "bench", "train_step"), str(a.layers),
                          str(a.width), str(a.batch), str(a.seq), str(a.steps), str(a.threads),
                          "1"], capture_output=True, text=True, check=True).stdout
    return float(re.search(r"^step\s+([\d.]+) ms", out, re.M).group(1)) / 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("build")
    for name, default in (("layers", 2), ("width", 128), ("batch", 8), ("seq", 64),
                          ("steps", 20), ("rounds", 5), ("threads", 1)):
        p.add_argument("--" + name, type=int, default=default)
    a = p.parse_args()
    rg = import_ringgrad(a.build)
    rg.set_num_threads(a.threads)
    py, cpp = [], []
    for r in range(a.rounds):
        py.append(python_steps(rg, a))
        cpp.append(cpp_step(a))
        print(f"round {r + 1}: python {py[-1] * 1e3:.2f} ms, C++ {cpp[-1] * 1e3:.2f} ms, "
              f"ratio {py[-1] / cpp[-1]:.3f}", flush=True)
    ratio = statistics.median(py) / statistics.median(cpp)
    print(f"GPT {a.layers}x{a.width}, batch {a.batch} x {a.seq}, {a.threads} thread(s): "
          f"python step {statistics.median(py) * 1e3:.2f} ms, C++ step "
          f"{statistics.median(cpp) * 1e3:.2f} ms, ratio {ratio:.3f} (goal <= 1.10)")


if __name__ == "__main__":
    main()
