"""Prints the names of a build's tests, one per line: those that must run alone
(`is_parallel: false`: they start several ranks or processes that wait on one another), or,
with --others, all the rest. scripts/test runs the two lists side by side, so that the ones
that must run alone, which mostly sleep, no longer leave a core idle (README, "Tests").
Usage: tests_alone.py BUILD_DIR [--others]"""
import json
import subprocess
import sys


def main():
    build = sys.argv[1]
    others = "--others" in sys.argv[2:]
    tests = json.loads(
        subprocess.run(["meson", "introspect", "--tests", build], check=True, capture_output=True,
                       text=True).stdout)
    for test in tests:
        if test["is_parallel"] == others:
            print(test["name"])


if __name__ == "__main__":
    main()
