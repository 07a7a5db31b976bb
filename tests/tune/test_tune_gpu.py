"""GPU-only paths on a real CUDA device (skipped without one): fp16/bf16, cudnn.benchmark, TF32,
the batch-size search against a real out-of-memory, and memory left usable afterwards."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset
from tune_fakes import tiny_cnn_task

from torchwise.core.task import Task
from torchwise.tune import TunedConfig, tune
from torchwise.tune.context import Context
from torchwise.tune.measure import OutOfMemory, TaskMeasurer, TrialSpec
from torchwise.tune.search import OOM, default_config

pytestmark = pytest.mark.gpu


def cfg(task, **kw):
    return {**default_config(Context(threads=torch.get_num_threads(), batch_size=task.batch_size)), **kw}


@pytest.fixture
def memory_cap():
    """Limit this process to ~2 GiB of the GPU so out-of-memory is reached quickly on any card."""
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.empty_cache()
    torch.cuda.set_per_process_memory_fraction(min(1.0, (2 << 30) / total))
    yield
    torch.cuda.set_per_process_memory_fraction(1.0)
    torch.cuda.empty_cache()


def wide_task(n: int = 16384, batch_size: int = 64) -> Task:
    """Tiny inputs, about 1 MiB of activations per sample: OOM near a few thousand samples under 2 GiB."""
    x = torch.randn(n, 16)
    y = torch.randint(0, 8, (n,))
    model = nn.Sequential(nn.Linear(16, 1 << 16), nn.ReLU(), nn.Linear(1 << 16, 8))
    return Task(model=model, train_data=TensorDataset(x, y), loss_fn=nn.CrossEntropyLoss(), batch_size=batch_size, name="wide")


def test_cuda_precisions_and_layouts_run_and_keep_the_loss():
    task = tiny_cnn_task(n=512, batch_size=64)
    meas = TaskMeasurer(task, torch.device("cuda"), min_steps=5, max_steps=20)
    base = meas(TrialSpec(cfg(task), "step", numerics=True, time_cap_s=0.5))
    assert base.peak_memory and base.peak_memory > 0
    specs = [dict(precision="16-mixed"), dict(channels_last=True, cudnn_benchmark=True), dict(matmul_precision="high")]
    if torch.cuda.is_bf16_supported():
        specs.append(dict(precision="bf16-mixed", channels_last=True))
    for extra in specs:
        m = meas(TrialSpec(cfg(task, **extra), "step", numerics=True, time_cap_s=0.5))
        assert m.samples_per_s > 0
        assert m.loss == pytest.approx(base.loss, rel=0.05), extra
    assert torch.backends.cudnn.benchmark is False and torch.get_float32_matmul_precision() == "highest"
    loader = meas(TrialSpec(cfg(task, num_workers=1, pin_memory=True, persistent_workers=True), "loader", time_cap_s=0.5))
    assert loader.samples_per_s > 0
    meas.release()


def test_real_out_of_memory_is_released(memory_cap):
    task = wide_task()
    meas = TaskMeasurer(task, torch.device("cuda"), min_steps=2, max_steps=4)
    before = torch.cuda.memory_allocated()
    with pytest.raises(OutOfMemory):
        meas(TrialSpec(cfg(task, batch_size=16384), "step", time_cap_s=0.2))
    # the process is not left out of memory: a normal trial and a fresh allocation both work
    assert meas(TrialSpec(cfg(task, batch_size=64), "step", time_cap_s=0.2)).samples_per_s > 0
    meas.release()
    assert torch.cuda.memory_allocated() <= before + (64 << 20)
    x = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    del x


def test_batch_size_search_finds_the_memory_wall(memory_cap, tmp_path):
    task = wide_task()
    before = torch.cuda.memory_allocated()
    res = tune(task, budget_s=60, device="cuda", knobs=["batch_size"], out=tmp_path / "t.json", trial_s=0.3, max_batch_size=16384)
    cfg_ = TunedConfig.load(tmp_path / "t.json")
    probes = [t for t in res.trials if t.knob == "batch_size"]
    ooms = [t.config["batch_size"] for t in probes if t.status == OOM]
    assert ooms, "the 2 GiB cap should have been hit"
    assert cfg_.batch_size is not None and cfg_.batch_size % 8 == 0
    assert cfg_.batch_size < min(ooms)
    fits = [t.config["batch_size"] for t in probes if t.measurement is not None]
    assert cfg_.batch_size <= max(fits)
    assert torch.cuda.memory_allocated() <= before + (64 << 20)
    x = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    del x


def test_tune_on_cuda_end_to_end(tmp_path):
    task = tiny_cnn_task(n=4096, batch_size=64)
    res = tune(task, budget_s=40, device="cuda", knobs=["precision", "channels_last", "cudnn_benchmark", "tf32", "loader"], out=tmp_path / "t.json")
    assert res.speedup >= 1.0
    cfg_ = TunedConfig.load(tmp_path / "t.json")
    assert cfg_.precision in ("32", "bf16-mixed", "16-mixed")
    assert cfg_.cudnn_benchmark is not None
    assert cfg_.meta["device"].startswith("cuda")
