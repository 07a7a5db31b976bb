"""A plain PyTorch training script on scikit-learn's digits, written the way many tutorials are,
with three classic mistakes left in on purpose (``torchwise demo`` finds them):

- the model ends in ``nn.Softmax`` and its probabilities go into ``CrossEntropyLoss``, which
  applies log-softmax itself (TW102): gradients shrink and training crawls;
- the convolution before ``BatchNorm2d`` has a bias that BatchNorm cancels (TW209);
- validation runs without ``torch.no_grad()`` (TW104): every forward pass builds an autograd
  graph that is never used, costing memory and time.

    torchwise lint digits_script.py
    torchwise doctor -- python digits_script.py --epochs 2

No torchwise inside: the doctor attaches to the unmodified script.
"""

import argparse

import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--batch-size", type=int, default=64)
args = parser.parse_args()

torch.manual_seed(0)
digits = load_digits()
images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
labels = torch.tensor(digits.target, dtype=torch.long)
train_set = TensorDataset(images[:1400], labels[:1400])
val_set = TensorDataset(images[1400:], labels[1400:])
train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
val_loader = DataLoader(val_set, batch_size=256)

model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1),  # TW209: the bias is cancelled by the BatchNorm that follows
    nn.BatchNorm2d(16),
    nn.ReLU(),
    nn.Flatten(),
    nn.Linear(16 * 8 * 8, 10),
    nn.Softmax(dim=1),  # TW102: CrossEntropyLoss expects logits
)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(args.epochs):
    model.train()
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()

    model.eval()
    correct = 0
    for x, y in val_loader:  # TW104: no torch.no_grad(): each batch builds a graph nobody uses
        correct += (model(x).argmax(dim=1) == y).sum().item()
    print(f"epoch {epoch}: loss {loss.item():.3f}, val accuracy {correct / len(val_set):.3f}")
