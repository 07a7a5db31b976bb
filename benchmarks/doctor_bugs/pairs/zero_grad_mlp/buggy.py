# Doctor bug corpus, pair "zero_grad_mlp" (class: grads_not_cleared).
# Modelled on https://github.com/IBM/aihwkit/issues/446: the examples' loop never called
# opt.zero_grad(); the reporter saw the loss fall, then climb back up within ten iterations.
# buggy.py never clears the gradients; fixed.py calls optimizer.zero_grad() every step.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
digits = load_digits()
x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)
loader = DataLoader(TensorDataset(x_train, y_train), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(10):
    total = 0.0
    for inputs, targets in loader:
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch + 1}: train loss {total / len(loader):.4f}")

with torch.no_grad():
    accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
