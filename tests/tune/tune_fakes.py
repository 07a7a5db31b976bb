"""Scripted stand-ins for the hardware: a fake clock and a fake measurer (no real timing)."""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
from torch import nn
from torch.utils.data import TensorDataset

from torchwise.core.task import Task
from torchwise.tune.context import Context
from torchwise.tune.measure import Measurement, OutOfMemory, TrialSpec


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class FakeMeasurer:
    """samples/s = base x the product of ``factors[(field, value)]`` over the config's settings
    (loader-mode factors in ``loader_factors``); each trial advances the fake clock by ``cost``
    (seconds, or a function of the spec); batches above ``oom_above`` run out of memory; ``loss``
    maps a config to the loss after the check steps; ``fail`` makes a trial raise."""

    def __init__(
        self,
        clock: FakeClock,
        *,
        base: float = 1000.0,
        factors: dict[tuple[str, Any], float] | None = None,
        loader_factors: dict[tuple[str, Any], float] | None = None,
        batch_exponent: float = 0.0,
        loss: Callable[[dict], float] | None = None,
        cost: "float | Callable[[TrialSpec], float]" = 1.0,
        oom_above: int | None = None,
        fail: Callable[[dict], bool] | None = None,
        noise: float = 0.0,
        steps: int = 5,
    ) -> None:
        self.clock = clock
        self.base = base
        self.factors = factors or {}
        self.loader_factors = loader_factors or {}
        self.batch_exponent = batch_exponent
        self.loss = loss or (lambda cfg: 2.30)
        self.cost = cost
        self.oom_above = oom_above
        self.fail = fail
        self.noise = noise
        self.steps = steps
        self.specs: list[TrialSpec] = []

    def speed(self, cfg: dict, mode: str) -> float:
        sps = self.base * (cfg["batch_size"] / 64) ** self.batch_exponent
        for (key, value), f in self.factors.items():
            if cfg.get(key) == value:
                sps *= f
        if mode == "loader":
            for (key, value), f in self.loader_factors.items():
                if cfg.get(key) == value:
                    sps *= f
        return sps

    def __call__(self, spec: TrialSpec) -> Measurement:
        self.specs.append(spec)
        cfg = spec.config
        self.clock.now += self.cost(spec) if callable(self.cost) else self.cost
        if self.fail is not None and self.fail(cfg):
            raise RuntimeError("scripted failure\nsecond line")
        if self.oom_above is not None and cfg["batch_size"] > self.oom_above:
            raise OutOfMemory("CUDA out of memory (scripted)")
        sps = self.speed(cfg, spec.mode)
        step = cfg["batch_size"] / sps
        return Measurement(
            step_s=step,
            iqr_s=step * self.noise,
            steps=self.steps,
            batch_size=cfg["batch_size"],
            samples_per_s=sps,
            loss=self.loss(cfg) if spec.numerics else None,
        )


def cpu_ctx(**kw: Any) -> Context:
    base = dict(device_type="cpu", device_name="fake cpu", bf16=True, has_conv=True, conv_4d=True, cores=4, threads=4, dataset_len=1000, batch_size=64, max_batch=1000)
    base.update(kw)
    return Context(**base)


def cuda_ctx(**kw: Any) -> Context:
    base = dict(device_type="cuda", device_name="Fake GPU", cuda_capability=(8, 0), bf16=True, has_conv=True, conv_4d=True, cores=4, threads=4, dataset_len=100000, batch_size=64, max_batch=4096, total_memory=80 << 30)
    base.update(kw)
    return Context(**base)


def tiny_cnn_task(n: int = 256, batch_size: int = 32, seed: int = 0) -> Task:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 1, 8, 8, generator=g)
    y = torch.randint(0, 4, (n,), generator=g)
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 8 * 8, 4))
    return Task(model=model, train_data=TensorDataset(x, y), loss_fn=nn.CrossEntropyLoss(), batch_size=batch_size, name="tiny-cnn")


def tiny_mlp_task(n: int = 256, batch_size: int = 32, seed: int = 0) -> Task:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    y = torch.randint(0, 4, (n,), generator=g)
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    return Task(model=model, train_data=TensorDataset(x, y), loss_fn=nn.CrossEntropyLoss(), batch_size=batch_size, name="tiny-mlp")


def prod(values) -> float:
    return math.prod(values)
