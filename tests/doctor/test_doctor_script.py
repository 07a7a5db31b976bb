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
import torch

from torchwise.doctor import doctor_script
from torchwise.core.errors import UsageError

SCRIPTS = Path(__file__).resolve().parent / "scripts"
DIGITS = str(SCRIPTS / "train_digits.py")
LM = str(SCRIPTS / "train_lm.py")
SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the children share a small machine
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # and the scripts run in this process (inline) alike
    yield
    torch.set_num_threads(before)


def run(*args: str, steps: int = 40, **kw):
    """The script in a child process under ``torchwise doctor``, as a user runs it."""
    return doctor_script(["python", *args], steps=steps, stdout=subprocess.DEVNULL, **kw)


def inline(script: str, *args: str, steps: int = 40, full: bool = False):
    """The same hooks and checks with the script run in this process (runpy): for what the checks
    find. A child process costs a torch import and more per run; what is about the child process
    itself (stopping it, its exit status, its crash, the file left unchanged) is tested with ``run``."""
    import contextlib
    import io
    import runpy

    from doctor_models import doctored

    argv = sys.argv
    sys.argv = [script, *args]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            report, _ = doctored(lambda: runpy.run_path(script, run_name="__main__"), steps=steps, full=full)
    finally:
        sys.argv = argv
    return report


@pytest.mark.slow
def test_clean_mlp_script_is_quiet_and_stopped_after_the_steps():
    before = hashlib.sha256(Path(DIGITS).read_bytes()).hexdigest()
    report = run(DIGITS, "--epochs", "5")
    assert report.findings == [], [str(f) for f in report.findings]
    assert report.measured["steps_run"] == 40 and report.measured["stopped_by_doctor"] is True
    assert report.failure is None
    assert hashlib.sha256(Path(DIGITS).read_bytes()).hexdigest() == before


def test_clean_cnn_script_is_quiet():
    report = inline(DIGITS, "--model", "cnn", "--epochs", "5")
    assert report.findings == [], [str(f) for f in report.findings]


def test_dead_relu_points_at_the_users_line():
    report = inline(DIGITS, "--fault", "dead")
    [f] = report.by_code("TW131")
    assert "train_digits.py:46" in f.where  # x = F.relu(self.fc1(x))
    assert report.measured["backward_at"].endswith("train_digits.py:95")


def test_param_group_with_lr_zero():
    [f] = [f for f in inline(DIGITS, "--fault", "lr0").by_code("TW133") if "did not change" in f.message]
    assert set(f.evidence["parameters"]) == {"fc1.weight", "fc1.bias"} and f.evidence["lrs"] == [0.0]


def test_learning_rate_far_too_small():
    report = inline(DIGITS, "--fault", "tiny-lr", steps=60)
    assert report.by_code("TW133") and report.by_code("TW135")


def test_diverging_loss_named_as_the_learning_rate():
    report = inline(DIGITS, "--fault", "diverge", steps=60)  # SGD at lr 5.0
    [f] = report.by_code("TW140")
    assert f.evidence["lrs"] == [5.0] and f.where == "optimizer lr"
    assert not set(report.codes) & {"TW134", "TW135", "TW130", "TW131"}  # its symptoms, folded in


@pytest.mark.slow
def test_one_bad_label_in_a_full_epoch():
    report = run(DIGITS, "--fault", "bad-label", "--epochs", "1", full=True)
    [f] = report.by_code("TW106")
    assert f.evidence["bad_values"] == [10] and f.evidence["output_width"] == 10
    assert report.failure and "IndexError" in report.failure and "train_digits.py" in report.failure
    assert report.measured["script_exit"] == 1 == report.measured["exit_status"]  # as `python train_digits.py` exits
    assert f.evidence["samples"] == [1234]  # read from the dataset's labels, not only the batch that failed


@pytest.mark.slow
def test_batchnorm_last_batch_of_one_explains_the_crash():
    report = run(DIGITS, "--model", "cnn", "--fault", "bn-one", "--epochs", "1", full=True)
    [f] = report.by_code("TW137")
    assert f.severity == "error" and f.where.startswith("bn1 at ") and "train_digits.py:62" in f.where
    assert {"bn1", "bn2"} <= {i["module"] for i in f.evidence["inputs"]}
    assert "Expected more than 1 value" in report.failure


def test_reentrant_checkpoint_in_a_script():
    report = inline(DIGITS, "--model", "cnn", "--fault", "checkpoint", steps=3)
    [f] = report.by_code("TW138")
    assert "train_digits.py:" in f.where


def test_language_model_with_unshifted_targets():
    report = inline(LM, "--unshifted", steps=25)
    [f] = report.by_code("TW136")
    assert f.evidence["equal_share"] == 1.0
    clean = inline(LM, steps=25)
    assert not clean.by_code("TW136") and clean.failure is None


@pytest.mark.slow
def test_cli_script_mode_runs_the_script_in_a_child_and_prints_json(tmp_path):
    env = dict(os.environ, PYTHONPATH=SRC, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-m", "torchwise", "doctor", "--steps", "25", "--json", "--", "python", DIGITS, "--fault", "lr0"],
                         env=env, capture_output=True, text=True, timeout=600)
    data = json.loads(out.stdout)  # the script's own prints went to stderr
    assert "TW133" in {f["code"] for f in data["findings"]}, out.stderr[-2000:]
    assert data["measured"]["steps_run"] == 25 and "epoch" not in out.stdout


