"""A plain character-level language-model script (no torchwise inside).

    python train_lm.py --steps 300 [--unshifted]

``--unshifted`` plants the classic bug: targets equal to the inputs instead of shifted by one.
"""

import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--unshifted", action="store_true")
args = parser.parse_args()

torch.manual_seed(0)
text = ("the quick brown fox jumps over the lazy dog. " * 40 + "pack my box with five dozen liquor jugs. " * 40) * 2
vocab = sorted(set(text))
data = torch.tensor([vocab.index(c) for c in text])
block = 32


def get_batch(batch_size=16):
    starts = torch.randint(0, len(data) - block - 1, (batch_size,))
    x = torch.stack([data[s:s + block] for s in starts])
    if args.unshifted:
        y = torch.stack([data[s:s + block] for s in starts])
    else:
        y = torch.stack([data[s + 1:s + block + 1] for s in starts])
    return x, y


class TinyGPT(nn.Module):
    def __init__(self, n_vocab, dim=48):
        super().__init__()
        self.tok = nn.Embedding(n_vocab, dim)
        self.pos = nn.Embedding(block, dim)
        layer = nn.TransformerEncoderLayer(dim, 4, 4 * dim, dropout=0.1, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(dim, n_vocab)

    def forward(self, idx):
        t = idx.shape[1]
        h = self.tok(idx) + self.pos(torch.arange(t))
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        return self.head(self.blocks(h, mask=mask, is_causal=True))


model = TinyGPT(len(vocab))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(args.steps):
    x, y = get_batch()
    logits = model(x)
    loss = nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 100 == 0:
        print(f"step {step}: loss {loss.item():.3f}")
