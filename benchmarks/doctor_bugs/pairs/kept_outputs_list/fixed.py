# Doctor bug corpus, pair "kept_outputs_list" (class: kept_loss).
# Modelled on https://github.com/TRI-ML/packnet-sfm/pull/51 ("Fix memory leak: detach loss before
# appending it to the training output list").
# A classifier collects each batch's outputs to compute the epoch's training accuracy at the end
# of the epoch. buggy.py appends the outputs with their graphs attached; fixed.py detaches them.
# Run: python buggy.py (or fixed.py); the last line prints the training accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import make_classification

torch.manual_seed(0)
features, classes = make_classification(n_samples=6000, n_features=40, n_informative=20, n_classes=5, random_state=0)
x = torch.tensor(features, dtype=torch.float32)
y = torch.tensor(classes)

model = nn.Sequential(nn.Linear(40, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 5))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(3):
    outputs, targets = [], []
    order = torch.randperm(len(x))
    for start in range(0, len(x), 32):
        idx = order[start:start + 32]
        optimizer.zero_grad()
        logits = model(x[idx])
        loss = criterion(logits, y[idx])
        loss.backward()
        optimizer.step()
        outputs.append(logits.detach())
        targets.append(y[idx])
    accuracy = (torch.cat(outputs).argmax(1) == torch.cat(targets)).float().mean().item()
    print(f"epoch {epoch}: loss {loss.item():.4f} train_acc {accuracy:.4f}")
print(f"final: train_acc={accuracy:.4f}")
