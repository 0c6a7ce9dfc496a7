"""bench/memory_table.py: where the memory goes at DDP and each ZeRO stage, per rank.

Runs `rgrun --nproc-per-node N -- rgtrain --memory-report` for two steps of a GPT at each world
size and ZeRO stage, reads rank 0's memory reports (the peak MiB of each category in forward,
backward and the optimizer step) and prints a markdown table: each category's peak over the
first step and the step's total peak, then the peak of parameters + gradients + optimizer state
together (the model's state, the figure ZeRO shrinks: the report's "model state" row, the
high-water mark of their sum, not the sum of their separate peaks) in the first step and in the
second (the steady state: the optimizer's state now lives through forward and backward), each
with its ratio to DDP's at the same world size. The global batch stays fixed, so every run
trains the same model. With --device sim or cuda, two more columns come from the report's
allocator line after the second step: the bytes the caching allocator reserves and its
fragmentation (1 - largest free block / free cached bytes; core/device_interface.h).

    python3 bench/memory_table.py BUILD_DIR [--layers 6 --heads 4 --width 256 --device cpu
                                           --worlds 1 2 4 --stages 0 1 2 3 --global-batch 8]
"""
import argparse
import os
import re
import subprocess
import sys

CATEGORIES = ["parameters", "gradients", "optimizer state", "buckets", "activations", "other"]


def report(build, world, stage, a):
    """{category: [forward, backward, optimizer] MiB} of rank 0's memory report."""
    cmd = [os.path.join(build, "apps", "rgrun"), "--nproc-per-node", str(world), "--",
           os.path.join(build, "apps", "rgtrain"), "--layers", str(a.layers), "--heads",
           str(a.heads), "--width", str(a.width), "--steps", "2", "--memory-report",
           "--global-batch", str(a.global_batch), "--micro-batch", str(a.global_batch // world),
           "--eval-every", "0", "--threads", "1", "--zero", str(stage), "--device", a.device]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"memory_table: {' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    reports = []  # one per step: {category: [forward, backward, optimizer] MiB}
    allocator = []  # one per step on a device: (reserved MiB, fragmentation)
    for line in (out.stdout + out.stderr).splitlines():
        line = re.sub(r"^\[rank 0\] ", "", line)
        if line.startswith("memory report"):
            reports.append({})
        m = re.match(r"allocator: reserved (\d+\.\d+) MiB,.*fragmentation (\d+\.\d+)$", line)
        if m:
            allocator.append((float(m.group(1)), float(m.group(2))))
        for name in CATEGORIES + ["total (peak)", "model state"]:
            if line.startswith(name + " ") and re.search(r"\d+\.\d+\s+\d+\.\d+\s+\d+\.\d+$", line):
                reports[-1][name] = [float(x) for x in line.split()[-3:]]
    if len(reports) != 2 or any(len(r) != len(CATEGORIES) + 2 for r in reports):
        sys.exit(f"memory_table: no two whole reports for world {world}, stage {stage}")
    if a.device != "cpu" and len(allocator) != 2:
        sys.exit(f"memory_table: no allocator line for world {world}, stage {stage}")
    return reports, allocator


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--global-batch", type=int, default=8)
    p.add_argument("--device", default="cpu", help="cpu, sim or cuda")
    p.add_argument("--worlds", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--stages", type=int, nargs="+", default=[0, 1, 2, 3])
    a = p.parse_args()
    names = {0: "DDP", 1: "ZeRO-1", 2: "ZeRO-2", 3: "ZeRO-3"}
    print(f"GPT {a.layers}x{a.width}, global batch {a.global_batch}, rank 0's peak MiB per"
          " category over the first step (forward, backward, optimizer)")
    device = a.device != "cpu"
    print("| world | stage | parameters | gradients | optimizer state | buckets | activations |"
          " other | total (peak) | model state, step 1 | / DDP | model state, step 2 | / DDP |" +
          (" reserved, step 2 | fragmentation |" if device else ""))
    print("|---" * (15 if device else 13) + "|")
    for world in a.worlds:
        ddp = None
        for stage in a.stages:
            (first, second), allocator = report(a.build, world, stage, a)
            peak = {c: max(first[c]) for c in CATEGORIES}
            state = [max(first["model state"]), max(second["model state"])]
            if stage == 0:
                ddp = state
            ratios = [f"{s / d:.2f}" if ddp else "" for s, d in zip(state, ddp or state)]
            cells = [f"{peak[c]:.2f}" for c in CATEGORIES]
            print(f"| {world} | {names.get(stage, stage)} | " + " | ".join(cells) +
                  f" | {max(first['total (peak)']):.2f} | {state[0]:.2f} | {ratios[0]} |"
                  f" {state[1]:.2f} | {ratios[1]} |" +
                  (f" {allocator[1][0]:.2f} | {allocator[1][1]:.3f} |" if device else ""))


if __name__ == "__main__":
    main()
