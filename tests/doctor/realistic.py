"""Small realistic models and data for the dynamics checks (CPU, a few ms a step).

Each ``*_case()`` returns keyword arguments for ``doctor(...)``: a model, a DataLoader over
learnable data, a loss and an optimizer factory, as a user would write them. The clean cases
must stay quiet over a full ``steps=`` run; the tests plant one fault at a time in them.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def digits(flat: bool = False, scale: float = 1.0 / 16.0):
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.from_numpy(d.images).float() * scale
    x = x.reshape(len(x), -1) if flat else x.unsqueeze(1)
    return TensorDataset(x, torch.from_numpy(d.target).long())


def loader(ds, batch_size: int = 32, seed: int = 0, **kw) -> DataLoader:
    return DataLoader(ds, batch_size=batch_size, shuffle=True, generator=torch.Generator().manual_seed(seed), **kw)


def mlp(act: type[nn.Module] = nn.ReLU, width: int = 128, depth: int = 2, inp: int = 64, out: int = 10) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(depth):
        layers += [nn.Linear(inp if i == 0 else width, width), act()]
    return nn.Sequential(*layers, nn.Linear(width, out))


def mlp_case(act: type[nn.Module] = nn.ReLU, lr: float = 1e-3, seed: int = 0, **kw):
    torch.manual_seed(seed)
    return dict(task_or_model=mlp(act, **kw), loader=loader(digits(flat=True), seed=seed), loss_fn=nn.CrossEntropyLoss(),
                optimizer=lambda p: torch.optim.Adam(p, lr=lr))


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(32 * 16, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.head(self.body(x))


def cnn_case(lr: float = 1e-2, seed: int = 0):
    torch.manual_seed(seed)
    return dict(task_or_model=CNN(), loader=loader(digits(), seed=seed), loss_fn=nn.CrossEntropyLoss(),
                optimizer=lambda p: torch.optim.SGD(p, lr=lr, momentum=0.9))


def sequences(n: int = 1024, length: int = 20, vocab: int = 12, seed: int = 0):
    """Class = which of tokens 1..3 occurs most often (ties to the smaller): needs the whole sequence."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, vocab, (n, length), generator=g)
    counts = torch.stack([(x == t).sum(1) for t in (1, 2, 3)], 1)
    return TensorDataset(x, counts.argmax(1))


class GRUClassifier(nn.Module):
    def __init__(self, vocab: int = 12, dim: int = 32, classes: int = 3) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.gru = nn.GRU(dim, 64, batch_first=True)
        self.head = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, classes))

    def forward(self, x):
        out, _ = self.gru(self.emb(x))
        return self.head(out[:, -1])


def gru_case(lr: float = 3e-3, seed: int = 0):
    torch.manual_seed(seed)
    return dict(task_or_model=GRUClassifier(), loader=loader(sequences(seed=seed), seed=seed), loss_fn=nn.CrossEntropyLoss(),
                optimizer=lambda p: torch.optim.AdamW(p, lr=lr, weight_decay=0.01))


def text(n: int = 8192, length: int = 17, vocab: int = 16, seed: int = 0) -> torch.Tensor:
    """Token sequences from a noisy order-2 rule: predictable in part, never exactly."""
    g = torch.Generator().manual_seed(seed)
    seq = torch.zeros(n, length, dtype=torch.long)
    seq[:, :2] = torch.randint(0, vocab, (n, 2), generator=g)
    noise = torch.randint(0, vocab, (n, length), generator=g)
    flip = torch.rand(n, length, generator=g) < 0.3
    for i in range(2, length):
        nxt = (seq[:, i - 1] * 3 + seq[:, i - 2]) % vocab
        seq[:, i] = torch.where(flip[:, i], noise[:, i], nxt)
    return seq


class TinyLM(nn.Module):
    """A causal transformer language model: returns logits (N, L, V)."""

    def __init__(self, vocab: int = 16, dim: int = 32, layers: int = 2, length: int = 16) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(length, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, 4, 4 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, x):
        n = x.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(n)
        h = self.blocks(self.tok(x) + self.pos[:n], mask=mask, is_causal=True)
        return self.out(self.norm(h))


def lm_loss(logits, targets):
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def lm_case(shift: bool = True, lr: float = 1e-3, seed: int = 0):
    torch.manual_seed(seed)
    seq = text(seed=seed)
    inputs = seq[:, :-1]
    targets = seq[:, 1:] if shift else seq[:, :-1]  # the planted leak: predict the token it is given
    return dict(task_or_model=TinyLM(), loader=loader(TensorDataset(inputs, targets), seed=seed), loss_fn=lm_loss,
                optimizer=lambda p: torch.optim.AdamW(p, lr=lr, weight_decay=0.01))


def regression_case(act: type[nn.Module] = nn.Tanh, scale: float = 1.0, lr: float = 1e-3, seed: int = 0):
    """A smooth regression target; ``scale`` multiplies the inputs (1 = standardised)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1024, 8, generator=g)
    w1, w2 = torch.randn(8, 16, generator=g) / 8 ** 0.5, torch.randn(16, 1, generator=g) / 4
    y = torch.tanh(x @ w1) @ w2 + 0.05 * torch.randn(1024, 1, generator=g)  # a smooth teacher, a little noise
    y = (y - y.mean()) / y.std()
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 64), act(), nn.Linear(64, 64), act(), nn.Linear(64, 1))
    return dict(task_or_model=model, loader=loader(TensorDataset(x * scale, y), seed=seed), loss_fn=nn.MSELoss(),
                optimizer=lambda p: torch.optim.Adam(p, lr=lr))


CLEAN = {
    "mlp": mlp_case,
    "mlp_tanh": lambda seed=0: mlp_case(nn.Tanh, seed=seed),
    "cnn_bn": cnn_case,
    "gru": gru_case,
    "lm": lm_case,
    "lm_slow_lr": lambda seed=0: lm_case(lr=3e-4, seed=seed),  # learns slowly but steadily: no TW135
    "regression_tanh": regression_case,
    "regression_sigmoid": lambda seed=0: regression_case(nn.Sigmoid, lr=3e-3, seed=seed),
}

_ = math  # (math kept for callers computing ln(C))
