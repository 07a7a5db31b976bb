# Doctor bug corpus, pair "unshuffled_binary" (class: unshuffled).
# Modelled on https://github.com/NVIDIA/DIGITS/issues/29: a two-class network trained on data
# built folder by folder (pos, then neg) classified every test sample as the negative class; the
# discussion turned to whether the data had been shuffled.
# Logistic regression on scikit-learn's breast-cancer data, stored malignant first, then benign.
# buggy.py iterates the loader with shuffle=False; fixed.py with shuffle=True.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from torch.utils.data import DataLoader, TensorDataset

data = load_breast_cancer()
rng = np.random.default_rng(1)
order = rng.permutation(len(data.target))
train_idx, test_idx = order[:450], order[450:]
train_idx = train_idx[np.argsort(data.target[train_idx], kind="stable")]  # class 0 first, then 1
scaler = StandardScaler().fit(data.data[train_idx])
x = torch.tensor(scaler.transform(data.data), dtype=torch.float32)
y = torch.tensor(data.target, dtype=torch.float32).unsqueeze(1)
loader = DataLoader(TensorDataset(x[train_idx], y[train_idx]), batch_size=10, shuffle=True)

torch.manual_seed(0)
model = nn.Linear(30, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.BCEWithLogitsLoss()

for epoch in range(4):
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: last loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = ((model(x[test_idx]) > 0).float() == y[test_idx]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
