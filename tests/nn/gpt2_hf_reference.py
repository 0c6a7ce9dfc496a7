"""Writes a small GPT-2 in HuggingFace's exact `model.safetensors` layout, and its logits
computed here in NumPy (float64), for tests/nn/gpt2_hf_check.cpp: an independent writer
(the `safetensors` package, never ringgrad's own) and an independent forward pass.

The layout is GPT2Model's as published on the Hub for `gpt2`: the names below with no prefix,
Conv1D weights stored [in, out], the causal-mask buffer h.{i}.attn.bias [1, 1, T, T],
float32 tensors and the metadata {"format": "pt"} (the number of heads is not in the file).

usage: gpt2_hf_reference.py OUTDIR   (writes OUTDIR/model.safetensors, OUTDIR/reference.safetensors)
"""
import os
import sys

import numpy as np
from safetensors.numpy import save_file

N_LAYER, N_HEAD, N_EMBD, VOCAB, BLOCK = 2, 4, 32, 50, 16
EPS = 1e-5  # GPT-2's layer_norm_epsilon


def make_weights(rng):
    c = N_EMBD
    w = {"wte.weight": rng.normal(0, 0.2, (VOCAB, c)), "wpe.weight": rng.normal(0, 0.1, (BLOCK, c)),
         "ln_f.weight": 1 + rng.normal(0, 0.1, c), "ln_f.bias": rng.normal(0, 0.1, c)}
    for i in range(N_LAYER):
        p = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            w[p + ln + ".weight"] = 1 + rng.normal(0, 0.1, c)
            w[p + ln + ".bias"] = rng.normal(0, 0.1, c)
        for name, n_in, n_out in (("attn.c_attn", c, 3 * c), ("attn.c_proj", c, c),
                                  ("mlp.c_fc", c, 4 * c), ("mlp.c_proj", 4 * c, c)):
            w[p + name + ".weight"] = rng.normal(0, 0.2, (n_in, n_out))  # Conv1D: [in, out]
            w[p + name + ".bias"] = rng.normal(0, 0.1, n_out)
        w[p + "attn.bias"] = np.tril(np.ones((BLOCK, BLOCK))).reshape(1, 1, BLOCK, BLOCK)
    return {k: v.astype(np.float32) for k, v in w.items()}


def layer_norm(x, g, b):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * g + b


def gelu_new(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def attention(x, w, p):
    B, T, C = x.shape
    hd = C // N_HEAD
    qkv = x @ w[p + "c_attn.weight"] + w[p + "c_attn.bias"]
    q, k, v = (qkv[..., j * C:(j + 1) * C].reshape(B, T, N_HEAD, hd).transpose(0, 2, 1, 3)
               for j in range(3))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd)
    scores = np.where(np.tril(np.ones((T, T), bool)), scores, -np.inf)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    y = (scores / scores.sum(-1, keepdims=True)) @ v
    y = y.transpose(0, 2, 1, 3).reshape(B, T, C)
    return y @ w[p + "c_proj.weight"] + w[p + "c_proj.bias"]


def forward(w, ids):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    x = w["wte.weight"][ids] + w["wpe.weight"][np.arange(ids.shape[1])]
    for i in range(N_LAYER):
        p = f"h.{i}."
        x = x + attention(layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"]), w, p + "attn.")
        h = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"])
        h = gelu_new(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = layer_norm(x, w["ln_f.weight"], w["ln_f.bias"])
    return x @ w["wte.weight"].T  # the head is tied to wte


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(1234)
    weights = make_weights(rng)
    ids = rng.integers(0, VOCAB, (2, BLOCK)).astype(np.int64)
    save_file(weights, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    save_file({"input_ids": ids, "logits": forward(weights, ids)},
              os.path.join(out, "reference.safetensors"))
    print(f"gpt2_hf_reference: wrote a {N_LAYER}-layer, {N_HEAD}-head GPT-2 of width {N_EMBD} "
          f"in HF's layout, and its logits for {ids.shape} tokens")


if __name__ == "__main__":
    main()
