"""The base install, ``pip install torchwise``: what lint, rule(s) and the flake8 plugin need, no torch.

The metadata checks run everywhere; the check that torch is really absent runs in ``make test-base``
(an environment holding only the base install), where the lint and rules tests run too.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HAS_TORCH = importlib.util.find_spec("torch") is not None


def base_requirements() -> list[str]:
    """The installed distribution's requirements that no extra guards."""
    return [r for r in importlib.metadata.requires("torchwise") or [] if "extra ==" not in r]


def test_the_base_requirements_hold_nothing_heavy():
    names = {re.split(r"[\s<>=!;\[]", r, maxsplit=1)[0].lower() for r in base_requirements()}
    assert names <= {"tomli"}, names  # tomli only on Python 3.10, to read pyproject.toml


def test_torch_comes_with_the_torch_extra():
    extras = importlib.metadata.requires("torchwise") or []
    torch_lines = [r for r in extras if re.match(r"torch\s*[<>=!~;]", r)]
    assert torch_lines and all('extra == "torch"' in r for r in torch_lines), torch_lines


@pytest.mark.skipif(HAS_TORCH, reason="only meaningful in the base install (make test-base)")
def test_the_base_install_has_no_torch_and_lint_works():
    from torchwise.lint import lint_source

    assert importlib.util.find_spec("numpy") is None
    findings = lint_source("import torch\nstate = torch.load('w.pt')\n", "t.py")
    assert [f.code for f in findings] == ["TW401"]


def test_the_pre_commit_hook_installs_the_base_package_only():
    """pre-commit installs the repository itself (`pip install .`) into the hook's environment,
    plus any `additional_dependencies`: with no torch among the base requirements (above) and none
    added here, the `torchwise-lint` hook's environment has no torch."""
    text = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    hooks = {m.group(1): m.group(0) for m in re.finditer(r"^- id: ([\w-]+)\n(?:  .*\n?)*", text, re.M)}
    hook = hooks["torchwise-lint"]
    assert "language: python" in hook and "entry: torchwise lint" in hook
    assert "additional_dependencies" not in hook
    assert "torch included" not in text  # the old comment that told users it installs torch
