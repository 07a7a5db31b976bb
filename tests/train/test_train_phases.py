"""Several optimizers through the same step abstraction (phases): a GAN equals a hand-written loop,
per-phase fp16 scalers, accumulation, clipping, the guard, and checkpoints that resume bitwise."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from train_helpers import data, loader, mlp, quiet

from torchwise.utils.checkpoint import load_checkpoint
from torchwise.core.errors import UsageError
from torchwise.train import Trainer


class GAN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.gen = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 6))
        self.disc = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))


def d_step(model, batch):
    real = batch[0]
    fake = model.gen(torch.randn(real.shape[0], 4)).detach()
    real_score = model.disc(real)
    loss = F.softplus(-real_score).mean() + F.softplus(model.disc(fake)).mean()
    return {"loss": loss, "real_score": real_score.mean().detach()}


def g_step(model, batch):
    fake = model.gen(torch.randn(batch[0].shape[0], 4))
    return F.softplus(-model.disc(fake)).mean()  # its backward reaches the discriminator's weights too


def optimizers():
    return {"d": lambda params, model: torch.optim.Adam(model.disc.parameters(), lr=1e-2),
            "g": lambda params, model: torch.optim.Adam(model.gen.parameters(), lr=1e-2)}


def hand_loop(model, batches, epochs):
    opt_d, opt_g = torch.optim.Adam(model.disc.parameters(), lr=1e-2), torch.optim.Adam(model.gen.parameters(), lr=1e-2)
    for _ in range(epochs):
        for batch in batches:
            opt_d.zero_grad()
            d_step(model, batch)["loss"].backward()
            opt_d.step()
            opt_g.zero_grad()
            g_step(model, batch).backward()
            opt_g.step()


def test_a_gan_trains_exactly_like_the_hand_written_loop(tmp_path):
    batches = [(x,) for x in data(n=48).tensors[0].split(8)]
    model = GAN()
    ref = copy.deepcopy(model)
    t = Trainer(model, optimizers(), step_fn={"d": d_step, "g": g_step}, **quiet(log_dir=tmp_path, log_every=2))
    torch.manual_seed(5)
    r = t.fit(batches, epochs=2)
    torch.manual_seed(5)
    hand_loop(ref, batches, epochs=2)
    for (name, a), b in zip(model.state_dict().items(), ref.state_dict().values()):
        assert torch.equal(a, b), name
    assert r.steps == 12
    names = {row.split(",")[3] for row in (tmp_path / "metrics.csv").read_text().splitlines()[1:]}
    assert {"train/d/loss", "train/g/loss", "train/d/real_score", "train/d/lr", "train/g/lr", "train/loss"} <= names


def test_the_generator_loss_does_not_leak_into_the_discriminators_accumulated_gradients():
    """With accumulation, d's gradients stay d's own while g's backward runs in between."""
    batches = [(x,) for x in data(n=32).tensors[0].split(8)]
    model = GAN()
    ref = copy.deepcopy(model)
    t = Trainer(model, optimizers(), step_fn={"d": d_step, "g": g_step}, accumulate=2, **quiet())
    torch.manual_seed(5)
    t.fit(batches, epochs=1)
    torch.manual_seed(5)
    opt_d, opt_g = torch.optim.Adam(ref.disc.parameters(), lr=1e-2), torch.optim.Adam(ref.gen.parameters(), lr=1e-2)
    for k, batch in enumerate(batches):
        # what the Trainer does per batch: d's micro-step, then g's, each scaled by 1/2; steps at the window's end
        saved = [p.grad for p in ref.gen.parameters()]
        for p in ref.gen.parameters():
            p.grad = None
        (d_step(ref, batch)["loss"] / 2).backward()
        for p, g in zip(ref.gen.parameters(), saved):
            p.grad = g
        if k % 2 == 1:
            opt_d.step()
            opt_d.zero_grad(set_to_none=True)
        saved = [p.grad for p in ref.disc.parameters()]
        for p in ref.disc.parameters():
            p.grad = None
        (g_step(ref, batch) / 2).backward()
        for p, g in zip(ref.disc.parameters(), saved):
            p.grad = g
        if k % 2 == 1:
            opt_g.step()
            opt_g.zero_grad(set_to_none=True)
    for (name, a), b in zip(model.state_dict().items(), ref.state_dict().values()):
        assert torch.equal(a, b), name


