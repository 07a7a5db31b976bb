"""A small character-level language model: causal self-attention (a tiny GPT) trained on text that
ships with Python (the docstrings of a few standard-library modules; nothing is downloaded).

What it shows: targets are the inputs shifted by one character; the optimizer factory asks for
the ``model`` to put weight decay on the matrices only (biases, LayerNorm and embeddings by name go
in a group without decay); the scheduler factory asks for the run's ``plan`` so that the linear
warm-up + cosine decay ends at its floor whatever ``--epochs``, ``--batch-size`` or
``--accumulate`` are on the command line.

    torchwise train examples/char_lm.py:task
    torchwise train examples/char_lm.py:task --epochs 2 --accumulate 4      # the schedule follows
    torchwise train examples/char_lm.py:task --task-arg n_layer=1 --task-arg block_size=32
"""

from __future__ import annotations

import argparse
import difflib
import doctest
import heapq
import json
import math
import random
import unittest
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset

from torchwise.core.task import Task

if TYPE_CHECKING:
    from torchwise import RunPlan

CORPUS_MODULES = (heapq, json, argparse, unittest, doctest, difflib, random)


def corpus() -> str:
    """About 12,000 characters of English and code: docstrings of standard-library modules."""
    return "\n\n".join(m.__doc__ or "" for m in CORPUS_MODULES)


class CharWindows(Dataset):
    """Windows of ``block_size + 1`` characters; the target is the input shifted by one."""

    def __init__(self, ids: torch.Tensor, block_size: int, stride: int) -> None:
        self.ids, self.block_size = ids, block_size
        self.starts = range(0, len(ids) - block_size - 1, stride)

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        chunk = self.ids[self.starts[i] : self.starts[i] + self.block_size + 1]
        return chunk[:-1], chunk[1:]


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float) -> None:
        super().__init__()
        self.n_head, self.dropout = n_head, dropout
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.resid_drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0)
        return self.resid_drop(self.proj(y.transpose(1, 2).reshape(B, T, C)))


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.norm2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyGPT(nn.Module):
    """Token + position embeddings, pre-norm transformer blocks, a linear head over the vocabulary."""

    def __init__(self, vocab: int, block_size: int, n_embd: int = 64, n_head: int = 4, n_layer: int = 2, dropout: float = 0.1) -> None:
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, n_embd)
        self.pos_emb = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*[Block(n_embd, n_head, dropout) for _ in range(n_layer)])
        self.norm = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        return self.head(self.norm(self.blocks(x)))  # (B, T, vocab)


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of every position's next-character prediction."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def decay_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Weight decay on the matrices; none on biases, norms and embeddings (chosen by name)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if name.endswith("bias") or "norm" in name or "emb" in name:
            no_decay.append(p)
        else:
            decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def warmup_cosine(total_steps: int, warmup_fraction: float = 0.1, floor: float = 0.1):
    """LR factor per optimizer step: linear warm-up, then cosine down to ``floor`` at ``total_steps``."""
    warmup = max(1, int(warmup_fraction * total_steps))

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
        return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))

    return factor


def task(block_size: int = 64, stride: int = 8, n_embd: int = 64, n_head: int = 4, n_layer: int = 2, dropout: float = 0.1,
         lr: float = 3e-3, weight_decay: float = 0.1, batch_size: int = 32, epochs: int = 4, max_chars: int | None = None) -> Task:
    """The character LM Task: 90% of the corpus to train on, the last 10% to validate."""
    text = corpus()[:max_chars]
    chars = sorted(set(text))
    ids = torch.tensor([chars.index(c) for c in text], dtype=torch.long)
    split = int(0.9 * len(ids))
    train, val = CharWindows(ids[:split], block_size, stride), CharWindows(ids[split:], block_size, block_size)

    def optimizer(params, model: nn.Module) -> torch.optim.Optimizer:
        return torch.optim.AdamW(decay_groups(model, weight_decay), lr=lr, betas=(0.9, 0.95))

    def scheduler(optimizer: torch.optim.Optimizer, plan: RunPlan) -> torch.optim.lr_scheduler.LRScheduler:
        return torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(plan.total_steps))

    return Task(
        model=TinyGPT(len(chars), block_size, n_embd, n_head, n_layer, dropout),
        train_data=train,
        val_data=val,
        loss_fn=lm_loss,
        optimizer=optimizer,
        scheduler=scheduler,
        batch_size=batch_size,
        epochs=epochs,
        name="char_lm",
    )
