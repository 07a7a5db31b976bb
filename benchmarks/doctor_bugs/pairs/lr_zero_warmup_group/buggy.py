# Doctor bug corpus, pair "lr_zero_warmup_group" (class: lr_zero_group).
# Modelled on https://github.com/karpathy/nanoGPT/pull/578 (the warm-up formula gave a learning
# rate of exactly 0 at the start of warm-up) and https://github.com/facebookresearch/barlowtwins/issues/45
# (adjust_learning_rate() set the rate to 0 at the first step, so that weight update was missed).
# Fine-tuning with two parameter groups: the pretrained encoder is warmed up over 400 steps, the
# new head is not. buggy.py computes the warm-up factor with integer division (step // 400), so
# the encoder's rate is exactly 0 for the whole warm-up; fixed.py uses step / 400.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
digits = load_digits()
x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
loader = DataLoader(TensorDataset(x[:1500], y[:1500]), batch_size=16, shuffle=True)

encoder = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32), nn.ReLU())
head = nn.Linear(32, 10)
optimizer = torch.optim.Adam([
    {"params": encoder.parameters(), "lr": 1e-3, "name": "encoder"},
    {"params": head.parameters(), "lr": 1e-3, "name": "head"},
])
criterion = nn.CrossEntropyLoss()
warmup_steps = 400
step = 0

for epoch in range(6):
    for inputs, targets in loader:
        optimizer.param_groups[0]["lr"] = 1e-3 * min(1.0, step // warmup_steps)
        optimizer.zero_grad()
        loss = criterion(head(encoder(inputs)), targets)
        loss.backward()
        optimizer.step()
        step += 1
    print(f"epoch {epoch}: loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = (head(encoder(x[1500:])).argmax(1) == y[1500:]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
