"""A small CNN on made-up 12x12 images (a bright bar's orientation is the class): Conv2d,
ReLU, MaxPool2d, BatchNorm2d, Flatten, Linear, CrossEntropyLoss, SGD with momentum and
nesterov, StepLR, in float64."""
import ringgrad as torch
import ringgrad.nn as nn
import ringgrad.nn.functional as F
from ringgrad.utils.data import DataLoader, TensorDataset


def bars(n):
    """Images with one horizontal (class 0), vertical (1) or diagonal (2) bar, plus noise."""
    images = 0.1 * torch.randn(n, 1, 12, 12, dtype=torch.float64)
    labels = torch.randint(0, 3, (n,))
    position = torch.randint(2, 10, (n,))
    for i in range(n):
        k, p = labels[i].item(), position[i].item()
        if k == 0:
            images[i, 0, p, :] += 1.0
        elif k == 1:
            images[i, 0, :, p] += 1.0
        else:
            images[i, 0] += torch.eye(12, dtype=torch.float64)
    return images, labels


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, kernel_size=3)
        self.fc = nn.Linear(8 * 2 * 2, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)   # 4 x 6 x 6
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)             # 8 x 2 x 2
        return self.fc(torch.flatten(x, 1))


torch.manual_seed(0)
images, labels = bars(96)
loader = DataLoader(TensorDataset(images, labels), batch_size=16, shuffle=True)
model = Net().double()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)

for epoch in range(4):
    model.train()
    losses = []
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    scheduler.step()
    print(f"epoch {epoch}: mean loss {sum(losses) / len(losses):.10f} lr {scheduler.get_last_lr()[0]}")

model.eval()
with torch.no_grad():
    predicted = model(images).argmax(1)
print("accuracy:", (predicted == labels).double().mean().item())
print("running mean of bn1:", [round(v, 8) for v in model.bn1.running_mean.tolist()])
