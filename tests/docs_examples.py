"""Runs the code blocks of a documentation page, as a reader would: the engine of test_docs_examples.py.

What runs (the conventions are described for writers in docs/about-these-docs.md):

* A page's blocks run in order, in one process, in a scratch folder that has copies of ``examples/``
  and ``src/`` (as if the reader were at the repository root); ```python blocks share one
  namespace, so a later block may use names from an earlier one.
* A block with ``title="NAME"`` in its fence (```python title="mytask.py") is a file the page's
  other blocks use: it is written to NAME, not run.
* ```bash blocks: every command that starts with ``torchwise`` runs (in this process, through
  ``torchwise.cli.main``; through bash when the line pipes or redirects). It must exit 0, or 1 for
  ``lint`` and ``doctor`` (their "found something" status). Other commands (pip, make, git,
  python, torchrun ...) are shown, not run.
* ```text, ```console, ```toml ... blocks are output or configuration: never run.
* ``<!-- docs-test: skip: REASON -->`` on the line before a fence: the block is not run;
  ``<!-- docs-test: slow: REASON -->``: it runs only with TORCHWISE_DOCS_SLOW=1. A marker
  without a reason is an error.

To keep the suite cheap, one server process imports torch and the engines once and forks a
child per page (``--serve``); the child is the page's process.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import shlex
import shutil
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)(?P<info>.*)$")
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<kind>[\w-]+)\s*(?::\s*(?P<reason>.*?))?\s*-->\s*$")
TITLE = re.compile(r"""title=["']([^"']+)["']""")
KINDS = ("skip", "slow")
SHELL_OPERATORS = ("|", ">", ">>", "<", "&&", "||", ";", "2>", "2>&1", "&")
# the commands whose status 1 means "found something" rather than "failed"
STATUS_ONE_OK = ("lint", "doctor")
PRELOAD = ("torch", "numpy", "torchwise", "torchwise.train", "torchwise.doctor", "torchwise.tune",
           "torchwise.lint", "torchwise.cli", "sklearn.datasets")


class PageError(Exception):
    """A page whose blocks cannot be read (an unclosed fence, a marker without a reason)."""


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the first code line
    lang: str
    info: str
    code: str
    marker: str = ""  # "", "skip" or "slow"
    reason: str = ""

    @property
    def title(self) -> str | None:
        match = TITLE.search(self.info)
        return match.group(1) if match else None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def parse_blocks(text: str, page: str = "<page>") -> list[Block]:
    """Every fenced block of a Markdown page, with the marker (if any) on the line before it."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence = match.group("indent"), match.group("fence")
        start = i + 1
        end = start
        while end < len(lines) and not re.match(rf"^{re.escape(indent)}{fence[0]}{{{len(fence)},}}\s*$", lines[end]):
            end += 1
        if end == len(lines):
            raise PageError(f"{page}:{i + 1}: the code fence opened here is never closed")
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[start:end]]
        block = Block(page, start + 1, match.group("lang").lower(), match.group("info").strip(), "\n".join(body) + "\n")
        previous = lines[i - 1] if i > 0 else ""
        marker = MARKER.match(previous)
        if marker:
            if marker.group("kind") not in KINDS:
                raise PageError(f"{page}:{i}: unknown docs-test marker {marker.group('kind')!r}; use one of {KINDS}")
            if not (marker.group("reason") or "").strip():
                raise PageError(f"{page}:{i}: a docs-test marker needs a reason: <!-- docs-test: skip: WHY -->")
            block.marker, block.reason = marker.group("kind"), marker.group("reason").strip()
        elif "docs-test" in previous:
            raise PageError(f"{page}:{i}: malformed docs-test marker {previous.strip()!r}")
        blocks.append(block)
        i = end + 1
    return blocks


def shell_commands(code: str) -> list[str]:
    """The command lines of a bash block: continuation lines joined, comments and blanks dropped."""
    commands, current = [], ""
    for raw in code.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        if current.strip() and not current.lstrip().startswith("#"):
            commands.append(current.strip())
        current = ""
    return commands


def runs(block: Block, slow: bool) -> bool:
    """Whether the block is executed (files given by title are written, not executed)."""
    if block.marker == "skip" or (block.marker == "slow" and not slow):
        return False
    return block.lang in ("python", "py", "bash", "sh", "shell")


