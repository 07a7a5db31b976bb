"""The launcher (torchwise.train.launch): a failed worker ends the command with one line naming the
first failure and a documented exit code, never torchrun's ChildFailedError traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

from torchwise.core.errors import UsageError
from torchwise.train import launch
from torchwise.train.peers import PeerFailure

TINY = str(Path(__file__).with_name("train_tiny_task.py")) + ":task"


def _recorded(tmp_path: Path, monkeypatch, exc: BaseException, name: str) -> str:
    """The error file a worker leaves for ``exc`` (as launch.record_failure writes it under torchrun)."""
    path = tmp_path / f"{name}.json"
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(path))
    try:
        raise exc
    except BaseException as caught:
        launch.record_failure(caught)
    return str(path)


def test_the_first_failure_is_named_in_one_line_with_its_exit_code(tmp_path, monkeypatch):
    peer = PeerFailure("rank 0: distributed training stopped: rank 1 of 2 failed (no answer within the peer timeout of 15 s)")
    failures = {0: ProcessFailure(0, 101, 2, _recorded(tmp_path, monkeypatch, peer, "r0")),
                1: ProcessFailure(1, 102, -9, str(tmp_path / "none.json"))}  # killed by the agent later: no error file
    failures[1].timestamp = failures[0].timestamp + 5
    rank, first = ChildFailedError("torchwise", failures).get_first_failure()
    assert rank == 0 and launch.cause(rank, first) == str(peer)  # the message as the worker said it, no class name
    assert launch.exit_code(first.exitcode) == 2
    assert launch.cause(1, failures[1]) == "rank 1 was killed by SIGKILL (exit code 137)" and launch.exit_code(-9) == 137
    usage = ProcessFailure(1, 103, 2, _recorded(tmp_path, monkeypatch, UsageError("--epochs must be >= 1"), "r1"))
    assert launch.cause(1, usage) == "rank 1: --epochs must be >= 1"
    bug = ProcessFailure(0, 104, 1, _recorded(tmp_path, monkeypatch, RuntimeError("mat1 and mat2 shapes\ncannot be multiplied"), "r2"))
    assert launch.cause(0, bug) == "rank 0: mat1 and mat2 shapes"  # (first line; the traceback is in the worker's output)
    silent = ProcessFailure(0, 105, 3, str(tmp_path / "none.json"))
    assert launch.cause(0, silent) == "rank 0 exited with code 3 (its output above says why)"


@pytest.mark.slow
def test_the_command_ends_with_the_workers_cause_and_exit_code(run_cli, tmp_path):
    r = run_cli("train", TINY, "--nproc-per-node", "2", "--no-progress", "--log-dir", str(tmp_path), "--resume", str(tmp_path / "missing.pt"),
                env={"OMP_NUM_THREADS": "1"}, timeout=180)
    assert r.returncode == 2, r.stderr[-3000:]
    assert "Traceback" not in r.stderr and "ChildFailedError" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("torchwise train: error: rank ") and "missing.pt not found" in last
