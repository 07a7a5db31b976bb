# Doctor bug corpus, pair "lr_zero_decay_every_step" (class: lr_zero_group).
# Modelled on https://github.com/jaehyunnn/ViTPose_pytorch/issues/20: the learning rate warmed up
# and then quickly became 0 while training went on; the cause was a LayerDecayOptimizer that
# applied the per-layer decay every step instead of once at initialisation (the same report, LR
# printed as 0.00000000: https://github.com/jaehyunnn/ViTPose_pytorch/issues/9).
# A five-block MLP with one parameter group per block and layer-wise learning-rate decay. buggy.py
# multiplies each group's rate by its decay factor at every step, so all groups but the last
# reach 0 within a few dozen steps; fixed.py scales them once.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset


class LayerDecayOptimizer:
    """Wraps an optimizer whose param_groups run from the input layer to the head."""

    def __init__(self, optimizer, decay):
        self.optimizer = optimizer
        last = len(optimizer.param_groups) - 1
        self.rates = [decay ** (last - i) for i in range(last + 1)]

    def zero_grad(self):
        self.optimizer.zero_grad()

    def step(self):
        for group, rate in zip(self.optimizer.param_groups, self.rates):
            group["lr"] *= rate
        self.optimizer.step()


torch.manual_seed(0)
digits = load_digits()
x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
loader = DataLoader(TensorDataset(x[:1500], y[:1500]), batch_size=32, shuffle=True)

blocks = nn.ModuleList([nn.Sequential(nn.Linear(64, 64), nn.ReLU()) for i in range(4)] + [nn.Linear(64, 10)])
model = nn.Sequential(*blocks)
base = torch.optim.AdamW([{"params": b.parameters()} for b in blocks], lr=2e-3)
optimizer = LayerDecayOptimizer(base, decay=0.75)
criterion = nn.CrossEntropyLoss()

for epoch in range(6):
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f} lr of first block {base.param_groups[0]['lr']:.2e}")

with torch.no_grad():
    accuracy = (model(x[1500:]).argmax(1) == y[1500:]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
