# Doctor bug corpus, pair "init_zero_weights" (class: bad_init).
# Modelled on https://github.com/alinlab/L2T-ww/issues/7: the linear layers of a network were
# initialised to zero, and the reporter's accuracy did not improve with the epochs at all.
# An MLP whose init function zeroes every Linear layer's weight (buggy.py): every hidden unit
# computes the same thing and the ReLU layers get no gradient. fixed.py uses Xavier initialisation.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler


class WeightNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.out = nn.Linear(64, 3)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.out(self.hidden(x))


wine = load_wine()
x = torch.tensor(StandardScaler().fit_transform(wine.data), dtype=torch.float32)
y = torch.tensor(wine.target)
torch.manual_seed(0)
perm = torch.randperm(len(y))
train, test = perm[:130], perm[130:]

model = WeightNet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
for epoch in range(40):
    order = train[torch.randperm(len(train))]
    for start in range(0, len(order), 8):
        idx = order[start:start + 8]
        optimizer.zero_grad()
        loss = criterion(model(x[idx]), y[idx])
        loss.backward()
        optimizer.step()
    if epoch % 10 == 0:
        print(f"epoch {epoch}: loss {loss.item():.4f}")

with torch.no_grad():
    accuracy = (model(x[test]).argmax(1) == y[test]).float().mean().item()
print(f"final: test_acc={accuracy:.4f}")
