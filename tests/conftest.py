"""Shared test set-up: one torch thread per xdist worker (2 cores), GPU tests skipped without CUDA.

Without torch (the base install, ``make test-base``) only the tests that need no torch run: a test
file that imports torch at its top is not collected, and a test marked ``needs_torch`` is skipped.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
HAS_TORCH = importlib.util.find_spec("torch") is not None
_TORCH_HEAVY = ("torch", "numpy", "tune_fakes", "train_helpers", "doctor_models", "realistic")


def _imports_torch_at_top(path: Path) -> bool:
    """Whether a test file imports torch (or a helper that does) at module level."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return False
    for node in tree.body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        if any(n.split(".")[0] in _TORCH_HEAVY for n in names):
            return True
    return False


def pytest_ignore_collect(collection_path, config):
    if HAS_TORCH or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    return True if _imports_torch_at_top(collection_path) else None


def pytest_collection_modifyitems(config, items):
    # the slow tests (subprocesses, torchrun, real training) first: pytest-xdist hands tests out in
    # this order, so the long ones start early and the run ends on many short ones, not on one long one
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if not HAS_TORCH:
        skip = pytest.mark.skip(reason="needs torch (base install)")
        for item in items:
            if "needs_torch" in item.keywords or "gpu" in item.keywords:
                item.add_marker(skip)
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; none here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    if HAS_TORCH:
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
