"""The same cubic fit written with nn: the powers of x as features, a Linear layer and
Flatten in a Sequential, MSELoss(reduction='sum') and RMSprop.

800 steps, not the 2000 of the tutorial it follows: by step ~870 the gradient of the x^2
coefficient is at the level of rounding (1e-13), and RMSprop divides it by its own running
RMS, so the step it takes follows the sign of the last bits. Two engines that sum in a
different order (any two) part there: by 6e-10 at step 874, 5e-5 at step 899. Until then
ringgrad and PyTorch agree to 1e-15."""
import math

import ringgrad as torch

torch.manual_seed(1)
x = torch.linspace(-math.pi, math.pi, 2000, dtype=torch.float64)
y = torch.sin(x)

p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)

model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1)).double()
loss_fn = torch.nn.MSELoss(reduction="sum")
optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)

for t in range(800):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    if t % 100 == 99:
        print(t, loss.item())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

linear_layer = model[0]
w = linear_layer.weight[:, 0].item(), linear_layer.weight[:, 1].item(), linear_layer.weight[:, 2].item()
print(f"Result: y = {linear_layer.bias.item()} + {w[0]} x + {w[1]} x^2 + {w[2]} x^3")
