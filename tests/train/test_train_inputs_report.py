"""Bad input gets one clear error; progress lines, CSV, TensorBoard and the summary."""

from __future__ import annotations

import io

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from train_helpers import loader, make_trainer, mlp, quiet

from torchwise.core.errors import CheckpointError, DataError, UsageError
from torchwise.train import Trainer
from torchwise.train.report import RunLog


def test_uninterpretable_batch_says_what_was_received_and_expected():
    batches = [torch.zeros(4, 6)] * 2  # a bare tensor: no targets
    with pytest.raises(DataError, match=r"cannot interpret batch Tensor\(shape=\(4, 6\).*expected \(inputs, targets\).*step_fn"):
        make_trainer().fit(batches, epochs=1)


def test_optimizer_over_other_parameters_is_refused():
    other = mlp(seed=1)
    with pytest.raises(UsageError, match="holds none of the model's 4 trainable parameters"):
        Trainer(mlp(), torch.optim.SGD(other.parameters(), lr=0.1), nn.CrossEntropyLoss(), **quiet())
    model = mlp()
    with pytest.warns(UserWarning, match=r"TW115: 2 trainable parameter\(s\) are not in the optimizer.*2.weight"):
        Trainer(model, torch.optim.SGD(model[0].parameters(), lr=0.1), nn.CrossEntropyLoss(), **quiet())


def test_empty_loaders_are_refused():
    empty = DataLoader(TensorDataset(torch.zeros(0, 6), torch.zeros(0, dtype=torch.long)), batch_size=4)
    with pytest.raises(DataError, match="training loader is empty"):
        make_trainer().fit(empty, epochs=1)
    with pytest.raises(DataError, match="validation loader is empty"):
        make_trainer().fit(loader(), empty, epochs=1)


def test_other_bad_arguments():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for kw, pattern in (({"accumulate": 0}, "accumulate must be"), ({"clip_grad_norm": -1}, "clip_grad_norm"),
                        ({"scheduler_interval": "batch"}, "scheduler_interval"), ({"device": "gpu"}, "unknown device")):
        with pytest.raises(UsageError, match=pattern):
            Trainer(model, opt, nn.CrossEntropyLoss(), **quiet(**kw))
    with pytest.raises(UsageError, match="give loss_fn"):
        Trainer(model, opt, **quiet())
    with pytest.raises(UsageError, match="epochs must be"):
        Trainer(model, opt, nn.CrossEntropyLoss(), **quiet()).fit(loader(), epochs=0)


def test_resume_without_a_checkpoint(tmp_path, capsys):
    t = make_trainer(checkpoint_dir=tmp_path / "ck", progress=True)
    with pytest.raises(CheckpointError, match="not found"):
        t.fit(loader(), epochs=1, resume=tmp_path / "nope.pt")
    r = make_trainer(checkpoint_dir=tmp_path / "ck", progress=True).fit(loader(), epochs=1, resume="last")
    out = capsys.readouterr().out
    assert f"resume='last': no checkpoint in {tmp_path / 'ck'}; starting fresh" in out
    assert r.steps == 8 and r.checkpoint is not None and r.checkpoint.exists()
    with pytest.raises(CheckpointError, match="needs a checkpoint_dir"):
        make_trainer().fit(loader(), epochs=1, resume="last")


def test_plain_lines_csv_tensorboard_and_summary(tmp_path):
    stream = io.StringIO()
    log = RunLog(tmp_path, progress=True, stream=stream)
    log.run_id = "20261124-120000-ab12"
    log.start(10)
    log.log(5, 1, {"train/loss": 0.5, "train/steps_per_s": 2.5, "train/loader_wait": 0.25})
    log.log(10, 1, {"val/accuracy": 0.75})
    log.summary([("best val/accuracy", "0.75 (epoch 1)"), ("checkpoint", "ck/step-00000010.pt")])
    log.close()
    text = stream.getvalue()
    assert "epoch 1  step 5/10  loss 0.5  steps/s 2.5  loader_wait 25%  eta 0:00:02" in text
    assert "val/accuracy 0.75" in text and "best val/accuracy  0.75 (epoch 1)" in text and "ck/step-00000010.pt" in text
    rows = (tmp_path / "metrics.csv").read_text().splitlines()
    assert rows[0] == "time,step,epoch,name,value,run" and any(r.endswith(",10,1,val/accuracy,0.75,20261124-120000-ab12") for r in rows)
    pytest.importorskip("tensorboard")
    assert list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))


def test_progress_bar_on_a_terminal(tmp_path):
    class TTY(io.StringIO):
        def isatty(self):
            return True

    stream = TTY()
    log = RunLog(None, progress=True, stream=stream)
    log.start(4)
    log.log(2, 1, {"train/loss": 1.25, "train/steps_per_s": 3.0})
    log.close()
    out = stream.getvalue()
    assert "steps/s" in out and "1.25" in out and "2/4" in out


def test_fit_writes_csv_always_and_prints_a_summary(tmp_path, capsys):
    t = make_trainer(log_dir=tmp_path, progress=True, log_every=4, metrics={"accuracy": lambda o, y: (o.argmax(-1) == y).float().mean()})
    r = t.fit(loader(), loader(), epochs=2)
    out = capsys.readouterr().out
    assert "summary" in out and "best val/accuracy" in out and "samples/s" in out
    names = {line.split(",")[3] for line in (tmp_path / "metrics.csv").read_text().splitlines()[1:]}
    assert {"train/loss", "train/lr", "train/steps_per_s", "train/samples_per_s", "train/loader_wait", "val/loss", "val/accuracy"} <= names
    assert r.best["val/accuracy"][1] in (1, 2) and r.samples == 128
