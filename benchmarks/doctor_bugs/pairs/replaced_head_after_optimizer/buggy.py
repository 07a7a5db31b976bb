# Doctor bug corpus, pair "replaced_head_after_optimizer" (class: param_left_out).
# Modelled on https://github.com/microsoft/nni/issues/4521: the pruned model's layers were
# replaced after the optimizer was built, so the parameters registered in the optimizer were
# outdated and the new ones were not updated; re-creating the optimizer fixed it.
# A digits CNN gets a new classifier layer (ten classes instead of the two of its first task).
# buggy.py builds the optimizer before replacing the layer, so the new layer never trains;
# fixed.py builds it after.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 16, 64), nn.ReLU(),
        )
        self.classifier = nn.Linear(64, classes)

    def forward(self, x):
        return self.classifier(self.body(x))


torch.manual_seed(0)
digits = load_digits()
images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
labels = torch.tensor(digits.target)
loader = DataLoader(TensorDataset(images[:1500], labels[:1500]), batch_size=32, shuffle=True)

model = Net(classes=2)  # the first task told even from odd digits
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
model.classifier = nn.Linear(64, 10)
criterion = nn.CrossEntropyLoss()

for epoch in range(6):
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = (model(images[1500:]).argmax(1) == labels[1500:]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
