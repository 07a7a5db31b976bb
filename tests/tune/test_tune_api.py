"""``torchwise.tune(...)`` with a scripted measurer: result, tune.json round trip, table, chart."""

from __future__ import annotations

import json
import sys

import pytest
from tune_fakes import FakeClock, FakeMeasurer, cpu_ctx, cuda_ctx, tiny_cnn_task

import torchwise
from torchwise.core.errors import UsageError
from torchwise.tune import TuneResult, TunedConfig, tune


def scripted(ctx=None, **kw):
    clock = FakeClock()
    fake = FakeMeasurer(
        clock,
        factors={("precision", "bf16-mixed"): 1.5, ("channels_last", True): 1.2},
        loader_factors={("num_workers", 2): 1.3},
        loss=lambda cfg: 2.3,
    )
    return dict(measure=fake, context=ctx or cpu_ctx(), clock=clock, **kw)


def test_public_name_is_callable_module():
    assert torchwise.tune is sys.modules["torchwise.tune"]
    res = torchwise.tune(tiny_cnn_task(), budget_s=500, **scripted())
    assert isinstance(res, TuneResult)


def test_tune_writes_a_tune_json_that_round_trips(tmp_path):
    out = tmp_path / "tune.json"
    res = tune(tiny_cnn_task(), budget_s=500, out=out, **scripted())
    assert res.out == out and out.is_file()
    loaded = TunedConfig.load(out)
    assert loaded == res.config
    assert loaded.to_dict() == json.loads(out.read_text())
    # measured knobs decided, the rest left to the Trainer's defaults
    assert loaded.precision == "bf16-mixed" and loaded.channels_last is True and loaded.num_workers == 2
    assert loaded.persistent_workers is True and loaded.threads == 4  # measured, the default kept
    assert loaded.cudnn_benchmark is None and loaded.matmul_precision is None and loaded.batch_size is None and loaded.pin_memory is None
    assert loaded.loader_overrides() == {"num_workers": 2, "persistent_workers": True}
    assert loaded.trainer_overrides() == {"precision": "bf16-mixed", "channels_last": True, "compile": False}
    meta = loaded.meta
    assert meta["task"] == "tiny-cnn" and meta["device"].startswith("cpu") and meta["torch"]
    assert meta["speedup"] == pytest.approx(1.5 * 1.2 * 1.3, rel=1e-3) and meta["basis"] == "loader"
    assert meta["date"].startswith("20")
    assert res.speedup == pytest.approx(1.5 * 1.2 * 1.3)


def test_result_views(tmp_path):
    res = tune(tiny_cnn_task(), budget_s=500, **scripted())
    ranked = res.ranked()
    assert [t.speedup for t in ranked] == sorted((t.speedup for t in ranked), reverse=True)
    assert ranked[0].chosen
    assert res.changes() == {"precision": "bf16-mixed", "channels_last": True, "num_workers": 2, "persistent_workers": True}
    text = res.summary()
    assert "precision=bf16-mixed" in text and "2.34x" in text and "through the DataLoader" in text
    d = json.loads(json.dumps(res.to_dict()))
    assert d["speedup"] == pytest.approx(res.speedup) and len(d["trials"]) == len(res.trials)
    assert {s["setting"] for s in d["skipped"]} >= {"cudnn_benchmark", "pin_memory"}
    from rich.console import Console

    console = Console(record=True, width=200)
    res.print(console)
    shown = console.export_text()
    assert "samples/s" in shown and "speed-up" in shown and "chosen" in shown and "not measured" in shown
    assert "cuDNN runs on CUDA only" in shown
    assert "1.00x" in str(res)


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "speedups.png"
    res = tune(tiny_cnn_task(), budget_s=500, plot=path, **scripted())
    assert res.plot_path == path and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_is_a_clear_error(tmp_path, monkeypatch):
    res = tune(tiny_cnn_task(), budget_s=500, **scripted())
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(UsageError, match=r"needs matplotlib: pip install 'torchwise\[viz\]'"):
        res.plot(tmp_path / "x.png")


def test_bad_arguments():
    with pytest.raises(UsageError, match="budget_s must be a positive number"):
        tune(tiny_cnn_task(), budget_s=0, **scripted())
    with pytest.raises(UsageError, match="budget_s"):
        tune(tiny_cnn_task(), budget_s="10", **scripted())
    with pytest.raises(UsageError, match="CUDA is not available|unknown device"):
        tune(tiny_cnn_task(), budget_s=5, device="cuda:7" if not __import__("torch").cuda.is_available() else "tpu")
    with pytest.raises(UsageError, match="the folder /nonexistent/dir does not exist"):
        tune(tiny_cnn_task(), budget_s=500, out="/nonexistent/dir/tune.json", **scripted())


def test_cuda_result_decides_gpu_fields(tmp_path):
    clock = FakeClock()
    fake = FakeMeasurer(clock, factors={("precision", "16-mixed"): 2.0, ("matmul_precision", "high"): 1.1}, batch_exponent=0.3, oom_above=512)
    tune(tiny_cnn_task(n=100000), budget_s=500, measure=fake, context=cuda_ctx(), clock=clock, out=tmp_path / "t.json")
    cfg = TunedConfig.load(tmp_path / "t.json")
    assert cfg.precision == "16-mixed" and cfg.matmul_precision == "high" and cfg.batch_size == 456 // 8 * 8
    assert cfg.pin_memory is False and cfg.cudnn_benchmark is False
    assert cfg.meta["device"].startswith("cuda (Fake GPU")