def test_cli_script_mode_both_spellings_give_the_script_the_same_command(monkeypatch, capsys):
    import torchwise.doctor.script as script
    from torchwise.cli import main
    from torchwise.doctor.report import DoctorReport

    seen = []
    monkeypatch.setattr(script, "doctor_script", lambda command, **kw: seen.append((list(command), kw)) or DoctorReport("s", [], [], {}))
    for argv in (["--", "python", DIGITS, "--fault", "lr0"], [DIGITS, "--", "--fault", "lr0"]):
        assert main(["doctor", "--steps", "25", "--json", *argv]) == 0
    assert seen[0][1]["steps"] == seen[1][1]["steps"] == 25
    assert seen[0][0] == ["python", DIGITS, "--fault", "lr0"] and seen[1][0] == [DIGITS, "--fault", "lr0"]
    out = capsys.readouterr().out
    first, end = json.JSONDecoder().raw_decode(out)
    assert first["findings"] == [] and json.loads(out[end:])["findings"] == []  # one JSON report per run on stdout


def test_missing_script_is_one_clear_error():
    with pytest.raises(UsageError, match="training script not found"):
        doctor_script(["python", "no_such_train.py"])


# --- the Task-mode checks in script mode (script_evidence.py) ---------------------------------

FAULTS = str(SCRIPTS / "train_faults.py")


def test_several_correctness_faults_in_one_script_each_found_at_its_line():
    report = inline(FAULTS, "--fault", "softmax,unused,conv-bias,eval,slow-loader", steps=25)
    assert report.failure is None and report.measured["models"] == ["model"]
    [ce] = report.by_code("TW102")
    assert "train_faults.py:104" in ce.where  # criterion(F.softmax(outputs, dim=1), y)
    [unused] = report.by_code("TW114")
    assert set(unused.evidence["parameters"]) == {"aux.weight", "aux.bias"}
    [bias] = report.by_code("TW209")
    assert bias.evidence["pairs"] == [["conv", "bn"]] and bias.evidence["wasted_bias_values"] == 16
    [mode] = report.by_code("TW109")
    assert set(mode.evidence["layers"]) == {"bn", "drop"} and "train_faults.py:130" in mode.message
    [graphs] = report.by_code("TW104")
    assert "train_faults.py:116" in graphs.where  # the validation forward without no_grad
    [wait] = report.by_code("TW202")
    assert wait.evidence["num_workers"] == 0


def test_clean_script_with_validation_loop_is_quiet():
    report = inline(FAULTS, steps=25)
    assert report.findings == [], [str(f) for f in report.findings]
    assert report.measured["steps_run"] == 25 and report.measured["models"] == ["model"]
    assert "TW207" in {c for s in report.skipped for c in s.codes}  # listed as not observable


def test_log_of_zero_in_the_loss_is_the_origin_of_the_non_finite_step():
    report = inline(FAULTS, "--fault", "log-zero", steps=3)
    [f] = report.by_code("TW105")
    assert f.evidence["log_call"] == "torch.log" and f.evidence["zeros"] > 0
    assert "train_faults.py:107" in f.where and f.evidence["step"] == 0


def test_regression_broadcast_and_a_layer_added_after_the_optimizer():
    report = inline(FAULTS, "--task", "regression", "--fault", "broadcast,late-head", steps=3)
    [f] = report.by_code("TW113")
    assert f.evidence["prediction_shape"] == [32, 1] and f.evidence["target_shape"] == [32]
    assert "train_faults.py:102" in f.where
    [missing] = [f for f in report.by_code("TW115") if "not in the optimizer" in f.message]
    assert set(missing.evidence["missing"]) == {"extra.weight", "extra.bias"}
    clean = inline(FAULTS, "--task", "regression", steps=3)
    assert clean.findings == [], [str(f) for f in clean.findings]


@pytest.mark.slow
def test_ragged_samples_explain_the_collate_crash():
    report = run(FAULTS, "--fault", "ragged", steps=3)
    [f] = report.by_code("TW117")
    assert "Ragged" in f.where and "stack expects each tensor" in report.failure


def test_gan_script_two_models_two_optimizers_and_an_ema_copy():
    clean = inline(str(SCRIPTS / "train_gan.py"), steps=60)  # the steps of both optimizers: 30 each
    assert clean.findings == [], [str(f) for f in clean.findings]
    assert clean.measured["models"] == ["generator", "discriminator"]  # the EMA copy runs under no_grad: not trained
    assert [(o["name"], o["steps"], o["coupled_with"]) for o in clean.measured["objectives"]] == [
        ("opt_d", 30, ["opt_g"]), ("opt_g", 30, ["opt_d"])]
    report = inline(str(SCRIPTS / "train_gan.py"), "--fault", "nan-layer", steps=60)
    [f] = report.by_code("TW112")
    assert f.where == "generator.3" and f.evidence["module_type"] == "Normalise"  # not the discriminator it fed
