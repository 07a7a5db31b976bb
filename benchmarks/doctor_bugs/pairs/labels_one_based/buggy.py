# Doctor bug corpus, pair "labels_one_based" (class: labels_out_of_range).
# Modelled on https://github.com/TencentGameMate/gnn_cross_lingual/issues/5: with num_classes 12
# the reporter got "IndexError: Target 12 is out of bounds"; a commenter explained that the class
# labels must lie between 0 and 11.
# The labels come from a table that numbers the classes from 1 (1..10). buggy.py feeds them to
# CrossEntropyLoss as they are; fixed.py subtracts one.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

digits = load_digits()
table = np.column_stack([digits.data, digits.target + 1])  # exported with classes numbered 1..10
features = torch.tensor(table[:, :-1], dtype=torch.float32) / 16.0
labels = torch.tensor(table[:, -1], dtype=torch.long)

torch.manual_seed(0)
loader = DataLoader(TensorDataset(features[:1500], labels[:1500]), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(8):
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = (model(features[1500:]).argmax(1) == labels[1500:]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
