# Doctor bug corpus, pair "zero_grad_cnn_train_step" (class: grads_not_cleared).
# Modelled on https://github.com/fchollet/deep-learning-with-python-notebooks/issues/293: a
# custom train_step written for the torch backend forgot to clear the gradients, and the
# reporter said the results were terrible until zero_grad was added.
# buggy.py's train_step never clears them; fixed.py's clears them before backward.
# Run: python buggy.py (or fixed.py); the last line prints the test accuracy.
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.utils.data import DataLoader, TensorDataset


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 2 * 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def train_step(model, optimizer, batch):
    images, labels = batch
    model.train()
    optimizer.zero_grad()
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    return loss.item()


def main():
    torch.manual_seed(0)
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    labels = torch.tensor(digits.target)
    x_tr, x_te, y_tr, y_te = train_test_split(images, labels, test_size=0.2, random_state=1)
    loader = DataLoader(TensorDataset(x_tr, y_tr), batch_size=64, shuffle=True)
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(12):
        losses = [train_step(model, optimizer, batch) for batch in loader]
        print(f"epoch {epoch}: loss {sum(losses) / len(losses):.4f}")
    model.eval()
    with torch.no_grad():
        accuracy = (model(x_te).argmax(1) == y_te).float().mean().item()
    print(f"final: test_acc={accuracy:.4f}")


if __name__ == "__main__":
    main()
