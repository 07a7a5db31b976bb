"""DDP on the CPU (gloo) through torchrun: 2 processes equal 1 process with the same global batch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import train_ddp_script
from torchwise.utils.checkpoint import load_checkpoint
from torchwise.train.cli import launch_command, worker_argv

SCRIPT = Path(__file__).with_name("train_ddp_script.py")
ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")


def _assert_close(a: dict, b: dict) -> None:
    for key, value in a.items():
        torch.testing.assert_close(b[key], value, rtol=0, atol=1e-5, msg=key)


@pytest.mark.slow
def test_user_script_under_torchrun_equals_one_process_with_the_same_global_batch(tmp_path):
    out = tmp_path / "ddp.pt"
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(SCRIPT), str(out), "8"],
        capture_output=True, text=True, env=_env(), timeout=240, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert proc.stdout.count("summary") == 1  # only rank 0 reports
    ddp = torch.load(out, weights_only=True)
    assert ddp["world_size"] == 2 and ddp["step"] == 12  # 96 samples / (2 x 8) per step x 2 epochs

    single = train_ddp_script.train(str(tmp_path / "one.pt"), 16)
    assert single.strategy.world_size == 1 and single.step == 12
    _assert_close(torch.load(tmp_path / "one.pt", weights_only=True)["model"], ddp["model"])
    moved = torch.load(tmp_path / "one.pt", weights_only=True)["model"]
    assert not torch.equal(moved["0.weight"], train_ddp_script.parts()[0].state_dict()["0.weight"])


@pytest.mark.slow
def test_cli_launches_through_torchrun_and_checkpoints_on_rank_0(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "torchwise", "train", f"{SCRIPT}:task", "--nproc-per-node", "2", "--batch-size", "8",
         "--seed", "0", "--device", "cpu", "--no-progress", "--log-dir", str(tmp_path / "run")],
        capture_output=True, text=True, env=_env(), timeout=240, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "torch.distributed.run" in proc.stdout and proc.stdout.count("trained 12 steps") == 1
    state = load_checkpoint(tmp_path / "run" / "checkpoints" / "step-00000012.pt")
    assert state["world_size"] == 2

    from torchwise.cli import main

    assert main(["train", f"{SCRIPT}:task", "--batch-size", "16", "--seed", "0", "--device", "cpu", "--no-progress", "--log-dir", str(tmp_path / "one")]) == 0
    single = load_checkpoint(tmp_path / "one" / "checkpoints" / "step-00000012.pt")
    assert single["world_size"] == 1
    _assert_close(single["model"], state["model"])


def test_launch_command_forwards_training_options_only():
    import argparse

    from torchwise.train.cli import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["t.py:task", "--nproc-per-node", "4", "--epochs", "3", "--compile", "--task-arg", "lr=0.1", "--resume", "last"])
    argv = worker_argv(args)
    assert argv == ["t.py:task", "--task-arg", "lr=0.1", "--epochs", "3", "--compile", "--resume", "last"]
    cmd = launch_command(args, argv)
    assert cmd[1:3] == ["-m", "torch.distributed.run"] and "--standalone" in cmd and cmd[cmd.index("--nproc-per-node") + 1] == "4"
    assert cmd[-len(argv) - 3:] == ["-m", "torchwise", "train", *argv]
    multi = parser.parse_args(["t.py:task", "--nnodes", "2", "--node-rank", "1", "--rdzv-endpoint", "head:29400"])
    cmd = launch_command(multi, worker_argv(multi))
    assert "--standalone" not in cmd and cmd[cmd.index("--rdzv-endpoint") + 1] == "head:29400" and cmd[cmd.index("--node-rank") + 1] == "1"
    no_endpoint = parser.parse_args(["t.py:task", "--nnodes", "2"])
    from torchwise.core.errors import UsageError

    with pytest.raises(UsageError, match="rdzv-endpoint"):
        launch_command(no_endpoint, worker_argv(no_endpoint))


@pytest.mark.slow
def test_several_optimizers_under_torchrun_equal_one_process_with_the_same_global_batch(tmp_path):
    script = Path(__file__).with_name("train_ddp_phases_script.py")
    out = tmp_path / "ddp.pt"
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script), str(out), "8"],
        capture_output=True, text=True, env=_env(), timeout=240, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    single = tmp_path / "one.pt"
    proc = subprocess.run([sys.executable, str(script), str(single), "16"], capture_output=True, text=True, env=_env(), timeout=240, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ddp, one = torch.load(out, weights_only=True), torch.load(single, weights_only=True)
    assert ddp["world_size"] == 2 and ddp["step"] == one["step"] == 12
    _assert_close(one["model"], ddp["model"])
