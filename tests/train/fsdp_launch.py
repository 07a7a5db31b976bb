"""Launching the FSDP test workload (train_fsdp_script.py) under torchrun, on the CPU with gloo."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).with_name("train_fsdp_script.py")
ROOT = Path(__file__).resolve().parents[2]
# what every run of the workload shares: 2 x 8 samples per step, clipping, a checkpoint every 4 steps
COMMON = ["--batch", "8", "--clip", "1.0", "--checkpoint-every", "4"]


def env(**extra: str) -> dict:
    src = str(ROOT / "src")
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", PYTHONPATH=src + (os.pathsep + path if path else ""), **extra)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def torchrun(args: list[str], cwd: Path, *, nproc: int = 2, launcher: list[str] | None = None, timeout: int = 240, script: Path = SCRIPT,
             **extra: str) -> subprocess.CompletedProcess:
    launcher = launcher if launcher is not None else ["--standalone"]
    cmd = [sys.executable, "-m", "torch.distributed.run", *launcher, "--nproc-per-node", str(nproc), str(script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env(**extra), timeout=timeout, cwd=cwd)


def start_node(args: list[str], cwd: Path, endpoint: str, log: Path, **extra: str) -> subprocess.Popen:
    """One "node" of a two-node run on this machine: its own torchrun, c10d rendezvous on 127.0.0.1."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
           "--rdzv-endpoint", endpoint, "--rdzv-id", "tw-test", str(SCRIPT), *args]
    with open(log, "w") as fh:
        return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, text=True, env=env(**extra), cwd=cwd)


def wait_listening(port: int, seconds: float = 60) -> None:
    """Until the first node's launcher hosts the rendezvous store (so it, not the second, keeps it)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc


def weights(path: Path) -> dict:
    return torch.load(path, weights_only=True)["model"]


def assert_equal(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.fixture(scope="session")
def fsdp_reference(tmp_path_factory) -> Path:
    """An uninterrupted 2-process FSDP run: its final full weights (ref.pt) and checkpoints (ck/).

    Made once per test run, not once per pytest-xdist worker: the workers share the run's base
    folder and a lock (the first to need it launches torchrun, the others wait and read it).
    Tests only read it."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # pytest-N/: this run's folder, shared by its workers (each has pytest-N/popen-gwK/)
    root = base / "fsdp-reference"
    with FileLock(str(base / "fsdp-reference.lock")):
        if not (root / "ready").exists():
            shutil.rmtree(root, ignore_errors=True)  # (what a failed attempt of another worker left)
            root.mkdir()
            ok(torchrun(["ref.pt", *COMMON, "--checkpoint-dir", "ck"], cwd=root))
            (root / "ready").touch()
    return root
