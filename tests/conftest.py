"""Shared test set-up: one torch thread per xdist worker (2 cores), GPU tests skipped without CUDA."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; none here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    import torch

    torch.set_num_threads(1)
    yield


@pytest.fixture
def run_cli():
    """Run ``python -m torchwise ARGS`` in a subprocess; returns CompletedProcess (text)."""
    import subprocess

    def _run(*args: str, cwd: str | os.PathLike | None = None, input: str | None = None, env: dict | None = None, timeout: float = 240):
        full_env = dict(os.environ, PYTHONUNBUFFERED="1")
        if env:
            full_env.update(env)
        return subprocess.run(
            [sys.executable, "-m", "torchwise", *args],
            cwd=cwd or ROOT,
            input=input,
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
        )

    return _run
