# Doctor bug corpus, pair "unshuffled_binary" (class: unshuffled).
# Modelled on https://github.com/NVIDIA/DIGITS/issues/29: a two-class network trained on data
# built folder by folder (pos, then neg) classified every test sample as the negative class; the
# discussion turned to whether the data had been shuffled.
# A two-class MLP on generated features stored class by class (all negatives, then all
# positives), as when two folders are read one after the other. buggy.py iterates the loader with
# shuffle=False; fixed.py with shuffle=True.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import numpy as np
import torch
import torch.nn as nn
from sklearn.datasets import make_classification
from torch.utils.data import DataLoader, TensorDataset

features, labels = make_classification(n_samples=8000, n_features=20, n_informative=6, class_sep=0.7, flip_y=0.02, random_state=11)
x = torch.tensor(features, dtype=torch.float32)
y = torch.tensor(labels, dtype=torch.float32).unsqueeze(1)
by_class = np.argsort(labels[:6000], kind="stable")  # one folder, then the other
train = TensorDataset(x[:6000][by_class], y[:6000][by_class])

torch.manual_seed(0)
loader = DataLoader(train, batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.BCEWithLogitsLoss()

for epoch in range(2):
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: last loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = ((model(x[6000:]) > 0).float() == y[6000:]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
