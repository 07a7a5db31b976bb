# Doctor bug corpus, pair "softmax_ce_sequential" (class: softmax_before_ce).
# Modelled on https://github.com/NaJaeMin92/pytorch-DANN/issues/7: the classifier's last layer was
# a softmax although the loss was nn.CrossEntropyLoss; the reporter found it made the model hard
# to train, and the author removed it (LogSoftmax is already inside CrossEntropyLoss).
# buggy.py ends the nn.Sequential classifier with nn.Softmax(dim=1); fixed.py returns the logits.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
digits = load_digits()
images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
labels = torch.tensor(digits.target)
loader = DataLoader(TensorDataset(images[:1500], labels[:1500]), batch_size=64, shuffle=True)

classifier = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(16 * 4 * 4, 64), nn.ReLU(),
    nn.Linear(64, 10),
)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(classifier.parameters(), lr=0.05, momentum=0.9)

for epoch in range(8):
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(classifier(x), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = (classifier(images[1500:]).argmax(1) == labels[1500:]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
