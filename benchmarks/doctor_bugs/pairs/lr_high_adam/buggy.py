# Doctor bug corpus, pair "lr_high_adam" (class: lr_too_high).
# Modelled on https://github.com/rajveermalviya/language-modeling/issues/3 (Adam with a learning
# rate of 1.0 from the config: the loss did not really go down after many epochs; Adam's default
# 0.001 trained much better) and https://github.com/OpenNMT/OpenNMT-py/issues/805 (Adam run with
# SGD's default learning rate of 1: perplexity stayed at a high constant).
# buggy.py trains the MLP with Adam at lr=1.0; fixed.py at lr=1e-3.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import argparse

import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=1.0)
parser.add_argument("--epochs", type=int, default=10)
args = parser.parse_args()

torch.manual_seed(0)
digits = load_digits()
x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=5)
loader = DataLoader(TensorDataset(x_train, y_train), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
criterion = nn.CrossEntropyLoss()

for epoch in range(args.epochs):
    total = 0.0
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch}: loss {total / len(loader):.4f}")

with torch.no_grad():
    accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
