"""The type stubs (ringgrad/_C.pyi, written by python/stubs.py) are regenerated here from the
extension under test, so a binding added (a new op-table row) reaches them without a step by
hand; they parse and name every function and class of the extension, and every Tensor
method."""
import ast
import os
import sys

import pytest

import ringgrad as rg

HERE = os.path.dirname(os.path.abspath(__file__))
STUB = os.path.join(HERE, "..", "ringgrad", "_C.pyi")


def test_the_stubs_are_regenerated_from_the_bindings():
    """Rewrites _C.pyi when the bindings changed, and fails once, asking to commit it. Needs
    nanobind's stubgen: a plain `pip install` (the README's check) has no nanobind, and the
    test below still checks the committed stubs there."""
    pytest.importorskip("nanobind.stubgen")
    sys.path.insert(0, os.path.dirname(HERE))
    from stubs import write_stubs
    before = open(STUB).read()
    write_stubs(os.path.realpath(rg._C.__file__), STUB)
    assert open(STUB).read() == before, "python/ringgrad/_C.pyi was stale and has been " \
        "regenerated from the bindings: commit it"


def defined_names(body):
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return names


def public(names):
    return {n for n in names if not n.startswith("_")}


def test_the_stubs_name_every_binding():
    tree = ast.parse(open(STUB).read())
    top = defined_names(tree.body)
    missing = public(dir(rg._C)) - top
    assert not missing, f"python/ringgrad/_C.pyi lacks {sorted(missing)}: run python/stubs.py"
    tensor = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    methods = defined_names(tensor.body)
    missing = public(dir(rg.Tensor)) - methods
    assert not missing, f"Tensor in _C.pyi lacks {sorted(missing)}: run python/stubs.py"
    assert {"__getitem__", "__dlpack__", "register_hook"} <= methods
