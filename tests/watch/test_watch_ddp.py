"""``torchwise watch -- torchrun --nproc_per_node=2 train_ddp.py`` with 2 gloo processes: each rank
watched, the cross-rank check names the rank and the first step out of sync, the DDP wrapper
checks name the cause; a correct DDP script stays quiet."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from torchwise.watch import WatchOptions, watch_script

pytestmark = pytest.mark.slow
SCRIPT = str(Path(__file__).resolve().parent / "scripts" / "train_ddp.py")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(tmp_path, fault, steps=40):
    lines: list[str] = []
    out = watch_script(["torchrun", "--nproc_per_node=2", f"--master_port={_port()}", SCRIPT, "--fault", fault, "--steps", str(steps)],
                       WatchOptions(log=tmp_path / "events.jsonl", rank_every=10), stdout=subprocess.DEVNULL, say=lines.append)
    return out, lines


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def test_correct_ddp_is_quiet(tmp_path):
    out, lines = run(tmp_path, "none")
    assert out.code == 0 and lines == [] and out.report.findings == [], lines
    assert [p.name for p in out.logs] == ["events.rank0.jsonl", "events.rank1.jsonl"] and out.report.measured["ranks"] == 2


def test_parameters_moved_after_wrapping(tmp_path):
    out, lines = run(tmp_path, "move")
    moved = [f for f in out.report.by_code("TW409") if "after DistributedDataParallel wrapped the model" in f.message]
    assert moved and "torch.float32->torch.float64" in moved[0].message and "train_ddp.py:" in moved[0].message
    drift = [f for f in out.report.by_code("TW409") if "drifted apart" in f.message]
    assert drift and drift[0].evidence["step"] == 1 and out.code == 1


def test_rank_skipping_the_all_reduce(tmp_path):
    out, lines = run(tmp_path, "skip-sync")
    [f] = [f for f in out.report.by_code("TW409") if "drifted apart" in f.message]
    assert f.evidence["rank"] == 1 and f.evidence["step"] == 6 and f.evidence["in_sync_at"] == 5
    assert "skipped a sync" in f.message
    assert out.code == 3  # rank 0's extra all_reduce finds its peer gone at the end: the script fails, after the finding


def test_model_wrapped_again_every_epoch(tmp_path):
    out, lines = run(tmp_path, "rewrap", steps=40)
    [f] = out.report.by_code("TW410")
    assert "wrapped around a DistributedDataParallel (2 levels" in f.message and f.evidence["first_step"] == 32
    assert not out.report.by_code("TW409")  # nested wrappers keep the replicas in sync: no drift to report


def test_every_rank_reading_the_same_batches(tmp_path):
    out, lines = run(tmp_path, "same-data", steps=20)
    [f] = out.report.by_code("TW411")
    assert "DistributedSampler" in f.fix and out.code == 0 and not out.report.by_code("TW409")
