"""The plug-in surface (torchwise.train.callbacks): one hook order for the Trainer's plug-ins and the
user's callbacks, base-class no-ops never called, stateful callbacks checkpointed and restored."""

from __future__ import annotations

import pytest
import torch

from train_helpers import loader, make_trainer

from torchwise.utils.checkpoint import load_checkpoint
from torchwise.core.errors import UsageError
from torchwise.train import Callback
from torchwise.train.callbacks import Hooks


class Recorder(Callback):
    """Records which hooks run, with what the docs promise is cheap to read at a step's end."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def on_fit_start(self, trainer):
        self.calls.append(("fit_start", trainer.step))

    def on_step_end(self, trainer):
        phase = trainer.phases[0]
        self.calls.append(("step", trainer.step, type(phase.last_loss).__name__, phase.stepped, trainer.optimizer.param_groups[0]["lr"]))

    def on_log(self, trainer, values):
        self.calls.append(("log", trainer.step))

    def on_epoch_end(self, trainer, values):
        self.calls.append(("epoch", trainer.epoch, trainer.last_checkpoint.name if trainer.last_checkpoint else None, sorted(values)))

    def on_fit_end(self, trainer, result):
        self.calls.append(("fit_end", result.steps))


def test_hooks_run_in_order_and_see_the_step(tmp_path):
    rec = Recorder()
    sched = lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))  # noqa: E731  (per step)
    t = make_trainer(scheduler=sched, callbacks=[rec], log_every=4, checkpoint_dir=tmp_path)
    t.fit(loader(), loader(), epochs=1)
    kinds = [c[0] for c in rec.calls]
    assert kinds == ["fit_start", "step", "step", "step", "step", "log", "step", "step", "step", "step", "log", "epoch", "fit_end"]
    steps = [c for c in rec.calls if c[0] == "step"]
    assert [c[1] for c in steps] == list(range(1, 9))
    assert all(c[2] == "float" and c[3] is True for c in steps)  # this step's loss as kept on one CPU process, the step taken
    assert steps[0][4] == pytest.approx(0.1 / 2)  # the scheduler stepped before the callbacks saw the step
    # at the epoch's end: the epoch's checkpoint is written after the callbacks ran; they see val values and train/loss
    assert rec.calls[-2] == ("epoch", 1, None, ["train/loss", "val/loss"])
    assert t.last_checkpoint.name == "step-00000008.pt"


def test_only_overridden_hooks_are_collected():
    class OnlyLog(Callback):
        def on_log(self, trainer, values):
            pass

    class Duck:  # no base class: any object with hook methods
        def on_step_end(self, trainer):
            pass

    hooks = Hooks([OnlyLog(), Duck(), None])
    assert len(hooks.log) == 1 and len(hooks.step_end) == 1 and not hooks.epoch_end and not hooks.fit_start and not hooks.fit_end


class Counter(Callback):
    key = "counter"

    def __init__(self) -> None:
        self.seen = 0

    def on_step_end(self, trainer):
        self.seen += 1

    def state_dict(self):
        return {"seen": self.seen}

    def load_state_dict(self, state):
        self.seen = state["seen"]


def test_a_callback_with_a_key_and_state_is_checkpointed_and_restored(tmp_path):
    first = Counter()
    make_trainer(callbacks=[first], checkpoint_dir=tmp_path).fit(loader(), epochs=1)
    assert load_checkpoint(tmp_path / "step-00000008.pt")["plugins"]["counter"] == {"seen": 8}
    again = Counter()
    make_trainer(callbacks=[again], checkpoint_dir=tmp_path).fit(loader(), epochs=2, resume="last")
    assert again.seen == 16  # 8 restored + 8 counted
    with pytest.raises(UsageError, match="share the checkpoint key 'counter'"):
        make_trainer(callbacks=[Counter(), Counter()], checkpoint_dir=tmp_path / "x").fit(loader(), epochs=1)
