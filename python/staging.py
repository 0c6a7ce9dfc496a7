"""Stages the ringgrad package from this source tree and a built extension, without installing
anything: python/ringgrad's sources are linked into a directory and the extension placed
beside them as ringgrad/_C, so `import ringgrad` there imports what `pip install .` would
install. Used by python/tests/run_tests.py and bench/python_step.py."""
import atexit
import os
import tempfile

PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ringgrad")


def assemble(extension: str, into: str) -> None:
    """Links the package's sources and `extension` into `into`/ringgrad."""
    package = os.path.join(into, "ringgrad")
    for root, _dirs, files in os.walk(PACKAGE):
        if "__pycache__" in root:
            continue
        target = os.path.join(package, os.path.relpath(root, PACKAGE))
        os.makedirs(target, exist_ok=True)
        for name in files:
            if name.endswith(".py") or name.endswith(".pyi") or name == "py.typed":
                os.symlink(os.path.join(root, name), os.path.join(target, name))
    os.symlink(os.path.abspath(extension), os.path.join(package, os.path.basename(extension)))


def staged(extension: str) -> str:
    """A temporary directory holding the assembled package; removed when Python exits."""
    directory = tempfile.TemporaryDirectory(prefix="ringgrad-py-")
    atexit.register(directory.cleanup)
    assemble(extension, directory.name)
    return directory.name
