"""The catalog matches the spec table in PRACTICES.md and answers lookups helpfully."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchwise.catalog import CATEGORIES, PRACTICES, Practice, UnknownPractice, by_category, get_practice, select_codes

# the spec table, kept in the repository so that every clone checks the catalog against it
SPEC = Path(__file__).resolve().parents[1] / "docs" / "PRACTICES.md"


def parse_spec() -> dict[str, dict]:
    """code -> {seeds, S, R, T, D (text after 'D:' or '' / None when no D)} from the markdown table."""
    rows = {}
    for line in SPEC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\|\s*(TW\d{3})\s*\|", line)
        if not m:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        # the practice text may itself contain escaped pipes; the last four cells are fixed
        code, seed, s, r, td = cells[0], cells[-4], cells[-3], cells[-2], cells[-1]
        d_match = re.search(r"(?:^|,\s*)D\b(?::\s*(.*))?", td)
        rows[code] = {
            "seeds": tuple(int(x) for x in re.findall(r"\d+", seed)),
            "S": s.startswith("S"),
            "R": r.startswith("R"),
            "T": bool(re.match(r"T\b", td)),
            "D": None if d_match is None else (d_match.group(1) or ""),
        }
    assert rows, "no table rows parsed"
    return rows


def test_every_spec_code_is_in_the_catalog_in_code_order():
    spec = parse_spec()
    assert len(spec) >= 50, "the spec table lost rows"
    missing = sorted(set(spec) - set(PRACTICES))
    assert not missing, f"spec codes missing from the catalog: {missing}"
    assert list(PRACTICES) == sorted(PRACTICES)  # codes beyond the table are allowed, in order


def test_flags_seeds_and_defaults_match_spec():
    spec = parse_spec()
    for code, row in spec.items():
        p = PRACTICES[code]
        assert (p.static, p.runtime, p.tuned) == (row["S"], row["R"], row["T"]), code
        assert p.seeds == row["seeds"], code
        if row["D"] is None:
            assert p.default == "", code
        else:
            assert p.default, f"{code}: the Trainer does something by default, describe it"
            text = row["D"].strip().strip("`")
            if text and not text.startswith("("):
                assert text.strip('"') in p.default, (code, text, p.default)


def test_every_entry_complete():
    for code, p in PRACTICES.items():
        assert isinstance(p, Practice) and p.code == code
        assert p.category == CATEGORIES[code[2]]
        for field in ("title", "rationale", "fix", "example_bad", "example_good"):
            value = getattr(p, field)
            assert isinstance(value, str) and value.strip(), (code, field)
        assert p.example_bad != p.example_good, code
        assert 2 <= len(re.findall(r"[.!?](?:\s|$)", p.rationale)) <= 5, (code, "rationale: 2-4 sentences")
        assert len(p.title) <= 80, code
        assert all(isinstance(s, int) and 0 <= s <= 4 for s in p.seeds), code
    assert len({p.title for p in PRACTICES.values()}) == len(PRACTICES)


def test_practice_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        PRACTICES["TW101"].title = "x"  # type: ignore[misc]


def test_get_practice_case_insensitive():
    assert get_practice("tw201") is PRACTICES["TW201"]
    assert get_practice(" TW305 ") is PRACTICES["TW305"]
    assert "DataParallel" in get_practice("TW201").title


def test_unknown_code_lists_near_matches():
    with pytest.raises(UnknownPractice) as e:
        get_practice("TW2011")
    assert "TW201" in e.value.near and "TW201" in str(e.value) and "TW2011" in str(e.value)
    with pytest.raises(LookupError) as e:  # UnknownPractice is a LookupError
        get_practice("TW21")
    assert e.value.near[:3] == ("TW210", "TW211", "TW212")
    with pytest.raises(UnknownPractice) as e:
        get_practice("TW199")  # misspelt: difflib finds codes one character away
    assert "TW109" in e.value.near
    with pytest.raises(UnknownPractice) as e:
        get_practice("DataParallel")  # words of a title
    assert e.value.near == ("TW201",)
    with pytest.raises(UnknownPractice) as e:
        get_practice("zzz")
    assert e.value.near == () and "torchwise rules" in str(e.value)


def test_select_codes():
    assert select_codes(["TW2"]) == [c for c in PRACTICES if c.startswith("TW2")]
    assert len(select_codes(["TW2"])) == 22
    assert select_codes(["tw401", "TW30"]) == ["TW301", "TW302", "TW303", "TW304", "TW305", "TW401"]
    assert select_codes(["TW101,TW101", "TW1"]) == [c for c in PRACTICES if c.startswith("TW1")]
    assert select_codes("TW4") == [c for c in PRACTICES if c.startswith("TW4")]
    assert select_codes(["reproducibility"]) == [p.code for p in by_category("reproducibility")]
    assert select_codes([]) == []
    with pytest.raises(UnknownPractice) as e:
        select_codes(["TW2", "TW9"])
    assert "TW9" in str(e.value)


def test_by_category():
    total = sum(len(by_category(c)) for c in CATEGORIES.values())
    assert total == len(PRACTICES)
    with pytest.raises(UnknownPractice):
        by_category("speed")


def test_engines_follow_flags():
    assert PRACTICES["TW202"].engines == ("lint", "doctor", "tune")
    assert PRACTICES["TW407"].engines == ("trainer",)


def test_catalog_imports_nothing_heavy():
    # the package root (lazy names, the old-path aliases) is imported first anyway; the catalog
    # itself adds only itself, and nothing heavy is loaded at all
    code = ("import sys, torchwise; before = set(sys.modules); import torchwise.catalog; "
            "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] == 'torchwise')); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["['torchwise.catalog']", "[]"]


def test_the_readme_counts_the_codes_there_are():
    """The README's count of catalog codes went stale once (52 said, 75 listed): it is checked."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    said = [int(n) for n in re.findall(r"\((\d+) codes\)", readme)]
    assert said == [len(PRACTICES)], (said, len(PRACTICES))
