"""Lint public projects and measure precision and recall: every finding with ``file:line`` and its
source line, grouped by rule, so a person can judge each one; with a judgement file, precision
and recall per rule, over all rules and without the bulk rules; with ``--recall``, recall on the
tests' recall corpus (the code shapes every rule must find).

    python benchmarks/lint_corpus.py /tmp/corpus/nanoGPT
    python benchmarks/lint_corpus.py /tmp/corpus/timm --select TW2 --context 2
    python benchmarks/lint_corpus.py /tmp/corpus/* --summary      # counts per rule only
    python benchmarks/lint_corpus.py /tmp/corpus/* --judged judgements.tsv
    python benchmarks/lint_corpus.py --recall

A judgement file has one line per judged finding or known miss, tab-separated:
``path<TAB>line<TAB>code<TAB>verdict[<TAB>note]``, where ``path`` is as lint prints it (the
checkout folder's name first), and ``verdict`` is ``true`` (the code does what the rule says and
the advice is right), ``false`` (it does not, or the advice does not apply) or ``missed`` (a
pitfall the rule covers, found by reading the file, that lint should report there). Lines
starting with ``#`` are comments. Precision = true / (true + false) over the judged findings;
recall = true / (true + missed), where every known pitfall lint does not report counts as
missed: the ``missed`` lines, and ``true`` lines of findings this run no longer reports (so the
same file measures an older or newer version of lint against the same known pitfalls). Findings
nobody judged yet are counted and listed apart, so a change that adds findings shows what needs
judging. ``TW000``, lint's notice that a file cannot be parsed (Python 2), belongs to no catalog
rule and counts in no figure.

Checkouts are read only; nothing is imported or executed. The numbers measured this way are
recorded in BENCHMARKS.md (projects, commits, and the judged counts).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from torchwise.lint import lint_paths, lint_source  # noqa: E402

# Rules that report many similar, mechanical findings (precision is high and would hide the rest).
BULK = frozenset({"TW205", "TW513", "TW209", "TW401"})
SYNTAX = "TW000"  # "this file cannot be parsed": reported by lint, counted by no figure here


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


Key = tuple[str, int, str]  # (path as lint prints it, line, code)


def read_judgements(path: Path) -> dict[Key, str]:
    """``(path, line, code) -> verdict`` from a judgement file (see the module doc)."""
    out: dict[Key, str] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        parts = raw.split("\t")
        if len(parts) < 4 or parts[3] not in ("true", "false", "missed") or not parts[1].isdigit():
            sys.exit(f"{path}:{number}: expected path<TAB>line<TAB>code<TAB>true|false|missed, got {raw!r}")
        out[(parts[0], int(parts[1]), parts[2])] = parts[3]
    return out


@dataclass
class Tally:
    found: int = 0
    true: int = 0
    false: int = 0
    unjudged: int = 0
    missed: int = 0
    unjudged_keys: list[Key] = field(default_factory=list)

    def add(self, other: "Tally") -> None:
        for name in ("found", "true", "false", "unjudged", "missed"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def precision(self) -> str:
        judged = self.true + self.false
        return f"{100 * self.true / judged:.1f}%" if judged else "-"

    def recall(self) -> str:
        expected = self.true + self.missed
        return f"{self.true / expected:.2f}" if expected else "-"


def tally(found: set[Key], judged: dict[Key, str]) -> dict[str, Tally]:
    """Per rule: findings, judged true/false, unjudged, and judged misses lint does not report."""
    rules: dict[str, Tally] = defaultdict(Tally)
    for key in found:
        if key[2] == SYNTAX:
            continue  # a file lint cannot parse (Python 2): a notice, not a finding of any catalog rule
        t = rules[key[2]]
        t.found += 1
        verdict = judged.get(key)
        if verdict == "true" or verdict == "missed":  # a miss now found counts as found and true
            t.true += 1
        elif verdict == "false":
            t.false += 1
        else:
            t.unjudged += 1
            t.unjudged_keys.append(key)
    for key, verdict in judged.items():
        if verdict in ("true", "missed") and key not in found:
            rules[key[2]].missed += 1  # a known pitfall (a miss, or a true finding of another run) not reported
    return rules


def print_table(rules: dict[str, Tally]) -> None:
    print(f"{'rule':7s} {'found':>6s} {'true':>5s} {'false':>6s} {'unjudged':>9s} {'missed':>7s} {'precision':>10s} {'recall':>7s}")
    for code in sorted(rules):
        t = rules[code]
        print(f"{code:7s} {t.found:6d} {t.true:5d} {t.false:6d} {t.unjudged:9d} {t.missed:7d} {t.precision():>10s} {t.recall():>7s}")
    for label, keep in (("all rules", lambda c: True), ("without bulk", lambda c: c not in BULK)):
        total = Tally()
        for code, t in rules.items():
            if keep(code):
                total.add(t)
        print(f"{label:14s} found {total.found}, judged true {total.true}, false {total.false}, unjudged {total.unjudged}, "
              f"missed {total.missed}: precision {total.precision()}, recall {total.recall()}")
    print(f"(bulk rules: {', '.join(sorted(BULK))})")


def recall_corpus() -> int:
    """Recall per rule on the tests' recall corpus (``tests/lint/recall_corpus.py`` and the
    positive cases of ``tests/lint/lint_cases.py``); look-alikes that are reported are counted
    as false findings."""
    import tempfile

    sys.path.insert(0, str(ROOT / "tests" / "lint"))
    from lint_cases import POSITIVE
    from recall_corpus import FIND, PROJECTS, QUIET

    expected: dict[str, int] = defaultdict(int)
    hit: dict[str, int] = defaultdict(int)
    loud: dict[str, int] = defaultdict(int)
    cases = [(code, src, line, "snippet.py") for code, items in POSITIVE.items() for src, line in items]
    cases += [(s.code, s.source, s.line, s.path) for s in FIND]
    for code, src, line, path in cases:
        expected[code] += 1
        lines = [f.line for f in lint_source(src, path, select=[code])]
        hit[code] += (line in lines) if line is not None else bool(lines)
    for s in QUIET:
        loud[s.code] += bool(lint_source(s.source, s.path, select=[s.code]))
    for project in PROJECTS:
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in project.files.items():
                target = Path(tmp) / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
            found = {(str(Path(f.path).relative_to(tmp)), f.line)
                     for f in lint_paths([tmp], select=[project.code], use_config=False, jobs=1)}
        wanted = set(project.expect)
        expected[project.code] += len(wanted)
        hit[project.code] += len(found & wanted)
        loud[project.code] += len(found - wanted)
    print(f"{'rule':7s} {'shapes':>7s} {'found':>6s} {'recall':>7s} {'quiet shapes reported':>22s}")
    for code in sorted(set(expected) | set(loud)):
        n = expected[code]
        print(f"{code:7s} {n:7d} {hit[code]:6d} {hit[code] / n if n else 0:7.2f} {loud[code]:22d}")
    total, found = sum(expected.values()), sum(hit.values())
    print(f"all: {found} of {total} shapes found (recall {found / total:.3f}); "
          f"{sum(loud.values())} of {len(QUIET) + len(PROJECTS)} look-alike cases reported")
    return 0 if found == total and not any(loud.values()) else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="*", type=Path)
    ap.add_argument("--select", default=None, help="codes or prefixes, comma-separated")
    ap.add_argument("--context", type=int, default=0, help="lines of source shown before and after")
    ap.add_argument("--summary", action="store_true", help="only the number of findings per rule and project")
    ap.add_argument("--judged", type=Path, default=None, help="judgement file: precision and recall per rule")
    ap.add_argument("--recall", action="store_true", help="recall on the tests' recall corpus")
    args = ap.parse_args(argv)
    if args.recall:
        return recall_corpus()
    judged = read_judgements(args.judged) if args.judged else {}
    cache: dict[str, list[str]] = {}
    found: set[Key] = set()
    where: dict[str, str] = {}  # the path judgements use -> the file on disk
    for root in args.checkouts:
        if not root.is_dir():
            print(f"skip {root}: not a folder", file=sys.stderr)
            continue
        findings = lint_paths([str(root)], select=args.select, use_config=False, jobs=1)
        for f in findings:
            name = Path(f.path).resolve().relative_to(root.resolve().parent).as_posix()
            where[name] = f.path
            found.add((name, f.line, f.code))
        if args.judged is None:
            report(root, findings, args, cache)
    if args.judged is not None:
        names = {r.resolve().name for r in args.checkouts}
        rules = tally(found, {k: v for k, v in judged.items() if k[0].split("/", 1)[0] in names})
        print_table(rules)
        for t in rules.values():
            for path, line, code in sorted(t.unjudged_keys):
                print(f"unjudged\t{path}\t{line}\t{code}\t{source_line(where[path], line, cache).strip()[:100]}")
    return 0


def report(root: Path, findings: list, args: argparse.Namespace, cache: dict[str, list[str]]) -> None:
    """Every finding of one checkout, grouped by rule, with its source line (or only counts)."""
    by_rule: dict[str, list] = defaultdict(list)
    for f in findings:
        by_rule[f.code].append(f)
    files = sum(1 for _ in root.rglob("*.py"))
    print(f"=== {root.name} (commit {commit_of(root)}, {files} .py files): {len(findings)} findings")
    for code in sorted(by_rule):
        items = by_rule[code]
        print(f"--- {code}: {len(items)}")
        if args.summary:
            continue
        for f in items:
            print(f"{f.path}:{f.line}: {f.message}")
            for n in range(max(1, f.line - args.context), f.line + args.context + 1):
                print(f"   {'>' if n == f.line else ' '}{n:5d} | {source_line(f.path, n, cache)}")


if __name__ == "__main__":
    raise SystemExit(main())
