"""Rule metadata: one module per catalog code, each documented in its own words."""

from __future__ import annotations

import ast
from pathlib import Path

from torchwise.catalog import PRACTICES
from torchwise.lint import lint_source
from torchwise.lint.rules import RULE_MODULES, all_rules, get_rule

RULES_DIR = Path(__file__).resolve().parents[2] / "src" / "torchwise" / "lint" / "rules"


def test_rules_cover_exactly_the_static_practices():
    static = [c for c, p in PRACTICES.items() if p.static]
    assert [r.code for r in all_rules()] == static
    assert len(static) == 51


def test_one_module_per_rule_named_after_its_code():
    files = sorted(p.stem for p in RULES_DIR.glob("tw*.py"))
    assert files == sorted(RULE_MODULES)
    for rule, module in zip(all_rules(), sorted(RULE_MODULES)):
        assert module.startswith(rule.code.lower() + "_")


def test_docs_have_the_four_sections_and_distinct_names():
    names = set()
    for rule in all_rules():
        doc = rule.doc
        for heading in ("What it flags", "Why it matters", "Example", "Fix"):
            assert f"\n{heading}\n" in "\n" + doc, (rule.code, heading)
        assert rule.name and rule.name not in names and rule.name == rule.name.lower()
        names.add(rule.name)
        assert rule.title == PRACTICES[rule.code].title
        assert get_rule(rule.code.lower()) is rule


def test_doc_examples_marked_bad_are_flagged():
    """Where a doc example is complete Python, the rule really flags it."""
    checked = 0
    for rule in all_rules():
        example = rule.doc.split("\nExample\n", 1)[1].split("\nFix\n", 1)[0]
        code = "\n".join(line[2:] if line.startswith("  ") else line for line in example.splitlines())
        try:
            ast.parse(code)
        except SyntaxError:
            continue
        header = ("import os\nimport random\nimport torch.multiprocessing as mp\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport numpy as np\n"
                  "from torch.utils.data import DataLoader, DistributedSampler\nfrom torch.nn.parallel import DistributedDataParallel\n")
        if f"# {rule.code}" in code or rule.code in code:
            found = lint_source(header + code, select=[rule.code])
            assert found, (rule.code, code)
            checked += 1
    assert checked >= 15


def test_fixable_flag_matches_behaviour():
    from lint_cases import POSITIVE

    for rule in all_rules():
        any_fix = any(f.fixable for src, _ in POSITIVE[rule.code] for f in lint_source(src, select=[rule.code]))
        if any_fix:
            assert rule.fixable, rule.code
