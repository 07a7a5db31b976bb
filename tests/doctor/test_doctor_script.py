"""``torchwise doctor -- python train.py ARGS``: unmodified tutorial-style scripts, run in a child
process with the doctor attached; planted faults found (with the script's file and line), clean
scripts quiet, the script stopped after the steps asked for, nothing changed on disk."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchwise.doctor import doctor_script
from torchwise.errors import UsageError

SCRIPTS = Path(__file__).resolve().parent / "scripts"
DIGITS = str(SCRIPTS / "train_digits.py")
LM = str(SCRIPTS / "train_lm.py")
SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the children share a small machine


def run(*args: str, steps: int = 40, **kw):
    return doctor_script(["python", *args], steps=steps, stdout=subprocess.DEVNULL, **kw)


def test_clean_mlp_script_is_quiet_and_stopped_after_the_steps():
    before = hashlib.sha256(Path(DIGITS).read_bytes()).hexdigest()
    report = run(DIGITS, "--epochs", "5")
    assert report.findings == [], [str(f) for f in report.findings]
    assert report.measured["steps_run"] == 40 and report.measured["stopped_by_doctor"] is True
    assert report.failure is None
    assert hashlib.sha256(Path(DIGITS).read_bytes()).hexdigest() == before


def test_clean_cnn_script_is_quiet():
    report = run(DIGITS, "--model", "cnn", "--epochs", "5")
    assert report.findings == [], [str(f) for f in report.findings]


def test_dead_relu_points_at_the_users_line():
    report = run(DIGITS, "--fault", "dead")
    [f] = report.by_code("TW131")
    assert "train_digits.py:46" in f.where  # x = F.relu(self.fc1(x))
    assert report.measured["backward_at"].endswith("train_digits.py:95")


def test_param_group_with_lr_zero():
    [f] = [f for f in run(DIGITS, "--fault", "lr0").by_code("TW133") if "did not change" in f.message]
    assert set(f.evidence["parameters"]) == {"fc1.weight", "fc1.bias"} and f.evidence["lrs"] == [0.0]


def test_learning_rate_far_too_small():
    report = run(DIGITS, "--fault", "tiny-lr", steps=60)
    assert report.by_code("TW133") and report.by_code("TW135")


def test_diverging_loss():
    report = run(DIGITS, "--fault", "diverge", steps=60)
    assert set(report.codes) & {"TW134", "TW135", "TW130", "TW131"}, report.codes


def test_one_bad_label_in_a_full_epoch():
    report = run(DIGITS, "--fault", "bad-label", "--epochs", "1", full=True)
    [f] = report.by_code("TW106")
    assert f.evidence["bad_values"] == [10] and f.evidence["output_width"] == 10
    assert report.failure and "IndexError" in report.failure and "train_digits.py" in report.failure


def test_batchnorm_last_batch_of_one_explains_the_crash():
    report = run(DIGITS, "--model", "cnn", "--fault", "bn-one", "--epochs", "1", full=True)
    [f] = report.by_code("TW137")
    assert f.severity == "error" and f.where.startswith("bn1 at ") and "train_digits.py:62" in f.where
    assert {"bn1", "bn2"} <= {i["module"] for i in f.evidence["inputs"]}
    assert "Expected more than 1 value" in report.failure


def test_reentrant_checkpoint_in_a_script():
    report = run(DIGITS, "--model", "cnn", "--fault", "checkpoint", steps=3)
    [f] = report.by_code("TW138")
    assert "train_digits.py:" in f.where


def test_language_model_with_unshifted_targets():
    report = run(LM, "--unshifted", steps=25)
    [f] = report.by_code("TW136")
    assert f.evidence["equal_share"] == 1.0
    clean = run(LM, steps=25)
    assert not clean.by_code("TW136") and clean.failure is None


def test_cli_script_mode_both_spellings(tmp_path):
    env = dict(os.environ, PYTHONPATH=SRC, OMP_NUM_THREADS="1")
    for argv in (["--", "python", DIGITS, "--fault", "lr0"], [DIGITS, "--", "--fault", "lr0"]):
        out = subprocess.run([sys.executable, "-m", "torchwise", "doctor", "--steps", "25", "--json", *argv],
                             env=env, capture_output=True, text=True, timeout=600)
        data = json.loads(out.stdout)  # the script's own prints went to stderr
        assert "TW133" in {f["code"] for f in data["findings"]}, out.stderr[-2000:]
        assert data["measured"]["steps_run"] == 25 and "epoch" not in out.stdout


def test_missing_script_is_one_clear_error():
    with pytest.raises(UsageError, match="training script not found"):
        doctor_script(["python", "no_such_train.py"])
