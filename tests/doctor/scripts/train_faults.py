"""A plain training script in the style of the PyTorch tutorials, with a validation loop (no torchwise inside).

    python train_faults.py [--task classify|regression] [--fault NAME,NAME,...] [--limit N] [--epochs E]

``--fault`` plants one or more bugs (for the doctor's script-mode tests); without it the script
is correct. Faults: softmax (probabilities into CrossEntropyLoss), unused (a layer never called),
conv-bias (a biased convolution before BatchNorm), eval (validation leaves the model in eval
mode and builds autograd graphs), slow-loader (per-sample loading work in the main process),
log-zero (log of a softmax that underflows), broadcast ((N, 1) predictions against (N,)
targets), late-head (a layer added after the optimizer was built), ragged (samples of
different lengths with the default collate).
"""

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, Dataset, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--task", default="classify", choices=["classify", "regression"])
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--limit", type=int, default=320)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--fault", default="")
args = parser.parse_args()
faults = set(filter(None, args.fault.split(",")))

torch.manual_seed(0)
digits = load_digits()
images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
labels = torch.tensor(digits.target, dtype=torch.long)
n = args.limit


class SlowDigits(Dataset):
    """Decodes each sample in __getitem__ (here: a sleep standing for the decoding work)."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(0.003)
        return self.x[i], self.y[i]


class Ragged(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(8 + i % 5), i % 10


targets = labels if args.task == "classify" else labels.float()
if "ragged" in faults:
    train_set = Ragged()
elif "slow-loader" in faults:
    train_set = SlowDigits(images[:n], targets[:n])
else:
    train_set = TensorDataset(images[:n], targets[:n])
val_set = TensorDataset(images[n:n + 128], targets[n:n + 128])
train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
val_loader = DataLoader(val_set, batch_size=64)


class Net(nn.Module):
    def __init__(self, outputs):
        super().__init__()
        self.conv = nn.Conv2d(1, 16, 3, padding=1, bias="conv-bias" in faults)
        self.bn = nn.BatchNorm2d(16)
        self.fc1 = nn.Linear(16 * 4 * 4, 64)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(64, outputs)
        if "unused" in faults:
            self.aux = nn.Linear(64, outputs)  # built, never called in forward

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        x = self.drop(F.relu(self.fc1(torch.flatten(x, 1))))
        x = self.fc2(x)
        if hasattr(self, "extra"):
            x = x + self.extra(x)
        return x


model = Net(10 if args.task == "classify" else 1)
criterion = nn.CrossEntropyLoss() if args.task == "classify" else nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
if "late-head" in faults:
    model.extra = nn.Linear(1, 1)  # added after the optimizer: never updated


def compute_loss(outputs, y):
    if args.task == "regression":
        return criterion(outputs if "broadcast" in faults else outputs.squeeze(1), y)
    if "softmax" in faults:
        return criterion(F.softmax(outputs, dim=1), y)
    if "log-zero" in faults:
        probs = F.softmax(outputs * 1000, dim=1)
        return -torch.log(probs[torch.arange(len(y)), y]).mean()
    return criterion(outputs, y)


def validate():
    model.eval()
    total = 0.0
    if "eval" in faults:
        for x, y in val_loader:
            total += compute_loss(model(x), y).item()
    else:
        with torch.no_grad():
            for x, y in val_loader:
                total += compute_loss(model(x), y).item()
    return total / len(val_loader)


for epoch in range(args.epochs):
    if "eval" not in faults:
        model.train()
    running = 0.0
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = compute_loss(model(x), y)
        loss.backward()
        optimizer.step()
        running += loss.item()
    print(f"epoch {epoch + 1}: train {running / len(train_loader):.3f} val {validate():.3f}")
