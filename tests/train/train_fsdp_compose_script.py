"""FSDP composition workloads, trained by the Trainer (2 processes under torchrun, or 1 in the test).

    python -m torch.distributed.run --standalone --nproc-per-node 2 train_fsdp_compose_script.py gan OUT.pt [options]
    python -m torch.distributed.run --standalone --nproc-per-node 2 train_fsdp_compose_script.py cnn OUT.pt --channels-last

``gan``: two optimizers (discriminator "d", generator "g"), step functions that call
``model.gen``/``model.disc`` directly, an EMA of the weights, accumulation, clipping, a validation
loader (evaluated on the averaged weights). The generator's noise is a fixed function of each
sample, so N processes with batch B make the same update as one with N*B.
``cnn``: a small convolutional classifier; ``--channels-last`` feeds it NHWC inputs.
OUT.pt (rank 0) holds the full weights, the full EMA averages, the validation values and what the
first convolution saw.
"""

from __future__ import annotations

import argparse
import os

import torch
from torch import nn
from torch.nn.functional import softplus
from torch.utils.data import DataLoader, TensorDataset

from torchwise.train import Trainer


class GAN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gen = nn.Sequential(nn.Linear(4, 12), nn.Tanh(), nn.Linear(12, 6))
        self.disc = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 1))


def noise(x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(1.5 * x[:, :4] + 0.25)  # per sample: the same whichever process holds it


def d_step(model: GAN, batch: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    (x,) = batch
    real, fake = model.disc(x), model.disc(model.gen(noise(x)).detach())
    return {"loss": softplus(-real).mean() + softplus(fake).mean(), "real": real.mean().detach()}


def g_step(model: GAN, batch: list[torch.Tensor]) -> torch.Tensor:
    (x,) = batch
    return softplus(-model.disc(model.gen(noise(x)))).mean()


def cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(), nn.Conv2d(6, 6, 3, padding=1), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, 3))


def data(workload: str) -> TensorDataset:
    g = torch.Generator().manual_seed(1)
    if workload == "gan":
        return TensorDataset(torch.randn(64, 6, generator=g) * 0.5 + 1.0)
    return TensorDataset(torch.randn(64, 3, 8, 8, generator=g), torch.randint(0, 3, (64,), generator=g))


def trainer(workload: str, strategy: str = "fsdp", *, channels_last: bool | str = "auto", accumulate: int = 1, **kw: object) -> Trainer:
    torch.manual_seed(0)
    common = dict(device="cpu", seed=0, log_dir=False, progress=False, strategy=strategy, clip_grad_norm=1.0, accumulate=accumulate, **kw)
    if workload == "gan":
        model = GAN()
        optimizers = {"d": lambda params, model: torch.optim.AdamW(model.disc.parameters(), lr=0.01),
                      "g": lambda params, model: torch.optim.AdamW(model.gen.parameters(), lr=0.01)}
        return Trainer(model, optimizers, step_fn={"d": d_step, "g": g_step}, ema=0.9, **common)  # type: ignore[arg-type]
    model = cnn()
    return Trainer(model, torch.optim.AdamW(model.parameters(), lr=0.01), nn.CrossEntropyLoss(), channels_last=channels_last, **common)  # type: ignore[arg-type]


def run(workload: str, batch: int, *, strategy: str = "fsdp", channels_last: bool | str = "auto", accumulate: int = 1, epochs: int = 2,
        checkpoint_dir: str | None = None, checkpoint_every: int | None = None, resume: str | None = None) -> dict:
    """Train; return the full weights, EMA averages, validation values, steps and what the first layer saw."""
    torch.set_num_threads(1)
    t = trainer(workload, strategy, channels_last=channels_last, accumulate=accumulate, checkpoint_dir=checkpoint_dir,
                checkpoint_every=checkpoint_every, keep_checkpoints=0)
    t._place()
    first = t.model.disc[0] if workload == "gan" else t.model[0]
    seen: list[bool] = []
    first.register_forward_pre_hook(lambda m, args: seen.append(args[0].is_contiguous(memory_format=torch.channels_last)) if args[0].dim() == 4 else None)
    ds = data(workload)
    try:
        result = t.fit(DataLoader(ds, batch_size=batch, shuffle=True), DataLoader(ds, batch_size=16), epochs=epochs, resume=resume)
        out = {"model": {k: v.clone() for k, v in t.strategy.full_state_dict(t.model).items()}, "val": result.val, "step": t.step,
               "channels_last_inputs": seen, "events": result.events, "world_size": t.strategy.world_size}
        if t.ema is not None:
            averaged = GAN()
            t.ema.copy_to(averaged)  # (sharded averages are gathered: every rank calls it)
            out["ema"] = {k: v.clone() for k, v in averaged.state_dict().items()}
            out["sharded_ema"] = type(t.ema.averages[0]).__name__ == "DTensor"
        return out
    finally:
        t.close()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("workload", choices=["gan", "cnn"])
    p.add_argument("out")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--accumulate", type=int, default=1)
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--checkpoint-dir")
    p.add_argument("--checkpoint-every", type=int)
    p.add_argument("--resume")
    a = p.parse_args()
    out = run(a.workload, a.batch, channels_last=a.channels_last or "auto", accumulate=a.accumulate, checkpoint_dir=a.checkpoint_dir,
              checkpoint_every=a.checkpoint_every, resume=a.resume)
    if int(os.environ.get("RANK", "0")) == 0:
        torch.save(out, a.out)


if __name__ == "__main__":
    main()
