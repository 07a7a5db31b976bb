"""Real tuning runs on CPU: a tiny task within a few seconds, and the command line."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch
from tune_fakes import tiny_cnn_task

from torchwise.tune import TunedConfig, tune
from torchwise.tune.search import BASELINE, NO_TIME, NOT_APPLICABLE

BUDGET = 6.0


@pytest.mark.slow
def test_real_tuning_on_cpu_within_budget(tmp_path):
    task = tiny_cnn_task(n=256, batch_size=32)
    before = {k: v.clone() for k, v in task.model.state_dict().items()}
    threads = torch.get_num_threads()
    messages = []
    t0 = time.perf_counter()
    res = tune(task, budget_s=BUDGET, device="cpu", out=tmp_path / "tune.json", progress=messages.append)
    wall = time.perf_counter() - t0
    # the search's own accounting stays inside the budget; a little slack for the last trial's
    # worst case and the report on a shared, loaded machine
    assert res.elapsed_s <= BUDGET * 1.15, res.elapsed_s
    assert wall <= BUDGET * 1.5 + 2
    assert res.trials[0].status == BASELINE and res.trials[0].measurement.loss is not None
    assert res.default_samples_per_s > 0 and res.tuned_samples_per_s > 0
    # the returned configuration is the one the chosen trial measured, at the speed reported
    chosen = [t for t in res.trials if t.chosen]
    assert chosen, "the search marks the configuration it returns"
    best = chosen[-1]
    assert best.samples_per_s == res.tuned_samples_per_s
    decided = {k: v for k, v in res.config.to_dict().items() if v is not None and k in best.config}
    assert decided == {k: best.config[k] for k in decided}
    if best.status == BASELINE:  # nothing beat the default: it is kept, at 1.0x
        assert res.speedup == 1.0 and res.tuned_samples_per_s == res.default_samples_per_s
    kinds = {(s.knob, s.kind) for s in res.skipped}
    assert ("cudnn_benchmark", NOT_APPLICABLE) in kinds and ("pin_memory" in {s.setting for s in res.skipped})
    assert ("compile", NO_TIME) in kinds or ("compile", NOT_APPLICABLE) in kinds  # 40 s estimate > budget
    assert messages and messages[0].startswith("baseline")
    cfg = TunedConfig.load(tmp_path / "tune.json")
    assert cfg == res.config and cfg.meta["task"] == "tiny-cnn" and cfg.meta["torch"] == torch.__version__
    assert cfg.threads in (1, 2, threads) or cfg.threads is None
    # nothing of the user's is changed
    assert all(torch.equal(before[k], v) for k, v in task.model.state_dict().items())
    assert torch.get_num_threads() == threads


@pytest.mark.slow
def test_cli_json_and_files(tmp_path, run_cli):
    out = tmp_path / "t.json"
    proc = run_cli("tune", "examples/digits.py:task", "--budget", "4", "--knobs", "threads,channels_last", "--out", str(out), "--json", "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["task"] == "digits" and data["basis"] == "step" and data["out"] == str(out)
    assert [t["setting"] for t in data["trials"]][0] == "default (fp32, torch defaults)"
    assert {t["knob"] for t in data["trials"]} <= {"default", "threads", "channels_last"}
    assert TunedConfig.load(out).to_dict() == data["config"]
    assert "tune: baseline" in proc.stderr
    # and `torchwise train --tuned` takes the file as it is
    train = run_cli("train", "examples/digits.py:task", "--tuned", str(out), "--max-steps", "2", "--device", "cpu", "--no-progress", "--log-dir", str(tmp_path / "runs"))
    assert train.returncode == 0, train.stderr


@pytest.mark.slow
def test_cli_table_and_bad_input(tmp_path, monkeypatch, capsys):
    from torchwise.cli import main  # in this process: the child process is test_cli_json_and_files's (a child costs a torch import)

    digits = Path(__file__).resolve().parents[2] / "examples" / "digits.py"
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["tune", f"{digits}:task", "--budget", "2", "--knobs", "channels_last", "--out", "-", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "samples/s" in out and "speed-up" in out and "tuned:" in out, out
    assert not (tmp_path / "tune.json").exists() and err == ""
    # bad input ends before any work
    assert main(["tune", f"{digits}:task", "--budget", "-1", "--out", "-"]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "budget_s must be a positive number" in err
    assert main(["tune", f"{digits}:task", "--knobs", "warp", "--out", "-"]) == 2
    err = capsys.readouterr().err
    assert "unknown tune knob 'warp'" in err and "Traceback" not in err and err.strip().count("\n") == 0
