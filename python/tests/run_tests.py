"""Runs the Python tests (pytest) on the module as built in a meson build directory.

    python run_tests.py BUILD/python/_C.<abi>.so [pytest args...]

The package is assembled in a temporary directory: python/ringgrad's sources, linked, and the
extension beside them as ringgrad/_C, so the tests import what `pip install .` would install
without installing anything. Exits with pytest's status.
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from staging import assemble  # noqa: E402  (python/staging.py)


def main() -> int:
    if len(sys.argv) < 2 or not os.path.isfile(sys.argv[1]):
        print(f"run_tests.py: expected the built extension, got {sys.argv[1:2]}", file=sys.stderr)
        return 2
    import pytest

    with tempfile.TemporaryDirectory(prefix="ringgrad-py-") as staging:
        assemble(sys.argv[1], staging)
        sys.path.insert(0, staging)
        # Ranks the tests launch (rgrun ... python script.py) import the same package.
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [staging] + [p for p in [os.environ.get("PYTHONPATH")] if p])
        return pytest.main(["-q", "-p", "no:cacheprovider", HERE] + sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
