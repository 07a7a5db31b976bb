"""The tune.json that ``tune`` writes is what ``Trainer(..., tuned=...)`` applies."""

from __future__ import annotations

import pytest
import torch
from tune_fakes import FakeClock, FakeMeasurer, cpu_ctx, tiny_cnn_task

from torchwise.train import Trainer
from torchwise.tune import TunedConfig, tune


@pytest.fixture
def keep_threads():
    threads, prec = torch.get_num_threads(), torch.get_float32_matmul_precision()
    yield
    torch.set_num_threads(threads)
    torch.set_float32_matmul_precision(prec)


def scripted_tune(task, path):
    clock = FakeClock()
    fake = FakeMeasurer(
        clock,
        factors={("threads", 1): 1.3, ("precision", "bf16-mixed"): 1.4, ("channels_last", True): 1.2},
        loader_factors={("num_workers", 1): 1.2},
    )
    return tune(task, budget_s=500, measure=fake, context=cpu_ctx(cores=2, threads=2), clock=clock, out=path)


def test_trainer_applies_the_written_tune_json(tmp_path, keep_threads):
    task = tiny_cnn_task(n=64, batch_size=16)
    path = tmp_path / "tune.json"
    res = scripted_tune(task, path)
    cfg = TunedConfig.load(path)
    assert (cfg.threads, cfg.precision, cfg.channels_last, cfg.num_workers, cfg.persistent_workers) == (1, "bf16-mixed", True, 1, True)
    assert res.config == cfg

    trainer = Trainer.from_task(task, tuned=str(path), device="cpu", log_dir=False, progress=False)
    assert torch.get_num_threads() == 1  # process-wide settings applied
    assert trainer.precision_name == "bf16-mixed"
    assert trainer.auto.want_channels_last is True
    assert trainer.compile is False
    prepared = trainer._prepare(task.train_loader(), train=True)
    assert prepared.loader.num_workers == 1 and prepared.loader.persistent_workers is True
    fit = trainer.fit(max_steps=2)
    assert fit.steps == 2 and fit.precision == "bf16-mixed"
    assert trainer.module[0].weight.is_contiguous(memory_format=torch.channels_last)


def test_explicit_trainer_arguments_win_over_tune_json(tmp_path, keep_threads):
    task = tiny_cnn_task(n=64, batch_size=16)
    path = tmp_path / "tune.json"
    scripted_tune(task, path)
    trainer = Trainer.from_task(task, tuned=TunedConfig.load(path), precision="32", channels_last=False, device="cpu", log_dir=False, progress=False)
    assert trainer.precision_name == "32" and trainer.auto.want_channels_last is False
