"""torchwise rules / torchwise rule CODE: listing, explaining, engine cross-reference, no torch."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from argparse import Namespace
from types import ModuleType, SimpleNamespace

import pytest

from torchwise import rules_cli
from torchwise.catalog import CATEGORY_NOTES, PRACTICES
from torchwise.core.errors import UsageError


# ------------------------------------------------------------------------------------------
# start-up: no torch
# ------------------------------------------------------------------------------------------


HEAVY = ("torch", "numpy")


def _heavy(names):
    return [m for m in names if m in HEAVY or m.startswith(tuple(h + "." for h in HEAVY))]


@pytest.mark.parametrize("argv", [["rules"], ["rule", "TW201"]])
def test_rules_commands_do_not_import_torch_importtime(argv):
    res = subprocess.run([sys.executable, "-X", "importtime", "-m", "torchwise", *argv],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")]
    assert "torchwise.catalog" in imported  # the measurement works
    assert _heavy(imported) == []


def test_rules_commands_do_not_import_torch_sys_modules():
    # importtime does not see importlib.import_module calls; sys.modules sees everything
    code = textwrap.dedent("""
        import contextlib, io, json, sys
        from torchwise.cli import main
        rcs = []
        for argv in (["rules"], ["rules", "--json", "--engine", "lint"], ["rule", "TW201"], ["rule", "TW212", "--json"]):
            with contextlib.redirect_stdout(io.StringIO()):
                rcs.append(main(argv))
        print(json.dumps({"rcs": rcs, "modules": sorted(sys.modules)}))
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    data = json.loads(res.stdout)
    assert data["rcs"] == [0, 0, 0, 0]
    assert "torchwise.cli.rules" in data["modules"]
    assert _heavy(data["modules"]) == []


# ------------------------------------------------------------------------------------------
# engine cross-reference with fake folders
# ------------------------------------------------------------------------------------------


def _write(folder, name, text):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def fake_engines(tmp_path):
    checks, knobs = tmp_path / "checks", tmp_path / "knobs"
    _write(checks, "tw212_eligible.py", '''\
        """Channels-last eligibility.

        What: finds 4-D convolutions.
        """
        raise SystemExit("imported! must only be read with ast")
        CODES = ("TW212", "tw113")
        ''')
    _write(checks, "tw101_computed.py", '''\
        """Codes that are not a literal are ignored."""
        PREFIX = "TW"
        CODES = (PREFIX + "101",)
        ''')
    _write(checks, "broken.py", "def (:\n")
    _write(checks, "_base.py", '"""helper"""\nCODES = ("TW101",)\n')
    _write(checks, "notes.txt", 'CODES = ("TW101",)\n')
    _write(knobs, "layout.py", '''\
        """Layout knob."""
        CODES: tuple[str, ...] = ("TW212",)
        ''')
    _write(knobs, "single.py", '"""One code as a plain string."""\nCODES = "TW216"\n')
    lint = [{"code": "TW212", "name": "channels-last-missing", "doc": "Flags 4-D conv models without channels_last."}]
    return {"checks_dir": checks, "knobs_dir": knobs, "lint": lint}


def test_scan_engine_modules_reads_without_importing(fake_engines):
    mods = {m["name"]: m for m in rules_cli.scan_engine_modules(fake_engines["checks_dir"])}
    assert set(mods) == {"tw212_eligible", "tw101_computed", "broken"}
    assert mods["tw212_eligible"]["codes"] == ("TW212", "TW113")
    assert mods["tw212_eligible"]["doc"].startswith("Channels-last eligibility.")
    assert mods["tw101_computed"]["codes"] == ()
    assert mods["broken"]["codes"] == () and "SyntaxError" in mods["broken"]["error"]
    knobs = {m["name"]: m["codes"] for m in rules_cli.scan_engine_modules(fake_engines["knobs_dir"])}
    assert knobs == {"layout": ("TW212",), "single": ("TW216",)}
    assert rules_cli.scan_engine_modules(fake_engines["checks_dir"] / "missing") == []


def test_coverage_and_explain(fake_engines):
    cov = rules_cli.coverage(**fake_engines)
    assert [m["name"] for m in cov["TW212"]["doctor"]] == ["tw212_eligible"]
    assert [m["name"] for m in cov["TW113"]["doctor"]] == ["tw212_eligible"]
    assert [m["name"] for m in cov["TW212"]["tune"]] == ["layout"]
    assert [r["name"] for r in cov["TW212"]["lint"]] == ["channels-last-missing"]
    assert cov["TW101"]["doctor"] == [] and cov["TW101"]["trainer"][0]["doc"] == PRACTICES["TW101"].default

    data = rules_cli.explain("tw212", **fake_engines)
    assert data["code"] == "TW212" and data["rationale"] == PRACTICES["TW212"].rationale
    assert data["engines"]["doctor"][0]["codes"] == ["TW212", "TW113"]
    json.dumps(data)
    text = rules_cli._rule_text(data)
    assert "Flags 4-D conv models without channels_last." in text  # the lint rule's own doc
    assert "What: finds 4-D convolutions." in text and "Layout knob." in text
    assert PRACTICES["TW212"].example_good.splitlines()[0] in text
    assert "trainer: -" in text  # TW212 has no Trainer default


