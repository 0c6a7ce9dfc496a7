"""Fit sin(x) on [-pi, pi] with a cubic, by hand-written gradient descent on autograd's
gradients: the first program of most autograd tutorials. Runs as it is with PyTorch when the
import says `import torch`; here it says `import ringgrad as torch`."""
import math

import ringgrad as torch

dtype = torch.float64
torch.manual_seed(0)

x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
y = torch.sin(x)

a = torch.randn((), dtype=dtype, requires_grad=True)
b = torch.randn((), dtype=dtype, requires_grad=True)
c = torch.randn((), dtype=dtype, requires_grad=True)
d = torch.randn((), dtype=dtype, requires_grad=True)
print(f"start: a={a.item()} b={b.item()} c={c.item()} d={d.item()}")

learning_rate = 1e-6
for t in range(2000):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3
    loss = (y_pred - y).pow(2).sum()
    if t % 200 == 199:
        print(t, loss.item())
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

print(f"Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3")
