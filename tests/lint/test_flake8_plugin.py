"""The flake8 plugin: findings as flake8 tuples, no torch import, and (when flake8 is installed)
a real flake8 run that loads it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchwise.lint.flake8_plugin import Flake8Checker

SRC = Path(__file__).resolve().parents[2] / "src"
BAD = "import torch\nsd = torch.load(p)\nouter = torch.ger(a, b)\n"


def test_plugin_yields_flake8_tuples():
    results = list(Flake8Checker(None, BAD.splitlines(keepends=True), "train.py").run())
    assert [(line, col, text.split()[0]) for line, col, text, _ in results] == [(2, 5, "TW401"), (3, 8, "TW502")]
    assert all(kind is Flake8Checker for *_, kind in results)


def test_plugin_leaves_syntax_errors_to_flake8():
    assert list(Flake8Checker(None, ["def f(:\n"], "x.py").run()) == []


def test_plugin_does_not_import_torch():
    code = (
        "import sys\nfrom torchwise.lint.flake8_plugin import Flake8Checker\n"
        f"out = list(Flake8Checker(None, {BAD!r}.splitlines(True), 'a.py').run())\n"
        "assert out and 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch.'))[:5]\n"
    )
    env = dict(os.environ, PYTHONPATH=str(SRC))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


def test_entry_point_declared():
    text = (SRC.parent / "pyproject.toml").read_text()
    assert '[project.entry-points."flake8.extension"]' in text
    assert 'TW = "torchwise.lint.flake8_plugin:Flake8Checker"' in text


def test_through_flake8(tmp_path):
    pytest.importorskip("flake8")
    (tmp_path / "train.py").write_text(BAD + "x = torch.load(q)  # noqa: TW401\n")
    from importlib.metadata import entry_points

    config = "[flake8]\nselect = TW\n"
    if not any(ep.name == "TW" for ep in entry_points(group="flake8.extension")):  # a tree installed before the entry point
        config += f"[flake8:local-plugins]\nextension =\n    TW = torchwise.lint.flake8_plugin:Flake8Checker\npaths = {SRC}\n"
    (tmp_path / ".flake8").write_text(config)
    r = subprocess.run([sys.executable, "-m", "flake8", "--config", str(tmp_path / ".flake8"), "train.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    lines = r.stdout.strip().splitlines()
    assert r.returncode == 1, r.stderr
    assert [l.split(": ", 1)[1].split()[0] for l in lines] == ["TW401", "TW502"], lines
    assert lines[0].startswith("train.py:2:6:")
