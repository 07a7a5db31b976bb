# Doctor bug corpus, pair "zero_grad_accumulation" (class: grads_not_cleared).
# Modelled on https://discuss.pytorch.org/t/pytorch-gradient-accumulation/55955: gradient
# accumulation as usually written (loss / accumulation_steps, backward every batch, step and
# zero_grad every accumulation_steps batches). fixed.py is that intended accumulation and must
# stay quiet; buggy.py drops the zero_grad after the step, so every step adds all earlier
# micro-batches' gradients again.
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
x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=2)
loader = DataLoader(TensorDataset(x_train, y_train), batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(64, 96), nn.Tanh(), nn.Linear(96, 48), nn.Tanh(), nn.Linear(48, 10))
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
accumulation_steps = 4

model.zero_grad()
for epoch in range(25):
    for i, (inputs, labels) in enumerate(loader):
        loss = loss_fn(model(inputs), labels) / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            optimizer.step()
    print(f"epoch {epoch}: last loss {loss.item() * accumulation_steps:.4f}")

with torch.no_grad():
    accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
