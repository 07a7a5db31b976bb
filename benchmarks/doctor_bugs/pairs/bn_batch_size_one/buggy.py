# Doctor bug corpus, pair "bn_batch_size_one" (class: bn_batch_one).
# Modelled on https://github.com/nikitakaraevv/pointnet/issues/18: the reporter set the training
# batch size to 1 and BatchNorm could not compute statistics for one sample. With BatchNorm2d
# there is no error: each image is normalised by its own statistics and the running statistics
# are built from single images.
# A CNN with BatchNorm2d. buggy.py trains with batch_size=1 ("to save memory"); fixed.py with 32.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

BATCH_SIZE = 1

torch.manual_seed(0)
digits = load_digits()
images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
labels = torch.tensor(digits.target)
loader = DataLoader(TensorDataset(images[:1400], labels[:1400]), batch_size=BATCH_SIZE, shuffle=True)

model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(32 * 2 * 2, 10),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05 * BATCH_SIZE / 32, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    accuracy = (model(images[1400:]).argmax(1) == labels[1400:]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
