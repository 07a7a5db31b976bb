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


class _Bag(nn.Module):
    """Token ids -> a sparse embedding (SparseAdam/SGD style) -> mean -> classes."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(20, 4, sparse=True)
        self.head = nn.Linear(4, 3)

    def forward(self, ids):
        return self.head(self.emb(ids).mean(1))


def _ids(n: int = 32):
    g = torch.Generator().manual_seed(0)
    return [(torch.randint(0, 20, (4, 5), generator=g), torch.randint(0, 3, (4,), generator=g)) for _ in range(n // 4)]


def test_sparse_gradients_train_under_the_guard_and_a_nan_in_them_is_caught():
    model = _Bag()
    bad = {"step": 0}

    def poison(grad):  # the embedding's sparse gradient holds a NaN on the second step only
        bad["step"] += 1
        if bad["step"] == 2:
            return torch.sparse_coo_tensor(grad._indices(), grad._values() * float("nan"), grad.shape)
        return grad

    model.emb.weight.register_hook(poison)
    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), **quiet())
    r = t.fit(_ids(), max_steps=4)
    assert r.steps == 4 and r.nonfinite_skipped == 1 and any("step 2 skipped" in e for e in r.events)
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_clipping_sparse_gradients_is_refused_in_one_line():
    from torchwise.core.errors import UsageError

    model = _Bag()
    with pytest.raises(UsageError, match=r"clip_grad_norm cannot clip sparse gradients \(Embedding 'emb'"):
        Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), clip_grad_norm=1.0, **quiet())


def test_a_finite_gradient_with_a_non_finite_loss_is_skipped_and_later_steps_run():
    """The CPU guard reads the gradients' flag and the loss; after a bad step the flag is clear again."""
    calls = {"n": 0}

    def step_fn(m, batch):
        x, y = batch
        calls["n"] += 1
        loss = nn.functional.cross_entropy(m(x), y)
        if calls["n"] == 2:
            loss = loss + torch.tensor(float("inf"))  # a constant: the gradients stay finite
        return loss

    model = mlp()
    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), step_fn=step_fn, **quiet())
    r = t.fit(loader(), max_steps=5)
    assert r.steps == 5 and r.nonfinite_skipped == 1 and any("step 2 skipped" in e for e in r.events)


def test_the_short_step_path_is_taken_only_where_nothing_needs_entering():
    from torchwise.train.precision import BF16Mixed, FP16Mixed, Precision

    cpu = torch.device("cpu")
    assert Precision(cpu).plain and not BF16Mixed(cpu).plain and not FP16Mixed(cpu).plain
    model = mlp()
    one = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), **quiet())
    one.fit(loader(), max_steps=1)
    assert [p.plain for p in one.phases] == [True]
    model = mlp()
    bf16 = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), precision="bf16-mixed", **quiet())
    bf16.fit(loader(), max_steps=1)
    assert [p.plain for p in bf16.phases] == [False]
    model = mlp()
    two = Trainer(model, {"a": torch.optim.SGD(model[0].parameters(), lr=0.1), "b": torch.optim.SGD(model[2].parameters(), lr=0.1)},
                  step_fn={"a": lambda m, b: nn.functional.cross_entropy(m(b[0]), b[1]), "b": lambda m, b: nn.functional.cross_entropy(m(b[0]), b[1])},
                  **quiet())
    two.fit(loader(), max_steps=1)
    assert [p.plain for p in two.phases] == [False, False]


def test_parameters_without_a_gradient_are_left_out_of_the_guard_and_a_nan_is_still_caught(monkeypatch):
    """A parameter the step never uses has no gradient (None); the fused check skips it and still
    sees a NaN in the others."""
    from torchwise.train import strategy

    class WithSpare(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net, self.spare = mlp(), nn.Linear(3, 3)  # spare: in the optimizer, never called

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.net(x)

    checked: list[list] = []
    real = strategy._check_finite
    monkeypatch.setattr(strategy, "_check_finite", lambda grads, found, one: (checked.append(list(grads)), real(grads, found, one)))
    model = WithSpare()
    calls = {"n": 0}

    def poison(grad):
        calls["n"] += 1
        return grad * float("nan") if calls["n"] == 3 else grad

    model.net[0].bias.register_hook(poison)
    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), **quiet())
    r = t.fit(loader(), max_steps=4)
    with_none = [grads for grads in checked if any(g is None for g in grads)]
    assert len(with_none) == 4 and all(sum(g is None for g in grads) == 2 for grads in with_none)  # spare's weight and bias
    assert r.steps == 4 and r.nonfinite_skipped == 1 and any("step 3 skipped" in e for e in r.events)
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_the_fused_check_refuses_what_is_not_a_gradient_list():
    from torchwise.train.strategy import _check_finite

    found, one = torch.zeros(1), torch.ones(1)
    _check_finite([None, torch.tensor([1.0, float("inf")]), None], found, one)
    assert found.item() == 1.0
    with pytest.raises(TypeError):
        _check_finite([torch.ones(2), "not a tensor"], torch.zeros(1), one)
