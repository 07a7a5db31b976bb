"""Elastic restarts: torchrun restarts the group after a worker dies; the Trainer resumes by itself."""

from __future__ import annotations

import pytest
import torch

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
    from torchwise.core.errors import UsageError
    from torchwise.train import Trainer

    def trainer(folder):
        model, _ = workload.parts()
        return Trainer(model, workload.optimizer(model.parameters()), nn.CrossEntropyLoss(), device="cpu", seed=0, log_dir=False, progress=False, checkpoint_dir=folder)

    data = DataLoader(workload.parts()[1], batch_size=16)
    trainer(tmp_path / "other").fit(data, max_steps=3)
    with pytest.raises(UsageError, match="already holds another run"):  # a first attempt never resumes (nor mixes with a run there)
        trainer(tmp_path / "other").fit(data, max_steps=4)
    fresh = trainer(tmp_path)
    fresh.fit(data, max_steps=4)  # first attempt: resume=None starts at step 0
    assert fresh.step == 4 and not any("resuming" in e for e in fresh.events)
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "1")  # as in a worker that torchrun restarted
    restarted = trainer(tmp_path)
    restarted.fit(data, max_steps=6)
    assert any("resuming from" in e and "step-00000004.pt" in e for e in restarted.events)
    told = trainer(tmp_path)
    told.fit(data, max_steps=2, resume=False)  # (a restarted attempt's folder holds this job's run: not refused)
    assert told.step == 2 and not any("resuming" in e for e in told.events)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["fsdp", "ddp"])
def test_a_rank_out_of_memory_stops_the_group_which_restarts_with_smaller_micro_batches(fsdp_reference, tmp_path, strategy):
    # rank 1 runs out of memory in the middle of step 6's forward (rank 0 waits in a collective): it stops with
    # one line, torchrun stops rank 0 and restarts the group, which resumes from step 4 with 2 micro-batches per batch
    args = ["out.pt", *COMMON, "--checkpoint-dir", "ck", "--oom-at", "6", "--strategy", strategy]
    proc = ok(torchrun(args, cwd=tmp_path, launcher=["--standalone", "--max-restarts", "1"], timeout=180))
    assert "TrainingError: rank 1 of 2 ran out of memory on cpu at step 6 with micro-batches of 8" in proc.stderr
    assert f"resuming from ck/step-00000004.{'dcp' if strategy == 'fsdp' else 'pt'}" in proc.stdout
    assert "2 micro-batches per batch from now on" in proc.stdout
    saved = torch.load(tmp_path / "out.pt", weights_only=True)
    assert saved["oom_splits"] == [2, 2] and saved["step"] == 12  # both ranks took the same decision
    two, ref = saved["model"], weights(fsdp_reference / "ref.pt")
    for key in ref:  # the same effective batch: equal up to the order of the sums
        torch.testing.assert_close(two[key], ref[key], rtol=0, atol=1e-5, msg=key)
