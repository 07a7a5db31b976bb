# Doctor bug corpus, pair "bad_label_late_tensor" (class: bad_label_late).
# Modelled on https://github.com/jfzhang95/pytorch-deeplab-xception/issues/226: training on a small
# sample of the data worked; on the complete data it failed with "device-side assert triggered",
# and on the CPU with "IndexError: Target 10 is out of bounds".
# A large synthetic 10-class set held in a TensorDataset; one sample near the end carries the
# label 10 (buggy.py, an export error). With this seed the first 200 steps never draw it; the
# script fails later in the epoch. fixed.py drops the mislabelled sample.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import make_classification
from torch.utils.data import DataLoader, TensorDataset

features, classes = make_classification(n_samples=24000, n_features=32, n_informative=16, n_classes=10, random_state=3)
x = torch.tensor(features, dtype=torch.float32)
y = torch.tensor(classes)
y[19005] = 10  # one row exported with a class id that does not exist

torch.manual_seed(0)
train = TensorDataset(x[:20000], y[:20000])
loader = DataLoader(train, batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(2):
    for step, (inputs, targets) in enumerate(loader):
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
        if step % 200 == 0:
            print(f"epoch {epoch} step {step}: loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = (model(x[20000:]).argmax(1) == y[20000:]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
