"""bench/python_step.py: the GPT training step driven from Python against the same step in C++.

The model is a Python Module of ringgrad layers (Embedding, LayerNorm, Linear, the fused
packed-QKV attention, tanh GELU, cross-entropy with the output layer tied to the token
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
import tempfile
import time

import numpy as np


def import_ringgrad(build):
    """ringgrad from the build folder (assembled as python/tests/run_tests.py does), else the
    installed package."""
    built = glob.glob(os.path.join(build, "python", "_C*.so"))
    if built:
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "tests"))
        import run_tests
        staging = tempfile.mkdtemp(prefix="ringgrad-bench-")
        run_tests.assemble(built[0], staging)
        sys.path.insert(0, staging)
    import ringgrad
    return ringgrad


def gpt_classes(rg):
    nn, F = rg.nn, rg.nn.functional

    class Block(nn.Module):
        def __init__(self, width, heads):
            super().__init__()
            self.heads = heads
            self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.c_attn, self.attn_proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.c_fc, self.mlp_proj = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x):
            x = x + self.attn_proj(F.packed_qkv_attention(self.c_attn(self.ln_1(x)), self.heads))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self, vocab, block, layers, width, heads):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(block, width)
            self.blocks = nn.Sequential(*[Block(width, heads) for _ in range(layers)])
            self.ln_f = nn.LayerNorm(width)
            self.positions = rg.arange(block)

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(self.positions)
            logits = F.linear(self.ln_f(self.blocks(x)), self.wte.weight)  # tied output layer
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    return GPT


def init_like_nanogpt(model, layers):
    """nanoGPT's (and nn::GPT's) initialization: weights N(0, 0.02), the residual projections
    N(0, 0.02 / sqrt(2 layers)), biases 0, layer norms 1 and 0. (torch.nn's defaults, N(0, 1)
    embeddings tied to the output layer, give logits so large that the softmax's exponentials
    are subnormal floats, which cost ~10x on the CPU: another step than bench/train_step's.)"""
    data = np.random.default_rng(1337)
    for name, p in model.named_parameters():
        values = p.detach().numpy()
        if name.endswith("proj.weight"):
            values[...] = data.normal(0, 0.02 / (2 * layers) ** 0.5, values.shape)
        elif name.endswith("weight") and not name.split(".")[-2].startswith("ln"):
            values[...] = data.normal(0, 0.02, values.shape)
        elif name.endswith("bias") and not name.split(".")[-2].startswith("ln"):
            values[...] = 0


def python_steps(rg, a):
    GPT = gpt_classes(rg)
    model = GPT(512, a.seq, a.layers, a.width, 4)
    init_like_nanogpt(model, a.layers)
    optimizer = rg.optim.AdamW(model.parameters(), lr=1e-4)
    data = np.random.default_rng(0)
    x = rg.tensor(data.integers(0, 512, (a.batch, a.seq)).tolist())
    y = rg.tensor(data.integers(0, 512, (a.batch, a.seq)).tolist())
    times = []
    for s in range(a.steps + 2):
        optimizer.zero_grad()
        start = time.perf_counter()
        loss = model(x, y)
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
