# Doctor bug corpus, pair "kept_loss_total" (class: kept_loss).
# Modelled on https://github.com/pai4451/ML2021/issues/2: `train_loss += output.loss` stored the
# complete computation graph; the reporter's CPU RAM kept increasing until all 64 GB were used,
# and `.detach()` or `.item()` solved it.
# A CNN on the digits. buggy.py sums the loss tensors into the epoch total (every step's graph
# stays alive until the epoch ends); fixed.py adds loss.item().
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
digits = load_digits()
images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
labels = torch.tensor(digits.target)
train_loader = DataLoader(TensorDataset(images[:1400], labels[:1400]), batch_size=8, shuffle=True)

model = nn.Sequential(
    nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
    nn.Flatten(), nn.Linear(32 * 8 * 8, 10),
)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    train_loss = 0.0
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        train_loss += loss
    print(f"epoch {epoch}: train loss {float(train_loss) / len(train_loader):.4f}")

with torch.no_grad():
    accuracy = (model(images[1400:]).argmax(1) == labels[1400:]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
