"""Prints one closing line 'N passed, N failed' over every doctest case run by `meson test`."""
import json, re, sys

passed = failed = skipped = 0
for line in open(sys.argv[1]):
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
print(f"{passed} passed, {failed} failed, {skipped} skipped")
