"""Prints one closing line '[LABEL] N passed, N failed, N skipped' over every case run by
`meson test`; with several testlog.json files, the cases of all of them.

meson's result for each test is the truth; the cases inside a test only refine the count:
- a doctest executable counts its test cases (its summary line; with several lines, as from
  MPI ranks, the first one's passes and the most failures any of them reports);
- a pytest run counts its cases, skips and failures (its closing `== ... ==` line);
- any other test counts as 1.
A test meson recorded as failed (exit code, timeout, a sanitizer report after the summary,
a failing rank other than the first) counts at least 1 failure whatever its output says."""
import argparse
import json
import re
import sys

DOCTEST = re.compile(r"test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped")
PYTEST_LINE = re.compile(r"^=+ (.*\b(?:passed|failed|skipped|error|errors)\b.*) in [\d.]+s.* =+$", re.M)
PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)")
PASSING = {"OK", "EXPECTEDFAIL"}


def cases_of(out):
    """(passed, failed, skipped) the test's own output reports, or None."""
    doctest = DOCTEST.findall(out)
    if doctest:
        first = doctest[0]
        return int(first[1]), max(int(d[2]) for d in doctest), int(first[3])
    pytest = PYTEST_LINE.findall(out)
    if pytest:
        counts = {}
        for n, kind in PYTEST_COUNT.findall(pytest[-1]):
            counts[kind.rstrip("s") if kind.startswith("error") else kind] = int(n)
        failed = counts.get("failed", 0) + counts.get("error", 0) + counts.get("xpassed", 0)
        return counts.get("passed", 0) + counts.get("xfailed", 0), failed, counts.get("skipped", 0)
    return None


def count(entry):
    result = entry.get("result")
    if result == "SKIP":
        return 0, 0, 1
    cases = cases_of(entry.get("stdout", "") or "")
    passed, failed, skipped = cases if cases else ((1, 0, 0) if result in PASSING else (0, 1, 0))
    if result not in PASSING and failed == 0:
        failed = 1  # meson saw it fail: its cases' count cannot say otherwise
        print(f"test_summary: {entry.get('name')}: {result} although its output reports no failed case",
              file=sys.stderr)
    return passed, failed, skipped


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", help="printed in brackets first, e.g. the build folder")
    parser.add_argument("testlogs", nargs="+")
    args = parser.parse_args()
    totals = [0, 0, 0]
    for path in args.testlogs:
        try:
            lines = open(path).readlines()
        except OSError:
            print(f"test_summary: no {path} (the build failed?): counted as 1 failed", file=sys.stderr)
            totals[1] += 1
            continue
        for line in lines:
            for i, n in enumerate(count(json.loads(line))):
                totals[i] += n
    prefix = f"[{args.label}] " if args.label else ""
    print(f"{prefix}{totals[0]} passed, {totals[1]} failed, {totals[2]} skipped")


if __name__ == "__main__":
    main()
