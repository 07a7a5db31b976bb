# Doctor bug corpus, pair "init_wide_normal" (class: bad_init).
# Modelled on https://github.com/sophiajw/HistAuGAN/pull/4: the model's weights were initialised
# from a normal distribution with std 0.2 where 0.02 was meant, and training crashed on NaN/inf.
# A deep MLP gets a hand-written init function. buggy.py draws the weights with std 0.2 (several
# times the fan-in scale of these layers); fixed.py uses Kaiming initialisation.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
        nn.init.zeros_(m.bias)


torch.manual_seed(0)
digits = load_digits()
x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
loader = DataLoader(TensorDataset(x[:1500], y[:1500]), batch_size=32, shuffle=True)

layers = [nn.Linear(64, 256), nn.ReLU()]
for _ in range(4):
    layers += [nn.Linear(256, 256), nn.ReLU()]
model = nn.Sequential(*layers, nn.Linear(256, 10))
model.apply(init_weights)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(6):
    for step, (inputs, targets) in enumerate(loader):
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
        if epoch == 0 and step < 3:
            print(f"step {step}: loss {loss.item():.2f}")
    print(f"epoch {epoch}: loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = (model(x[1500:]).argmax(1) == y[1500:]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
