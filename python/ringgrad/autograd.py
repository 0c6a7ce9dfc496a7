"""ringgrad.autograd: gradcheck, as torch.autograd.gradcheck.

gradcheck(fn, inputs) compares the gradients backward computes for fn at `inputs` (float64
tensors; those with requires_grad are checked) with central finite differences:
    d out[j] / d x[i]  ~=  (out(x + eps e_i)[j] - out(x - eps e_i)[j]) / (2 eps)
one column of the Jacobian per perturbed element, one row per output element (backward with a
one-hot gradient). Returns True, or raises GradcheckError naming the input, the elements and
both values (raise_exception=False: returns False instead).
"""
import numpy as np

from ringgrad import _C
from ringgrad._creation import from_numpy, no_grad


class GradcheckError(RuntimeError):
    pass


def _outputs(fn, inputs):
    out = fn(*inputs)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _numerical_jacobian(fn, inputs, x, eps):
    """Columns: one per element of x (perturbed through its NumPy view, which shares memory)."""
    values = x.detach().numpy().reshape(-1)
    columns = []
    with no_grad():
        for i in range(values.size):
            saved = values[i]
            values[i] = saved + eps
            plus = [o.detach().numpy().reshape(-1).copy() for o in _outputs(fn, inputs)]
            values[i] = saved - eps
            minus = [o.detach().numpy().reshape(-1).copy() for o in _outputs(fn, inputs)]
            values[i] = saved
            columns.append(np.concatenate([(p - m) / (2 * eps) for p, m in zip(plus, minus)]))
    return np.stack(columns, axis=1) if columns else np.zeros((0, 0))


def _analytical_jacobian(fn, inputs, x):
    """Rows: one per output element (backward of a one-hot gradient)."""
    rows = []
    outputs = _outputs(fn, inputs)
    for k, out in enumerate(outputs):
        for j in range(out.numel()):
            one_hot = np.zeros(out.numel())
            one_hot[j] = 1.0
            x.grad = None
            fresh = _outputs(fn, inputs)[k]
            fresh.backward(from_numpy(one_hot.reshape(tuple(out.shape))).to(fresh.dtype))
            grad = x.grad
            rows.append(np.zeros(x.numel()) if grad is None else grad.numpy().reshape(-1).copy())
    x.grad = None
    return np.stack(rows, axis=0) if rows else np.zeros((0, x.numel()))


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    for n, x in enumerate(inputs):
        if not isinstance(x, _C.Tensor) or not x.requires_grad:
            continue
        if x.dtype != _C.dtype.float64:
            raise ValueError(f"gradcheck: input {n} is {x.dtype}; finite differences need "
                             "float64 (as torch.autograd.gradcheck warns)")
        numerical = _numerical_jacobian(fn, inputs, x, eps)
        analytical = _analytical_jacobian(fn, inputs, x)
        bad = ~np.isclose(analytical, numerical, rtol=rtol, atol=atol)
        if bad.any():
            j, i = (int(v) for v in np.argwhere(bad)[0])
            message = (f"gradcheck: input {n}, output element {j}, input element {i}: backward "
                       f"gives {analytical[j, i]!r}, finite differences {numerical[j, i]!r} "
                       f"({int(bad.sum())} of {bad.size} Jacobian entries differ)")
            if raise_exception:
                raise GradcheckError(message)
            return False
    return True


__all__ = ["gradcheck", "GradcheckError"]
