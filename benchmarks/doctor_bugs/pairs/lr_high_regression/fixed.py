# Doctor bug corpus, pair "lr_high_regression" (class: lr_too_high).
# Modelled on https://github.com/NLeSC/mcfly/issues/43: some generated models stopped learning,
# with accuracy and loss completely stable; they were exactly the ones with a learning rate
# above 0.03, and the high learning rate was the suspect.
# A regression MLP on scikit-learn's diabetes data (standardised). buggy.py uses SGD at lr=0.3,
# fixed.py at lr=0.01.
# Run: python buggy.py (or fixed.py); the last line prints the test mean squared error.
import torch
import torch.nn as nn
from sklearn.datasets import load_diabetes
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = load_diabetes()
x = torch.tensor(data.data, dtype=torch.float32)
y = torch.tensor(data.target, dtype=torch.float32).unsqueeze(1)
x = (x - x.mean(0)) / x.std(0)
y = (y - y.mean()) / y.std()
loader = DataLoader(TensorDataset(x[:350], y[:350]), batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
criterion = nn.MSELoss()

for epoch in range(40):
    total = 0.0
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
        total += loss.item()
    if epoch % 5 == 0:
        print(f"epoch {epoch}: loss {total / len(loader):.4f}")

with torch.no_grad():
    test_mse = criterion(model(x[350:]), y[350:]).item()
print(f"final: test_mse={test_mse:.4f}")
