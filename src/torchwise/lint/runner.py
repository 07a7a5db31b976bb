"""Find the files to check and lint them, in parallel when that pays off."""

from __future__ import annotations

import gc
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from torchwise.core.errors import UsageError
from torchwise.lint.config import LintConfig, find_config
from torchwise.lint.core import SYNTAX_CODE, _check, decode, fix_source, resolve_codes, rules
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.findings import Finding
from torchwise.lint.facts import ProjectFacts
from torchwise.lint.project import scan

# Folders never entered while recursing (explicitly named files are still checked).
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "__pycache__", "build", "dist", ".tox", ".nox",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", "node_modules", ".eggs", "site-packages",
    ".ipynb_checkpoints", "__pypackages__",
})
PARALLEL_MIN_FILES = 16  # below this a process pool costs more than it saves (see BENCHMARKS.md)


@dataclass
class FileJob:
    path: str  # where to read it ("-" for standard input)
    display: str  # how to name it in reports
    codes: frozenset[str]
    fix: bool = False
    source: bytes | None = None  # preloaded content (standard input)
    problem: str | None = None  # why this path cannot be read (reported as a TW000 finding)
    unsafe: bool = False  # with fix: also apply fixes that may change behaviour (--unsafe-fixes)
    project: str | None = None  # key of its project's facts (set by run_jobs; None: file-only)
    base: str | None = None  # the folder given to lint that it was found under (None: named itself)


@dataclass
class FileResult:
    display: str
    path: str
    findings: list[Finding]
    original: str | None = None
    fixed: str | None = None  # new text when fixes changed it
    encoding: str = "utf-8"
    applied: int = 0
    error: str | None = None


@dataclass
class Selection:
    """Command-line choices; the config of each file adds to them."""

    select: Sequence[str] | None = None
    ignore: Sequence[str] = ()
    use_config: bool = True
    config: LintConfig | None = None  # an explicit config overrides discovery
    _cache: dict = field(default_factory=dict)

    def config_for(self, path: Path) -> LintConfig:
        if self.config is not None:
            return self.config
        if not self.use_config:
            return LintConfig()
        return find_config(path.parent if path.suffix or path.is_file() else path)

    def codes_for(self, path: Path, config: LintConfig) -> frozenset[str]:
        select = self.select if self.select else config.select
        ignore = tuple(self.ignore) + tuple(config.ignore) + config.ignored_for(path)
        key = (tuple(select) if select else None, ignore)
        found = self._cache.get(key)
        if found is None:
            found = resolve_codes(select, ignore)
            self._cache[key] = found
        return found


def _is_venv(dirpath: str) -> bool:
    return os.path.isfile(os.path.join(dirpath, "pyvenv.cfg"))


def discover(paths: Iterable[str], selection: Selection, fix: bool = False) -> list[FileJob]:
    """Jobs for every Python file under ``paths`` (files, folders, or ``-`` for stdin).

    Only regular files are read (a FIFO or device named ``*.py`` would block or never end); such
    paths, and folders that cannot be listed, become jobs that report the problem.
    """
    jobs: list[FileJob] = []
    seen: set[str] = set()
    for raw in paths:
        if raw == "-":
            continue
        p = Path(raw)
        start = len(jobs)
        if p.is_dir():
            _walk(p, jobs, seen, selection, fix)
            for job in jobs[start:]:
                job.base = str(p)
        elif p.exists():
            _add(jobs, seen, p, selection, fix)
        else:
            raise UsageError(f"no such file or directory: {raw}")
    return jobs


def _walk(root: Path, jobs: list[FileJob], seen: set[str], selection: Selection, fix: bool) -> None:
    def unreadable(exc: OSError) -> None:
        where = exc.filename or str(root)
        reason = (exc.strerror or type(exc).__name__).lower()
        _problem(jobs, Path(where), f"cannot read the folder ({reason}): its files were not checked")

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
        cfg_dir = selection.config_for(Path(dirpath) / "x.py")
        keep = []
        for d in sorted(dirnames):
            full = os.path.join(dirpath, d)
            if d in SKIP_DIRS or d.endswith(".egg-info") or _is_venv(full) or cfg_dir.excludes(Path(full)):
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            if name.endswith(".py"):
                _add(jobs, seen, Path(dirpath) / name, selection, fix)


