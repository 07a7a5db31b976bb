"""The generated parts of the docs site: a page per catalog code, the index by category, and the
docstring conversion of the API reference (the site itself is built by `make docs`, strict)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from torchwise.catalog import CATEGORIES, PRACTICES
from torchwise.cli.rules import coverage

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return _load("rule_pages").generate()


def test_every_code_has_a_page_with_the_catalog_entry(pages):
    assert set(pages) == {"rules/index.md", *(f"rules/{code}.md" for code in PRACTICES)}
    for code, p in PRACTICES.items():
        page = pages[f"rules/{code}.md"]
        assert page.startswith(f"# {code}: {p.title}\n"), code
        for text in (p.rationale, p.fix, p.example_bad.strip(), p.example_good.strip()):
            assert text in page, (code, text[:40])
        assert f"[{p.category}](index.md#{p.category})" in page


def test_rule_pages_carry_each_engines_own_documentation(pages):
    cov = coverage()
    seen = {"lint": 0, "doctor": 0, "tune": 0, "trainer": 0}
    for code in PRACTICES:
        page = pages[f"rules/{code}.md"]
        for engine, items in cov[code].items():
            for item in items:
                seen[engine] += 1
                if engine == "lint":  # section titles become bold, bodies stay word for word
                    body = [line.strip() for line in item["doc"].splitlines() if line.startswith("  ") and line.strip()]
                    assert all(line in page for line in body), (code, item["name"])
                    assert f"`torchwise lint` rule `{item['name']}`" in page
                else:
                    first = item["doc"].strip().splitlines()[0]
                    assert first in page, (code, engine, first)
    assert all(seen.values()), seen  # every engine is represented somewhere


def test_lint_rule_examples_become_code_blocks(pages):
    page = pages["rules/TW213.md"]
    example = page.split("**Example**", 1)[1]
    assert example.lstrip().startswith("```python\nfrom torch.nn.utils.rnn import pad_sequence")


def test_index_lists_every_code_once_under_its_category_and_explains_the_categories(pages):
    index = pages["rules/index.md"]
    headings = re.findall(r"^## (\w+)$", index, flags=re.M)
    assert headings == list(CATEGORIES.values())
    for code, p in PRACTICES.items():
        assert index.count(f"[{code}]({code}.md)") == 1, code
        section = index.split(f"## {p.category}\n", 1)[1].split("\n## ", 1)[0]
        assert f"[{code}]({code}.md)" in section
    api = index.split("## api\n", 1)[1]
    assert "TorchFix" in api and "deprecated" in api
    assert f"{len(PRACTICES)} practices" in index


def test_docstring_roles_become_code_and_examples_get_fenced():
    convert = _load("griffe_docstrings").markdown_docstring
    text = "Use :func:`seed_everything` and :class:`~torchwise.train.Trainer`.\n\n    >>> x = 1\n    >>> x\n    1\n\nAfter."
    out = convert(text)
    assert "`seed_everything`" in out and "`Trainer`" in out and ":func:" not in out and "~" not in out
    assert "```pycon\n>>> x = 1\n>>> x\n1\n```" in out and out.rstrip().endswith("After.")
