"""A plain training script in the style of the PyTorch tutorials (no torchwise inside).

    python train_digits.py --epochs 3 [--model cnn] [--fault dead|lr0|tiny-lr|bad-label|diverge|bn-one|checkpoint]

``--fault`` plants one bug (for the doctor's tests); without it the script is correct.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
parser.add_argument("--fault", default="none")
args = parser.parse_args()

torch.manual_seed(0)
digits = load_digits()
images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
labels = torch.tensor(digits.target, dtype=torch.long)
if args.fault == "bad-label":
    labels[1234] = 10  # one label outside the 10 classes
if args.fault == "bn-one":
    images, labels = images[: 32 * 40 + 1], labels[: 32 * 40 + 1]  # the last batch holds one image
train_set = TensorDataset(images, labels)
train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)  # BatchNorm follows
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.bn2 = nn.BatchNorm1d(64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        if args.fault == "checkpoint":
            x = checkpoint(self.conv2, x.detach(), use_reentrant=True)  # the input needs no grad
        else:
            x = self.conv2(x)
        x = F.max_pool2d(F.relu(x), 2)
        x = F.relu(self.bn2(self.fc1(torch.flatten(x, 1))))
        return self.fc2(x)


model = MLP() if args.model == "mlp" else CNN()
if args.fault == "dead":
    with torch.no_grad():
        model.fc1.bias.fill_(-3.0)
criterion = nn.CrossEntropyLoss()
if args.fault == "lr0":
    optimizer = torch.optim.Adam([
        {"params": model.fc1.parameters(), "lr": 0.0},
        {"params": [p for n, p in model.named_parameters() if not n.startswith("fc1.")]},
    ], lr=args.lr)
elif args.fault == "tiny-lr":
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-9)
elif args.fault == "diverge":
    optimizer = torch.optim.SGD(model.parameters(), lr=5.0)
else:
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

for epoch in range(args.epochs):
    running_loss = 0.0
    for i, (inputs, targets) in enumerate(train_loader):
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
    print(f"epoch {epoch + 1}: loss {running_loss / len(train_loader):.3f}")
print("Finished Training")
