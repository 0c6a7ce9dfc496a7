#!/usr/bin/env python3
"""tamper_shard.py SHARD CKPT RANK ACTION: changes one tensor of an optimizer shard file of a
--zero checkpoint, then rewrites the shard's record in CKPT (metadata "zero_shard.RANK": file
name, size, fnv1a) to match, so that only the checks of the contents can see the change.
ACTION:
  rename-exp-avg-sq   the first exp_avg_sq piece gets another offset (its elements uncovered)
  step-1000           the "step" tensor says 1000
  inf-exp-avg-sq      element 0 of the first exp_avg_sq piece is +inf
  int-exp-avg         the first exp_avg piece's dtype says I64 (I32 for F32: the same bytes)
Both files are rewritten in place (tests only)."""
import json
import struct
import sys


def read(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), bytearray(raw[8 + n:])


def write(path, head, data):
    text = json.dumps(head, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    raw = struct.pack("<Q", len(text)) + text + bytes(data)
    open(path, "wb").write(raw)
    return raw


def fnv1a(raw):
    h = 14695981039346656037
    for b in raw:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def first(head, tail):
    return next(k for k in head if k.endswith(tail))


shard, ckpt, rank, action = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
head, data = read(shard)
if action == "rename-exp-avg-sq":
    old = first(head, ".exp_avg_sq")
    _, param, offset, moment = old.split(".")
    head = {(f"piece.{param}.{int(offset) + 1000000}.{moment}" if k == old else k): v
            for k, v in head.items()}
elif action == "step-1000":
    b, e = head["step"]["data_offsets"]
    data[b:e] = struct.pack("<q", 1000)
elif action == "inf-exp-avg-sq":
    t = head[first(head, ".exp_avg_sq")]
    b = t["data_offsets"][0]
    code = "<d" if t["dtype"] == "F64" else "<f"
    data[b:b + struct.calcsize(code)] = struct.pack(code, float("inf"))
elif action == "int-exp-avg":
    t = head[first(head, ".exp_avg")]
    t["dtype"] = "I64" if t["dtype"] == "F64" else "I32"  # the same bytes, read as integers
else:
    sys.exit(f"tamper_shard.py: unknown action {action}")
raw = write(shard, head, data)
chead, cdata = read(ckpt)
key = f"zero_shard.{rank}"
name = chead["__metadata__"][key].split(" ")[0]
chead["__metadata__"][key] = f"{name} {len(raw)} {fnv1a(raw)}"
write(ckpt, chead, cdata)