def _torchwise_line(command: str) -> list[str] | None:
    """The arguments of a ``torchwise ...`` command run in-process; None when it is not one."""
    words = shlex.split(command, comments=True)
    if not words or words[0] != "torchwise":
        return None
    return words


def _run_shell(command: str, where: str) -> None:
    words = _torchwise_line(command)
    if words is None:
        return  # pip, make, git, python ...: shown to the reader, not run here
    name = words[1] if len(words) > 1 else ""
    if any(w in SHELL_OPERATORS for w in words) or "|" in command:
        import subprocess

        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        status = subprocess.run(["bash", "-o", "pipefail", "-c", command], env=env, check=False).returncode
    else:
        from torchwise.cli import main

        print(f"$ {command}", flush=True)
        try:
            status = main(words[1:])
        except SystemExit as exc:  # argparse: usage errors, --help
            status = exc.code if isinstance(exc.code, int) else 1
        sys.stdout.flush()
        sys.stderr.flush()
    allowed = (0, 1) if name in STATUS_ONE_OK else (0,)
    if status not in allowed:
        raise AssertionError(f"{where}: `{command}` exited with status {status}")


def run_page(page: Path, workdir: Path, slow: bool = False) -> dict:
    """Run the page's blocks in ``workdir`` (the current folder becomes it); returns a summary."""
    rel = str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)
    blocks = parse_blocks(page.read_text(encoding="utf-8"), rel)
    os.chdir(workdir)
    sys.path.insert(0, str(workdir))  # as `python` run in that folder: its files are importable
    for name in ("examples", "src"):  # copies: an example that runs `lint --fix` edits these, never the repository
        if not Path(name).exists():
            shutil.copytree(ROOT / name, name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    namespace: dict = {"__name__": "__main__"}
    done = {"python": 0, "bash": 0, "files": 0, "skipped": 0}
    for block in blocks:
        if block.title and block.marker != "skip":
            target = Path(block.title)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code, encoding="utf-8")
            done["files"] += 1
            continue
        if not runs(block, slow):
            done["skipped"] += block.lang in ("python", "py", "bash", "sh", "shell")
            continue
        if block.lang in ("python", "py"):
            code = compile("\n" * (block.line - 1) + block.code, rel, "exec")
            exec(code, namespace)  # noqa: S102 - running the documentation's own examples
            done["python"] += 1
        else:
            for command in shell_commands(block.code):
                _run_shell(command, block.where)
            done["bash"] += 1
    return done


def _child(page: Path, workdir: Path, slow: bool, result_path: Path) -> None:
    os.setsid()
    log = os.open(workdir / "output.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    result: dict = {"ok": False}
    try:
        result = {"ok": True, "done": run_page(page, workdir, slow)}
    except BaseException as exc:  # the test reports it with the page's line numbers
        result = {"ok": False, "error": "".join(traceback.format_exception(exc, limit=-8))}
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        result_path.write_text(json.dumps(result), encoding="utf-8")
        os._exit(0)


def run_forked(page: Path, workdir: Path, slow: bool = False, timeout: float = 240.0) -> dict:
    """Run a page in a forked child of this process; adds the child's CPU seconds and output."""
    workdir = Path(workdir)
    result_path = workdir.parent / f"{workdir.name}.result.json"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        _child(page, workdir, slow, result_path)
    deadline = time.monotonic() + timeout
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            return {"ok": False, "error": f"{page.name}: still running after {timeout:.0f} s", "cpu_s": 0.0,
                    "output": _tail(workdir / "output.log")}
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):  # DataLoader workers or launched processes left behind
        os.killpg(pid, signal.SIGKILL)
    try:
        result = json.loads(result_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        result = {"ok": False, "error": f"{page.name}: the page's process died (wait status {status})"}
    result["cpu_s"] = usage.ru_utime + usage.ru_stime
    result["output"] = _tail(workdir / "output.log")
    return result


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def serve() -> None:
    """Import the heavy modules once, then run one page per request line (JSON in, JSON out)."""
    import importlib

    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but replies on the protocol's stream
    print(json.dumps({"ready": True, "cpu_s": resource.getrusage(resource.RUSAGE_SELF).ru_utime}), file=out, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        reply = run_forked(Path(request["page"]), Path(request["workdir"]), request.get("slow", False),
                           request.get("timeout", 240.0))
        print(json.dumps(reply), file=out, flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        print("usage: python tests/docs_examples.py --serve   (driven by tests/test_docs_examples.py)", file=sys.stderr)
        sys.exit(2)
