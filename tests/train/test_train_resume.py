"""Checkpoints: exact resume after SIGKILL, safe loading, what a checkpoint holds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from train_helpers import loader, make_trainer, mlp, weights

from torchwise.utils.checkpoint import load_checkpoint
from torchwise.core.errors import StateDictError
from torchwise.train.checkpoints import list_checkpoints

SCRIPT = Path(__file__).with_name("train_resume_script.py")


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=240)


@pytest.mark.slow
def test_sigkill_mid_epoch_then_resume_is_bitwise_equal_to_an_uninterrupted_run(tmp_path):
    ref = _run(str(tmp_path / "ref"), str(tmp_path / "ref.pt"))
    assert ref.returncode == 0, ref.stderr[-2000:]

    killed = _run(str(tmp_path / "ck"), str(tmp_path / "never.pt"), "--kill-at", "14")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not (tmp_path / "never.pt").exists()
    saved = [p.name for p in list_checkpoints(tmp_path / "ck")]
    assert saved[-1] == "step-00000012.pt"  # 10 steps per epoch: step 12 is inside epoch 2
    state = load_checkpoint(tmp_path / "ck" / saved[-1], weights_only=True)
    assert (state["epoch"], state["batch_in_epoch"]) == (1, 2)

    resumed = _run(str(tmp_path / "ck"), str(tmp_path / "resumed.pt"), "--resume")
    assert resumed.returncode == 0, resumed.stderr[-2000:]

    a = torch.load(tmp_path / "ref.pt", weights_only=True)
    b = torch.load(tmp_path / "resumed.pt", weights_only=True)
    assert a["step"] == b["step"] == 30
    for key, value in a["model"].items():
        assert torch.equal(value, b["model"][key]), key
    for pid, st in a["optimizer"]["state"].items():
        for name, value in st.items():
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(b["optimizer"]["state"][pid][name])), (pid, name)


def test_checkpoint_holds_everything_and_loads_with_weights_only(tmp_path):
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2)
    from torch import nn

    from torchwise.train import Trainer

    t = Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=sched, device="cpu", progress=False, log_dir=False, seed=3, checkpoint_dir=tmp_path, keep_checkpoints=2)
    t.fit(loader(), epochs=3)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step-00000016.pt", "step-00000024.pt"]  # pruned to 2
    state = load_checkpoint(tmp_path / "step-00000024.pt", weights_only=True)
    assert {"model", "optimizer", "scheduler", "precision", "rng", "epoch", "step", "batch_in_epoch", "data_seed"} <= set(state)
    assert state["step"] == 24 and state["epoch"] == 3 and state["batch_in_epoch"] == 0 and state["data_seed"] == 3
    assert isinstance(state["rng"], list) and "torch" in state["rng"][0]
    for k, v in weights(model).items():
        assert torch.equal(state["model"][k], v)


def test_resume_restores_state_into_a_fresh_trainer(tmp_path):
    t = make_trainer(momentum=0.9, checkpoint_dir=tmp_path)
    t.fit(loader(), epochs=1)
    fresh_model = mlp(seed=5)
    t2 = make_trainer(fresh_model, momentum=0.9, checkpoint_dir=tmp_path)
    r = t2.fit(loader(), epochs=2, resume="last")
    assert r.steps == 16 and t2.epoch == 2
    assert t2.optimizer.state_dict()["state"]  # momentum buffers came back


def test_resume_into_a_different_model_fails_clearly(tmp_path):
    make_trainer(checkpoint_dir=tmp_path).fit(loader(), epochs=1)
    other = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
    with pytest.raises(StateDictError, match="shape mismatches"):
        make_trainer(other, checkpoint_dir=tmp_path).fit(loader(), epochs=2, resume="last")
