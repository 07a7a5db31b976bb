# Doctor bug corpus, pair "lr_high_sgd_cnn" (class: lr_too_high).
# Modelled on https://github.com/FluxML/model-zoo/issues/220: the CIFAR-10 VGG example's accuracy
# stayed stuck at 0.087 (chance for ten classes) while the loss grew; a commenter traced it to a
# learning rate too large for the model (the model was diverging).
# A small CNN with SGD and momentum. buggy.py uses lr=0.5, fixed.py lr=0.01.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

LEARNING_RATE = 0.5

torch.manual_seed(0)
digits = load_digits()
images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
labels = torch.tensor(digits.target)
perm = torch.randperm(len(labels))
train, test = perm[:1500], perm[1500:]
loader = DataLoader(TensorDataset(images[train], labels[train]), batch_size=32, shuffle=True)

model = nn.Sequential(
    nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(64 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, 10),
)
optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(8):
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = (model(images[test]).argmax(1) == labels[test]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