def test_each_phase_has_its_own_grad_scaler_and_checkpoints_hold_everything(tmp_path):
    model = GAN()
    scheds = {"g": lambda o: torch.optim.lr_scheduler.StepLR(o, 1, 0.5)}
    t = Trainer(model, optimizers(), step_fn={"d": d_step, "g": g_step}, scheduler=scheds, precision="16-mixed",
                clip_grad_norm=1.0, checkpoint_dir=tmp_path, **quiet())
    scalers = [p.precision.scaler for p in t.phases]
    assert scalers[0] is not scalers[1]
    t.fit([(x,) for x in data(n=32).tensors[0].split(8)], epochs=1)
    state = load_checkpoint(t.last_checkpoint)
    assert set(state["optimizer"]) == {"d", "g"} and set(state["precision"]) == {"d", "g"}
    assert state["scheduler"]["d"] is None and state["scheduler"]["g"]["last_epoch"] == 1  # StepLR: per epoch
    assert all(state["precision"][k]["scaler"]["scale"] > 0 for k in "dg")
    assert t.scheduler["g"].get_last_lr() == [pytest.approx(5e-3)]


def _dropout_gan() -> GAN:
    model = GAN()
    model.disc.insert(1, nn.Dropout(0.3))
    return model


@pytest.mark.parametrize("precision", ["32", "16-mixed"])
def test_resume_of_several_optimizers_is_bitwise_equal(tmp_path, precision):
    batches = [(x,) for x in data(n=48).tensors[0].split(8)]

    def trainer(ck):
        scheds = {"d": lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.9), "g": lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 20)}
        return Trainer(_dropout_gan(), optimizers(), step_fn={"d": d_step, "g": g_step}, scheduler=scheds, precision=precision,
                       checkpoint_dir=ck, **quiet())

    full = trainer(tmp_path / "a")
    full.fit(batches, epochs=3)
    part = trainer(tmp_path / "b")
    part.fit(batches, epochs=1)
    torch.manual_seed(123)  # the rest of this process drew other numbers: resume must restore the RNG
    again = trainer(tmp_path / "b")
    again.fit(batches, epochs=3, resume="last")
    for (name, a), b in zip(full.model.state_dict().items(), again.model.state_dict().values()):
        assert torch.equal(a, b), name
    for pa, pb in zip(full.phases, again.phases):
        assert pa.scheduler.state_dict() == pb.scheduler.state_dict()
        assert pa.precision.state_dict() == pb.precision.state_dict()
        for sa, sb in zip(pa.optimizer.state_dict()["state"].values(), pb.optimizer.state_dict()["state"].values()):
            assert all(torch.equal(torch.as_tensor(sa[k]), torch.as_tensor(sb[k])) for k in sa)


def test_phase_names_must_match():
    with pytest.raises(UsageError, match="same names"):
        Trainer(GAN(), optimizers(), step_fn={"g": g_step, "d": d_step}, **quiet())
    with pytest.raises(UsageError, match=r"scheduler\(s\) for \[''\]"):
        Trainer(GAN(), optimizers(), step_fn={"d": d_step, "g": g_step}, scheduler=lambda o: torch.optim.lr_scheduler.StepLR(o, 1), **quiet())


def test_a_step_returning_a_mapping_without_loss_is_one_clear_error():
    model = nn.Linear(6, 3)
    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), step_fn=lambda m, b: {"ce": m(b[0]).sum()}, **quiet())
    with pytest.raises(UsageError, match="without a 'loss' tensor.*keys: ce"):
        t.fit(loader(), max_steps=1)


def _phase_with_grads(optimizer_cls=torch.optim.SGD):
    from torchwise.train.phases import Phase
    from torchwise.train.precision import Precision

    model = mlp()
    opt = optimizer_cls(model.parameters(), lr=0.1)
    model(torch.randn(4, 6)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    return Phase("", opt, None, Precision(torch.device("cpu"))), model


def test_clear_grads_sets_every_gradient_to_none_without_the_optimizers_zero_grad(monkeypatch):
    phase, model = _phase_with_grads()
    calls = []
    monkeypatch.setattr(torch.optim.Optimizer, "zero_grad", lambda self, set_to_none=True: calls.append(set_to_none))
    import torchwise.train.phases as phases_mod

    monkeypatch.setattr(phases_mod, "_BASE_ZERO_GRAD", torch.optim.Optimizer.zero_grad)  # the base, as patched
    phase.clear_grads()
    assert calls == [] and all(p.grad is None for p in model.parameters())


def test_clear_grads_calls_an_overridden_zero_grad_and_records_under_the_profiler():
    class Keeps(torch.optim.SGD):
        def zero_grad(self, set_to_none: bool = True) -> None:
            self.cleared = set_to_none
            super().zero_grad(set_to_none)

    phase, model = _phase_with_grads(Keeps)
    phase.clear_grads()
    assert phase.optimizer.cleared is True and all(p.grad is None for p in model.parameters())

    phase, model = _phase_with_grads()
    seen = []
    phase.optimizer.zero_grad = lambda set_to_none=True: seen.append(set_to_none)  # patched on the object
    phase.clear_grads()
    assert seen == [True]

    phase, model = _phase_with_grads()
    with torch.profiler.profile() as prof:
        phase.clear_grads()
    assert all(p.grad is None for p in model.parameters())
    assert any("zero_grad" in e.name for e in prof.events())  # the optimizer's own range, as without torchwise
