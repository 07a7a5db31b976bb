# Doctor bug corpus, pair "optimizer_frozen_only" (class: optimizer_no_effect).
# Modelled on https://github.com/fanq15/SSP/issues/3 (the maintainer: "If you freeze it, there is
# no learnable parameters") and https://github.com/BINE022/EEGPT/issues/18 (which parts train
# depended only on the submodules listed in the optimizer).
# Transfer learning: a feature extractor trained first on digits 0-4 is frozen and a new head is
# trained for all ten digits. buggy.py hands the optimizer the frozen extractor's parameters, so
# nothing trains at all; fixed.py hands it the head's.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits


class Classifier(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU())
        self.head = nn.Linear(64, classes)

    def forward(self, x):
        return self.head(self.features(x))


def fit(model, optimizer, x, y, epochs):
    for _ in range(epochs):
        order = torch.randperm(len(x))
        for start in range(0, len(x), 32):
            idx = order[start:start + 32]
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            optimizer.step()
    return loss.item()


torch.manual_seed(0)
digits = load_digits()
x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
x_train, y_train, x_test, y_test = x[:1400], y[:1400], x[1400:], y[1400:]

model = Classifier(classes=5)
first = y_train < 5
print("pretraining loss", fit(model, torch.optim.Adam(model.parameters(), lr=1e-3), x_train[first], y_train[first], 3))

for p in model.features.parameters():
    p.requires_grad = False
model.head = nn.Linear(64, 10)
optimizer = torch.optim.SGD(model.head.parameters(), lr=0.05, momentum=0.9)
print("fine-tuning loss", fit(model, optimizer, x_train, y_train, 6))

with torch.no_grad():
    accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
