# Doctor bug corpus, pair "init_output_bias" (class: bad_init).
# Modelled on https://github.com/lwpyr/CSP-pedestrian-detection-in-pytorch/issues/4: the
# prior-probability bias -log(0.99/0.01) was put on the wrong output layer, which caused a large
# loss at the beginning of training.
# A binary classifier on scikit-learn's breast-cancer data. buggy.py sets the output bias to
# +log(0.99/0.01) (a 99% prior on the wrong class); fixed.py to the log-odds of the training labels.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import math

import torch
import torch.nn as nn
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from torch.utils.data import DataLoader, TensorDataset

data = load_breast_cancer()
x = torch.tensor(StandardScaler().fit_transform(data.data), dtype=torch.float32)
y = 1.0 - torch.tensor(data.target, dtype=torch.float32).unsqueeze(1)  # 1 = malignant
torch.manual_seed(0)
perm = torch.randperm(len(y))
train, test = perm[:450], perm[450:]
loader = DataLoader(TensorDataset(x[train], y[train]), batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(30, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
positive = y[train].mean().item()
nn.init.constant_(model[-1].bias, math.log(positive / (1 - positive)))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.BCEWithLogitsLoss()

for epoch in range(8):
    for step, (inputs, targets) in enumerate(loader):
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
        if epoch == 0 and step < 3:
            print(f"step {step}: loss {loss.item():.3f}")
    print(f"epoch {epoch}: loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = ((model(x[test]) > 0).float() == y[test]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
