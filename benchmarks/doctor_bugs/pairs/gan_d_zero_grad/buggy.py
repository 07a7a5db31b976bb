# Doctor bug corpus, pair "gan_d_zero_grad" (class: grads_not_cleared, two models with two optimizers).
# Modelled on https://github.com/Hsintien-Ng/idinvert_pytorch-reproduced/issues/1: the
# discriminator's optimizer_D.zero_grad() was missing before its backward pass; the author
# confirmed it and added it.
# A 1-D GAN (generator and discriminator, an Adam each). buggy.py never clears the
# discriminator's gradients, which then also collect the generator step's backward through D.
# fixed.py is a healthy GAN: its generator loss may rise while D learns, and must stay quiet.
# Run: python buggy.py (or fixed.py); the last line prints how far the fake mean is from 3.0.
import torch
import torch.nn as nn

torch.manual_seed(0)
latent = 4
generator = nn.Sequential(nn.Linear(latent, 32), nn.LeakyReLU(0.2), nn.Linear(32, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
discriminator = nn.Sequential(nn.Linear(1, 32), nn.LeakyReLU(0.2), nn.Linear(32, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
optimizer_G = torch.optim.Adam(generator.parameters(), lr=2e-3, betas=(0.5, 0.999))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=2e-3, betas=(0.5, 0.999))
criterion = nn.BCEWithLogitsLoss()
ones, zeros = torch.ones(128, 1), torch.zeros(128, 1)

for step in range(1500):
    real = 3.0 + 0.5 * torch.randn(128, 1)
    fake = generator(torch.randn(128, latent))

    d_loss = criterion(discriminator(real), ones) + criterion(discriminator(fake.detach()), zeros)
    d_loss.backward()
    optimizer_D.step()

    optimizer_G.zero_grad()
    g_loss = criterion(discriminator(fake), ones)
    g_loss.backward()
    optimizer_G.step()
    if step % 250 == 0:
        print(f"step {step}: d_loss {d_loss.item():.3f} g_loss {g_loss.item():.3f}")

with torch.no_grad():
    sample = generator(torch.randn(4096, latent))
print(f"fake mean {sample.mean().item():.3f} std {sample.std().item():.3f}")
print(f"final: mean_error={abs(sample.mean().item() - 3.0):.4f}")
