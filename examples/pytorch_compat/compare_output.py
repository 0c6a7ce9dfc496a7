"""Compares what a program printed under ringgrad with what it printed under PyTorch.

Used by bench/pytorch_compat (which runs both) and python/tests/test_pytorch_compat.py (which
compares ringgrad's output with PyTorch's as recorded in expected/). The outputs must have the
same lines, the same words between the numbers, and numbers that agree to a relative tolerance
(1e-9 for the float64 programs, 1e-5 for float32; absolute below 1, as numpy.allclose with
rtol = atol), widened by half a unit in the last digit when both print the same number of
decimals (a fixed format, "{:.6f}"): "0.441911" and "0.441912" agree when the values behind them
differ in the 7th digit.
"""
import re

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan")

# Each program's dtype decides its tolerance; the DDP script runs under a launcher.
PROGRAMS = {
    "cubic_fit.py": "float64",
    "polynomial_nn.py": "float64",
    "mlp_classifier.py": "float32",
    "cnn_classifier.py": "float64",
    "nanogpt.py": "float32",
    "ddp_train.py": "float64",
}
TOLERANCE = {"float64": 1e-9, "float32": 1e-5}


def as_pytorch(source):
    """The program with PyTorch in place of ringgrad: the only lines that differ."""
    source = source.replace("import ringgrad as torch", "import torch")
    source = re.sub(r"\bfrom ringgrad\b", "from torch", source)
    return re.sub(r"\bimport ringgrad\.", "import torch.", source)


def _last_digit(text):
    """Half a unit in the last printed digit of a number's text (0 for integers and exponents)."""
    if "." not in text or "e" in text.lower():
        return 0.0
    return 0.5 * 10.0 ** -len(text.split(".")[1])


RANK_PREFIX = re.compile(r"^\[rank \d+\] ")


def _lines(output):
    """The output's lines without rgrun's "[rank N] " prefixes (torchrun prints none)."""
    return [RANK_PREFIX.sub("", line) for line in output.strip().splitlines()]


def compare(ours, theirs, tolerance):
    """(numbers compared, largest difference (relative, absolute below 1), first mismatch or None)."""
    ours_lines, their_lines = _lines(ours), _lines(theirs)
    if len(ours_lines) != len(their_lines):
        return 0, float("inf"), f"{len(ours_lines)} lines, PyTorch printed {len(their_lines)}"
    count, worst = 0, 0.0
    for a_line, b_line in zip(ours_lines, their_lines):
        if NUMBER.sub("#", a_line) != NUMBER.sub("#", b_line):
            return count, float("inf"), f"text differs: {a_line!r} vs {b_line!r}"
        for a_text, b_text in zip(NUMBER.findall(a_line), NUMBER.findall(b_line)):
            a, b = float(a_text), float(b_text)
            count += 1
            if a == b:
                continue
            rounding = _last_digit(a_text) if _last_digit(a_text) == _last_digit(b_text) else 0.0
            difference = abs(a - b) - rounding
            relative = max(difference, 0.0) / max(abs(b), 1.0)
            worst = max(worst, relative)
            if relative > tolerance:
                return count, worst, f"{a_text} vs {b_text} in {b_line!r}"
    return count, worst, None
