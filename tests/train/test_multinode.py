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
