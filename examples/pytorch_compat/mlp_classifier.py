"""An MLP classifier on two interleaved spirals of three classes: TensorDataset, a shuffled
DataLoader, nn.Sequential, CrossEntropyLoss and Adam, accuracy from argmax, in float32."""
import math

import ringgrad as torch
from ringgrad import nn
from ringgrad.utils.data import DataLoader, TensorDataset


def spirals(points_per_class, classes=3):
    """Each class a noisy arm of a spiral: radius t, angle 4t + the class's offset."""
    t = torch.linspace(0.05, 1.0, points_per_class).repeat(classes)
    label = torch.arange(classes).repeat_interleave(points_per_class)
    angle = 4.0 * t + label.float() * (2 * math.pi / classes) + 0.2 * torch.randn(t.shape)
    x = torch.stack([t * torch.cos(angle), t * torch.sin(angle)], dim=1)
    return x, label


torch.manual_seed(0)
x, label = spirals(100)
loader = DataLoader(TensorDataset(x, label), batch_size=32, shuffle=True)

model = nn.Sequential(
    nn.Linear(2, 64), nn.ReLU(),
    nn.Linear(64, 64), nn.Tanh(),
    nn.Linear(64, 3),
)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

for epoch in range(4):
    total, correct, loss_sum = 0, 0, 0.0
    for xb, yb in loader:
        logits = model(xb)
        loss = loss_fn(logits, yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_sum += loss.item() * yb.shape[0]
        correct += (logits.argmax(dim=1) == yb).sum().item()
        total += yb.size(0)
    print(f"epoch {epoch}: loss {loss_sum / total:.6f} accuracy {correct / total:.4f}")

model.eval()
with torch.no_grad():
    probs = torch.softmax(model(x[:4]), dim=-1)
print("probabilities of the first points:", [round(v, 5) for v in probs[0].tolist()])
print("parameter count:", sum(p.numel() for p in model.parameters()))
