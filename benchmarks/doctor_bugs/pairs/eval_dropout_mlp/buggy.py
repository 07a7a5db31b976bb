# Doctor bug corpus, pair "eval_dropout_mlp" (class: eval_in_train_mode).
# Modelled on https://github.com/udacity/P1_Facial_Keypoints/issues/28: the notebook passed test
# data through the network without calling eval(), so dropout stayed active during evaluation.
# An MLP with dropout, validated every epoch under no_grad. buggy.py never switches to eval mode;
# fixed.py calls model.eval() for validation and model.train() before training.
# Run: python buggy.py (or fixed.py); the last line prints the validation accuracy.
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
digits = load_digits()
x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.3, random_state=3)
train_loader = DataLoader(TensorDataset(x_train, y_train), batch_size=32, shuffle=True)
val_loader = DataLoader(TensorDataset(x_val, y_val), batch_size=128)

model = nn.Sequential(
    nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.5),
    nn.Linear(128, 64), nn.ReLU(), nn.Dropout(0.5),
    nn.Linear(64, 10),
)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)

for epoch in range(10):
    for inputs, labels in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), labels)
        loss.backward()
        optimizer.step()
    correct = 0
    with torch.no_grad():
        for inputs, labels in val_loader:
            correct += (model(inputs).argmax(1) == labels).sum().item()
    accuracy = correct / len(x_val)
    print(f"epoch {epoch}: loss {loss.item():.4f} val_acc {accuracy:.4f}")
print(f"final: val_acc={accuracy:.4f}")
