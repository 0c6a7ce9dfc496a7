#!/usr/bin/env python3
"""same_checkpoint.py A.safetensors B.safetensors: exits 0 when two checkpoints written by two
runs are the same but for whose they are: byte for byte, once the metadata that names the
writing run (run_id, ckpt_id, and the shard records zero_shard.<r>, whose file names and
hashes hold it) is left out. Prints the first difference otherwise."""
import json
import struct
import sys

RUN_FIELDS = ("run_id", "ckpt_id")


def without_run(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    md = head.get("__metadata__", {})
    head["__metadata__"] = {k: v for k, v in md.items()
                            if k not in RUN_FIELDS and not k.startswith("zero_shard.")}
    return head, raw[8 + n:]


(head_a, data_a), (head_b, data_b) = without_run(sys.argv[1]), without_run(sys.argv[2])
if head_a != head_b:
    diff = sorted(k for k in set(head_a) | set(head_b) if head_a.get(k) != head_b.get(k))
    print(f"same_checkpoint: the headers differ in {diff[:5]}")
    sys.exit(1)
if data_a != data_b:
    print("same_checkpoint: the tensors' bytes differ")
    sys.exit(1)
sys.exit(0)
