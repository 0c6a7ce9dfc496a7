"""Tests scripts/test_summary.py on made-up meson testlogs: meson's verdict wins over a test's
own summary, pytest's cases and skips are counted, a missing log is a failure."""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_summary.py")
DOCTEST_OK = "[doctest] test cases: 5 | 5 passed | 0 failed | 0 skipped\n"


def summary(*entries, extra_paths=()):
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "testlog.json")
        with open(path, "w") as f:
            for name, result, stdout in entries:
                f.write(json.dumps({"name": name, "result": result, "stdout": stdout}) + "\n")
        done = subprocess.run([sys.executable, SCRIPT, path, *extra_paths], capture_output=True,
                              text=True, check=True)
        return done.stdout.strip()


def check(got, want, what):
    if got != want:
        sys.exit(f"test_test_summary: {what}: got '{got}', want '{want}'")
    print(f"ok: {what}")


check(summary(("a", "OK", DOCTEST_OK)), "5 passed, 0 failed, 0 skipped", "doctest cases counted")
check(summary(("a", "FAIL", DOCTEST_OK + "==1==ERROR: LeakSanitizer: detected memory leaks\n")),
      "5 passed, 1 failed, 0 skipped", "a sanitizer report after doctest's summary fails")
check(summary(("mpi", "FAIL", DOCTEST_OK + "[doctest] test cases: 5 | 4 passed | 1 failed | 0 skipped\n")),
      "5 passed, 1 failed, 0 skipped", "a failing second rank counts")
check(summary(("t", "TIMEOUT", DOCTEST_OK)), "5 passed, 1 failed, 0 skipped", "a timeout fails")
check(summary(("py", "OK", "....s\n===== 12 passed, 3 skipped in 4.20s =====\n")),
      "12 passed, 0 failed, 3 skipped", "pytest's cases and skips counted")
check(summary(("py", "FAIL", "===== 1 failed, 11 passed, 1 error in 4.20s =====\n")),
      "11 passed, 2 failed, 0 skipped", "pytest's failures and errors counted")
check(summary(("sh", "OK", "ok: x\n"), ("sh2", "SKIP", ""), ("sh3", "FAIL", "")),
      "1 passed, 1 failed, 1 skipped", "other tests count as one")
check(summary(("sh", "OK", ""), extra_paths=["/nonexistent/testlog.json"]),
      "1 passed, 1 failed, 0 skipped", "a missing testlog is a failure")
