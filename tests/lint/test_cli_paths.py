"""``torchwise lint`` on awkward paths: report folders, FIFOs, unreadable folders, read-only
folders, symbolic links. Each must give one line or one finding, never a hang or a traceback."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from torchwise.cli import main

pytestmark = pytest.mark.usefixtures("fresh_config_cache")

# a load that feeds load_state_dict: its TW401 fix is a safe one, so --fix applies it
BAD = "import torch\nmodel.load_state_dict(torch.load('m.pt'))\n"
FIXED = "import torch\nmodel.load_state_dict(torch.load('m.pt', weights_only=True))\n"
ROOT = Path(__file__).resolve().parents[2]
# Root without the capabilities that bypass file permissions: behaves like an ordinary user on
# files it does not own (the tests run as root in CI containers).
UNPRIVILEGED = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner"]


def lint(capsys, *args):
    code = main(["lint", "--isolated", *args])
    out, err = capsys.readouterr()
    return code, out, err


def lint_subprocess(*args: str, unprivileged: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    cmd = [sys.executable, "-m", "torchwise", "lint", "--isolated", *args]
    if unprivileged:
        cmd = UNPRIVILEGED + cmd
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)


def one_line_error(code: int, err: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_output_file_that_is_a_folder_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    src = tmp_path / "a.py"
    src.write_text(BAD)
    import torchwise.lint.runner as runner

    monkeypatch.setattr(runner, "run_jobs", lambda *a, **k: pytest.fail("linted before checking the output"))
    line = one_line_error(*lint(capsys, "-o", str(tmp_path), str(src))[::2])
    assert "is a folder" in line and str(tmp_path) in line


def test_output_file_in_a_missing_folder_is_one_line(tmp_path, capsys):
    src = tmp_path / "a.py"
    src.write_text(BAD)
    line = one_line_error(*lint(capsys, "-o", str(tmp_path / "nope" / "x.txt"), str(src))[::2])
    assert "does not exist" in line and str(tmp_path / "nope") in line


def test_output_file_that_cannot_be_written_is_one_line(tmp_path, capsys, monkeypatch):
    src = tmp_path / "a.py"
    src.write_text(BAD)
    report = tmp_path / "report.txt"
    real_open = open

    def refusing_open(file, *args, **kwargs):
        if str(file) == str(report):
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", refusing_open)
    line = one_line_error(*lint(capsys, "-o", str(report), str(src))[::2])
    assert "cannot write the report" in line and "permission denied" in line


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_given_directly_or_inside_a_folder_is_reported_not_read(tmp_path):
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "pipe.py")
    os.mkfifo(tmp_path / "sub" / "deep.py")
    (tmp_path / "sub" / "real.py").write_text(BAD)
    # (nobody ever writes to the FIFOs: reading one would block until the timeout)
    r = lint_subprocess(str(tmp_path / "pipe.py"))
    assert r.returncode == 1, r.stderr
    assert f"{tmp_path / 'pipe.py'}:1:1: TW000 not a regular file (a FIFO)" in r.stdout
    r = lint_subprocess(str(tmp_path))
    assert r.returncode == 1, r.stderr
    for name in ("pipe.py", "sub/deep.py"):
        assert f"{tmp_path / name}:1:1: TW000 not a regular file (a FIFO): not read" in r.stdout
    assert f"{tmp_path / 'sub' / 'real.py'}:2:23: TW401" in r.stdout


def test_fifo_that_appears_after_discovery_is_not_read(tmp_path):
    from torchwise.lint.runner import FileJob, lint_job

    os.mkfifo(tmp_path / "late.py")

    def hung(signum, frame):
        raise TimeoutError("lint_job blocked on the FIFO")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    try:
        result = lint_job(FileJob(str(tmp_path / "late.py"), "late.py", frozenset({"TW000"})))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert [f.code for f in result.findings] == ["TW000"] and "not a regular file" in result.findings[0].message


def test_unreadable_folder_is_reported_not_skipped(tmp_path, capsys, monkeypatch):
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "a.py").write_text(BAD)
    (tmp_path / "ok.py").write_text("x = 1\n")
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("secret"):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code, out, _ = lint(capsys, str(tmp_path))
    assert code == 1
    assert f"{tmp_path / 'secret'}:1:1: TW000 cannot read the folder (permission denied)" in out
    assert "No findings" not in out


def _unprivileged_available() -> bool:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return False
    r = subprocess.run(UNPRIVILEGED + ["true"], capture_output=True)
    return r.returncode == 0


needs_unprivileged = pytest.mark.skipif(not _unprivileged_available(), reason="needs root and setpriv to drop the permission-bypassing capabilities")


@pytest.fixture
def foreign_dir():
    """A folder under /tmp owned by 'nobody', so that a capability-less root is an ordinary 'other' user."""
    d = Path(tempfile.mkdtemp(prefix="torchwise-perm-"))
    os.chmod(d, 0o755)
    yield d
    os.chmod(d, 0o755)
    for sub in d.rglob("*"):
        if sub.is_dir():
            os.chmod(sub, 0o755)
    shutil.rmtree(d)


@needs_unprivileged
def test_unreadable_folder_for_a_real_unprivileged_process(foreign_dir):
    secret = foreign_dir / "secret"
    secret.mkdir()
    (secret / "a.py").write_text(BAD)
    os.chown(secret, 65534, 65534)
    os.chmod(secret, 0o700)
    r = lint_subprocess(str(foreign_dir), unprivileged=True)
    assert r.returncode == 1, r.stderr
    assert f"{secret}:1:1: TW000 cannot read the folder (permission denied)" in r.stdout


@needs_unprivileged
def test_fix_in_a_read_only_folder_is_one_line_and_changes_nothing(foreign_dir):
    src = foreign_dir / "a.py"
    src.write_text(BAD)
    os.chown(foreign_dir, 65534, 65534)
    os.chmod(foreign_dir, 0o555)
    r = lint_subprocess("--fix", str(foreign_dir), unprivileged=True)
    line = one_line_error(r.returncode, r.stderr)
    assert "could not write the fixes to 1 file" in line and "a.py (permission denied)" in line
    assert src.read_text() == BAD and sorted(p.name for p in foreign_dir.iterdir()) == ["a.py"]
    assert f"{src}:2:23: TW401" in r.stdout  # the unfixed finding is still reported


def test_fix_that_cannot_create_its_temporary_file_is_one_line(tmp_path, capsys, monkeypatch):
    locked, free = tmp_path / "locked.py", tmp_path / "free.py"
    locked.write_text(BAD)
    free.write_text(BAD)
    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if "locked" in kwargs.get("prefix", ""):
            raise PermissionError(errno.EACCES, "Permission denied", os.path.join(dir, "tmp"))
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    code, out, err = lint(capsys, "--fix", str(tmp_path))
    assert code == 2 and "Traceback" not in err
    assert "Fixed 1 finding in 1 file." in err  # the writable file is still fixed
    assert f"could not write the fixes to 1 file: {locked} (permission denied)" in err
    assert locked.read_text() == BAD and free.read_text() == FIXED
    assert f"{locked}:2:23: TW401" in out  # the report is still given: nothing is lost


def test_fix_on_a_symlink_fixes_the_target_and_keeps_the_link(tmp_path, capsys):
    real = tmp_path / "real" / "model.py"
    real.parent.mkdir()
    real.write_text(BAD)
    os.chmod(real, 0o640)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    code, _, err = lint(capsys, "--fix", str(link))
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == FIXED
    assert real.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in real.parent.iterdir()) == ["model.py"]  # no temporary left behind
