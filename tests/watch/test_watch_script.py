"""``torchwise watch -- python train.py``: whole runs of an unmodified script in a child process.

A clean run stays quiet and logs its samples; a NaN mid-run is alerted at its step and, with
``--stop-on error``, ends the run (a script that handles SIGTERM saves first); a script that
fails, exits abruptly, never trains or trains in a forked process gets its own line and exit
status; SIGKILL of the script leaves a readable log and a report."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchwise.watch import WatchOptions, watch_script
from torchwise.watch.events import read_events

pytestmark = pytest.mark.slow
SCRIPT = str(Path(__file__).resolve().parent / "scripts" / "train_long.py")
SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the children share a small machine


def watched(tmp_path, *args, say=None, html=None, **options):
    log = tmp_path / "events.jsonl"
    lines: list[str] = []
    out = watch_script(["python", SCRIPT, *args], WatchOptions(log=log, **options), stdout=subprocess.DEVNULL,
                       say=say or lines.append, grace=20, html=html)
    return out, read_events(log), lines


def test_clean_run_is_quiet_and_logged(tmp_path):
    out, events, lines = watched(tmp_path, "--steps", "300", every=10, html=tmp_path / "run.html")
    assert "Update / weight ratio per layer" in (tmp_path / "run.html").read_text()
    assert out.code == 0 and out.report.findings == [] and lines == [], lines
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and kinds[-2:] == ["end", "exit"] and "window" in kinds
    samples = [e for e in events if e["event"] == "sample"]
    assert len(samples) >= 20 + (300 - 20) // 10 - 2
    later = samples[-1]
    assert set(later["grad_norm"]) == {"0", "2", "4"} and set(later["update_ratio"]) == {"0", "2", "4"}
    assert all(1e-5 < v < 1e-1 for v in later["update_ratio"].values())  # Adam at 3e-3: about 1e-3 per step
    assert list(later["loss"])[0].endswith("train_long.py:73") and later["lr"] == [0.003]
    assert out.report.measured["steps_run"] == 300 and "the script ran to its end (300 steps)" == out.line


def test_nan_mid_run_is_alerted_and_stops_a_script_that_saves_on_sigterm(tmp_path):
    saved = tmp_path / "ckpt.pt"
    out, events, lines = watched(tmp_path, "--fault", "nan,sigterm", "--at", "60", "--steps", "5000", "--save", str(saved),
                                 every=10, stop_on="error")
    [alert] = [x for x in lines if "TW112" in x]
    assert "step 61: TW112 error: non-finite input reaching the model" in alert
    assert saved.exists()  # the script's own SIGTERM handler saved before the run ended
    assert out.code == 1 and out.line.startswith("stopped at step 61 on TW112 (--stop-on), by SIGTERM")
    assert out.report.measured["steps_run"] < 300
    stop = [e for e in events if e["event"] == "stop"]
    assert stop and stop[0]["by"] == "SIGTERM"


def test_nan_stops_a_script_without_a_handler_at_once(tmp_path):
    out, events, lines = watched(tmp_path, "--fault", "nan", "--at", "30", "--steps", "5000", every=10, stop_on="error")
    end = [e for e in events if e["event"] == "end"][0]
    assert end["status"] == "stopped" and end["steps"] == 31 and out.code == 1


@pytest.mark.parametrize("fault, code, words", [
    ("fail", 3, "failed at step 25 (exit status 1): ValueError: a bad batch at step 25"),
    ("exit", 5, "ended abruptly at step"),
    ("untrained", 4, "without a single optimizer step"),
    ("spawn", 6, "started 1 process(es)"),
])
@pytest.mark.slow
def test_scripts_that_do_not_train_to_their_end(tmp_path, fault, code, words):
    out, events, _ = watched(tmp_path, "--fault", fault, "--at", "25", "--steps", "300", every=10)
    assert out.code == code and words in out.line, out.line
    assert events[-1]["event"] == "exit"


def _cli_run(tmp_path, windows: int):
    """``torchwise watch`` on an endless run, once its log holds ``windows`` judged windows."""
    log = tmp_path / "events.jsonl"
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "torchwise", "watch", "--log", str(log), "--every", "10", "--",
                             "python", SCRIPT, "--steps", "1000000"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if log.exists() and sum(e["event"] == "window" for e in read_events(log)) >= windows:
            break
        time.sleep(0.5)
    return proc, log


def test_cli_line_exit_status_and_sigkill_of_the_script(tmp_path):
    proc, log = _cli_run(tmp_path, 2)
    pid = next(e["pid"] for e in read_events(log) if e["event"] == "start")
    os.kill(pid, signal.SIGKILL)  # the script's process dies at once: no end record from it
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 137
    assert "torchwise watch: the script was killed by SIGKILL at step" in err
    events = read_events(log)
    assert events[-1]["event"] == "exit" and events[-1]["signal"] == "SIGKILL"
    assert not any(e["event"] == "end" for e in events) and sum(e["event"] == "sample" for e in events) > 20
    assert "measured: mode=watch" in out or "doctor " in out


def test_a_restarted_run_resumes_its_log(tmp_path):
    first, _, _ = watched(tmp_path, "--steps", "100", every=10)
    again, events, _ = watched(tmp_path, "--steps", "100", every=10, resume=True)
    [resume] = [e for e in events if e["event"] == "resume"]
    assert resume["step"] == 100 and resume["source"] == "previous log" and resume["segment"] == 1
    assert [e["segment"] for e in events if e["event"] == "start"] == [0, 1]
    assert again.report.measured["steps_run"] == 200 and again.report.measured["resumed_from_step"] == 100


def test_sigterm_to_torchwise_watch_reaches_the_script_and_the_log_ends_cleanly(tmp_path):
    proc, log = _cli_run(tmp_path, 1)
    proc.send_signal(signal.SIGTERM)  # to torchwise watch itself (a job scheduler, `kill`): passed on to the script
    _, err = proc.communicate(timeout=120)
    end = [e for e in read_events(log) if e["event"] == "end"]
    assert proc.returncode == 143 and end and end[0]["status"] == "terminated" and end[0]["report"]["measured"]["steps_run"] >= 20
    assert "the script was terminated (SIGTERM) at step" in err
