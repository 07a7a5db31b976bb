"""Regression corpus: lint a checkout of some public project and print every finding, grouped by
rule, with ``file:line`` and the source line, so a person can judge each one true or false.

    python benchmarks/lint_corpus.py /tmp/corpus/nanoGPT
    python benchmarks/lint_corpus.py /tmp/corpus/timm --select TW2 --context 2
    python benchmarks/lint_corpus.py /tmp/corpus/* --summary      # counts per rule only

Checkouts are read only; nothing is imported or executed. Per-rule precision measured this way is
recorded in BENCHMARKS.md (projects, commits, and the judged counts).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from torchwise.lint import lint_paths  # noqa: E402


def commit_of(path: Path) -> str:
    """The checkout's git commit: from git, or a ``.git-commit`` file beside an extracted archive."""
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    marker = path / ".git-commit"  # written when a snapshot was extracted with `git archive`
    return marker.read_text().strip()[:12] if marker.is_file() else "-"


def source_line(path: str, line: int, cache: dict[str, list[str]]) -> str:
    lines = cache.get(path)
    if lines is None:
        try:
            lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            lines = []
        cache[path] = lines
    return lines[line - 1] if 0 < line <= len(lines) else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--select", default=None, help="codes or prefixes, comma-separated")
    ap.add_argument("--context", type=int, default=0, help="lines of source shown before and after")
    ap.add_argument("--summary", action="store_true", help="only the number of findings per rule and project")
    args = ap.parse_args(argv)
    cache: dict[str, list[str]] = {}
    totals: dict[str, int] = defaultdict(int)
    for root in args.checkouts:
        if not root.is_dir():
            print(f"skip {root}: not a folder", file=sys.stderr)
            continue
        files = [p for p in root.rglob("*.py")]
        findings = lint_paths([str(root)], select=args.select, use_config=False, jobs=1)
        by_rule: dict[str, list] = defaultdict(list)
        for f in findings:
            by_rule[f.code].append(f)
        print(f"=== {root.name} (commit {commit_of(root)}, {len(files)} .py files): {len(findings)} findings")
        for code in sorted(by_rule):
            items = by_rule[code]
            totals[code] += len(items)
            print(f"--- {code}: {len(items)}")
            if args.summary:
                continue
            for f in items:
                print(f"{f.path}:{f.line}: {f.message}")
                lo, hi = f.line - args.context, f.line + args.context
                for n in range(max(1, lo), hi + 1):
                    mark = ">" if n == f.line else " "
                    print(f"   {mark}{n:5d} | {source_line(f.path, n, cache)}")
    print("=== totals: " + ", ".join(f"{c} {n}" for c, n in sorted(totals.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
