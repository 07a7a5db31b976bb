# Doctor bug corpus, pair "softmax_ce_lstm" (class: softmax_before_ce).
# Modelled on https://github.com/doronharitan/human_activity_recognition_LRCN/issues/4: an LSTM
# activity classifier applied a softmax to its output and then CrossEntropyLoss; a user reported
# that removing the softmax made the model converge faster.
# An LSTM classifies synthetic motion sequences (four kinds of movement). buggy.py's forward
# returns F.softmax of the scores, which F.cross_entropy then softmaxes again; fixed.py returns
# the scores.
# Run: python buggy.py (or fixed.py); the last line prints the validation accuracy.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_clips(n, frames=20, generator=None):
    kind = torch.randint(0, 4, (n,), generator=generator)
    t = torch.linspace(0, 1, frames)
    speed = torch.tensor([0.5, 1.0, 2.0, 3.0])[kind].unsqueeze(1)
    x = torch.sin(2 * math.pi * speed * t) + 0.2 * torch.randn(n, frames, generator=generator)
    y = torch.cos(2 * math.pi * speed * t) * (kind % 2).unsqueeze(1) + 0.2 * torch.randn(n, frames, generator=generator)
    return torch.stack([x, y], -1), kind


class ActivityLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(2, 48, batch_first=True)
        self.fc = nn.Linear(48, 4)

    def forward(self, clips):
        out, _ = self.lstm(clips)
        scores = self.fc(out[:, -1])
        return F.softmax(scores, dim=1)


g = torch.Generator().manual_seed(0)
x_train, y_train = make_clips(3000, generator=g)
x_val, y_val = make_clips(600, generator=g)
torch.manual_seed(0)
model = ActivityLSTM()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)

for epoch in range(6):
    order = torch.randperm(len(x_train))
    for start in range(0, len(order), 50):
        idx = order[start:start + 50]
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        accuracy = (model(x_val).argmax(1) == y_val).float().mean().item()
    print(f"epoch {epoch}: loss {loss.item():.4f} val_acc {accuracy:.4f}")
print(f"final: val_acc={accuracy:.4f}")