def test_list_rules_filters(fake_engines):
    rows = rules_cli.list_rules(engine="doctor", **fake_engines)
    assert [r["code"] for r in rows] == ["TW113", "TW212"]
    rows = rules_cli.list_rules(engine="lint", **fake_engines)
    assert [r["code"] for r in rows] == ["TW212"] and rows[0]["engines"] == ["lint", "doctor", "tune"]
    rows = rules_cli.list_rules(category="reproducibility", **fake_engines)
    assert [r["code"] for r in rows] == ["TW301", "TW302", "TW303", "TW304", "TW305"]
    rows = rules_cli.list_rules(engine="trainer", **fake_engines)
    assert {r["code"] for r in rows} == {c for c, p in PRACTICES.items() if p.default}
    assert len(rules_cli.list_rules(**fake_engines)) == len(PRACTICES)
    with pytest.raises(UsageError):
        rules_cli.list_rules(engine="magic")


def test_lint_rules_tolerates_missing_linter(monkeypatch):
    monkeypatch.setattr(rules_cli, "LINT_RULES_MODULE", "torchwise_no_such_module_xyz")
    assert rules_cli.lint_rules() == []


def test_lint_rules_reads_all_rules(monkeypatch):
    fake = ModuleType("fake_lint_rules_for_test")
    fake.all_rules = lambda: [SimpleNamespace(code="tw201", name="data-parallel", doc="\n    Flags DataParallel.\n")]
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    monkeypatch.setattr(rules_cli, "LINT_RULES_MODULE", fake.__name__)
    assert rules_cli.lint_rules() == [{"code": "TW201", "name": "data-parallel", "doc": "Flags DataParallel."}]
    assert rules_cli.explain("TW201")["engines"]["lint"][0]["name"] == "data-parallel"


def test_unknown_code_is_usage_error():
    with pytest.raises(UsageError) as e:
        rules_cli.explain("TW2011")
    assert "TW201" in str(e.value) and "\n" not in str(e.value)


def test_rich_output_on_a_terminal(monkeypatch, capsys, fake_engines):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(rules_cli, "CHECKS_DIR", fake_engines["checks_dir"])
    assert rules_cli.run(Namespace(command="rule", code="TW212", json=False)) == 0
    out = capsys.readouterr().out
    assert "TW212" in out and "Why" in out and "channels_last" in out and "tw212_eligible" in out
    assert rules_cli.run(Namespace(command="rules", category="devices", engine=None, json=False)) == 0
    out = capsys.readouterr().out
    assert "TW401" in out and "TW408" in out and "TW101" not in out


# ------------------------------------------------------------------------------------------
# through the real command
# ------------------------------------------------------------------------------------------


def test_cli_rules_plain(run_cli):
    res = run_cli("rules")
    assert res.returncode == 0, res.stderr
    rows, legend = res.stdout.split("\n\n", 1)
    assert [line.split()[0] for line in rows.splitlines()] == list(PRACTICES)
    assert legend.startswith(f"{len(PRACTICES)} practices. Categories:")
    assert PRACTICES["TW201"].title in res.stdout


def test_cli_rules_json_category(run_cli):
    res = run_cli("rules", "--category", "reproducibility", "--json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["code"] for r in rows] == ["TW301", "TW302", "TW303", "TW304", "TW305"]
    assert all(set(r) == {"code", "title", "category", "engines", "planned"} for r in rows)


def test_cli_rule_explains(run_cli):
    res = run_cli("rule", "tw201")
    assert res.returncode == 0, res.stderr
    p = PRACTICES["TW201"]
    out = res.stdout
    assert out.startswith(f"TW201  {p.title}")
    assert "seed articles" not in out and "001" not in out  # the catalog's internal source numbers are not shown
    assert out.splitlines()[1] == f"category: performance ({CATEGORY_NOTES['performance']})"
    assert p.example_bad in out and "DDP(" in out
    for section in ("Why", "Bad", "Good", "Fix", "Engines"):
        assert f"\n{section}\n" in out
    assert f"trainer: {p.default}" in out
    assert " ".join(out.split("\nWhy\n", 1)[1].split("\n\n", 1)[0].split()) == p.rationale


def test_cli_rule_json(run_cli):
    res = run_cli("rule", "TW304", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["code"] == "TW304" and data["seeds"] == [] and data["fix"] == PRACTICES["TW304"].fix
    assert set(data["engines"]) == {"lint", "doctor", "tune", "trainer"}


def test_cli_unknown_code(run_cli):
    res = run_cli("rule", "TW999")
    assert res.returncode == 2
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "unknown practice code 'TW999'" in err and "near matches:" in err


def test_rules_text_explains_every_category_it_lists():
    rows = rules_cli.list_rules()
    text = rules_cli._rules_text(rows)
    assert f"{len(rows)} practices. Categories:" in text
    assert "  api (TW5xx): PyTorch APIs that were removed" in text  # the category a newcomer asked about
    assert all(f"  {name} (TW" in text for name in {r["category"] for r in rows})
    only = rules_cli._rules_text(rules_cli.list_rules(category="devices"))
    assert "devices (TW4xx)" in only and "api (TW5xx)" not in only
