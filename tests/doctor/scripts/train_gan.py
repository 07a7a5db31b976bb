"""A plain GAN script (no torchwise inside): two networks, two optimizers, an EMA copy of the
generator updated under ``no_grad`` and sampled in eval mode.

    python train_gan.py [--steps N] [--fault nan-layer]

``--fault nan-layer`` plants a generator layer that divides by a norm that can be zero.
"""

import argparse
import copy
import math

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--fault", default="")
args = parser.parse_args()

torch.manual_seed(0)


def real_batch(n=64):
    angle = torch.randint(0, 8, (n,)).float() * (2 * math.pi / 8)
    return torch.stack([angle.cos(), angle.sin()], 1) * 2 + 0.05 * torch.randn(n, 2)


class Normalise(nn.Module):
    def forward(self, x):
        if args.fault == "nan-layer":
            return x / x.clamp(max=0).norm(dim=1, keepdim=True)  # 0 / 0 for rows without negatives
        return x / (x.norm(dim=1, keepdim=True) + 1e-6)


generator = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), Normalise(), nn.ReLU(), nn.Linear(64, 2))
discriminator = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))
ema = copy.deepcopy(generator)
opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()

for step in range(args.steps):
    real = real_batch()
    fake = generator(torch.randn(64, 8))
    d_loss = bce(discriminator(real), torch.ones(64, 1)) + bce(discriminator(fake.detach()), torch.zeros(64, 1))
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = bce(discriminator(fake), torch.ones(64, 1))
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    with torch.no_grad():
        for e, p in zip(ema.parameters(), generator.parameters()):
            e.lerp_(p, 0.01)
    if step % 100 == 0:
        ema.eval()
        with torch.no_grad():
            sample = ema(torch.randn(256, 8))
        print(f"step {step}: d {d_loss.item():.3f} g {g_loss.item():.3f} spread {sample.std().item():.2f}")
