"""``torchwise lint`` on the command line: paths, config, formats, fixes, exit codes."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchwise.cli import main
from torchwise.lint import lint_paths
from torchwise.lint.config import clear_cache

pytestmark = pytest.mark.usefixtures("fresh_config_cache")

BAD = "import torch\nm.load_state_dict(torch.load('m.pt'))\nopt.zero_grad(set_to_none=False)\n"
CLEAN = "import torch\nm.load_state_dict(torch.load('m.pt', weights_only=True))\n"
LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<code>TW\d{3}) (?P<msg>.+)$")


def lint(capsys, *args):
    code = main(["lint", *args])
    out, err = capsys.readouterr()
    return code, out, err


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_exit_codes_and_text_format(tmp_path, capsys):
    clean = write(tmp_path, "clean.py", CLEAN)
    bad = write(tmp_path, "bad.py", BAD)
    code, out, _ = lint(capsys, "--isolated", str(clean))
    assert code == 0 and out.strip() == "No findings."
    code, out, _ = lint(capsys, "--isolated", str(bad))
    assert code == 1
    lines = [l for l in out.splitlines() if LINE.match(l)]
    assert [LINE.match(l)["code"] for l in lines] == ["TW401", "TW208"]
    m = LINE.match(lines[0])
    assert m["path"] == str(bad) and m["line"] == "2" and m["col"] == "19"
    assert out.strip().splitlines()[-1].startswith("Found 2 findings in 1 file")
    code, _, _ = lint(capsys, "--isolated", "--exit-zero", str(bad))
    assert code == 0


def test_usage_errors_exit_2(tmp_path, capsys):
    f = write(tmp_path, "a.py", CLEAN)
    for args in (["--isolated", str(tmp_path / "missing.py")], ["--select", "TW999", str(f)],
                 ["--fix", "--diff", str(f)], ["--jobs", "-1", str(f)], ["--format", "xml", str(f)]):
        with pytest.raises(SystemExit) if "--format" in args else _nullctx():
            code, out, err = lint(capsys, *args)
            assert code == 2, args
            assert err.count("\n") == 1 and "error" in err and "Traceback" not in err


class _nullctx:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_select_and_ignore_by_code_and_prefix(tmp_path, capsys):
    bad = write(tmp_path, "bad.py", BAD)
    _, out, _ = lint(capsys, "--isolated", "--select", "TW4", str(bad))
    assert {LINE.match(l)["code"] for l in out.splitlines() if LINE.match(l)} == {"TW401"}
    _, out, _ = lint(capsys, "--isolated", "--ignore", "TW401,TW3", str(bad))
    assert {LINE.match(l)["code"] for l in out.splitlines() if LINE.match(l)} == {"TW208"}
    assert [f.code for f in lint_paths([str(bad)], select="TW2", use_config=False)] == ["TW208"]


def test_recursion_skips_git_venvs_build_and_caches(tmp_path, capsys):
    write(tmp_path, "src/pkg/mod.py", BAD)
    for rel in (".git/hooks/x.py", ".venv/lib/x.py", "venv/x.py", "build/lib/x.py", "dist/x.py",
                "src/__pycache__/x.py", "node_modules/x.py", "pkg.egg-info/x.py", "src/pkg/notes.txt"):
        write(tmp_path, rel, BAD)
    write(tmp_path, "myenv/pyvenv.cfg", "home = /usr\n")
    write(tmp_path, "myenv/lib/site.py", BAD)
    found = lint_paths([str(tmp_path)], use_config=False)
    assert {Path(f.path).relative_to(tmp_path).as_posix() for f in found} == {"src/pkg/mod.py"}
    # an explicitly named file is checked even inside a skipped folder
    found = lint_paths([str(tmp_path / "build/lib/x.py")], use_config=False)
    assert found


def test_pyproject_config_found_by_walking_up(tmp_path, capsys):
    write(tmp_path, "pyproject.toml", textwrap.dedent("""
        [project]
        name = "demo"

        [tool.torchwise.lint]
        ignore = ["TW208"]
        exclude = ["legacy", "gen_*.py"]

        [tool.torchwise.lint.per-file-ignores]
        "tests/*" = ["TW401"]
    """))
    write(tmp_path, "src/deep/a.py", BAD)
    write(tmp_path, "legacy/old.py", BAD)
    write(tmp_path, "src/gen_table.py", BAD)
    write(tmp_path, "tests/test_a.py", BAD)
    found = lint_paths([str(tmp_path)])
    got = sorted((Path(f.path).relative_to(tmp_path).as_posix(), f.code) for f in found)
    assert got == [("src/deep/a.py", "TW401")]
    # from a nested folder the same config applies
    found = lint_paths([str(tmp_path / "src" / "deep")])
    assert [f.code for f in found] == ["TW401"]
    # the command line's --select replaces the config's select; --isolated drops the config
    code, out, _ = lint(capsys, "--select", "TW2", str(tmp_path / "src"))
    assert code == 0
    code, out, _ = lint(capsys, "--isolated", str(tmp_path / "src"))
    assert code == 1 and "TW208" in out


def test_config_select_and_errors(tmp_path, capsys):
    write(tmp_path, "pyproject.toml", '[tool.torchwise.lint]\nselect = ["TW2"]\n')
    f = write(tmp_path, "a.py", BAD)
    assert [x.code for x in lint_paths([str(f)])] == ["TW208"]
    clear_cache()
    write(tmp_path, "pyproject.toml", '[tool.torchwise.lint]\nselct = ["TW2"]\n')
    code, _, err = lint(capsys, str(f))
    assert code == 2 and "selct" in err
    clear_cache()
    write(tmp_path, "pyproject.toml", "[tool.torchwise.lint\n")
    code, _, err = lint(capsys, str(f))
    assert code == 2 and "invalid TOML" in err


def test_json_format(tmp_path, capsys):
    bad = write(tmp_path, "bad.py", BAD)
    code, out, _ = lint(capsys, "--isolated", "--format", "json", str(bad))
    data = json.loads(out)
    assert code == 1 and isinstance(data, list) and len(data) == 2
    for item in data:
        assert {"path", "line", "col", "end_line", "end_col", "code", "message", "fixable", "suggestion"} <= set(item)
        assert item["path"] == str(bad) and item["fixable"] is True
    code, out, _ = lint(capsys, "--isolated", "--format", "json", str(write(tmp_path, "c.py", CLEAN)))
    assert code == 0 and json.loads(out) == []


def test_sarif_format_is_valid_2_1_0(tmp_path, capsys):
    write(tmp_path, "bad.py", BAD + "def f(:\n")  # a syntax error: one TW000 result
    write(tmp_path, "ok.py", BAD)
    code, out, _ = lint(capsys, "--isolated", "--format", "sarif", str(tmp_path))
    log = json.loads(out)
    assert code == 1
    assert log["version"] == "2.1.0" and "sarif" in log["$schema"]
    assert isinstance(log["runs"], list) and len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] and isinstance(driver["rules"], list)
    ids = [r["id"] for r in driver["rules"]]
    assert len(ids) == len(set(ids))
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
    assert run["results"]
    codes = set()
    for result in run["results"]:
        codes.add(result["ruleId"])
        assert ids[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in ("none", "note", "warning", "error")
        assert result["message"]["text"]
        [loc] = result["locations"]
        phys = loc["physicalLocation"]
        assert phys["artifactLocation"]["uri"].startswith("file:///") and phys["artifactLocation"]["uri"].endswith(".py")
        region = phys["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert (region["endLine"], region["endColumn"]) >= (region["startLine"], region["startColumn"])
    assert codes == {"TW000", "TW401", "TW208"} and set(ids) == codes
    _validate_with_jsonschema_if_possible(log)


def _validate_with_jsonschema_if_possible(log):
    """Check the SARIF structure with jsonschema and a minimal hand-written schema of the
    required parts of SARIF 2.1.0 (the full schema is not available offline)."""
    try:
        import jsonschema
    except ImportError:
        return
    schema = {
        "type": "object",
        "required": ["version", "runs"],
        "properties": {
            "version": {"const": "2.1.0"},
            "runs": {"type": "array", "items": {
                "type": "object", "required": ["tool"],
                "properties": {
                    "tool": {"type": "object", "required": ["driver"], "properties": {
                        "driver": {"type": "object", "required": ["name"]}}},
                    "results": {"type": "array", "items": {
                        "type": "object", "required": ["message"],
                        "properties": {"message": {"type": "object", "anyOf": [{"required": ["text"]}, {"required": ["id"]}]},
                                       "level": {"enum": ["none", "note", "warning", "error"]},
                                       "ruleIndex": {"type": "integer", "minimum": -1}}}},
                }}},
        },
    }
    jsonschema.validate(log, schema)


def test_github_format(tmp_path, capsys):
    bad = write(tmp_path, "bad.py", BAD)
    _, out, _ = lint(capsys, "--isolated", "--format", "github", str(bad))
    lines = out.strip().splitlines()
    assert len(lines) == 2
    pat = re.compile(r"^::warning file=(?P<f>[^,]+),line=(\d+),col=(\d+),title=(TW\d{3})::(.+)$")
    for line in lines:
        m = pat.match(line)
        assert m, line
        assert m["f"] == str(bad).replace(":", "%3A").replace(",", "%2C")


def test_fix_writes_and_diff_does_not(tmp_path, capsys):
    f = write(tmp_path, "a.py", BAD)
    code, out, err = lint(capsys, "--isolated", "--diff", str(f))
    assert code == 1
    assert "-m.load_state_dict(torch.load('m.pt'))" in out and "+m.load_state_dict(torch.load('m.pt', weights_only=True))" in out
    assert f.read_text() == BAD
    code, out, err = lint(capsys, "--isolated", "--fix", str(f))
    assert code == 0 and "Fixed 2 findings" in err
    assert f.read_text() == "import torch\nm.load_state_dict(torch.load('m.pt', weights_only=True))\nopt.zero_grad(set_to_none=True)\n"
    code, out, _ = lint(capsys, "--isolated", "--diff", str(f))
    assert code == 0 and out == ""


def test_summary_says_what_it_counts_after_fixes(tmp_path, capsys):
    # two safe fixes, one finding without a fix: the lines must not read "2 fixes ... Found 1 finding"
    src = BAD + "import torch.nn as nn\nm = nn.DataParallel(net)\n"
    f = write(tmp_path, "a.py", src)
    code, out, err = lint(capsys, "--isolated", "--diff", str(f))
    assert err.strip() == "2 fixes would be applied to 1 file; 1 finding in 1 file would be left after them."
    assert "Found" not in err
    code, out, err = lint(capsys, "--isolated", "--fix", str(f))
    assert "Fixed 2 findings in 1 file." in err
    assert out.strip().splitlines()[-1] == "1 finding in 1 file left after the fixes."
    code, out, err = lint(capsys, "--isolated", str(f))
    assert out.strip().splitlines()[-1] == "Found 1 finding in 1 file."
    f.write_text(BAD)
    code, out, err = lint(capsys, "--isolated", "--diff", str(f))
    assert err.strip() == "2 fixes would be applied to 1 file; no findings would be left after them."


def test_fix_keeps_unfixable_findings_and_exit_1(tmp_path, capsys):
    f = write(tmp_path, "a.py", "import torch.nn as nn\nm = nn.DataParallel(net)\nimport torch\nnet.load_state_dict(torch.load(p))\n")
    code, out, _ = lint(capsys, "--isolated", "--fix", str(f))
    assert code == 1 and "TW201" in out and "TW401" not in out
    assert "weights_only=True" in f.read_text()


def test_stdin(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BAD.encode())))
    code, out, _ = lint(capsys, "--isolated", "--stdin-filename", "train.py", "-")
    assert code == 1 and out.startswith("train.py:2:19: TW401")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BAD.encode())))
    code, out, err = lint(capsys, "--isolated", "--fix", "-")
    assert code == 0 and out == "import torch\nm.load_state_dict(torch.load('m.pt', weights_only=True))\nopt.zero_grad(set_to_none=True)\n"


def test_undecodable_and_unparsable_files_are_reported_not_fatal(tmp_path, capsys):
    write(tmp_path, "good.py", BAD)
    (tmp_path / "binary.py").write_bytes(b"\x00\xff\xfe\x81 garbage")
    write(tmp_path, "broken.py", "def f(:\n")
    code, out, _ = lint(capsys, "--isolated", str(tmp_path))
    assert code == 1
    assert re.search(r"binary.py:1:1: TW000 (cannot decode|cannot parse|syntax error)", out)
    assert re.search(r"broken.py:1:\d+: TW000 syntax error", out)
    assert "good.py:2:19: TW401" in out


def test_parallel_and_serial_runs_agree(tmp_path):
    for i in range(24):
        write(tmp_path, f"m{i:02d}.py", BAD if i % 3 else CLEAN)
    serial = lint_paths([str(tmp_path)], use_config=False, jobs=1)
    parallel = lint_paths([str(tmp_path)], use_config=False, jobs=2)
    assert [f.format() for f in serial] == [f.format() for f in parallel]
    assert len(serial) == 16 * 2


def test_output_file(tmp_path, capsys):
    f = write(tmp_path, "a.py", BAD)
    report = tmp_path / "report.json"
    code, out, _ = lint(capsys, "--isolated", "--format", "json", "-o", str(report), str(f))
    assert code == 1 and out == "" and len(json.loads(report.read_text())) == 2


ROOT = Path(__file__).resolve().parents[2]


def test_lint_never_imports_torch(tmp_path):
    f = write(tmp_path, "a.py", BAD)
    script = textwrap.dedent(f"""
        import sys, argparse
        import torchwise.lint.cli as cli
        from torchwise.lint.rules import all_rules
        docs = [r.doc for r in all_rules()]
        parser = argparse.ArgumentParser()
        cli.add_arguments(parser)
        code = cli.run(parser.parse_args(["--isolated", "--format", "sarif", "-j", "1", {str(f)!r}]))
        assert code == 1, code
        bad = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
        assert not bad, bad
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr


def test_end_to_end_subprocess(run_cli, tmp_path):
    f = write(tmp_path, "a.py", BAD)
    r = run_cli("lint", "--isolated", str(f))
    assert r.returncode == 1 and "TW401" in r.stdout
    r = run_cli("lint", "--isolated", "-", input="import torch\nx = torch.load(p, weights_only=True)\n")
    assert r.returncode == 0, r.stdout + r.stderr
    r = run_cli("lint", "--select", "NOPE", str(f))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
