# Doctor bug corpus, pair "eval_gru_dropout" (class: eval_in_train_mode).
# Modelled on https://github.com/SeanNaren/deepspeech.pytorch/pull/22 ("test in eval mode"): the
# recurrent model was tested with dropout still active because it was not put in eval mode.
# A two-layer GRU with dropout classifies synthetic sequences (which of four frequencies); the
# evaluate() helper runs under no_grad. buggy.py leaves the model in train mode there; fixed.py
# switches to eval mode for evaluation and back to train mode for training.
# Run: python buggy.py (or fixed.py); the last line prints the validation accuracy.
import math

import torch
import torch.nn as nn


def make_sequences(n, length=24, generator=None):
    label = torch.randint(0, 4, (n,), generator=generator)
    phase = torch.rand(n, 1, generator=generator) * 2 * math.pi
    t = torch.arange(length).float()
    freq = (label.float() + 1).unsqueeze(1) * 0.35
    signal = torch.sin(freq * t + phase) + 0.3 * torch.randn(n, length, generator=generator)
    return signal.unsqueeze(-1), label


class GRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(1, 32, num_layers=2, batch_first=True, dropout=0.4)
        self.drop = nn.Dropout(0.4)
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        hidden, _ = self.gru(x)
        return self.out(self.drop(hidden[:, -1]))


def evaluate(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


torch.manual_seed(0)
x_train, y_train = make_sequences(2048)
x_val, y_val = make_sequences(512)
model = GRUClassifier()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()

for epoch in range(8):
    order = torch.randperm(len(x_train))
    for start in range(0, len(order), 64):
        idx = order[start:start + 64]
        optimizer.zero_grad()
        loss = criterion(model(x_train[idx]), y_train[idx])
        loss.backward()
        optimizer.step()
    accuracy = evaluate(model, x_val, y_val)
    print(f"epoch {epoch}: loss {loss.item():.4f} val_acc {accuracy:.4f}")
print(f"final: val_acc={accuracy:.4f}")
