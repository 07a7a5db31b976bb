"""Elastic restarts: torchrun restarts the group after a worker dies; the Trainer resumes by itself."""

from __future__ import annotations

import pytest

from fsdp_launch import COMMON, assert_equal, fsdp_reference, ok, torchrun, weights  # noqa: F401  (fixture)
from torchwise.train import checkpoints as ckpt


@pytest.mark.slow
def test_a_worker_killed_mid_run_is_restarted_and_ends_where_an_uninterrupted_run_does(fsdp_reference, tmp_path):
    # rank 1 is SIGKILLed after step 7 of the first attempt; the last checkpoint is step 6
    proc = ok(torchrun(["out.pt", *COMMON, "--checkpoint-dir", "ck", "--kill-at", "7"], cwd=tmp_path, launcher=["--standalone", "--max-restarts", "1"]))
    assert "exitcode: -9" in proc.stderr  # it did die
    assert "resuming from ck/step-00000006.dcp" in proc.stdout  # no --resume given: the restart found the checkpoint
    assert_equal(weights(fsdp_reference / "ref.pt"), weights(tmp_path / "out.pt"))
    assert ckpt.find_last(tmp_path / "ck").name == "step-00000012.dcp"


def test_after_a_restart_the_trainer_resumes_last_unless_told_not_to(tmp_path, monkeypatch):
    from torch import nn
    from torch.utils.data import DataLoader

    import train_fsdp_script as workload
    from torchwise.train import Trainer

    def trainer(folder):
        model, _ = workload.parts()
        return Trainer(model, workload.optimizer(model.parameters()), nn.CrossEntropyLoss(), device="cpu", seed=0, log_dir=False, progress=False, checkpoint_dir=folder)

    data = DataLoader(workload.parts()[1], batch_size=16)
    trainer(tmp_path).fit(data, max_steps=3)
    fresh = trainer(tmp_path)
    fresh.fit(data, max_steps=4)  # first attempt: resume=None starts over
    assert not any("resuming" in e for e in fresh.events)
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "1")  # as in a worker that torchrun restarted
    restarted = trainer(tmp_path)
    restarted.fit(data, max_steps=6)
    assert any("resuming from" in e and "step-00000004.pt" in e for e in restarted.events)
    told = trainer(tmp_path)
    told.fit(data, max_steps=2, resume=False)
    assert told.step == 2 and not any("resuming" in e for e in told.events)
