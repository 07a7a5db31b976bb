# Doctor bug corpus, pair "eval_batchnorm_cnn" (class: eval_in_train_mode).
# Modelled on https://github.com/sinhasam/vaal/issues/2: test accuracy was computed with a
# vgg16_bn task model (BatchNorm and dropout) that was not in eval mode; the author agreed and
# added task_model.eval().
# A CNN with BatchNorm, tested in small batches. buggy.py tests in train mode (batch statistics,
# and the running statistics move with the test data); fixed.py calls model.eval() first.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.utils.data import DataLoader, TensorDataset


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.3), nn.Linear(32 * 2 * 2, 10),
    )


def test(model, loader):
    correct = total = 0
    with torch.no_grad():
        for images, labels in loader:
            correct += (model(images).argmax(1) == labels).sum().item()
            total += len(labels)
    return correct / total


torch.manual_seed(0)
digits = load_digits()
images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
labels = torch.tensor(digits.target)
x_tr, x_te, y_tr, y_te = train_test_split(images, labels, test_size=0.25, random_state=4, stratify=labels)
train_loader = DataLoader(TensorDataset(x_tr, y_tr), batch_size=32, shuffle=True)
test_loader = DataLoader(TensorDataset(x_te, y_te), batch_size=4)

model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
criterion = nn.CrossEntropyLoss()
for epoch in range(6):
    model.train()
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f} test_acc {test(model, test_loader):.4f}")
print(f"final: test_acc={test(model, test_loader):.4f}")
