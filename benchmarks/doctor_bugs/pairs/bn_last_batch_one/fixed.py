# Doctor bug corpus, pair "bn_last_batch_one" (class: bn_batch_one).
# Modelled on https://github.com/fastai/fastai/issues/1352: after one epoch training failed with
# "Expected more than 1 value per channel when training"; the maintainer explained that the last
# training batch held a single sample, which BatchNorm cannot train on, and that drop_last=True
# avoids it (see also https://github.com/meetps/pytorch-semseg/issues/214).
# An MLP with BatchNorm1d; 1153 training samples in batches of 64 leave one sample for the last
# batch. buggy.py keeps it; fixed.py passes drop_last=True.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
digits = load_digits()
x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
train = TensorDataset(x[:1153], y[:1153])
loader = DataLoader(train, batch_size=64, shuffle=True, drop_last=True)

model = nn.Sequential(
    nn.Linear(64, 128), nn.BatchNorm1d(128), nn.ReLU(),
    nn.Linear(128, 64), nn.BatchNorm1d(64), nn.ReLU(),
    nn.Linear(64, 10),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(10):
    model.train()
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    accuracy = (model(x[1153:]).argmax(1) == y[1153:]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
