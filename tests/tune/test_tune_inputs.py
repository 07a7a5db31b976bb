"""tune.json is checked when read (known keys, types, values) and warns when it was made for
another model; ``tune`` checks where it will write before spending its budget."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch
from tune_fakes import FakeClock, FakeMeasurer, cpu_ctx, tiny_cnn_task, tiny_mlp_task

from torchwise.cli import main
from torchwise.core.errors import UsageError
from torchwise.train import Trainer
from torchwise.tune import TunedConfig, tune
from torchwise.core.tuned import describe_model

TINY = str(Path(__file__).resolve().parents[1] / "train" / "train_tiny_task.py") + ":task"


@pytest.mark.parametrize("key, value, expected", [
    ("threads", "x", "'threads' must be an integer >= 1, got 'x'"),
    ("threads", 0, "'threads' must be an integer >= 1, got 0"),
    ("threads", True, "'threads' must be an integer >= 1, got True"),
    ("batch_size", 3.5, "'batch_size' must be an integer >= 1, got 3.5"),
    ("num_workers", -1, "'num_workers' must be an integer >= 0, got -1"),
    ("channels_last", "yes", "'channels_last' must be true or false, got 'yes'"),
    ("compile", 1, "'compile' must be true or false, got 1"),
    ("precision", "fp8", "'precision' must be a precision: '32', 'bf16-mixed', '16-mixed' or 'auto', got 'fp8'"),
    ("matmul_precision", "low", "'matmul_precision' must be one of 'highest', 'high', 'medium', got 'low'"),
    ("meta", [], "'meta' must be a JSON object, got []"),
])
def test_bad_values_in_tune_json_are_one_line(tmp_path, key, value, expected):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({key: value}))
    with pytest.raises(UsageError) as info:
        TunedConfig.load(path)
    assert str(info.value) == f"{path}: {expected}"


def test_good_values_and_nulls_load():
    cfg = TunedConfig.load({"format": 1, "threads": 2, "precision": "BF16", "channels_last": None, "num_workers": 0, "meta": {}})
    assert cfg.threads == 2 and cfg.channels_last is None


def test_another_format_version_is_refused():
    with pytest.raises(UsageError, match="format 2 is not one this torchwise reads"):
        TunedConfig.load({"format": 2})


def test_train_with_a_bad_tune_json_is_one_line_exit_2(tmp_path, capsys):
    path = tmp_path / "t.json"
    path.write_text('{"threads": "x"}')
    assert main(["train", TINY, "--device", "cpu", "--no-progress", "--log-dir", str(tmp_path / "run"), "--tuned", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"torchwise train: error: {path}: 'threads' must be an integer >= 1, got 'x'"


def scripted(**kw):
    clock = FakeClock()
    fake = FakeMeasurer(clock, factors={("channels_last", True): 1.2})
    return dict(measure=fake, context=cpu_ctx(), clock=clock, **kw)


def test_tune_records_the_model_it_was_made_for(tmp_path):
    out = tmp_path / "tune.json"
    tune(tiny_cnn_task(), budget_s=500, out=out, **scripted())
    made_for = json.loads(out.read_text())["meta"]["model"]
    assert made_for == {"class": "Sequential", "parameters": 72 + 16 + 512 * 4 + 4, "input_shape": [1, 8, 8]}


def test_a_tune_json_for_another_model_warns_naming_the_differences(tmp_path):
    out = tmp_path / "tune.json"
    tune(tiny_cnn_task(), budget_s=500, out=out, **scripted())
    cfg = TunedConfig.load(out)
    mlp = tiny_mlp_task()
    inputs = mlp.get_example_batch()[0]
    with pytest.warns(UserWarning, match=r"made for 'tiny-cnn', not this model \(parameters 2140 there, \d+ here; input shape per sample \[1, 8, 8\] there, \[16\] here\)"):
        differences = cfg.check_fits(mlp.model, inputs)
    assert len(differences) == 2
    cnn = tiny_cnn_task()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cfg.check_fits(cnn.model, cnn.get_example_batch()[0]) == []
        assert TunedConfig(channels_last=True).check_fits(mlp.model, inputs) == []  # hand-written: nothing to compare


def test_trainer_warns_at_the_first_batch_when_the_tune_json_is_for_another_model(tmp_path):
    cnn = tiny_cnn_task()
    cfg = TunedConfig(channels_last=True, meta={"task": "digits", "model": describe_model(cnn.model, torch.zeros(2, 1, 8, 8))})
    mlp = tiny_mlp_task(n=32)
    trainer = Trainer.from_task(mlp, tuned=cfg, device="cpu", log_dir=False, progress=False)
    with pytest.warns(UserWarning, match="made for 'digits', not this model"):
        trainer.fit(max_steps=1)


@pytest.mark.parametrize("option", ["out", "plot"])
def test_tune_checks_its_outputs_before_measuring(tmp_path, option):
    def never(*args, **kwargs):
        pytest.fail("measured before checking the outputs")

    kwargs = {option: tmp_path}
    with pytest.raises(UsageError, match=rf"^{option} {tmp_path} is a folder"):
        tune(tiny_cnn_task(), budget_s=500, measure=never, context=cpu_ctx(), **kwargs)
    with pytest.raises(UsageError, match=rf"^{option} .*: the folder {tmp_path / 'nope'} does not exist"):
        tune(tiny_cnn_task(), budget_s=500, measure=never, context=cpu_ctx(), **{option: tmp_path / "nope" / "x"})


def test_tune_cli_out_folder_is_one_line_before_any_work(tmp_path, capsys, monkeypatch):
    import torchwise.core.task

    monkeypatch.setattr(torchwise.core.task, "load_task", lambda *a, **k: pytest.fail("the task was loaded"))
    assert main(["tune", TINY, "--budget", "5", "--out", str(tmp_path), "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == f"torchwise tune: error: out {tmp_path} is a folder; give a file path such as {tmp_path / 'tune.json'}"
