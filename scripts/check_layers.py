#!/usr/bin/env python3
"""Include-layer check: every #include "folder/..." must point down the layer graph.

The graph is read from one place, the `include-layers` block of docs/architecture.md:
each line `layer: lower layers it may include`. A file in folder F (the first path
component) may include headers of F itself and of the layers F lists; anything else is an
arrow that points up (the included layer depends on F) or sideways (neither depends on the
other). tests/, bench/ and examples/ sit above every layer: they may include anything, and
a layer that includes them points up. Other folders are not checked.

usage: check_layers.py [SOURCE_ROOT]     exit 0: clean; 1: violations (one line each);
                                          2: the layer block is missing or malformed
"""
import os
import re
import sys

DOC = os.path.join("docs", "architecture.md")
BEGIN = "<!-- include-layers:begin -->"
END = "<!-- include-layers:end -->"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".in")
TOP = ("tests", "bench", "examples")  # above every layer: including them points up


def read_layers(root):
    """{layer: set of layers it may include}, from the block in docs/architecture.md."""
    path = os.path.join(root, DOC)
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        raise SystemExit(f"check_layers: cannot read {path}: {e.strerror}") from None
    if BEGIN not in text or END not in text:
        print(f"check_layers: {DOC} has no '{BEGIN}' ... '{END}' block", file=sys.stderr)
        sys.exit(2)
    block = text.split(BEGIN, 1)[1].split(END, 1)[0]
    layers = {}
    for line in block.splitlines():
        line = line.strip()
        if not line or line.startswith("```") or line.startswith("#"):
            continue
        name, sep, deps = line.partition(":")
        if not sep:
            print(f"check_layers: {DOC}: bad layer line '{line}' (want 'layer: lower ...')",
                  file=sys.stderr)
            sys.exit(2)
        layers[name.strip()] = set(deps.split())
    for name, deps in layers.items():
        unknown = deps - set(layers)
        if unknown:
            print(f"check_layers: {DOC}: layer '{name}' lists unknown layer(s) "
                  f"{', '.join(sorted(unknown))}", file=sys.stderr)
            sys.exit(2)
    return layers


def below(layers, name):
    """Every layer `name` may reach, directly or through the layers it includes."""
    seen, stack = set(), list(layers[name])
    while stack:
        d = stack.pop()
        if d not in seen:
            seen.add(d)
            stack.extend(layers[d])
    return seen


def violations(root, layers):
    """(path:line, from, to, direction, include) for every forbidden include under root."""
    found = []
    for layer in sorted(layers):
        top = os.path.join(root, layer)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for filename in sorted(filenames):
                if not filename.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, filename)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, text in enumerate(f, 1):
                        m = INCLUDE.match(text)
                        if not m or "/" not in m.group(1):
                            continue
                        target = m.group(1).split("/", 1)[0]
                        if target in TOP:
                            direction = "up"
                        elif target == layer or target not in layers or target in layers[layer]:
                            continue
                        else:
                            direction = "up" if layer in below(layers, target) else "sideways"
                        where = f"{os.path.relpath(path, root)}:{number}"
                        found.append((where, layer, target, direction, m.group(1)))
    return found


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    layers = read_layers(root)
    found = violations(root, layers)
    for where, layer, target, direction, include in found:
        allowed = " ".join(sorted(layers[layer])) or "nothing"
        print(f"{where}: {layer} -> {target} points {direction} (#include \"{include}\"; "
              f"{layer} may include: {allowed}; graph in {DOC})")
    if found:
        print(f"check_layers: {len(found)} include(s) break the layer graph")
        return 1
    print(f"check_layers: {len(layers)} layers, every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
