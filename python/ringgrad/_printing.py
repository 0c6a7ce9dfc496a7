"""Tensors printed as PyTorch prints them, so a program's output reads the same under both.

PyTorch's rules (torch/_tensor_str.py, re-derived here): 4 decimals; a floating tensor whose
nonzero finite values are all whole prints "1." style ("int mode"); scientific notation when
the largest nonzero magnitude is over 1e8 or over 1000 times the smallest (or, outside int mode,
the smallest is under 1e-4); every element padded to the widest; rows wrapped at 80 columns;
over 1000 elements, only the 3 first and last of each dimension with "..." between. Suffixes:
the dtype when it is not the default float or int64 or bool, the device when not cpu,
grad_fn=<...> or requires_grad=True. The dtype prints as ringgrad names it (ringgrad.float64).
"""
import math

import numpy as np

from ringgrad import _C

PRECISION, THRESHOLD, EDGE_ITEMS, LINE_WIDTH = 4, 1000, 3, 80


class _Formatter:
    """The width and notation every element of one tensor is printed with."""

    def __init__(self, values, floating):
        self.floating, self.int_mode, self.sci_mode, self.max_width = floating, True, False, 1
        flat = values.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if finite.size == 0:
            return
        magnitudes = np.abs(finite)
        smallest, largest = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        wide_range = largest / smallest > 1000.0 or largest > 1.0e8
        self.sci_mode = wide_range if self.int_mode else (wide_range or smallest < 1.0e-4)
        for v in finite.tolist():
            if self.sci_mode:
                text = f"{v:.{PRECISION}e}"
            elif self.int_mode:
                text = f"{v:.0f}" + "."
            else:
                text = f"{v:.{PRECISION}f}"
            self.max_width = max(self.max_width, len(text))

    def format(self, v):
        if not self.floating:
            text = str(v)
        elif self.sci_mode:
            text = f"{v:{self.max_width}.{PRECISION}e}"
        elif self.int_mode:
            text = f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
        else:
            text = f"{v:.{PRECISION}f}"
        return " " * (self.max_width - len(text)) + text


def _summarized(values):
    """The elements the formatter sees when only the edges are printed."""
    if values.ndim == 0:
        return values
    if values.shape[0] > 2 * EDGE_ITEMS:
        values = np.concatenate([values[:EDGE_ITEMS], values[-EDGE_ITEMS:]])
    if values.ndim == 1:
        return values
    return np.stack([_summarized(row) for row in values])


def _vector(values, indent, summarize, formatter):
    per_line = max(1, (LINE_WIDTH - indent) // (formatter.max_width + 2))
    items = values.tolist()
    if summarize and len(items) > 2 * EDGE_ITEMS:
        texts = ([formatter.format(v) for v in items[:EDGE_ITEMS]] + [" ..."] +
                 [formatter.format(v) for v in items[-EDGE_ITEMS:]])
    else:
        texts = [formatter.format(v) for v in items]
    lines = [", ".join(texts[i:i + per_line]) for i in range(0, len(texts), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _body(values, indent, summarize, formatter):
    if values.ndim == 0:
        return formatter.format(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, formatter)
    rows = range(values.shape[0])
    if summarize and values.shape[0] > 2 * EDGE_ITEMS:
        parts = ([_body(values[i], indent + 1, summarize, formatter) for i in rows[:EDGE_ITEMS]] +
                 ["..."] +
                 [_body(values[i], indent + 1, summarize, formatter) for i in rows[-EDGE_ITEMS:]])
    else:
        parts = [_body(values[i], indent + 1, summarize, formatter) for i in rows]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _with_suffixes(text, suffixes, indent):
    last_line = len(text) - text.rfind("\n") + 1
    out = [text]
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > LINE_WIDTH:
            out.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            out.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(out) + ")"


def tensor_repr(t):
    prefix = "tensor("
    indent, suffixes = len(prefix), []
    device = str(t.device)
    if device != "cpu":
        suffixes.append(f"device='{device}'")
    host = t.detach()
    if device != "cpu":
        host = host.to("cpu")
    if host.dtype == _C.dtype.bfloat16:
        host = host.to(_C.dtype.float32)
    floating = t.dtype in (_C.dtype.float32, _C.dtype.float64, _C.dtype.bfloat16)
    if t.numel() == 0:
        if t.dim() != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype != _C.dtype.float32:
            suffixes.append(f"dtype={t.dtype!r}")
        body = "[]"
    else:
        if t.dtype not in (_C.dtype.float32, _C.dtype.int64, _C.dtype.bool):
            suffixes.append(f"dtype={t.dtype!r}")
        values = np.array(host.contiguous().numpy())
        summarize = values.size > THRESHOLD
        formatter = _Formatter(_summarized(values) if summarize else values, floating)
        body = _body(values, indent, summarize, formatter)
    node = t.grad_fn
    if node is not None:
        suffixes.append(f"grad_fn=<{node.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, indent)
