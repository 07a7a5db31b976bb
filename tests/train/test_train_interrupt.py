"""Losing no work: SIGINT/SIGTERM save a checkpoint and resume exactly; one run per folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from torch import nn

from torchwise.core.errors import UsageError
from torchwise.train import Trainer
from torchwise.train.interrupt import InterruptCatcher, Interrupted
from torchwise.train.lock import LOCK_NAME, lock_folders

ROOT = Path(__file__).resolve().parents[2]
TASK = str(Path(__file__).with_name("train_gated_task.py"))


def start(run_dir: Path, *extra: str, gate: str = "") -> subprocess.Popen:
    args = [f"{TASK}:task", "--seed", "0", "--device", "cpu", "--no-progress", "--log-dir", str(run_dir)]
    if gate:
        args += ["--task-arg", f"gate={gate}"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, "-m", "torchwise", "train", *args, *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, preexec_fn=_terminal_signals)


def _terminal_signals() -> None:
    """The child gets SIGINT as a terminal gives it, also when the tests run in the background
    (where the shell leaves SIGINT ignored, and a run that respects an ignored SIGINT keeps it so)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(autouse=True)
def terminal_sigint():
    """The same in this process: Python's own SIGINT handler, whatever the runner inherited."""
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=240)
    return proc.returncode, out, err


def wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 180
    while not path.exists():
        if proc.poll() is not None:
            pytest.fail(f"the run ended before reaching the gate: {proc.communicate()[1][-2000:]}")
        assert time.monotonic() < deadline, "the run never reached the gate"
        time.sleep(0.05)


def final_state(run_dir: Path) -> dict:
    newest = sorted((run_dir / "checkpoints").glob("step-*.pt"))[-1]
    return torch.load(newest, weights_only=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    run_dir = tmp_path_factory.mktemp("reference")
    code, _, err = finish(start(run_dir))
    assert code == 0, err[-2000:]
    return final_state(run_dir)


@pytest.mark.slow
@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_mid_run_saves_a_checkpoint_and_resume_is_bitwise_equal(tmp_path, reference, sig, status):
    run_dir, gate = tmp_path / "run", str(tmp_path / "gate")
    proc = start(run_dir, gate=gate)
    wait_for(Path(gate + ".ready"), proc)  # paused inside step 3 (sample 40 of 16-sample batches)
    proc.send_signal(sig)
    time.sleep(0.3)  # (the handler runs between bytecodes of the waiting dataset)
    Path(gate + ".go").touch()
    code, out, err = finish(proc)
    assert code == status, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"torchwise train: interrupted by {sig.name} at step 3; checkpoint saved: ")
    assert "Traceback" not in err
    assert sorted(p.name for p in (run_dir / "checkpoints").glob("step-*.pt")) == ["step-00000003.pt"]

    code, _, err = finish(start(run_dir, "--resume", "last"))
    assert code == 0, err[-2000:]
    resumed = final_state(run_dir)
    assert resumed["step"] == reference["step"] == 12
    for key, tensor in reference["model"].items():
        assert torch.equal(resumed["model"][key], tensor), key
    for (_, a), (_, b) in zip(sorted(reference["optimizer"]["state"].items()), sorted(resumed["optimizer"]["state"].items())):
        assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow
def test_second_run_on_the_same_folder_is_refused_and_a_killed_run_leaves_no_stuck_lock(tmp_path):
    run_dir, gate = tmp_path / "run", str(tmp_path / "gate")
    first = start(run_dir, gate=gate)
    wait_for(Path(gate + ".ready"), first)
    code, out, err = finish(start(run_dir))
    assert code == 2 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"torchwise train: error: checkpoint folder {run_dir / 'checkpoints'} is in use by another run (pid {first.pid} ")
    assert not list((run_dir / "checkpoints").glob("step-*.pt"))  # the refused run wrote nothing

    first.kill()  # SIGKILL: no clean-up runs, the OS drops the lock
    first.wait(timeout=60)
    code, _, err = finish(start(run_dir))
    assert code == 0, err[-2000:]
    assert final_state(run_dir)["step"] == 12


# ---------------------------------------------------------------- in-process pieces


def _trainer(tmp_path: Path, **kwargs) -> tuple[Trainer, list]:
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    data = [(torch.randn(4, 3), torch.randint(0, 2, (4,))) for _ in range(6)]
    trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), device="cpu",
                      checkpoint_dir=tmp_path / "ck", log_dir=False, progress=False, **kwargs)
    return trainer, data


class SignalAt:
    def __init__(self, step: int, sig: int) -> None:
        self.step, self.sig = step, sig

    def on_step_end(self, trainer: Trainer) -> None:
        if trainer.step == self.step:
            os.kill(os.getpid(), self.sig)


def test_fit_stops_at_the_step_end_with_a_checkpoint_and_restores_the_handlers(tmp_path):
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    trainer, data = _trainer(tmp_path, callbacks=[SignalAt(2, signal.SIGTERM)])
    with pytest.raises(Interrupted) as info:
        trainer.fit(data, epochs=3)
    assert info.value.signum == signal.SIGTERM and isinstance(info.value, KeyboardInterrupt)
    assert trainer.step == 2 and trainer.last_checkpoint == tmp_path / "ck" / "step-00000002.pt"
    assert torch.load(trainer.last_checkpoint, weights_only=True)["batch_in_epoch"] == 2
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    trainer.fit(data, epochs=1, resume="last")  # the folder lock was released too
    assert trainer.step == 6


def test_second_signal_stops_at_once_and_ignored_signals_stay_ignored():
    old_int, old_term = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        catcher = InterruptCatcher().install()
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGINT)
        assert catcher.requested and catcher.signum == signal.SIGINT
        with pytest.raises(Interrupted, match="interrupted by SIGINT again: stopped at once") as info:
            os.kill(os.getpid(), signal.SIGINT)
        assert isinstance(info.value, KeyboardInterrupt) and info.value.signum == signal.SIGINT
        assert signal.getsignal(signal.SIGINT) is old_int  # the second signal restored the handlers
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)


def test_catcher_does_nothing_outside_the_main_thread_or_when_disabled():
    before = signal.getsignal(signal.SIGINT)
    InterruptCatcher(enabled=False).install()
    assert signal.getsignal(signal.SIGINT) is before
    done = []
    thread = threading.Thread(target=lambda: done.append(InterruptCatcher().install()))
    thread.start()
    thread.join()
    assert done and signal.getsignal(signal.SIGINT) is before


def test_folder_lock_refuses_a_second_holder_until_released(tmp_path):
    first = lock_folders([(tmp_path / "ck", "checkpoint folder"), (tmp_path / "ck", "log folder"), (None, "x")])
    with pytest.raises(UsageError, match=rf"checkpoint folder {tmp_path / 'ck'} is in use by another run \(pid {os.getpid()} on "):
        lock_folders([(tmp_path / "other", "log folder"), (tmp_path / "ck", "checkpoint folder")])
    # all or none: the folder locked before the refusal was released again
    lock_folders([(tmp_path / "other", "log folder")]).release()
    first.release()
    lock_folders([(tmp_path / "ck", "checkpoint folder")]).release()
    assert (tmp_path / "ck" / LOCK_NAME).exists()


def test_trainer_refuses_a_folder_another_run_holds(tmp_path):
    trainer, data = _trainer(tmp_path)
    held = lock_folders([(tmp_path / "ck", "checkpoint folder")])
    try:
        with pytest.raises(UsageError, match="is in use by another run"):
            trainer.fit(data)
        assert not list((tmp_path / "ck").glob("step-*.pt"))
    finally:
        held.release()