def _kind(path: Path) -> str | None:
    """``None`` for a regular file (after links), else what it is instead."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return f"cannot be read ({(exc.strerror or type(exc).__name__).lower()})"
    if stat.S_ISREG(mode):
        return None
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return "not a regular file (" + next((k for test, k in kinds if test(mode)), "not a file") + "): not read"


def _problem(jobs: list[FileJob], path: Path, message: str) -> None:
    display = os.path.normpath(str(path))
    jobs.append(FileJob(str(path), display, frozenset(), problem=message))


def _add(jobs: list[FileJob], seen: set[str], path: Path, selection: Selection, fix: bool) -> None:
    key = os.path.abspath(path)
    if key in seen:
        return
    seen.add(key)
    config = selection.config_for(path)
    if config.excludes(path):
        return
    kind = _kind(path)
    if kind is not None:
        _problem(jobs, path, kind)
        return
    display = os.path.normpath(str(path))
    jobs.append(FileJob(str(path), display, selection.codes_for(path, config), fix))


# Set by the lint command (collect_per_file): free each file's syntax tree as soon as it is done.
_COLLECT_PER_FILE = False


def collect_per_file() -> None:
    """For the lint command's own process (and the workers it forks): a file's syntax tree, with
    its parent links, is cyclic garbage once the file is done. Collect it then, once per file,
    instead of letting the cyclic collector run every 700 allocations while a file is analysed
    and walk the trees still in use (measured in BENCHMARKS.md, lint section)."""
    global _COLLECT_PER_FILE
    _COLLECT_PER_FILE = True
    gc.freeze()  # what was imported before the run: never garbage
    gc.set_threshold(100_000, 50, 50)  # Python's default is (700, 10, 10)


def lint_job(job: FileJob) -> FileResult:
    """Lint (and with ``job.fix``, fix in memory) one file; never raises for bad content."""
    try:
        return _lint_job(job)
    finally:
        if _COLLECT_PER_FILE:
            gc.collect(0)  # the youngest generation: what this file allocated


def _lint_job(job: FileJob) -> FileResult:
    if job.problem is not None:
        finding = Finding(job.display, 1, 1, SYNTAX_CODE, job.problem, 1, 2)
        return FileResult(job.display, job.path, [finding], error=job.problem)
    data = job.source
    if data is None:
        try:
            data = _read_regular(job.path)
        except OSError as exc:
            msg = f"cannot read the file: {exc.strerror or exc}"
            return FileResult(job.display, job.path, [Finding(job.display, 1, 1, SYNTAX_CODE, msg, 1, 2)], error=msg)
    decoded = decode(data)
    if decoded.text is None:
        findings = [Finding(job.display, 1, 1, SYNTAX_CODE, decoded.problem or "cannot decode", 1, 2)] if SYNTAX_CODE in job.codes else []
        return FileResult(job.display, job.path, findings)
    text = decoded.text
    project = _PROJECTS.get(job.project) if job.project is not None else None
    if job.fix:
        new, findings, applied = fix_source(text, job.display, job.codes, unsafe=job.unsafe, project=project)
        return FileResult(job.display, job.path, findings, text, new if new != text else None, decoded.encoding, applied)
    findings, _ = _check(text, job.display, job.codes, project)
    return FileResult(job.display, job.path, findings, None, None, decoded.encoding)


def _read_regular(path: str) -> bytes:
    """The bytes of a regular file; never blocks on a FIFO that appeared after discovery."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file", path)
        return fh.read()


def cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def default_workers() -> int:
    """Every usable core. (Measured in BENCHMARKS.md: on an idle 2-core machine a pool of 2 is
    about 1.35x faster than one process; on a fully loaded one it is about 10% slower, which is why
    small runs stay in one process and ``--jobs 1`` is there.)"""
    return cpu_count()


# Project facts by project key, for the jobs of the current run (set in this process by run_jobs,
# in pool workers by their initializer).
_PROJECTS: dict[str, ProjectFacts] = {}
# The rules that consult project facts: when none of them is selected the first pass is skipped.
PROJECT_CODES = frozenset({"TW103", "TW104", "TW109", "TW201", "TW202", "TW203", "TW204", "TW205", "TW206", "TW207", "TW209", "TW215", "TW217",
                           "TW301", "TW302", "TW303", "TW305", "TW401", "TW402", "TW403", "TW404", "TW405", "TW406", "TW502", "TW513"})


