"""Files written for PyTorch before 0.4 (``x.cuda(async=True)``) no longer parse on Python >= 3.7;
lint reads them with the argument renamed and reports the old spelling (TW502) instead of giving
up on the whole file (TW000)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchwise.lint import apply_fixes, fix_source, lint_source
from torchwise.lint.engine import legacy

OLD_UTILS = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader


    def train(model, dataset, optimizer):
        loader = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)
        for images, target in loader:
            images = images.cuda(async=True)
            target = target.cuda(
                async=True)
            loss = torch.nn.functional.cross_entropy(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(loss.data[0])
""")


def test_the_old_argument_is_reported_and_the_rest_of_the_file_is_checked():
    found = lint_source(OLD_UTILS)
    codes = sorted((f.code, f.line) for f in found)
    assert ("TW502", 8) in codes and ("TW502", 10) in codes
    assert ("TW207", 15) in codes  # the per-step host read, found in a file that does not parse
    assert not [f for f in found if f.code == "TW000"]
    # async=True meant a non-blocking copy: the pinned loader's copies are not reported as blocking
    assert not [f for f in found if f.code == "TW204"]


def test_positions_are_those_of_the_original_text():
    [first, second] = [f for f in lint_source(OLD_UTILS, select=["TW502"])]
    assert OLD_UTILS.splitlines()[first.line - 1][first.col - 1:].startswith("async=True")
    assert OLD_UTILS.splitlines()[second.line - 1][second.col - 1:].startswith("async=True")


def test_one_fix_renames_every_argument_so_the_file_parses():
    fixed, remaining = fix_source(OLD_UTILS, select=["TW502"])
    ast.parse(fixed)
    assert "async" not in fixed and fixed.count("non_blocking=True") == 2
    assert not remaining


@pytest.mark.parametrize("source", [
    "x = y.cuda(async=True\n",                      # another syntax error as well
    "async = True\n",                               # a name, not an argument: not repaired
    "def f(:\n    return x.cuda(async=True)\n",
])
def test_other_syntax_errors_are_still_reported_with_the_original_message(source):
    with pytest.raises(SyntaxError):
        legacy.parse(source)
    [f] = lint_source(source)
    assert f.code == "TW000" and "syntax error" in f.message


def test_valid_files_are_parsed_as_they_are():
    tree = legacy.parse("async def f():\n    await g(Async=1)\n")
    [kw] = [n for n in ast.walk(tree) if isinstance(n, ast.keyword)]
    assert kw.arg == "Async"  # only a file that failed to parse is repaired


def test_each_finding_that_shares_the_rename_counts_as_fixed():
    found = lint_source(OLD_UTILS, select=["TW502"])
    fixed_text, count = apply_fixes(OLD_UTILS, [f.fix for f in found])
    assert len(found) == 2 and count == 2  # one fix object, two findings fixed
    ast.parse(fixed_text)
