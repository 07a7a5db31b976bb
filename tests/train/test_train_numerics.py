"""fp16 + clipping (logged norm and update exact), a gradient that goes non-finite while the loss
stays finite, and resume restoring the RNG (in process)."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from train_helpers import data, loader, mlp, quiet

from torchwise.train import Trainer


def test_fp16_with_clipping_logs_the_true_norm_and_clips_the_update_exactly():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    ref = copy.deepcopy(model)
    x, y = data(n=8).tensors
    lr, clip = 0.5, 0.05
    logged = []

    class Log:
        def on_log(self, trainer, values):
            logged.append(values)

    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=lr), nn.CrossEntropyLoss(), precision="16-mixed",
                clip_grad_norm=clip, callbacks=[Log()], **quiet(log_every=1))
    t.precision.scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)  # small enough not to overflow fp16 here
    r = t.fit([(x, y)], max_steps=1)
    assert r.amp_skipped == 0
    with torch.autocast("cpu", dtype=torch.float16):  # the same step by hand, without loss scaling
        loss = nn.functional.cross_entropy(ref(x), y)
    loss.backward()
    grads = [p.grad.detach().clone() for p in ref.parameters()]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    assert norm > clip * 10  # the clip really applies
    assert logged[0]["train/grad_norm"] == pytest.approx(float(norm), rel=1e-5)  # unscaled before clipping
    scale = clip / (norm + 1e-6)
    for p0, p1, g in zip(ref.parameters(), model.parameters(), grads):
        torch.testing.assert_close(p1.detach() - p0.detach(), -lr * g * scale, rtol=1e-4, atol=1e-7)
    update = torch.linalg.vector_norm(torch.cat([(p1 - p0).detach().flatten() for p0, p1 in zip(ref.parameters(), model.parameters())]))
    assert float(update) == pytest.approx(lr * clip, rel=1e-4)


def test_a_gradient_that_goes_non_finite_while_the_loss_stays_finite_is_skipped():
    model = mlp()
    calls = {"n": 0}

    def step_fn(m, batch):
        x, y = batch
        calls["n"] += 1
        loss = nn.functional.cross_entropy(m(x), y)
        if calls["n"] == 2:  # sqrt at 0: the value is 0 (finite), its gradient is inf * 0 = nan
            loss = loss + torch.sqrt(m[0].weight.sum() * 0).clamp(max=0)
        return loss

    before = {}

    class Spy:
        def on_step_end(self, trainer):
            before[trainer.step] = [p.detach().clone() for p in trainer.model.parameters()]

    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), step_fn=step_fn, callbacks=[Spy()], **quiet())
    r = t.fit(loader(), max_steps=3)
    assert r.nonfinite_skipped == 1 and any("step 2 skipped" in e for e in r.events)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before[1], before[2]))  # step 2 changed nothing
    assert not all(torch.equal(a, b) for a, b in zip(before[2], before[3]))


def test_resume_restores_the_rng_in_process(tmp_path):
    draws: dict[str, list[float]] = {}

    def run(key, epochs, resume=None):
        draws[key] = []

        class Draw:
            def on_step_end(self, trainer):
                draws[key].append(torch.rand(()).item())

        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.5), nn.Linear(8, 3))
        t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), callbacks=[Draw()],
                    **quiet(checkpoint_dir=tmp_path / key.split("-")[0]))
        t.fit(loader(shuffle=True), epochs=epochs, resume=resume)
        return t

    full = run("full", 2)
    run("part-1", 1)
    torch.rand(5)  # other draws in between, as any process makes
    resumed = run("part-2", 2, resume="last")
    assert draws["part-2"] == draws["full"][8:]
    assert all(torch.equal(a, b) for a, b in zip(full.model.parameters(), resumed.model.parameters()))
