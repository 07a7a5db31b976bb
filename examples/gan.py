"""A GAN on a 2-D mixture of eight Gaussians on a ring: two networks, two optimizers, two steps.

What it shows: ``optimizer`` and ``step_fn`` as dicts with the same names; on each batch the
Trainer runs the discriminator's step, then the generator's, each loss backpropagated and
stepped with its own optimizer (with precision, accumulation and clipping applied per phase), and
checkpoints hold both optimizers. Each optimizer factory asks for the ``model`` to pick its own
network. The steps return the loss and the discriminator's mean outputs on real and generated
points, which are logged. The data is generated (nothing is downloaded).

    torchwise train examples/gan.py:task
    torchwise train examples/gan.py:task --epochs 40 --task-arg lr=5e-4
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import TensorDataset

from torchwise.core.task import Task


def ring(n: int, modes: int = 8, radius: float = 2.0, std: float = 0.05, seed: int = 0) -> torch.Tensor:
    """``n`` points from ``modes`` Gaussians placed evenly on a circle."""
    g = torch.Generator().manual_seed(seed)
    angle = 2 * math.pi * torch.randint(0, modes, (n,), generator=g).float() / modes
    centres = radius * torch.stack([torch.cos(angle), torch.sin(angle)], dim=1)
    return centres + std * torch.randn(n, 2, generator=g)


def mlp(inp: int, hidden: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inp, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, out))


class GAN(nn.Module):
    """A generator (noise -> point) and a discriminator (point -> logit of "real")."""

    def __init__(self, noise_dim: int = 8, hidden: int = 64) -> None:
        super().__init__()
        self.noise_dim = noise_dim
        self.generator = mlp(noise_dim, hidden, 2)
        self.discriminator = mlp(2, hidden, 1)

    def sample(self, n: int) -> torch.Tensor:
        z = torch.randn(n, self.noise_dim, device=self.generator[0].weight.device)
        return self.generator(z)


def d_step(model: GAN, batch: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    """Discriminator: real points -> 1, generated points (no gradient into the generator) -> 0."""
    real = batch[0]
    fake = model.sample(len(real)).detach()
    d_real, d_fake = model.discriminator(real), model.discriminator(fake)
    loss = F.binary_cross_entropy_with_logits(d_real, torch.ones_like(d_real)) + F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake))
    return {"loss": loss, "d_real": torch.sigmoid(d_real).mean().detach(), "d_fake": torch.sigmoid(d_fake).mean().detach()}


def g_step(model: GAN, batch: list[torch.Tensor]) -> torch.Tensor:
    """Generator: make the discriminator call generated points real (the non-saturating loss)."""
    d_fake = model.discriminator(model.sample(len(batch[0])))
    return F.binary_cross_entropy_with_logits(d_fake, torch.ones_like(d_fake))


def task(n: int = 4096, noise_dim: int = 8, hidden: int = 64, lr: float = 1e-3, batch_size: int = 128, epochs: int = 20) -> Task:
    """The GAN Task: Adam with beta1 = 0.5 for both networks, as is usual for GANs."""
    return Task(
        model=GAN(noise_dim, hidden),
        train_data=TensorDataset(ring(n)),
        optimizer={
            "d": lambda params, model: torch.optim.Adam(model.discriminator.parameters(), lr=lr, betas=(0.5, 0.999)),
            "g": lambda params, model: torch.optim.Adam(model.generator.parameters(), lr=lr, betas=(0.5, 0.999)),
        },
        step_fn={"d": d_step, "g": g_step},
        batch_size=batch_size,
        epochs=epochs,
        name="gan",
    )
