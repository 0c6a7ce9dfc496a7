#!/usr/bin/env python3
"""weights_diff.py A.safetensors B.safetensors LOW HIGH: the largest relative difference
between the weights of two checkpoints (per tensor, to the largest magnitude in B's tensor;
F32 and F64 tensors whose names do not start with "optim."). Prints it; exits 0 when both
files hold the same weight names, at least one, and LOW <= difference < HIGH."""
import array, json, struct, sys

CODES = {"F32": "f", "F64": "d"}


def weights(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    out = {}
    for name, t in json.loads(raw[8:8 + n]).items():
        if name == "__metadata__" or name.startswith("optim.") or t["dtype"] not in CODES:
            continue
        a, b = t["data_offsets"]
        out[name] = array.array(CODES[t["dtype"]], raw[8 + n + a:8 + n + b])
    return out


x, y = weights(sys.argv[1]), weights(sys.argv[2])
worst = max((max(abs(p - q) for p, q in zip(x[k], y[k])) / max(1e-30, max(abs(q) for q in y[k]))
             for k in x if k in y and len(y[k])), default=0.0)
print(f"{len(x)} weight tensors, max relative difference {worst:.3g}")
low, high = float(sys.argv[3]), float(sys.argv[4])
sys.exit(0 if sorted(x) == sorted(y) and len(x) > 0 and low <= worst < high else 1)
