"""The real measurer on tiny CPU tasks: figures, same-seed numerics, untouched user model,
restored process settings, channels_last/bf16 paths, the loader mode, OOM translation."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset
from tune_fakes import tiny_cnn_task, tiny_mlp_task

from torchwise.core.errors import TaskError
from torchwise.core.task import Task
from torchwise.tune.measure import Measurement, OutOfMemory, TaskMeasurer, TrialSpec, median_iqr
from torchwise.tune.search import default_config
from torchwise.tune.context import Context


def cfg(task, **kw):
    ctx = Context(threads=torch.get_num_threads(), batch_size=task.batch_size)
    return {**default_config(ctx), **kw}


def fast(task, **kw):
    return TaskMeasurer(task, torch.device("cpu"), warmup=2, numerics_steps=3, min_steps=4, max_steps=10, **kw)


def test_median_iqr():
    assert median_iqr([1.0, 2.0, 3.0, 4.0, 100.0]) == (3.0, 2.0)
    assert median_iqr([2.0]) == (2.0, 0.0)
    m = Measurement(step_s=0.01, iqr_s=0.002, steps=16, batch_size=32, samples_per_s=3200)
    assert m.noise == pytest.approx(0.2) and m.rel_se == pytest.approx(0.93 * 0.2 / 4)


def test_step_mode_measures_and_reports_the_loss_after_k_steps():
    task = tiny_cnn_task()
    before = {k: v.clone() for k, v in task.model.state_dict().items()}
    meas = fast(task)
    spec = TrialSpec(cfg(task), "step", numerics=True, time_cap_s=0.3)
    a = meas(spec)
    assert a.steps >= 4 and a.step_s > 0 and a.iqr_s >= 0 and a.batch_size == 32
    assert a.samples_per_s == pytest.approx(32 / a.step_s)
    assert a.excluded_s > 0 and a.loss is not None and torch.isfinite(torch.tensor(a.loss))
    # same seed, same batches, weights reset: the same loss again, to the bit
    b = meas(spec)
    assert b.loss == a.loss
    # the user's model is never trained
    after = task.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    # and the loss after k steps really reflects training (differs from the first step's loss)
    first = fast(task, seed=0)
    first.numerics_steps = 0
    assert first(TrialSpec(cfg(task), "step", numerics=True, time_cap_s=0.1)).loss != a.loss


def test_process_settings_are_restored():
    task = tiny_mlp_task()
    threads = torch.get_num_threads()
    prec = torch.get_float32_matmul_precision()
    bench = torch.backends.cudnn.benchmark
    seen = {}
    original = task.loss_fn

    def spy(out, target):
        seen["threads"] = torch.get_num_threads()
        seen["matmul"] = torch.get_float32_matmul_precision()
        return original(out, target)

    task.loss_fn = spy
    fast(task)(TrialSpec(cfg(task, threads=threads + 1, matmul_precision="high", cudnn_benchmark=True), "step", time_cap_s=0.05))
    assert seen == {"threads": threads + 1, "matmul": "high"}
    assert (torch.get_num_threads(), torch.get_float32_matmul_precision(), torch.backends.cudnn.benchmark) == (threads, prec, bench)


def test_channels_last_and_bf16_run_and_stay_close_to_fp32():
    task = tiny_cnn_task()
    meas = fast(task)
    seen = []
    base = meas(TrialSpec(cfg(task), "step", numerics=True, time_cap_s=0.05)).loss

    model_cl = meas._working_model(True)
    model_cl[0].register_forward_pre_hook(lambda m, args: seen.append(args[0].is_contiguous(memory_format=torch.channels_last)))
    cl = meas(TrialSpec(cfg(task, channels_last=True), "step", numerics=True, time_cap_s=0.05)).loss
    assert seen and all(seen)
    assert model_cl[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert cl == pytest.approx(base, rel=1e-3)
    bf16 = meas(TrialSpec(cfg(task, precision="bf16-mixed"), "step", numerics=True, time_cap_s=0.05)).loss
    assert bf16 == pytest.approx(base, rel=0.05)


def test_loader_mode_goes_through_the_real_loader():
    task = tiny_mlp_task(n=64, batch_size=16)  # 4 batches an epoch: the window crosses epochs
    calls = []
    base_ds = task.train_data

    class Counting(torch.utils.data.Dataset):
        def __len__(self):
            return len(base_ds)

        def __getitem__(self, i):
            calls.append(i)
            return base_ds[i]

    task.train_data = Counting()
    m = fast(task)(TrialSpec(cfg(task), "loader", time_cap_s=0.2))
    assert m.samples_per_s > 0 and m.steps >= 3
    assert m.extra["epoch_restarts"] >= 1
    assert len(calls) >= 16 * (2 + m.steps)  # every timed step fetched a real batch


def test_loader_mode_with_persistent_workers():
    task = tiny_mlp_task(n=64, batch_size=16)
    m = fast(task)(TrialSpec(cfg(task, num_workers=1, persistent_workers=True), "loader", time_cap_s=0.3))
    assert m.samples_per_s > 0 and m.extra["epoch_restarts"] >= 1


def test_out_of_memory_becomes_OutOfMemory_and_settings_are_restored():
    class Hungry(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(16, 4)

        def forward(self, x):
            if x.shape[0] > 16:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
            return self.lin(x)

    task = tiny_mlp_task()
    task.model = Hungry()
    meas = fast(task)
    threads = torch.get_num_threads()
    with pytest.raises(OutOfMemory, match="Tried to allocate 20.00 GiB"):
        meas(TrialSpec(cfg(task, batch_size=32, threads=threads + 1), "step", time_cap_s=0.05))
    assert torch.get_num_threads() == threads
    assert all(p.grad is None for p in meas._models[False].parameters())
    assert meas(TrialSpec(cfg(task, batch_size=16), "step", time_cap_s=0.05)).batch_size == 16


def test_other_errors_propagate():
    task = tiny_mlp_task()
    task.model = nn.Sequential(nn.Linear(3, 4))  # wrong width for 16 features
    with pytest.raises(RuntimeError):
        fast(task)(TrialSpec(cfg(task), "step", time_cap_s=0.05))


def test_a_task_without_loss_fn_needs_a_scalar_output():
    task = tiny_mlp_task()
    task.loss_fn = None
    with pytest.raises(TaskError, match="no loss_fn"):
        fast(task)(TrialSpec(cfg(task), "step", time_cap_s=0.05))


def test_larger_batches_are_built_from_the_dataset():
    task = tiny_mlp_task(n=256, batch_size=32)
    m = fast(task)(TrialSpec(cfg(task, batch_size=128), "step", time_cap_s=0.05))
    assert m.batch_size == 128


def test_empty_data_is_a_task_error():
    task = Task(model=nn.Linear(2, 2), train_data=TensorDataset(torch.zeros(0, 2), torch.zeros(0, dtype=torch.long)), loss_fn=nn.CrossEntropyLoss())
    with pytest.raises(TaskError, match="empty"):
        fast(task).sample_batches()


def test_numerics_check_runs_with_dropout_off_and_timing_with_it_on():
    def task_with_dropout():
        t = tiny_mlp_task()
        torch.manual_seed(0)
        t.model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 4))
        return t

    modes = []
    a_task, b_task = task_with_dropout(), task_with_dropout()
    a = fast(a_task, seed=0)
    b = fast(b_task, seed=1)  # other dropout masks, were dropout on
    a._working_model(False)[2].register_forward_hook(lambda m, i, o: modes.append(m.training))
    la = a(TrialSpec(cfg(a_task), "step", numerics=True, time_cap_s=0.05)).loss
    lb = b(TrialSpec(cfg(b_task), "step", numerics=True, time_cap_s=0.05)).loss
    assert la == lb
    k = a.numerics_steps + 1
    assert modes[:k] == [False] * k and modes[k:] and all(modes[k:])


def test_loader_warm_up_covers_the_short_last_batch_for_compiled_models(monkeypatch):
    from torchwise.tune import measure as measure_mod

    task = tiny_mlp_task(n=40, batch_size=16)  # batches of 16, 16, 8
    sizes = []
    meas = fast(task)
    # stand in for torch.compile: record the batch sizes the "compiled" model sees
    monkeypatch.setattr(meas, "_runner", lambda model, cl, compile: (lambda x: (sizes.append(x.shape[0]), model(x))[1]))
    meas(TrialSpec(cfg(task, compile=True), "loader", time_cap_s=0.05))
    assert meas.warmup == 2
    assert sizes[:4] == [16, 16, 8, 8]  # warm-up: 2 loader batches and the short one; then the loader's own
    assert measure_mod._last_batch_size(task.train_loader()) == 8
    assert measure_mod._head((torch.zeros(16, 2), torch.ones(16)), 3)[0].shape == (3, 2)
