"""Every Python example in the README runs as written.

Blocks of one README section run in order in one process (a later block may use names from an
earlier one). A block whose first line is ``# name.py`` is a file the section's other blocks use:
it is written, not run. The working folder is a scratch folder with ``examples/`` and ``src/``
linked in, as if the reader were at the repository root.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILE_BLOCK = re.compile(r"#\s*([\w./-]+\.py)\s*$")


def _sections() -> dict[str, list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    sections: dict[str, list[str]] = {}
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        title = part.splitlines()[0].strip()
        blocks = re.findall(r"```python\n(.*?)```", part, re.S)
        if blocks:
            sections[title] = blocks
    return sections


SECTIONS = _sections()


def test_the_readme_has_python_examples():
    assert sum(len(b) for b in SECTIONS.values()) >= 15


@pytest.mark.slow
@pytest.mark.parametrize("title", sorted(SECTIONS))
def test_readme_section_examples_run(title, tmp_path):
    for name in ("examples", "src"):
        (tmp_path / name).symlink_to(ROOT / name)
    code = []
    for block in SECTIONS[title]:
        first = block.lstrip().splitlines()[0]
        match = FILE_BLOCK.fullmatch(first.strip())
        if match:
            (tmp_path / match.group(1)).write_text(block, encoding="utf-8")
        else:
            code.append(block)
    script = tmp_path / "readme_section.py"
    script.write_text("\n".join(code), encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=240, env=env)
    tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
    assert result.returncode == 0, f"README section {title!r} failed:\n{tail}"
