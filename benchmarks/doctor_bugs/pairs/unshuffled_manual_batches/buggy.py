# Doctor bug corpus, pair "unshuffled_manual_batches" (class: unshuffled).
# Modelled on https://github.com/facebookresearch/fastText/issues/74: with training lines grouped
# by label, the trained classifier's precision and recall were very low; the maintainer explained
# that SGD sees the examples in order, so the data must be shuffled.
# Batches are cut by hand from arrays that come grouped by class. buggy.py walks them in stored
# order; fixed.py draws a new permutation every epoch.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import make_classification

features, classes = make_classification(
    n_samples=5000, n_features=20, n_informative=10, n_classes=5, n_clusters_per_class=1, random_state=7,
)
grouped = np.argsort(classes, kind="stable")
x = torch.tensor(features[grouped], dtype=torch.float32)
y = torch.tensor(classes[grouped])
test = torch.arange(0, len(y), 5)
train = torch.tensor([i for i in range(len(y)) if i % 5])

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
batch_size = 50

for epoch in range(5):
    order = train
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        optimizer.zero_grad()
        loss = criterion(model(x[idx]), y[idx])
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: last loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = (model(x[test]).argmax(1) == y[test]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
