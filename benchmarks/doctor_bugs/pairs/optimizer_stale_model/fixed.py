# Doctor bug corpus, pair "optimizer_stale_model" (class: optimizer_no_effect).
# Modelled on https://github.com/pytorch/pytorch/issues/54765 (the network was replaced by a new
# one after the optimizer was built on the old one's parameters; it ran without any error) and
# https://github.com/NVIDIA/Megatron-LM/issues/174 (an optimizer built before the model was
# loaded kept the randomly initialised model's parameters).
# buggy.py builds the optimizer, then builds the model again to load the warm-start weights, so
# the optimizer holds the first model's parameters and the model that trains never changes;
# fixed.py builds the optimizer after the model is loaded.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler


def build_model():
    return nn.Sequential(nn.Linear(13, 32), nn.ReLU(), nn.Linear(32, 3))


torch.manual_seed(0)
wine = load_wine()
features = torch.tensor(StandardScaler().fit_transform(wine.data), dtype=torch.float32)
labels = torch.tensor(wine.target)
order = torch.randperm(len(labels))
train_idx, test_idx = order[:130], order[130:]
warm_start = build_model().state_dict()  # stands for weights saved by an earlier run

model = build_model()
model.load_state_dict(warm_start)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss()

for epoch in range(60):
    perm = train_idx[torch.randperm(len(train_idx))]
    for start in range(0, len(perm), 16):
        idx = perm[start:start + 16]
        optimizer.zero_grad()
        loss = criterion(model(features[idx]), labels[idx])
        loss.backward()
        optimizer.step()
    if epoch % 10 == 0:
        print(f"epoch {epoch}: loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = (model(features[test_idx]).argmax(1) == labels[test_idx]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
