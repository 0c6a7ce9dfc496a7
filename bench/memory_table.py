"""bench/memory_table.py: where the memory goes at DDP and each ZeRO stage, per rank.

Runs `rgrun --nproc-per-node N -- rgtrain --memory-report` for one step of a GPT at each world
size and ZeRO stage, reads rank 0's memory report (the peak MiB of each category in forward,
backward and the optimizer step) and prints a markdown table: each category's peak over the
step, the peak of parameters + gradients + optimizer state together (the model's state, the
figure ZeRO shrinks: the report's "model state" row, the high-water mark of their sum, not the
sum of their separate peaks), the step's total peak, and the model state's ratio to DDP's at the same
world size. The global batch stays fixed, so every run trains the same model.

    python3 bench/memory_table.py BUILD_DIR [--layers 6 --heads 4 --width 256
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
           str(a.heads), "--width", str(a.width), "--steps", "1", "--memory-report",
           "--global-batch", str(a.global_batch), "--micro-batch", str(a.global_batch // world),
           "--eval-every", "0", "--threads", "1", "--zero", str(stage)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"memory_table: {' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    rows = {}
    for line in (out.stdout + out.stderr).splitlines():
        line = re.sub(r"^\[rank 0\] ", "", line)
        for name in CATEGORIES + ["total (peak)", "model state"]:
            if line.startswith(name + " ") and re.search(r"\d+\.\d+\s+\d+\.\d+\s+\d+\.\d+$", line):
                rows[name] = [float(x) for x in line.split()[-3:]]
    missing = [c for c in CATEGORIES + ["total (peak)", "model state"] if c not in rows]
    if missing:
        sys.exit(f"memory_table: no {missing} in the report of world {world}, stage {stage}")
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--global-batch", type=int, default=8)
    p.add_argument("--worlds", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--stages", type=int, nargs="+", default=[0, 1, 2, 3])
    a = p.parse_args()
    names = {0: "DDP", 1: "ZeRO-1", 2: "ZeRO-2", 3: "ZeRO-3"}
    print(f"GPT {a.layers}x{a.width}, global batch {a.global_batch}, rank 0's peak MiB per"
          " category over the first step (forward, backward, optimizer)")
    print("| world | stage | parameters | gradients | optimizer state | buckets | activations |"
          " other | params+grads+optim (peak) | total (peak) | model state / DDP |")
    print("|---" * 11 + "|")
    for world in a.worlds:
        ddp_state = None
        for stage in a.stages:
            rows = report(a.build, world, stage, a)
            peak = {c: max(rows[c]) for c in CATEGORIES}
            state = max(rows["model state"])  # the peak of the sum, measured
            if stage == 0:
                ddp_state = state
            ratio = f"{state / ddp_state:.2f}" if ddp_state else ""
            cells = [f"{peak[c]:.2f}" for c in CATEGORIES]
            print(f"| {world} | {names.get(stage, stage)} | " + " | ".join(cells) +
                  f" | {state:.2f} | {max(rows['total (peak)']):.2f} | {ratio} |")


if __name__ == "__main__":
    main()
