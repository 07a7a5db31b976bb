# Doctor bug corpus, pair "unshuffled_loader" (class: unshuffled).
# Modelled on https://blog.gcc.ac.cn/post/2024/machinelearninghighaccuracyatfirstthendecrease :
# training accuracy started very high and then fell while validation accuracy stayed at 0.1443;
# the author traced it to the training DataLoader's shuffle=False and shuffle=True fixed it.
# The training images are stored class by class (as when read folder by folder), so without
# shuffling every batch holds one digit. buggy.py loads them with shuffle=False; fixed.py with
# shuffle=True.
# Run: python buggy.py (or fixed.py); the last line prints the validation accuracy.
import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
digits = load_digits()
rng = np.random.default_rng(0)
order = rng.permutation(len(digits.target))
train_idx, val_idx = order[:1400], order[1400:]
train_idx = train_idx[np.argsort(digits.target[train_idx], kind="stable")]  # one folder per class
x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
y = torch.tensor(digits.target)
train_loader = DataLoader(TensorDataset(x[train_idx], y[train_idx]), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 64, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(8):
    correct = 0
    for images, labels in train_loader:
        optimizer.zero_grad()
        outputs = model(images)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        correct += (outputs.argmax(1) == labels).sum().item()
    with torch.no_grad():
        val_acc = (model(x[val_idx]).argmax(1) == y[val_idx]).float().mean().item()
    print(f"epoch {epoch}: train_acc {correct / len(train_idx):.4f} val_acc {val_acc:.4f}")
print(f"final: val_acc={val_acc:.4f}")
