"""Two "nodes" on one machine (two torchrun launches, c10d rendezvous on 127.0.0.1), and a dead peer."""

from __future__ import annotations

import re

import pytest
import torch

from fsdp_launch import COMMON, free_port, fsdp_reference, start_node, wait_listening, weights  # noqa: F401  (fixture)
from torchwise.train import checkpoints as ckpt
from torchwise.train.dcp import read_full


def _two_nodes(tmp_path, args, kill_second: bool = False, timeout: int = 240, **extra: str):
    port = free_port()
    endpoint = f"127.0.0.1:{port}"
    first = start_node(args, tmp_path, endpoint, tmp_path / "node0.log", **extra)
    wait_listening(port)  # the first launcher hosts the rendezvous store
    second = start_node(args, tmp_path, endpoint, tmp_path / "node1.log", **extra, **({"TW_KILL_HERE": "1"} if kill_second else {}))
    codes = [first.wait(timeout=timeout), second.wait(timeout=timeout)]
    return codes, [(tmp_path / f"node{i}.log").read_text() for i in (0, 1)]


@pytest.mark.slow
def test_two_nodes_on_localhost_equal_one_node(fsdp_reference, tmp_path):
    codes, logs = _two_nodes(tmp_path, ["out.pt", *COMMON, "--checkpoint-dir", "ck"])
    assert codes == [0, 0], logs[0][-3000:] + logs[1][-3000:]
    assert torch.load(tmp_path / "out.pt", weights_only=True)["world_size"] == 2
    one_node = weights(fsdp_reference / "ref.pt")
    for key, value in weights(tmp_path / "out.pt").items():  # (which launch gets rank 0 is up to the rendezvous)
        torch.testing.assert_close(value, one_node[key], rtol=0, atol=1e-6, msg=key)


@pytest.mark.slow
def test_a_dead_peer_ends_the_survivors_with_one_line_naming_it(tmp_path):
    # the second node's worker is SIGKILLed after step 7; no restarts: the survivor must not hang
    args = ["out.pt", *COMMON, "--checkpoint-dir", "ck", "--kill-at", "7", "--kill-rank", "-1"]
    codes, logs = _two_nodes(tmp_path, args, kill_second=True, timeout=120, TORCHWISE_PEER_TIMEOUT="30")  # (a hang: TimeoutExpired)
    assert codes[0] != 0 and codes[1] != 0
    killed_rank = int(re.search(r"rank\s*:\s*(\d+)", logs[1].split("Root Cause")[-1]).group(1))  # torchrun's report on that node
    lines = [line for line in logs[0].splitlines() if line.startswith("rank ") and "distributed training stopped" in line]
    assert len(lines) == 1, logs[0][-4000:]
    assert f"rank {killed_rank} of 2 failed" in lines[0] and "peer timeout 30 s" in lines[0]
    assert "the last checkpoint is ck/step-00000006.dcp" in lines[0]
    assert [p.name for p in ckpt.list_checkpoints(tmp_path / "ck")] == ["step-00000004.dcp", "step-00000006.dcp"]
    assert read_full(tmp_path / "ck" / "step-00000006.dcp")["step"] == 6  # intact


def test_launcher_options_go_to_torchrun_and_training_options_to_the_workers(monkeypatch):
    import argparse

    from torchwise.core.errors import UsageError
    from torchwise.train.cli import add_arguments, launch_command, run, worker_argv

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["t.py:task", "--strategy", "fsdp", "--activation-checkpointing", "--nnodes", "2", "--node-rank", "1",
                              "--rdzv-endpoint", "10.0.0.1:29400", "--max-restarts", "2", "--peer-timeout", "45"])
    argv = worker_argv(args)
    assert argv == ["t.py:task", "--strategy", "fsdp", "--activation-checkpointing", "--peer-timeout", "45.0"]
    cmd = launch_command(args, argv)
    launcher = cmd[: cmd.index("-m", 3)]
    for flag, value in (("--nnodes", "2"), ("--node-rank", "1"), ("--rdzv-backend", "c10d"), ("--rdzv-endpoint", "10.0.0.1:29400"), ("--max-restarts", "2")):
        assert launcher[launcher.index(flag) + 1] == value
    for bad, message in ((["--node-rank", "2", "--nnodes", "2"], "node-rank"), (["--max-restarts", "-1"], "max-restarts"), (["--peer-timeout", "0"], "peer timeout")):
        with pytest.raises(UsageError, match=message):
            run(parser.parse_args(["t.py:task", *bad]))


def test_peer_timeout_comes_from_the_option_or_the_environment(monkeypatch):
    from torchwise.core.errors import UsageError
    from torchwise.train.strategy import DEFAULT_PEER_TIMEOUT, peer_timeout_s

    monkeypatch.delenv("TORCHWISE_PEER_TIMEOUT", raising=False)
    assert peer_timeout_s() == DEFAULT_PEER_TIMEOUT and peer_timeout_s(12) == 12.0
    monkeypatch.setenv("TORCHWISE_PEER_TIMEOUT", "7.5")
    assert peer_timeout_s() == 7.5
    monkeypatch.setenv("TORCHWISE_PEER_TIMEOUT", "soon")
    with pytest.raises(UsageError, match="TORCHWISE_PEER_TIMEOUT must be a number of seconds, got 'soon'"):
        peer_timeout_s()


def test_only_collective_failures_become_the_peer_line(monkeypatch):
    from torchwise.train import peers

    monkeypatch.setattr(peers, "roll_call", lambda rank, world, wait_s=0: [3])
    gloo = RuntimeError("[../gloo/transport/tcp/pair.cc:537] Read error [10.0.0.2]:4242: Connection reset by peer. This is typically caused by ...")
    line = str(peers.failure_error(gloo, 0, 4, 60.0, None))
    assert line == "rank 0: distributed training stopped: rank 3 of 4 failed (no answer in the roll call after a collective broke): Read error [10.0.0.2]:4242: Connection reset by peer (peer timeout 60 s); no checkpoint was written"
    assert peers.failure_error(RuntimeError("mat1 and mat2 shapes cannot be multiplied"), 0, 4, 60.0) is None
    assert peers.failure_error(ValueError("gloo"), 0, 4, 60.0) is None
    monkeypatch.setattr(peers, "roll_call", lambda rank, world, wait_s=0: None)
    assert "a peer of 4 processes failed (which one could not be told)" in str(peers.failure_error(gloo, 1, 4, 60.0))


@pytest.mark.slow
def test_a_frozen_peer_ends_the_run_at_the_peer_timeout_naming_it(tmp_path):
    from fsdp_launch import torchrun

    # rank 1 is stopped (SIGSTOP) after step 7: alive but silent; the collective's deadline is 10 s
    proc = torchrun(["out.pt", *COMMON, "--checkpoint-dir", "ck", "--kill-at", "7"], cwd=tmp_path, timeout=200,
                    TW_KILL_SIGNAL="SIGSTOP", TORCHWISE_PEER_TIMEOUT="10")
    assert proc.returncode != 0
    lines = [line for line in proc.stdout.splitlines() if line.startswith("rank 0: distributed training stopped")]
    assert len(lines) == 1, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "rank 1 of 2 failed" in lines[0] and "Timed out" in lines[0] and "(peer timeout 10 s)" in lines[0]
    assert "the last checkpoint is ck/step-00000006.dcp" in lines[0]
    assert read_full(tmp_path / "ck" / "step-00000006.dcp")["step"] == 6
