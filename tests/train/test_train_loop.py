"""The step loop: accumulation maths, zero_grad, clipping, evaluation mode, schedulers, syncs."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from train_helpers import clone, data, loader, make_trainer, mlp, quiet, weights

from torchwise.train import Trainer
from torchwise.train.strategy import SingleDevice


def _train(model, ds, batch_size, accumulate, epochs=1):
    t = make_trainer(model, lr=0.5, accumulate=accumulate)
    t.fit(loader(ds, batch_size=batch_size), epochs=epochs)
    return weights(model)


def test_accumulation_equals_one_big_batch():
    ds = data(n=64)
    base = mlp()
    small = _train(clone(base), ds, batch_size=8, accumulate=4)  # 2 steps of 4 micro-batches
    big = _train(clone(base), ds, batch_size=32, accumulate=1)  # 2 steps of one batch
    for k in big:
        torch.testing.assert_close(small[k], big[k], rtol=1e-5, atol=1e-6)
    assert not all(torch.equal(big[k], weights(base)[k]) for k in big)  # it did train


def test_last_partial_window_is_scaled_by_its_own_size():
    # 80 samples, micro-batches of 8 -> 10 batches; accumulate 4 -> windows of 4, 4 and 2 batches,
    # which must equal big batches of 32, 32 and 16 samples.
    ds = data(n=80)
    base = mlp()
    acc = _train(clone(base), ds, batch_size=8, accumulate=4)
    x, y = ds.tensors
    ref = clone(base)
    opt = torch.optim.SGD(ref.parameters(), lr=0.5)
    for lo, hi in ((0, 32), (32, 64), (64, 80)):
        opt.zero_grad()
        nn.functional.cross_entropy(ref(x[lo:hi]), y[lo:hi]).backward()
        opt.step()
    for k, v in weights(ref).items():
        torch.testing.assert_close(acc[k], v, rtol=1e-5, atol=1e-6)


def test_gradients_are_set_to_none_after_each_step():
    model = mlp()
    seen = []

    class Spy:
        def on_step_end(self, trainer):
            seen.append([p.grad is None for p in trainer.model.parameters()])

    make_trainer(model, callbacks=[Spy()]).fit(loader(), max_steps=3)
    assert seen and all(all(flags) for flags in seen)


def test_clipping_logs_the_pre_clip_norm_and_limits_the_update(tmp_path):
    model = mlp()
    x, y = data(n=8).tensors
    ref = clone(model)
    nn.functional.cross_entropy(ref(x), y).backward()
    expected = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in ref.parameters()])).item()
    before = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    t = make_trainer(model, lr=1.0, clip_grad_norm=1e-3, log_every=1, log_dir=tmp_path)
    t.fit(loader(TensorDataset(x, y), batch_size=8), max_steps=1)
    after = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert (after - before).norm().item() <= 1e-3 * 1.0001  # SGD lr=1: update = clipped gradient
    rows = (tmp_path / "metrics.csv").read_text().splitlines()
    logged = [float(r.split(",")[4]) for r in rows if ",train/grad_norm," in r]
    assert logged and abs(logged[0] - expected) < 1e-4 * expected


def test_evaluate_runs_in_inference_mode_and_eval_mode_then_restores_train():
    seen = []

    class Probe(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 3)

        def forward(self, x):
            seen.append((self.training, torch.is_inference_mode_enabled()))
            return self.lin(x)

    model = Probe()
    t = make_trainer(model, metrics={"accuracy": lambda o, y: (o.argmax(-1) == y).float().mean()})
    model.train()
    out = t.evaluate(loader(batch_size=16))
    assert set(out) == {"loss", "accuracy"} and 0.0 <= out["accuracy"] <= 1.0
    assert seen and all(s == (False, True) for s in seen)
    assert model.training
    # the value is the sample-weighted mean over the whole loader
    x, y = data().tensors
    with torch.no_grad():
        torch.testing.assert_close(torch.tensor(out["loss"]), nn.functional.cross_entropy(model.lin(x), y), rtol=1e-5, atol=1e-6)


def test_scheduler_steps_per_step_or_per_epoch_after_the_optimizer():
    for interval, expected in (("step", 8 * 2), ("epoch", 2)):
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        t = Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=sched, scheduler_interval=interval, **quiet())
        t.fit(loader(), epochs=2)  # 8 batches per epoch
        assert sched.last_epoch == expected
        assert opt.param_groups[0]["lr"] == 0.1 * 0.5**expected


def test_no_host_sync_per_step(monkeypatch):
    """Where a read waits for a device, loss sums stay on it: reads happen once per log interval."""
    monkeypatch.setattr(SingleDevice, "host_reads_free", property(lambda self: False))  # as on a GPU
    reads = {"n": 0}
    for name in ("item", "tolist", "__float__", "__bool__", "cpu", "numpy"):
        original = getattr(torch.Tensor, name)

        def counted(self, *a, _orig=original, **k):
            reads["n"] += 1
            return _orig(self, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, counted)
    ds = data(n=8 * 40)
    t = make_trainer(check_labels=False, nonfinite_patience=0, log_every=20)
    t.fit(loader(ds), epochs=1)  # 40 steps, 2 log intervals
    assert t.step == 40
    assert reads["n"] <= 8, reads


def test_losses_are_kept_as_floats_where_host_reads_are_free():
    """One process on the CPU: each step's loss is read at once (no device to wait for), so no
    detached tensor is kept per step, and the logged loss is their mean."""
    seen: list[list[float]] = []
    logged: list[float] = []

    class Spy:
        def on_step_end(self, trainer: Trainer) -> None:
            seen.append(list(trainer.phases[0].losses))

        def on_log(self, trainer: Trainer, values: dict) -> None:
            logged.append(values["train/loss"])

    t = make_trainer(log_every=1000, callbacks=[Spy()])
    assert t.strategy.host_reads_free
    t.fit(loader(data(n=8 * 5)), epochs=1)
    assert [len(v) for v in seen] == [1, 2, 3, 4, 5]
    assert all(type(v) is float for v in seen[-1])
    assert logged == [pytest.approx(sum(seen[-1]) / 5, rel=1e-6)]


def test_dict_batches_and_step_fn():
    x, y = data().tensors
    dict_batches = [{"inputs": x[i:i + 8], "targets": y[i:i + 8]} for i in range(0, 64, 8)]
    model = mlp()
    make_trainer(model).fit(dict_batches, epochs=1)

    calls = []

    def step_fn(m, batch):
        calls.append(1)
        return nn.functional.cross_entropy(m(batch["x"]), batch["y"])

    model2 = mlp()
    opt = torch.optim.SGD(model2.parameters(), lr=0.1)
    t = Trainer(model2, opt, step_fn=step_fn, **quiet())
    t.fit([{"x": x[:8], "y": y[:8]}] * 3, epochs=2)
    assert len(calls) == 6 and t.step == 6


def test_fit_continues_epochs_and_max_steps():
    t = make_trainer()
    r = t.fit(loader(), max_steps=5)
    assert r.steps == 5 and t.epoch == 0 and t.batch_in_epoch == 5
    r = t.fit(loader(), max_steps=8)  # the rest of the epoch: the epoch ends
    assert r.steps == 8 and t.epoch == 1


def test_from_task_uses_the_task_parts():
    from torchwise.core.task import Task, accuracy

    ds = data()
    task = Task(model=mlp(), train_data=ds, val_data=ds, loss_fn=nn.CrossEntropyLoss(), metrics={"accuracy": accuracy}, batch_size=16, epochs=2,
                optimizer=lambda p: torch.optim.SGD(p, lr=0.2))
    t = Trainer.from_task(task, **quiet())
    r = t.fit()
    assert r.epochs == 2 and r.steps == 8
    assert set(r.val) == {"val/loss", "val/accuracy"}
    assert isinstance(t.optimizer, torch.optim.SGD) and t.optimizer.param_groups[0]["lr"] == 0.2


def test_model_split_across_devices_is_left_where_it_is():
    from torchwise.train.strategy import SingleDevice, is_model_parallel

    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2, device="meta"))
    assert is_model_parallel(model)
    placed = SingleDevice(torch.device("cpu")).setup(model)
    assert placed is model and model[1].weight.device.type == "meta" and model[0].weight.device.type == "cpu"


def test_batches_are_copied_non_blocking_to_an_accelerator(monkeypatch):
    """On a non-CPU device every batch goes through to_device(..., non_blocking=True) (TW204)."""
    import torchwise.train.stepper as stepper_module

    calls = []

    def fake_to_device(obj, device, non_blocking=False):
        calls.append(non_blocking)
        return obj

    monkeypatch.setattr(stepper_module, "to_device", fake_to_device)
    t = make_trainer()
    t._place()
    t.steps.copy = True  # as for a CUDA device (the fake copy keeps tensors on the CPU)
    t.fit(loader(), max_steps=3)
    assert calls == [True, True, True]


@pytest.mark.gpu
def test_conv_model_on_cuda_gets_channels_last_and_cudnn_benchmark():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 3))
    x, y = torch.randn(16, 3, 12, 12), torch.randint(0, 3, (16,))
    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), **quiet(device="cuda"))
    r = t.fit(DataLoader(TensorDataset(x, y), batch_size=8), epochs=1)
    assert t.auto.channels_last and t.auto.cudnn_benchmark and r.steps == 2
    assert model[0].weight.is_contiguous(memory_format=torch.channels_last)
