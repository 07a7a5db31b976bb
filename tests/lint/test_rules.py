"""Every rule fires on its positive snippets and stays silent on look-alike correct code."""

from __future__ import annotations

import ast

import pytest

from lint_cases import NEGATIVE, POSITIVE
from torchwise.lint import lint_source
from torchwise.lint.rules import all_rules

CODES = [r.code for r in all_rules()]

POS = [(code, i, src, line) for code, cases in POSITIVE.items() for i, (src, line) in enumerate(cases)]
NEG = [(code, i, src) for code, cases in NEGATIVE.items() for i, src in enumerate(cases)]


def test_every_rule_has_positive_and_negative_cases():
    assert sorted(POSITIVE) == sorted(CODES)
    assert sorted(NEGATIVE) == sorted(CODES)


@pytest.mark.parametrize("code,i,src,line", POS, ids=[f"{c}-pos{i}" for c, i, _, _ in POS])
def test_positive(code, i, src, line):
    ast.parse(src)  # the snippet itself must be valid Python
    found = lint_source(src, "snippet.py", select=[code])
    assert found, f"{code} should flag:\n{src}"
    assert all(f.code == code for f in found)
    if line is not None:
        assert line in [f.line for f in found], f"{code} expected on line {line}, got {[f.line for f in found]}"
    for f in found:
        assert f.message and f.col >= 1
        assert f.fixable or f.suggestion, "a finding without a safe fix must carry a suggestion"


@pytest.mark.parametrize("code,i,src", NEG, ids=[f"{c}-neg{i}" for c, i, _ in NEG])
def test_negative(code, i, src):
    ast.parse(src)
    found = lint_source(src, "snippet.py", select=[code])
    assert not found, f"{code} false positive:\n" + "\n".join(f.format() for f in found)


@pytest.mark.parametrize("code,i,src", NEG, ids=[f"{c}-negall{i}" for c, i, _ in NEG])
def test_no_rule_crashes_on_any_snippet(code, i, src):
    found = lint_source(src, "snippet.py")
    assert not [f for f in found if f.code == "TW000"], [f.format() for f in found]
