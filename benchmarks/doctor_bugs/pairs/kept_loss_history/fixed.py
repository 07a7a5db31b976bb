# Doctor bug corpus, pair "kept_loss_history" (class: kept_loss).
# Modelled on https://github.com/rballester/tntorch/pull/19: every loss added to loss_history was
# a full computational graph, and 1000 iterations froze a PC with 12 GB of RAM.
# A regression MLP on scikit-learn's diabetes data keeps a loss history for a plot. buggy.py
# appends the loss tensors (each keeps its step's graph and activations); fixed.py appends floats.
# Run: python buggy.py (or fixed.py); the last line prints the test mean squared error.
import torch
import torch.nn as nn
from sklearn.datasets import load_diabetes

torch.manual_seed(0)
data = load_diabetes()
x = torch.tensor(data.data, dtype=torch.float32)
y = torch.tensor(data.target, dtype=torch.float32).unsqueeze(1)
x = (x - x.mean(0)) / x.std(0)
y = (y - y.mean()) / y.std()
x_train, y_train, x_test, y_test = x[:350], y[:350], x[350:], y[350:]

model = nn.Sequential(nn.Linear(10, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_history = []

for iteration in range(600):
    idx = torch.randint(0, len(x_train), (64,))
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x_train[idx]), y_train[idx])
    loss.backward()
    optimizer.step()
    loss_history.append(loss.item())
    if iteration % 100 == 0:
        print(f"iteration {iteration}: loss {sum(loss_history[-100:]) / len(loss_history[-100:]):.4f}")

with torch.no_grad():
    test_mse = nn.functional.mse_loss(model(x_test), y_test).item()
print(f"final: test_mse={test_mse:.4f}")
