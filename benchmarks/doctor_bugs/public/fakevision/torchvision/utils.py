"""torchvision.utils stand-ins: make_grid tiles images, save_image checks its input and writes nothing."""

from __future__ import annotations

import torch


def make_grid(tensor, nrow=8, padding=2, normalize=False, **kwargs):
    if isinstance(tensor, (list, tuple)):
        tensor = torch.stack(list(tensor))
    if tensor.dim() == 3:
        tensor = tensor.unsqueeze(0)
    n, c, h, w = tensor.shape
    cols = min(nrow, n)
    rows = (n + cols - 1) // cols
    grid = tensor.new_zeros(c, rows * (h + padding) + padding, cols * (w + padding) + padding)
    for i in range(n):
        r, k = divmod(i, cols)
        top, left = padding + r * (h + padding), padding + k * (w + padding)
        grid[:, top:top + h, left:left + w] = tensor[i]
    return grid


def save_image(tensor, fp, **kwargs):
    options = {k: v for k, v in kwargs.items() if k in ("nrow", "padding")}
    make_grid(tensor.detach() if isinstance(tensor, torch.Tensor) else tensor, **options)
