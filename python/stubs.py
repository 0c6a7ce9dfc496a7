"""Writes python/ringgrad/_C.pyi, the type stubs editors complete ringgrad's C++ names from.

    python python/stubs.py BUILD/python/_C.<abi>.so [OUTPUT=python/ringgrad/_C.pyi]

nanobind's stubgen reads the extension, loaded on its own (an empty package around it, so the
methods ringgrad/__init__.py adds in Python stay out), and the Tensor methods defined in
Python (indexing, DLPack, hooks by hand; ringgrad/_tensor.py's found by importing the whole
package) are then declared in the class. The python suite regenerates the stubs
(test_stubs.py): a binding added (a new row of an op table) updates _C.pyi when the suite
runs, and the test fails once, asking to commit the regenerated file.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_METHODS = '''
    # Defined in Python (ringgrad/_indexing.py, _dlpack.py, __init__.py):
    def __getitem__(self, key: object) -> Tensor: ...
    def __setitem__(self, key: object, value: object) -> None: ...
    def index_put(self, indices: tuple[Tensor, ...], values: object,
                  accumulate: bool = False) -> Tensor: ...
    def index_put_(self, indices: tuple[Tensor, ...], values: object,
                   accumulate: bool = False) -> Tensor: ...
    def __dlpack__(self, stream: object = None, **kwargs: object) -> object: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...
    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> None: ...
    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> None: ...
    # Defined in Python (ringgrad/_random.py): in-place fills with torch's CPU streams.
    def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator: object = None) -> Tensor: ...
    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator: object = None) -> Tensor: ...
    def exponential_(self, lambd: float = 1.0, *, generator: object = None) -> Tensor: ...
    def bernoulli_(self, p: object = 0.5, *, generator: object = None) -> Tensor: ...
    def random_(self, from_: int | None = None, to: int | None = None, *,
                generator: object = None) -> Tensor: ...
'''


def nanobind_signatures(bare):
    """(owner, name, signature) of every public function of the module ('') and method of
    Tensor ('Tensor'), from nanobind's own signatures."""
    probe = ("import ringgrad._C as C\n"
             "for owner, obj in (('', C), ('Tensor', C.Tensor)):\n"
             "    for name in dir(obj):\n"
             "        f = getattr(obj, name)\n"
             "        if not name.startswith('_') and hasattr(f, '__nb_signature__'):\n"
             "            sig = f.__nb_signature__[0][0].replace('ringgrad._C.', '')\n"
             "            print(owner, name, sig.replace('collections.abc.', ''), sep='\\t')\n")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=bare)).stdout
    return [row.split("\t", 2) for row in out.splitlines()]


def add_missing(text, bare):
    """stubgen leaves out names ending in '_' (clip_grad_norm_, Tensor.copy_...): they are
    declared from nanobind's signatures, methods at the top of Tensor."""
    methods, functions = [], []
    for owner, name, signature in nanobind_signatures(bare):
        if f"def {name}(" in text:
            continue
        signature = re.sub(r"\\\d+", "...", signature)  # defaults: nanobind's \0, \1 ...
        if owner == "Tensor":
            methods.append(f"    {signature}: ...\n")
        else:
            functions.append(f"\n{signature}: ...\n")
    text = text.replace("class Tensor:\n", "class Tensor:\n" + "".join(methods), 1)
    return text + "".join(functions)


def python_methods(extension, text):
    """Declarations of the public Tensor methods and properties the Python package adds
    (ringgrad/_tensor.py, __init__.py) that `text` does not declare yet."""
    sys.path.insert(0, HERE)
    from staging import assemble
    probe = ("import inspect, ringgrad\n"
             "for name in dir(ringgrad.Tensor):\n"
             "    if not name.startswith('_'):\n"
             "        kind = isinstance(inspect.getattr_static(ringgrad.Tensor, name), property)\n"
             "        print(name, int(kind))\n")
    with tempfile.TemporaryDirectory() as full:
        assemble(extension, full)
        out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                             text=True, env=dict(os.environ, PYTHONPATH=full)).stdout
    body = text.split("class Tensor:\n", 1)[1]
    body = re.split(r"\n(?=\S)", body, maxsplit=1)[0]  # up to the next top-level line
    lines = []
    for name, is_property in (row.split() for row in out.splitlines()):
        if f"def {name}(" in body:
            continue
        if is_property == "1":
            lines.append(f"    @property\n    def {name}(self) -> Any: ...\n")
        else:
            lines.append(f"    def {name}(self, *args: Any, **kwargs: Any) -> Any: ...\n")
    return "".join(lines)


def write_stubs(extension, output):
    with tempfile.TemporaryDirectory() as bare:
        package = os.path.join(bare, "ringgrad")
        os.makedirs(package)
        open(os.path.join(package, "__init__.py"), "w").close()
        shutil.copy(extension, package)
        raw = os.path.join(bare, "_C.pyi")
        subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "ringgrad._C",
                        "-o", raw], check=True, env=dict(os.environ, PYTHONPATH=bare))
        text = add_missing(open(raw).read(), bare)
    text = text.replace("class Tensor:\n", "class Tensor:\n" + PYTHON_METHODS, 1)
    added = python_methods(extension, text)
    text = text.replace("class Tensor:\n", "class Tensor:\n" + added, 1)
    if "import Callable" not in text and "Callable," not in text:
        text = text.replace("\nimport ", "\nfrom collections.abc import Callable\nimport ", 1)
    if "import Any" not in text and "Any," not in text:
        text = text.replace("\nimport ", "\nfrom typing import Any\nimport ", 1)
    with open(output + ".tmp", "w") as f:
        f.write(text)
    os.replace(output + ".tmp", output)


if __name__ == "__main__":
    write_stubs(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else
                os.path.join(HERE, "ringgrad", "_C.pyi"))