def _project_codes() -> frozenset[str]:
    """:data:`PROJECT_CODES` and every per-call rule: it needs the project to tell code that never runs."""
    return PROJECT_CODES | {r.code for r in rules() if r.per_call}


def _set_projects(projects: dict[str, ProjectFacts]) -> None:
    global _PROJECTS
    _PROJECTS = projects


def project_facts(jobs: list[FileJob]) -> dict[str, ProjectFacts]:
    """Group the jobs' files by project (the folder given to lint they were found under; a file
    named on its own is its own project), set each job's ``project`` key and scan each project
    once. Unreadable files are skipped here (their job reports the problem)."""
    by_root: dict[str, list[FileJob]] = {}
    codes = _project_codes()
    for job in jobs:
        if job.problem is not None or job.source is not None or not (job.codes & codes):
            continue
        root = os.path.abspath(job.base if job.base is not None else job.path)
        job.project = root
        by_root.setdefault(root, []).append(job)
    out: dict[str, ProjectFacts] = {}
    for root, members in by_root.items():
        facts = scan(_texts(members))
        facts.root = root
        out[root] = facts
    return out


def _texts(jobs: list[FileJob]) -> Iterable[tuple[str, str]]:
    for job in jobs:
        try:
            data = _read_regular(job.path)
        except OSError:
            continue
        text = decode(data).text
        if text is not None:
            yield job.display, text


_IMPORT_LINE = lazy_compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+([\w, \t()]+)|import[ \t]+([\w., \t]+))", re.M)


def _imported_names(texts: Iterable[tuple[str, str]]) -> set[str]:
    """The last parts of every module or name the texts import (``engine`` for ``from pkg import engine``)."""
    out: set[str] = set()
    for _, text in texts:
        for m in _IMPORT_LINE.finditer(text):
            if m.group(1):
                out.add(m.group(1).rsplit(".", 1)[-1])
                out.update(n.strip(" \t()") for n in m.group(2).split(","))
            else:
                out.update(part.split(" as ")[0].strip().rsplit(".", 1)[-1] for part in m.group(3).split(","))
    return out


def _imported_first(jobs: list[FileJob]) -> list[int]:
    """The order one process lints the jobs in: the project's modules that other files import
    first. Rules that follow a function to its callers (TW204) or read the checkpoints other files
    write (TW402) parse those files, and a file parsed that way before its own turn is not parsed
    twice. Results keep the jobs' order."""
    imported: dict[str, set[str]] = {}

    def rank(i: int) -> int:
        job = jobs[i]
        facts = _PROJECTS.get(job.project) if job.project is not None else None
        if facts is None or not job.codes & {"TW204", "TW402"}:
            return 1
        names = imported.get(job.project)  # type: ignore[arg-type]
        if names is None:
            names = imported[job.project] = _imported_names(facts.files)  # type: ignore[index]
        return 0 if os.path.splitext(os.path.basename(job.display))[0] in names else 1

    return sorted(range(len(jobs)), key=rank)


def run_jobs(jobs: list[FileJob], workers: int | None = None) -> list[FileResult]:
    """Results in job order; a process pool on all cores when there are enough files. A first
    pass collects the project facts the rules consult (:func:`project_facts`)."""
    rules()  # import the rules once, before forking, so every worker inherits them
    _set_projects(project_facts(jobs))
    if not workers:
        workers = default_workers() if len(jobs) >= PARALLEL_MIN_FILES else 1
    if workers <= 1 or len(jobs) < PARALLEL_MIN_FILES:
        results: list[FileResult | None] = [None] * len(jobs)
        for i in _imported_first(jobs):
            results[i] = lint_job(jobs[i])
        return results  # type: ignore[return-value]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    method = "fork" if sys.platform.startswith("linux") else None
    ctx = multiprocessing.get_context(method)
    workers = min(workers, len(jobs))
    chunk = max(1, len(jobs) // (workers * 8))
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_set_projects, initargs=(_PROJECTS,)) as pool:
            return list(pool.map(lint_job, jobs, chunksize=chunk))
    except (OSError, RuntimeError, ImportError):  # no process support here: do it serially
        return [lint_job(j) for j in jobs]
