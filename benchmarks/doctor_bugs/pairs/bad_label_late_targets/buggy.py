# Doctor bug corpus, pair "bad_label_late_targets" (class: bad_label_late).
# Modelled on https://github.com/pytorch/examples/issues/342: a training loop adapted from the
# ImageNet example, with a custom dataset loader, ran for a number of passes and then failed with
# the assertion `t >= 0 && t < n_classes` (a label outside the classes).
# A Dataset class in the style of torchvision's (samples plus a .targets list), read from an
# annotation table; one late annotation carries the label -1 ("unknown") in buggy.py. The first
# 200 steps read sequential batches and never reach it. fixed.py skips unknown annotations.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import make_blobs
from torch.utils.data import DataLoader, Dataset


class AnnotatedSamples(Dataset):
    """Samples and labels from an annotation table; .targets lists every label, as in torchvision."""

    def __init__(self, table):
        self.samples = [row[:-1] for row in table]
        self.targets = [int(row[-1]) for row in table]

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        return torch.tensor(self.samples[i], dtype=torch.float32), self.targets[i]


centers = np.random.default_rng(0).normal(0, 4, size=(6, 12))
points, labels = make_blobs(n_samples=16000, centers=centers, cluster_std=2.5, random_state=0)
table = np.column_stack([points, labels]).astype(np.float64)
rows = np.random.default_rng(1).permutation(len(table))
table = table[rows]
table[12345, -1] = -1  # one annotation was marked "unknown"
train_set = AnnotatedSamples(table[:14000])
test_set = AnnotatedSamples(table[14000:])
loader = DataLoader(train_set, batch_size=32)  # the table is already in random order

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 6))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
for epoch in range(2):
    for step, (inputs, targets) in enumerate(loader):
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step}: loss {loss.item():.4f}")

x_test = torch.tensor(np.array(test_set.samples), dtype=torch.float32)
with torch.no_grad():
    accuracy = (model(x_test).argmax(1) == torch.tensor(test_set.targets)).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
