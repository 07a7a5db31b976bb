# Doctor bug corpus, pair "regression_broadcast" (class: regression_broadcast).
# Modelled on https://github.com/timeseriesAI/tsai/issues/22: training warned "Using a target size
# (torch.Size([16])) that is different to the input size (torch.Size([16, 1]))" and the reporter
# suspected the model was not training across epochs; reshaping the target fixed the shapes.
# A regression MLP on scikit-learn's diabetes data. buggy.py keeps the targets 1-D, so mse_loss
# compares every prediction with every target of the batch (a (16, 16) broadcast); fixed.py makes
# them (N, 1) like the predictions.
# Run: python buggy.py (or fixed.py); the last line prints the test mean squared error.
import warnings

import torch
import torch.nn as nn
from sklearn.datasets import load_diabetes
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore", category=UserWarning)  # the script's author silenced the warnings
torch.manual_seed(0)
data = load_diabetes()
x = torch.tensor(data.data, dtype=torch.float32)
y = torch.tensor(data.target, dtype=torch.float32)
x = (x - x.mean(0)) / x.std(0)
y = (y - y.mean()) / y.std()
loader = DataLoader(TensorDataset(x[:350], y[:350]), batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

for epoch in range(30):
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
    if epoch % 5 == 0:
        print(f"epoch {epoch}: loss {loss.item():.4f}")

with torch.no_grad():
    test_mse = ((model(x[350:]).reshape(-1) - y[350:].reshape(-1)) ** 2).mean().item()
print(f"final: test_mse={test_mse:.4f}")
