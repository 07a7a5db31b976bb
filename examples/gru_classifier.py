"""A GRU classifier on variable-length token sequences, packed so the padding is never read.

What it shows: dict samples ``{"input_ids": seq, "label": y}`` padded by ``pad_collate``, which adds
``lengths`` and ``mask`` to the batch; the model's ``forward(input_ids, lengths)`` names
``lengths``, so the Trainer passes it, and the model packs the batch with
``pack_padded_sequence``. The sequences are generated (nothing is downloaded): the label says
which of two marker tokens occurs more often, anywhere in a sequence of 4 to 48 tokens, so the
whole sequence matters; packing makes the GRU's last state the one at each sequence's own end,
not after up to 44 padding steps.

    torchwise train examples/gru_classifier.py:task
    torchwise doctor examples/gru_classifier.py:task
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence
from torch.utils.data import Dataset

from torchwise.utils.collate import pad_collate
from torchwise.core.task import Task, accuracy

PAD, MARK_A, MARK_B = 0, 1, 2


class MarkerCounts(Dataset):
    """Random sequences of tokens 1..vocab-1; label 1 when token 1 occurs more often than token 2."""

    def __init__(self, n: int, vocab: int = 16, min_len: int = 4, max_len: int = 48, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        self.samples = []
        while len(self.samples) < n:
            length = int(torch.randint(min_len, max_len + 1, (), generator=g))
            seq = torch.randint(1, vocab, (length,), generator=g)
            a, b = int((seq == MARK_A).sum()), int((seq == MARK_B).sum())
            if a != b:  # no ties: every label is well defined
                self.samples.append({"input_ids": seq, "label": torch.tensor(int(a > b))})

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return self.samples[i]


class PackedGRU(nn.Module):
    """Embedding, a GRU over the packed sequences, a linear layer on the last real hidden state."""

    def __init__(self, vocab: int = 16, embed: int = 32, hidden: int = 64, classes: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, embed, padding_idx=PAD)
        self.gru = nn.GRU(embed, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, input_ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = pack_padded_sequence(self.embed(input_ids), lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, h_n = self.gru(packed)  # h_n: (layers, B, hidden), each row at its own sequence's end
        return self.head(h_n[-1])


def task(n_train: int = 2000, n_val: int = 400, vocab: int = 16, max_len: int = 48, embed: int = 32, hidden: int = 64,
         lr: float = 3e-3, batch_size: int = 64, epochs: int = 6) -> Task:
    """The packed-GRU Task: generated training and validation sequences (different seeds)."""
    return Task(
        model=PackedGRU(vocab, embed, hidden),
        train_data=MarkerCounts(n_train, vocab, max_len=max_len, seed=0),
        val_data=MarkerCounts(n_val, vocab, max_len=max_len, seed=1),
        collate_fn=pad_collate(pad_value=PAD),
        loss_fn=nn.CrossEntropyLoss(),
        optimizer=lambda params: torch.optim.Adam(params, lr=lr),
        metrics={"accuracy": accuracy},
        batch_size=batch_size,
        epochs=epochs,
        name="gru_classifier",
    )
