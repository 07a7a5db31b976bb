"""How well ``torchwise doctor`` names the cause of real-world training bugs (issue 19, item 4).

    python benchmarks/doctor_bugs.py                                   # every pair, both twins
    python benchmarks/doctor_bugs.py --only zero_grad_mlp,lr_high_adam --jobs 1
    python benchmarks/doctor_bugs.py --public /tmp/doctor-public --mirror /work/.mirror --json out.json
    python benchmarks/doctor_bugs.py --python /work/wt-doctor/.venv/bin/python    # another checkout
    python benchmarks/doctor_bugs.py --map eval_in_train_mode=TW139               # a class's new code

Every buggy and fixed twin of ``doctor_bugs/manifest.json`` (and, with ``--public``, every clean public
script of ``doctor_bugs/public.json``) runs as a user runs it, ``torchwise doctor --json -- python
SCRIPT`` (the default run: 200 optimizer steps), in a fresh temporary folder, ``--jobs`` at a time,
each with ``--threads`` torch threads (default: cores // jobs) and a time limit. Scored:

- a buggy twin: ``found-first`` (an expected code at warning/error severity, and it is the report's
  first finding), ``found``, ``hint-only`` (the expected code, but only as a hint), ``wrong-cause``
  (other warnings/errors instead), ``symptom-only`` (only the pair's ``also_ok`` codes), ``missed``
  (no warning/error), ``unmapped`` (the class has no catalog code yet: pass ``--map CLASS=CODE``),
  ``run-error`` (no report: timeout, memory limit or crash);
- a fixed twin or clean script: a false alarm is any warning/error finding.

A pair's ``also_ok`` codes are true secondary findings, symptoms of its bug (e.g. a diverging loss or
dead ReLUs after a huge learning rate): they do not make a buggy twin's result a wrong cause.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _doctor_bugs_public as public  # noqa: E402
from _doctor_bugs_score import render, render_plain, score  # noqa: E402

HERE = Path(__file__).resolve().parent / "doctor_bugs"


@dataclass
class Job:
    kind: str  # buggy | fixed | clean
    id: str
    cls: str | None
    script: Path | None = None  # corpus scripts; public ones are prepared in the run folder
    args: list[str] = field(default_factory=list)
    entry: dict[str, Any] | None = None  # the public.json entry
    timeout: float = 300.0


@dataclass
class Run:
    kind: str
    id: str
    cls: str | None
    seconds: float
    exit_code: int | None
    findings: list[dict[str, Any]]
    failure: str | None
    measured: dict[str, Any]
    error: str | None
    output_tail: str


# ----------------------------------------------------------------------------- running


def doctor_command(args: argparse.Namespace, script: Path, script_args: list[str], extra: list[str]) -> list[str]:
    base = [args.torchwise] if args.torchwise else [args.python, "-m", "torchwise"]
    return [*base, "doctor", "--json", *args.doctor_arg, *extra, "--", "python", str(script), *script_args]


def run_job(job: Job, args: argparse.Namespace) -> Run:
    """One doctor run in a fresh temporary folder (removed afterwards)."""
    work = Path(tempfile.mkdtemp(prefix=f"doctor-bugs-{job.id}-"))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if args.threads:
        env.update(OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    extra: list[str] = []
    t0 = time.perf_counter()
    try:
        if job.entry is not None:
            script = public.prepare(job.entry, args.public, work)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(public.FAKEVISION), env.get("PYTHONPATH")]))
            extra = list(job.entry.get("doctor_args", []))
        else:
            script = job.script
        cwd = script.parent if job.entry is not None else work  # corpus scripts write nothing; run them aside
        command = [args.python, str(script), *job.args] if args.plain else doctor_command(args, script, job.args, extra)
        return _execute(job, command, cwd, env, t0, args.max_rss_gb * 2**30, args.plain)
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        return Run(job.kind, job.id, job.cls, time.perf_counter() - t0, None, [], None, {}, f"setup failed: {exc}", "")
    finally:
        shutil.rmtree(work, ignore_errors=True)


LIVE: set[int] = set()  # process groups of the doctor runs under way (killed on Ctrl-C)


def _execute(job: Job, command: list[str], cwd: Path, env: dict[str, str], t0: float, max_rss: float, plain: bool = False) -> Run:
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    LIVE.add(proc.pid)
    error = None
    try:
        while True:
            try:
                out, err = proc.communicate(timeout=min(2.0, job.timeout / 4))  # output read so far is kept across retries
                break
            except subprocess.TimeoutExpired:
                rss = _group_rss(proc.pid)
                if rss > max_rss:
                    error = f"memory limit: {rss / 2**30:.1f} GiB resident (over {max_rss / 2**30:.1f})"
                elif time.perf_counter() - t0 > job.timeout:
                    error = f"timeout after {job.timeout:.0f} s"
                if error:
                    _kill_group(proc.pid)  # the doctor and the script it started
                    out, err = proc.communicate()
                    break
    finally:
        LIVE.discard(proc.pid)
    if plain:  # the script alone: its exit status and its last "final: ..." line
        finals = [line for line in out.splitlines() if line.startswith("final:")]
        measured = {"exit_status": proc.returncode, "final": finals[-1][6:].strip() if finals else ""}
        return Run(job.kind, job.id, job.cls, time.perf_counter() - t0, proc.returncode, [], None, measured, error, (err or "")[-1500:])
    report = _parse_report(out)
    if report is None and error is None:
        error = f"no report (exit {proc.returncode})"
    report = report or {}
    findings = [{k: f.get(k) for k in ("code", "severity", "message", "where")} for f in report.get("findings", [])]
    return Run(job.kind, job.id, job.cls, time.perf_counter() - t0, proc.returncode, findings, report.get("failure"),
               report.get("measured", {}), error, (err or "")[-1500:])


def _group_rss(pgid: int) -> float:
    """Resident bytes of every process in group ``pgid`` (Linux /proc; 0 elsewhere)."""
    total = 0
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return total


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _parse_report(stdout: str) -> dict[str, Any] | None:
    start = stdout.find("{")
    if start < 0:
        return None
    try:
        return json.loads(stdout[start:])
    except json.JSONDecodeError:
        return None


def corpus_jobs(manifest: dict[str, Any], only: set[str] | None, timeout: float) -> list[Job]:
    jobs = []
    for pair in manifest["pairs"]:
        if only and pair["id"] not in only and pair["class"] not in only:
            continue
        for kind in ("buggy", "fixed"):
            jobs.append(Job(kind, pair["id"], pair["class"], HERE / "pairs" / pair["id"] / f"{kind}.py", timeout=timeout))
    return jobs


def public_jobs(args: argparse.Namespace, only: set[str] | None) -> tuple[list[Job], list[str]]:
    entries = [e for e in public.load_public() if not only or e["id"] in only]
    notes = public.unpack(entries, args.public, args.mirror) if args.mirror else []
    jobs = []
    for entry in entries:
        if entry.get("slow") and not args.slow:
            notes.append(f"{entry['id']}: skipped (slow on a CPU; --slow runs it)")
            continue
        reason = public.missing_reason(entry, args.public)
        if reason:
            notes.append(f"{entry['id']}: skipped, {reason}")
            continue
        jobs.append(Job("clean", entry["id"], None, args=list(entry.get("args", [])), entry=entry,
                        timeout=float(entry.get("timeout", args.timeout))))
    return jobs, notes


def run_all(jobs: list[Job], args: argparse.Namespace) -> list[Run]:
    runs: list[Run] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_job, job, args): job for job in jobs}
        try:
            for n, future in enumerate(concurrent.futures.as_completed(futures), 1):
                run = future.result()
                runs.append(run)
                codes = ", ".join(f"{f['code']}/{f['severity'][0]}" for f in run.findings) or "no findings"
                print(f"[{n}/{len(jobs)}] {run.kind:5} {run.id}: {codes}{'; ' + run.error if run.error else ''} ({run.seconds:.0f} s)",
                      file=sys.stderr, flush=True)
        except KeyboardInterrupt:  # stop what runs, start nothing more
            for future in futures:
                future.cancel()
            for pgid in list(LIVE):
                _kill_group(pgid)
            raise
    order = {(j.kind, j.id): i for i, j in enumerate(jobs)}
    return sorted(runs, key=lambda r: order[(r.kind, r.id)])


def describe_doctor(args: argparse.Namespace) -> str:
    base = [args.torchwise] if args.torchwise else [args.python, "-m", "torchwise"]
    python = args.python
    if args.torchwise:  # the interpreter named on the executable's #! line
        first = Path(shutil.which(args.torchwise) or args.torchwise).read_text(errors="replace").splitlines()[:1]
        python = first[0][2:].strip() if first and first[0].startswith("#!") else sys.executable
    probe = [python, "-c", "import torchwise, os; print(os.path.dirname(os.path.abspath(torchwise.__file__)))"]
    try:
        where = subprocess.run(probe, capture_output=True, text=True, timeout=120).stdout.strip()
        git = ["git", "-C", where, "log", "-1", "--format=%h %cs"]
        rev = subprocess.run(git, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        where, rev = "?", ""
    return f"doctor: {' '.join(base)} (torchwise from {where}{', ' + rev if rev else ''})"


# ----------------------------------------------------------------------------- CLI


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=None, help="comma-separated pair ids, class names or public script ids")
    ap.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads per run (default: cores // jobs; 0 leaves it alone)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run (default 300)")
    ap.add_argument("--max-rss-gb", type=float, default=6.0, help="stop a run whose processes hold more memory (default 6)")
    ap.add_argument("--python", default=sys.executable, help="the Python whose torchwise runs the doctor (default: this one)")
    ap.add_argument("--torchwise", default=None, help="a torchwise executable to run instead of PYTHON -m torchwise")
    ap.add_argument("--doctor-arg", action="append", default=[], help="extra argument for every doctor run (repeatable)")
    ap.add_argument("--map", action="append", default=[], metavar="CLASS=CODE[,CODE]", help="expected codes for a class")
    ap.add_argument("--public", type=Path, default=None, help="folder of unpacked public repos (<owner>+<name>)")
    ap.add_argument("--mirror", type=Path, default=None, help="with --public: unpack missing repos from these bare mirrors")
    ap.add_argument("--slow", action="store_true", help="also run public scripts marked slow")
    ap.add_argument("--no-corpus", action="store_true", help="only the public scripts")
    ap.add_argument("--plain", action="store_true", help="run the scripts without the doctor: what each bug costs (final lines)")
    ap.add_argument("--json", type=Path, default=None, help="write every run and the scores here")
    ap.add_argument("--rescore", type=Path, default=None, metavar="JSON",
                    help="score the runs saved by an earlier --json again (e.g. with other --map codes); runs nothing")
    args = ap.parse_args(argv)
    if args.threads is None:
        args.threads = max(1, (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1) // args.jobs)
    return args


def parse_map(items: list[str], classes: dict[str, Any]) -> dict[str, list[str]]:
    mapping = {}
    for item in items:
        cls, _, codes = item.partition("=")
        if cls not in classes or not codes:
            raise SystemExit(f"--map {item!r}: expected CLASS=CODE[,CODE] with CLASS one of {', '.join(classes)}")
        mapping[cls] = [c.strip().upper() for c in codes.split(",") if c.strip()]
    return mapping


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    manifest = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
    mapping = parse_map(args.map, manifest["classes"])
    if args.rescore:
        saved = json.loads(args.rescore.read_text(encoding="utf-8"))
        runs = [Run(**r) for r in saved["runs"]]
        note = f"rescored from {args.rescore}" + (f" with --map {mapping}" if mapping else "")
        print(render(score(runs, manifest, mapping), saved["header"] + f"\n{note}", saved.get("notes", [])))
        return 0
    only = set(args.only.split(",")) if args.only else None
    jobs = [] if args.no_corpus else corpus_jobs(manifest, only, args.timeout)
    notes = ["public scripts: skipped (no --public DIR given; see benchmarks/doctor_bugs/README.md)"]
    if args.public:
        more, notes = public_jobs(args, only)
        jobs += more
    who = f"scripts alone ({args.python})" if args.plain else describe_doctor(args)
    header = f"{who}; {len(jobs)} runs, {args.jobs} at a time, {args.threads or 'default'} torch thread(s) each"
    print(header, file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    runs = run_all(jobs, args)
    header += f"; {time.perf_counter() - t0:.0f} s in all"
    if args.plain:
        print(render_plain(runs, header))
        result: dict[str, Any] = {}
    else:
        result = score(runs, manifest, mapping)
        print(render(result, header, notes))
    if args.json:
        args.json.write_text(json.dumps({"header": header, "mapping": mapping, "notes": notes, "result": result,
                                         "runs": [asdict(r) for r in runs]}, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
