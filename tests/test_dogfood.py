"""torchwise's own code follows the practices it checks: the linter finds nothing in it."""

from __future__ import annotations

from pathlib import Path

from torchwise.lint import lint_paths

ROOT = Path(__file__).resolve().parents[1]


def test_own_source_and_examples_lint_clean():
    findings = lint_paths([str(ROOT / "src"), str(ROOT / "examples")])
    assert [f"{f.path}:{f.line}: {f.code} {f.message}" for f in findings] == []


def test_the_linter_does_flag_a_pitfall_placed_in_an_example(tmp_path):
    """The check above can fail: the same call finds a planted pitfall."""
    bad = tmp_path / "examples" / "bad.py"
    bad.parent.mkdir()
    bad.write_text("import torch\nstate = torch.load('model.pt')\n")
    assert {f.code for f in lint_paths([str(tmp_path / "examples")])} >= {"TW401"}
