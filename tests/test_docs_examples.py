"""Every example in README.md and docs/**/*.md runs as written, so examples cannot rot.

A page's blocks run in order in one process (see tests/docs_examples.py for what runs and how a
block is marked not to). One server process imports torch once and forks a child per page.
Set TORCHWISE_DOCS_SLOW=1 to run the blocks marked slow too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from docs_examples import ROOT, PageError, parse_blocks, run_forked, runs, shell_commands

PAGES = sorted([ROOT / "README.md", *(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts)])
SLOW = os.environ.get("TORCHWISE_DOCS_SLOW") == "1"
RUNNABLE = ("python", "py", "bash", "sh", "shell")


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _has_runnable(page: Path) -> bool:
    return any(runs(b, slow=True) or b.title for b in parse_blocks(page.read_text(encoding="utf-8"), _page_id(page)))


class _Server:
    def __init__(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("docs_examples.py")), "--serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        ready = json.loads(self.proc.stdout.readline() or "{}")
        assert ready.get("ready"), "the docs example server did not start"

    def run(self, page: Path, workdir: Path, timeout: float = 240.0) -> dict:
        self.proc.stdin.write(json.dumps({"page": str(page), "workdir": str(workdir), "slow": SLOW, "timeout": timeout}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def server():
    srv = _Server()
    yield srv
    srv.close()


def test_every_page_parses_and_the_docs_have_examples():
    total = 0
    for page in PAGES:
        blocks = parse_blocks(page.read_text(encoding="utf-8"), _page_id(page))
        total += sum(b.lang in ("python", "py") and not b.title for b in blocks)
    assert total >= 30, total


def test_only_runnable_blocks_carry_markers():
    for page in PAGES:
        for b in parse_blocks(page.read_text(encoding="utf-8"), _page_id(page)):
            if b.marker:
                assert b.lang in RUNNABLE or b.title, f"{b.where}: a docs-test marker on a ```{b.lang} block, which never runs"


@pytest.mark.parametrize("page", [p for p in PAGES if _has_runnable(p)], ids=_page_id)
def test_page_examples_run(page, server, tmp_path):
    result = server.run(page, tmp_path)
    assert result["ok"], f"{_page_id(page)} failed:\n{result.get('error', '')}\n--- output (tail) ---\n{result.get('output', '')}"


# --- the runner itself: it must catch what it is there to catch ---------------------------------------


def _page(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    (tmp_path / "work").mkdir()
    return page


def test_markers_need_a_reason_and_a_known_kind():
    with pytest.raises(PageError, match="needs a reason"):
        parse_blocks("<!-- docs-test: skip -->\n```python\nx = 1\n```\n")
    with pytest.raises(PageError, match="unknown docs-test marker"):
        parse_blocks("<!-- docs-test: later: soon -->\n```python\nx = 1\n```\n")
    with pytest.raises(PageError, match="never closed"):
        parse_blocks("```python\nx = 1\n")
    (block,) = parse_blocks("text\n<!-- docs-test: slow: trains for a minute -->\n```bash\ntorchwise env\n```\n")
    assert (block.marker, block.reason, block.line, block.lang) == ("slow", "trains for a minute", 4, "bash")
    assert not runs(block, slow=False) and runs(block, slow=True)


def test_shell_commands_join_continuations_and_drop_comments():
    code = "# a comment\ntorchwise lint \\\n  src/ --diff   # show fixes\n\npip install x\n"
    assert shell_commands(code) == ["torchwise lint    src/ --diff   # show fixes", "pip install x"]


def test_the_runner_reports_a_failing_block_with_its_line(tmp_path):
    page = _page(tmp_path, "# t\n\n```python\nx = 41\n```\n\n```python\nassert x == 42, 'x is wrong'\n```\n")
    result = run_forked(page, tmp_path / "work", timeout=60)
    assert not result["ok"] and "x is wrong" in result["error"] and "page.md\", line 8" in result["error"]


def test_the_runner_shares_a_namespace_writes_titled_files_and_skips_marked_blocks(tmp_path):
    page = _page(tmp_path, (
        '```python title="helper.py"\nVALUE = 7\n```\n\n'
        "```python\nfrom helper import VALUE\n```\n\n"
        "```python\nimport helper\nassert helper.VALUE == 7\n```\n\n"
        "<!-- docs-test: skip: shows a failure on purpose -->\n```python\nraise SystemExit(3)\n```\n\n"
        "```bash\npip install nothing-at-all   # shown, not run\n```\n"
    ))
    result = run_forked(page, tmp_path / "work", timeout=60)
    assert result["ok"], result
    assert result["done"] == {"python": 2, "bash": 1, "files": 1, "skipped": 1}


def test_the_runner_fails_on_a_torchwise_command_that_fails(tmp_path):
    page = _page(tmp_path, "```bash\ntorchwise rule TW9999\n```\n")
    result = run_forked(page, tmp_path / "work", timeout=60)
    assert not result["ok"] and "exited with status 2" in result["error"]
    page.write_text("```bash\ntorchwise rules --category reproducibility | grep TW303\n```\n", encoding="utf-8")
    assert run_forked(page, tmp_path / "work", timeout=60)["ok"]  # a pipeline runs through bash
    page.write_text("```bash\ntorchwise rules --category reproducibility | grep TW999\n```\n", encoding="utf-8")
    result = run_forked(page, tmp_path / "work", timeout=60)
    assert not result["ok"] and "exited with status 1" in result["error"]
