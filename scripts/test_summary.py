"""Prints one closing line '[LABEL] N passed, N failed, N skipped' over every doctest case
run by `meson test`; with several testlog.json files, the cases of all of them."""
import argparse, json, re, sys

parser = argparse.ArgumentParser()
parser.add_argument("--label", help="printed in brackets first, e.g. the build folder")
parser.add_argument("testlogs", nargs="+")
args = parser.parse_args()

passed = failed = skipped = 0
for path in args.testlogs:
    try:
        lines = open(path).readlines()
    except OSError:
        print(f"test_summary: no {path} (the build failed?): counted as 1 failed", file=sys.stderr)
        failed += 1
        continue
    for line in lines:
        entry = json.loads(line)
        out = entry.get("stdout", "") or ""
        m = re.search(r"test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped", out)
        if m:
            passed += int(m.group(2)); failed += int(m.group(3)); skipped += int(m.group(4))
        elif entry.get("result") == "OK":
            passed += 1
        elif entry.get("result") == "SKIP":
            skipped += 1
        else:
            failed += 1
prefix = f"[{args.label}] " if args.label else ""
print(f"{prefix}{passed} passed, {failed} failed, {skipped} skipped")
