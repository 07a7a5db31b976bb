"""Early stopping, the best checkpoint kept apart from step-N.pt, EMA of the weights, should_stop."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from train_helpers import data, loader, mlp, quiet

from torchwise import EarlyStopping
from torchwise.utils.checkpoint import load_checkpoint
from torchwise.core.errors import UsageError
from torchwise.train import Trainer
from torchwise.train.checkpoints import list_checkpoints


def _trainer(tmp_path=None, **kw):
    model = mlp()
    return Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                   **quiet(checkpoint_dir=tmp_path, **kw))


def _scripted_val(t, values):
    """Make evaluate() return the next of ``values`` as val/loss (the monitored metric)."""
    it = iter(values)
    t.evaluate = lambda loader, metrics=None: {"loss": next(it)}


def test_early_stopping_stops_after_patience_and_returns_a_result(tmp_path):
    t = _trainer(tmp_path, early_stopping=EarlyStopping(patience=2, min_delta=0.05))
    _scripted_val(t, [1.0, 0.8, 0.78, 0.79, 0.5, 0.4])  # 0.78 improves by < min_delta: bad; 0.79 bad -> stop
    r = t.fit(loader(), loader(), epochs=6)
    assert r.stopped_early and r.epochs == 4
    assert any("early stopping: val/loss has not improved on 0.8" in e for e in r.events)


def test_early_stopping_mode_from_the_name_and_validation():
    es = EarlyStopping(patience=1, monitor="val/accuracy")
    t = _trainer(early_stopping=es)
    _scripted_val(t, [])
    t.evaluate = lambda loader, metrics=None, it=iter([0.5, 0.6, 0.55, 0.9]): {"accuracy": next(it), "loss": 1.0}
    r = t.fit(loader(), loader(), epochs=4)
    assert r.stopped_early and r.epochs == 3 and es.monitor.mode == "max"
    with pytest.raises(UsageError, match="patience must be an integer >= 1"):
        EarlyStopping(patience=0)


@pytest.mark.parametrize("name, lower", [
    ("val/loss", True), ("val/recon_loss", True), ("val/celoss", True), ("val/nll", True), ("val/top1_err", True),
    ("val/wer", True), ("val/fid50k", True), ("val/kl", True), ("val/perplexity", True),
    ("val/accuracy", False), ("val/f1", False), ("val/auc", False), ("val/bleu", False),
    ("val/power", False), ("val/lower_bound", False), ("val/recall", False),
])
def test_the_direction_of_a_monitored_metric_follows_its_name(name, lower):
    from torchwise.train.monitor import Monitor, lower_is_better

    assert lower_is_better(name) is lower
    assert Monitor(name).mode == ("min" if lower else "max")
    assert Monitor(name, "max" if lower else "min").mode == ("max" if lower else "min")  # the explicit mode wins


def test_the_run_says_which_way_the_monitored_metric_is_followed(capsys):
    t = _trainer(early_stopping=EarlyStopping(patience=5, monitor="val/accuracy"), progress=True)
    t.evaluate = lambda loader, metrics=None: {"accuracy": 0.5, "loss": 1.0}
    t.fit(loader(), loader(), epochs=1)
    assert "monitoring val/accuracy: higher is better (from its name; monitor_mode= sets it)" in capsys.readouterr().out
    t = _trainer(early_stopping=EarlyStopping(patience=5, monitor="val/score", mode="min"), progress=True)
    t.evaluate = lambda loader, metrics=None: {"score": 0.5, "loss": 1.0}
    t.fit(loader(), loader(), epochs=1)
    out = capsys.readouterr().out
    assert "monitoring val/score: lower is better\n" in out
    _trainer(progress=True).fit(loader(), epochs=1)  # nothing follows the metric: nothing said
    assert "monitoring" not in capsys.readouterr().out


def test_a_callback_can_stop_the_run_cleanly(tmp_path):
    class Stop:
        def on_step_end(self, trainer):
            if trainer.step == 3:
                trainer.should_stop = True

    r = _trainer(tmp_path, callbacks=[Stop()]).fit(loader(), epochs=5)
    assert r.steps == 3 and r.stopped_early and r.checkpoint is not None and r.checkpoint.name == "step-00000003.pt"


def test_best_checkpoint_survives_pruning_and_is_named(tmp_path):
    t = _trainer(tmp_path, keep_checkpoints=1)
    _scripted_val(t, [1.0, 0.4, 0.6, 0.7, 0.9])
    r = t.fit(loader(), loader(), epochs=5)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step-00000040.pt"]  # the rolling files were pruned
    assert r.best_checkpoint == tmp_path / "best.pt" and r.best_checkpoint.exists()
    best = load_checkpoint(r.best_checkpoint)
    assert best["epoch"] == 2 and best["step"] == 16  # the epoch of val/loss 0.4
    assert best["plugins"]["best_checkpoint"]["best"] == 0.4
    assert _trainer(tmp_path / "none", keep_best=False).fit(loader(), loader(), epochs=1).best_checkpoint is None


def test_resume_keeps_the_early_stopping_count(tmp_path):
    values = [1.0, 0.5, 0.6, 0.7, 0.2]
    t = _trainer(tmp_path, early_stopping=EarlyStopping(patience=2))
    _scripted_val(t, values[:3])
    t.fit(loader(), loader(), epochs=3)  # epoch 3 was a bad one
    again = _trainer(tmp_path, early_stopping=EarlyStopping(patience=2))
    _scripted_val(again, values[3:])
    r = again.fit(loader(), loader(), epochs=5, resume="last")
    assert r.stopped_early and r.epochs == 4  # the second bad epoch in a row, counted across the resume


def test_ema_is_evaluated_checkpointed_and_resumed_exactly(tmp_path):
    decay = 0.9
    model = mlp()
    start = copy.deepcopy(model)
    seen = []

    class Track:
        def on_step_end(self, trainer):
            seen.append([p.detach().clone() for p in trainer.model.parameters()])

    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), ema=decay, callbacks=[Track()],
                **quiet(checkpoint_dir=tmp_path / "a"))
    t.fit(loader(), epochs=2)
    expect = [p.detach().clone() for p in start.parameters()]
    for params in seen:
        expect = [e + (1 - decay) * (p - e) for e, p in zip(expect, params)]
    for avg, e in zip(t.ema.averages, expect):
        torch.testing.assert_close(avg, e, rtol=1e-6, atol=1e-7)
    # evaluation runs on the averages, and the model's own weights come back afterwards
    own = [p.detach().clone() for p in model.parameters()]
    ema_model = copy.deepcopy(model)
    t.ema.copy_to(ema_model)
    x, y = data().tensors
    with torch.no_grad():
        expected_loss = nn.functional.cross_entropy(ema_model(x), y).item()
    assert t.evaluate(loader())["loss"] == pytest.approx(expected_loss, rel=1e-6)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), own))
    assert not torch.equal(ema_model[0].weight, model[0].weight)
    # checkpointed and resumed exactly
    state = load_checkpoint(t.last_checkpoint)
    assert torch.equal(state["plugins"]["ema"]["weights"]["0.weight"], t.ema.averages[0])

    def run(ck, epochs, resume=None):
        m = mlp()
        tr = Trainer(m, torch.optim.SGD(m.parameters(), lr=0.1), nn.CrossEntropyLoss(), ema=decay, **quiet(checkpoint_dir=ck))
        tr.fit(loader(shuffle=True), epochs=epochs, resume=resume)
        return tr

    full = run(tmp_path / "b", 3)
    run(tmp_path / "c", 1)
    resumed = run(tmp_path / "c", 3, resume="last")
    assert resumed.ema.updates == full.ema.updates == 24
    assert all(torch.equal(a, b) for a, b in zip(full.ema.averages, resumed.ema.averages))
    with pytest.raises(UsageError, match=r"ema must be a decay in \(0, 1\)"):
        _trainer(ema=1.5)


def test_best_and_early_stopping_never_compare_train_loss_with_val_loss(tmp_path):
    t = _trainer(tmp_path, early_stopping=EarlyStopping(patience=1))
    _scripted_val(t, [5.0])
    t.fit(loader(), loader(), epochs=1)  # val/loss 5.0 is the best so far
    r = t.fit(loader(), epochs=3)  # no validation data now: train/loss (< 5) must not count as a better val/loss
    assert load_checkpoint(r.best_checkpoint)["epoch"] == 1 and not r.stopped_early and r.epochs == 3


def test_a_new_fit_after_a_stop_trains_again():
    class StopAt3:
        def on_step_end(self, trainer):
            if trainer.step == 3:
                trainer.should_stop = True

    t = _trainer(callbacks=[StopAt3()])
    assert t.fit(loader(), epochs=1).steps == 3
    r = t.fit(loader(), epochs=2)  # the stop asked for in the first run does not end this one
    assert r.steps == 3 + 8 + 5 and not r.stopped_early


def test_a_validation_metric_no_validation_data_produces_is_refused_and_an_unlogged_one_said_once():
    t = _trainer(early_stopping=EarlyStopping(patience=2, monitor="val/accuracy"))
    with pytest.raises(UsageError, match="monitor 'val/accuracy' is a validation metric, but this fit has no validation data"):
        t.fit(loader(), epochs=1)
    assert t.step == 0  # refused before any step
    t = _trainer(early_stopping=EarlyStopping(patience=2, monitor="val/acc"))  # a typo of val/accuracy
    t.evaluate = lambda loader, metrics=None: {"accuracy": 0.5, "loss": 1.0}
    r = t.fit(loader(), loader(), epochs=2)
    said = [e for e in r.events if "was not logged" in e]
    assert len(said) == 1 and "'val/acc'" in said[0] and "val/accuracy" in said[0] and not r.stopped_early


def test_without_validation_data_the_run_says_it_follows_train_loss(tmp_path, capsys):
    t = _trainer(tmp_path, progress=True)
    r = t.fit(loader(), epochs=1)
    out = capsys.readouterr().out
    assert "monitoring train/loss (no validation data, so it stands in for val/loss): lower is better" in out
    assert f"best.pt (train/loss {r.train_loss:.4g}, epoch 1)" in out and "monitoring val/loss" not in out
