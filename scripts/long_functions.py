#!/usr/bin/env python3
"""Lists the functions longer than --limit lines (opening to closing brace) in the C++ and
CUDA sources under ROOT, and fails when one has no reason written beside it: a comment
containing "long function:" on one of the three lines above its signature.

A brace-matching scan, not a parser: comments, string and char literals (not digit
separators) and preprocessor lines are blanked first; a `{` opens a function when the text before it ends like a signature
(`...) const {`) and is not a control statement, a lambda or an initializer. Nested
functions (lambdas, local classes) count toward the function around them.

    scripts/long_functions.py [--limit 80] [--exclude DIR ...] [--list] ROOT
"""
import argparse
import os
import re
import sys

SOURCE = re.compile(r"\.(cpp|h|cu|cuh|in)$")
CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|do|else)\b")
SIGNATURE_END = re.compile(
    r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(->\s*[\w:<>,\s*&]+)?\s*$")
LAMBDA = re.compile(r"\]\s*(<[^>]*>)?\s*\(")
NAME = re.compile(r"([\w:~]+)\s*\(")


def blank(text):
    return re.sub(r"[^\n]", " ", text)


def strip_code(src):
    """Blanks comments, string and char literals and preprocessor lines (keeps newlines)."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif src.startswith('R"', i):
            delim = re.match(r'R"([^(]*)\(', src[i:]).group(1)
            j = src.find(")" + delim + '"', i) + len(delim) + 2
        elif src[i] == "'" and re.match(r"[0-9a-fA-F]'[0-9a-fA-F]", src[i - 1:i + 2]):
            out.append(" ")  # a digit separator (10'000), not a char literal
            i += 1
            continue
        elif src[i] in "\"'":
            j = i + 1
            while j < n and src[j] != src[i]:
                j += 2 if src[j] == "\\" else 1
            j += 1
        else:
            out.append(src[i])
            i += 1
            continue
        out.append(blank(src[i:j]))
        i = j
    code = "".join(out)
    return re.sub(r"(?m)^\s*#.*(\\\n.*)*$", lambda m: blank(m.group(0)), code)


def functions(code):
    """(first line, last line, name) of each outermost function body in `code`."""
    depth_stack, last, current = [], 0, None
    for i, c in enumerate(code):
        if c == "{":
            head = code[last:i]
            last_line = head.strip().split("\n")[-1] if head.strip() else ""
            if (current is None and SIGNATURE_END.search(head) and not CONTROL.search(last_line)
                    and not LAMBDA.search(head) and not head.strip().endswith("=")):
                names = NAME.findall(head)
                current = (len(depth_stack), code.count("\n", 0, i) + 1,
                           names[-1] if names else "?")
            depth_stack.append(i)
            last = i + 1
        elif c == "}":
            if depth_stack:
                depth_stack.pop()
            if current and len(depth_stack) == current[0]:
                yield current[1], code.count("\n", 0, i) + 1, current[2]
                current = None
            last = i + 1
        elif c == ";":
            last = i + 1


def has_reason(lines, first):
    """A "long function:" comment on one of the three lines above the body's first line."""
    return any("long function:" in line for line in lines[max(0, first - 4):first])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root")
    parser.add_argument("--limit", type=int, default=80)
    parser.add_argument("--exclude", nargs="*", default=[], help="top-level folders to skip")
    parser.add_argument("--list", action="store_true", help="also list those with a reason")
    args = parser.parse_args()
    skip = {"build", ".git", *args.exclude}
    unexplained = 0
    for folder, subfolders, files in os.walk(args.root):
        rel = os.path.relpath(folder, args.root)
        top = rel.split(os.sep)[0]
        # Hidden folders (.git, a ./.venv holding nanobind's headers) are not ours.
        if top in skip or top.startswith("build") or (top.startswith(".") and top != "."):
            subfolders[:] = []
            continue
        for name in sorted(files):
            if not SOURCE.search(name):
                continue
            path = os.path.join(folder, name)
            with open(path, errors="replace") as f:
                src = f.read()
            lines = src.split("\n")
            for first, end, fn in functions(strip_code(src)):
                length = end - first + 1
                if length <= args.limit:
                    continue
                reason = has_reason(lines, first)
                if not reason or args.list:
                    where = os.path.relpath(path, args.root)
                    print(f"{length:5d} lines  {where}:{first}  {fn}"
                          + ("  (reason given)" if reason else ""))
                unexplained += not reason
    if unexplained:
        print(f"{unexplained} function(s) over {args.limit} lines without a 'long function:' "
              "reason: split them along their phases, or write the reason above them")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
