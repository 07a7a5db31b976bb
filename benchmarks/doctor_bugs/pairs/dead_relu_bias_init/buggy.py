# Doctor bug corpus, pair "dead_relu_bias_init" (class: dead_relu).
# Modelled on https://github.com/Yang7879/3D-RecGAN/issues/6: after changing some settings the
# network predicted all-zero outputs; the reporter found it was the dead-ReLU effect, depending
# on the initialisation.
# An MLP whose custom init sets every hidden bias to a constant. buggy.py uses -1.0 (meant as a
# "sparsity" prior); with inputs in [0, 1] and small weights most hidden units never fire.
# fixed.py starts the biases at 0.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset


def init_layer(layer):
    nn.init.xavier_uniform_(layer.weight, gain=0.5)
    nn.init.constant_(layer.bias, -1.0)
    return layer


torch.manual_seed(0)
digits = load_digits()
x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
loader = DataLoader(TensorDataset(x[:1500], y[:1500]), batch_size=32, shuffle=True)

model = nn.Sequential(
    init_layer(nn.Linear(64, 128)), nn.ReLU(),
    init_layer(nn.Linear(128, 128)), nn.ReLU(),
    nn.Linear(128, 10),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(8):
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = (model(x[1500:]).argmax(1) == y[1500:]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
